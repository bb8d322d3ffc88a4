/**
 * The backend-neutral openers. PostgreSQL's code (node-postgres, drizzle's pg dialect, the
 * `pg-*` modules) is loaded on the first PostgreSQL open only, so a SQLite store (every DSH
 * host by default) never pays for loading it.
 */
import type { MemoryStoreOptions, PostgresStoreOptions } from './options.ts'
import { openMemoryStore } from './sqlite-store.ts'
import type { OpenedMemoryStore } from './types-store.ts'

/**
 * Open a memory store on a PostgreSQL database: connect, create the schema (namespace) when
 * missing and bring its tables up to date (under a lock, so several processes may open one
 * fresh database at once). The store's semantics match SQLite's: one caller at a time on its
 * one connection, `store.transaction(fn)` holds it, writes are serialised per schema.
 * @throws MemoryStoreError `invalid-argument` naming `databaseUrl` or `schema` (or refused
 *   credentials); `unavailable` when the server cannot be reached (host:port in the message,
 *   never the password); `not-found` (no such database; read-only and no store schema);
 *   `schema-too-new`, `schema-too-old`, `migration-mismatch`, `migration-failed`, `busy`.
 */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<OpenedMemoryStore> {
  const { openPostgres } = await import('./pg-store.ts')
  return openPostgres(options)
}

/**
 * Open a memory store on either backend: PostgreSQL when `options` has a `databaseUrl`,
 * else SQLite at `options.path` (see `openMemoryStore`).
 */
export async function openStore(options: MemoryStoreOptions | PostgresStoreOptions): Promise<OpenedMemoryStore> {
  if (options && typeof options === 'object' && 'databaseUrl' in options && options.databaseUrl !== undefined) return openPostgresStore(options)
  return openMemoryStore(options as MemoryStoreOptions)
}
