/**
 * The stores the benchmarks build, on either backend, through the store contract
 * (`openStore`): a SQLite file in a directory of its own, or a fresh schema of its own in a
 * PostgreSQL database. `remove()` deletes what was built (the file, or the schema, unless
 * `keep`), so a run leaves nothing behind on a real server.
 */
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { dropPostgresStore, isMemoryStoreError, type OpenedMemoryStore, openStore } from '@dsh-memory/store'

/** Where a benchmark's stores live: SQLite files, or schemas of their own in a PostgreSQL database. */
export type BenchBackend = { readonly kind: 'sqlite' } | { readonly kind: 'postgres'; readonly databaseUrl: string; readonly keep?: boolean }

/** One store of a benchmark, and how to size and remove it. */
export interface BenchStore {
  readonly store: OpenedMemoryStore
  /** Where it lives: the SQLite file, or the PostgreSQL schema. */
  readonly location: string
  /** Bytes on disk after close (SQLite: the file and its WAL); `null` on PostgreSQL, which has no file of its own. */
  bytes(): number | null
  /** Delete the file or drop the schema (a PostgreSQL schema is kept with `keep`). */
  remove(): Promise<void>
}

/**
 * A schema name no other run uses: the process, the time and a tag. PostgreSQL names stop at
 * 63 bytes, which is also the store's schema pattern.
 */
export function benchSchemaName(tag: string): string {
  return `dshm_bench_${process.pid}_${Date.now().toString(36)}_${tag.toLowerCase().replace(/[^a-z0-9_]/g, '_')}`.slice(0, 63)
}

function dirBytes(dir: string): number {
  let total = 0
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    const stat = statSync(path)
    total += stat.isDirectory() ? dirBytes(path) : stat.size
  }
  return total
}

/**
 * Open a fresh store for a benchmark.
 * @param dir - the SQLite store's directory (created by the store; unused on PostgreSQL).
 * @param tag - part of the PostgreSQL schema's name, so a kept schema says what it holds.
 */
export async function openBenchStore(backend: BenchBackend, dir: string, tag: string, now?: () => number): Promise<BenchStore> {
  if (backend.kind === 'sqlite') {
    const path = join(dir, 'memory.db')
    const store = await openStore({ path, ...(now ? { now } : {}) })
    return { store, location: path, bytes: () => (existsSync(dir) ? dirBytes(dir) : 0), remove: async () => rmSync(dir, { recursive: true, force: true }) }
  }
  const schema = benchSchemaName(tag)
  const store = await openStore({ databaseUrl: backend.databaseUrl, schema, ...(now ? { now } : {}) })
  return {
    store,
    location: `schema ${schema}`,
    bytes: () => null,
    remove: async () => {
      if (!backend.keep) await dropPostgresStore({ databaseUrl: backend.databaseUrl, schema })
    },
  }
}

/**
 * Whether an error is a backend's refusal of something it does not offer yet (code
 * `unsupported`, e.g. a plugin's package table on PostgreSQL): the phase is skipped and
 * reported, not failed.
 */
export function isUnsupported(error: unknown): error is Error {
  return isMemoryStoreError(error) && error.code === 'unsupported'
}
