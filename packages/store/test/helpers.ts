import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach } from 'vitest'
import { openMemoryStore } from '../src/index.ts'
import type { MemoryStoreOptions, MigrationSet } from '../src/index.ts'

/** What `openMemoryStore` returns (the coordinated store plus the package-tables seam). */
export type OpenedStore = ReturnType<typeof openMemoryStore>

const cleanups: Array<() => Promise<void> | void> = []

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** A fresh temporary directory, removed after the test. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'dshm-store-'))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** A controllable clock starting at `start`, advancing `step` ms per reading. */
export function fakeClock(start = Date.UTC(2025, 0, 1), step = 1): { now: () => number; set: (t: number) => void } {
  let t = start
  return {
    now: () => {
      const value = t
      t += step
      return value
    },
    set: (value) => {
      t = value
    },
  }
}

/** Open a store on a fresh file (closed after the test). */
export function openTemp(options: Partial<MemoryStoreOptions> = {}): { store: OpenedStore; path: string; dir: string } {
  const dir = tempDir()
  const path = options.path ?? join(dir, 'nested', 'memory.db')
  const store = openMemoryStore({ ...options, path })
  cleanups.push(() => store.close())
  return { store, path, dir }
}

/** Open another store on an existing path (closed after the test). */
export function reopen(path: string, options: Partial<MemoryStoreOptions> = {}): OpenedStore {
  const store = openMemoryStore({ ...options, path })
  cleanups.push(() => store.close())
  return store
}

/** Register extra cleanup. */
export function onCleanup(fn: () => Promise<void> | void): void {
  cleanups.push(fn)
}

/** The rejection of `promise` (fails the test if it resolves). */
export async function rejectionOf(promise: Promise<unknown> | (() => unknown)): Promise<Error & { code?: string }> {
  try {
    await (typeof promise === 'function' ? promise() : promise)
  } catch (error) {
    return error as Error & { code?: string }
  }
  throw new Error('expected a rejection, but it resolved')
}

/** Another owner's migrations, in SQL both backends accept; version `failing` is broken SQL. */
export function cueBank(versions: number[], failing?: number): MigrationSet {
  return {
    owner: 'cue-bank',
    migrations: versions.map((version) => ({
      version,
      name: `step_${version}`,
      sql: version === failing ? 'CREATE TABLE cue_bank_broken (' : `CREATE TABLE cue_bank_t${version} (id TEXT PRIMARY KEY);`,
    })),
  }
}
