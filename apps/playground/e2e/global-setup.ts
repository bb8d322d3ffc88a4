import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
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
  const names: string[] = []
  for (const folder of await readdir(join(REPO_ROOT, 'packages'))) {
    try {
      const manifest = JSON.parse(await readFile(join(REPO_ROOT, 'packages', folder, 'package.json'), 'utf8')) as {
        name: string
        private?: boolean
      }
      if (!manifest.private) names.push(manifest.name)
    } catch {
      // not a package folder
    }
  }
  project.provide('tarballs', await packWorkspaces(names, dir))
  return async () => {
    await rm(dir, { recursive: true, force: true })
  }
}
