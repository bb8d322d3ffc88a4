import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach } from 'vitest'
import type { Backend } from '../../store/test/contract/backends.js'
import type { OpenedStore } from '../../store/test/helpers.js'
import { openMemoryTree, type OpenedMemoryTree, type OpenMemoryTreeOptions } from '../src/core/open.js'

export { backends } from '../../store/test/contract/backends.js'

/** A temporary directory removed by `remove()`. */
export function tempDir(label = 'tree'): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `dshm-${label}-`))
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) }
}

/** A temporary directory made before each test of the calling suite and removed after it; read `dir` inside the tests. */
export function tempDirEachTest(label = 'tree'): { readonly dir: string } {
  const current = { dir: '', remove: () => {} }
  beforeEach(() => Object.assign(current, tempDir(label)))
  afterEach(() => current.remove())
  return current
}

/** A controllable clock (epoch ms), starting at 2025-03-01T09:00:00Z. */
export class FakeClock {
  value = Date.UTC(2025, 2, 1, 9, 0, 0)
  now = (): number => this.value
  advance(ms: number): void {
    this.value += ms
  }
}

/** Open a real tree on a real SQLite file in `dir` (store + tree migrations + repository). */
export async function openTestTree(dir: string, options: Partial<Omit<OpenMemoryTreeOptions, 'store' | 'dataDir'>> = {}): Promise<OpenedMemoryTree> {
  return openMemoryTree({ dataDir: dir, projectionDir: join(dir, 'tree'), ...options } as OpenMemoryTreeOptions)
}

/** A tree over a store of one of the store's contract backends, and that store. */
export type BackendTree = OpenedMemoryTree & { readonly database: OpenedStore }

/**
 * Open a real tree on `backend` (SQLite: a fresh file; PostgreSQL: a fresh schema on the run's
 * throwaway cluster), its projection in `dir`. With `sameDatabaseAs`, a second store on that
 * tree's database, as another process would open it. Stores close after the test.
 */
export async function openBackendTree(
  backend: Backend,
  dir: string,
  options: Partial<Omit<OpenMemoryTreeOptions, 'store' | 'dataDir'>> = {},
  sameDatabaseAs?: BackendTree,
): Promise<BackendTree> {
  const database = sameDatabaseAs ? await backend.reopen(sameDatabaseAs.database) : await backend.open()
  const opened = await openMemoryTree({ store: database, projectionDir: join(dir, 'tree'), ...options } as OpenMemoryTreeOptions)
  return Object.assign(opened, { database })
}
