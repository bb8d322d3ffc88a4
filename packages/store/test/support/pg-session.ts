import { resolvePostgresOptions } from '../../src/core/options.ts'
import { connectPg, PgSession } from '../../src/core/pg-session.ts'
import type { StoreLocation } from '../contract/backends.ts'
import { onCleanup } from '../helpers.ts'

/**
 * A PostgreSQL session of its own on `location`'s schema (closed after the test), to test the
 * primitives the PostgreSQL repositories build on, beside a store on the same schema.
 */
export async function pgSessionOn(location: StoreLocation): Promise<PgSession> {
  const resolved = resolvePostgresOptions(location as { databaseUrl: string; schema: string })
  const { client, lockKey } = await connectPg(resolved)
  const session = new PgSession(client, resolved, lockKey)
  onCleanup(() => session.close())
  return session
}
