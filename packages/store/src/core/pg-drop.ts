/**
 * Dropping a store's PostgreSQL schema: what a throwaway store (a benchmark's, a test's) needs
 * at the end, so it leaves nothing behind on a real server. node-postgres is loaded on call,
 * like every PostgreSQL open (`open-store.ts`), so SQLite users never load it.
 */
import { MemoryStoreError } from './errors.ts'
import { type PostgresStoreOptions, resolvePostgresOptions } from './options.ts'

/**
 * Drop the schema (namespace) `options.schema` and every table in it. The schema must be
 * named: the default one holds a user's memories and is never dropped by omission.
 * @throws MemoryStoreError `invalid-argument` (no `schema`, bad URL), `unavailable` (server unreachable).
 */
export async function dropPostgresStore(options: PostgresStoreOptions): Promise<void> {
  if (options?.schema === undefined) throw new MemoryStoreError('invalid-argument', 'dropPostgresStore needs the schema to drop named explicitly (schema)')
  const resolved = resolvePostgresOptions(options)
  const { connectPg } = await import('./pg-session.ts')
  const { client } = await connectPg(resolved)
  try {
    // The name matched the options' schema pattern (lower-case letters, digits, _): quoting is enough.
    await client.query(`DROP SCHEMA IF EXISTS "${resolved.schema}" CASCADE`)
  } finally {
    await client.end()
  }
}
