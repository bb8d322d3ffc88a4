import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { publishablePackages } from 'dsh-memory'
import type { TestProject } from 'vitest/node'
import { REPO_ROOT, packWorkspaces } from '../src/host.js'

declare module 'vitest' {
  interface ProvidedContext {
    /** Package name → packed tarball of every publishable workspace package. */
    tarballs: Record<string, string>
  }
}

/** Pack every publishable package once per run, as `npm pack` would for the registry. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dir = await mkdtemp(join(tmpdir(), 'dshm-packs-'))
  project.provide('tarballs', await packWorkspaces(publishablePackages(REPO_ROOT), dir))
  return async () => {
    await rm(dir, { recursive: true, force: true })
  }
}
