/**
 * What every write of every backend records besides its rows: one audit row and (for the
 * entities derived views follow) one change-log row. Backend-neutral: the SQLite and the
 * PostgreSQL sessions both write exactly these.
 */
import { MemoryStoreError } from './errors.ts'
import type { EntityName, WriteOptions } from './types-common.ts'

/** What a write records: its audit row and (for indexed entities) its change-log row. */
export interface ChangeSpec {
  entity: EntityName
  entityId: string
  /** Change-log op. Every write names one, so any derived view (not only search) can follow. */
  change: 'insert' | 'update' | 'delete'
  /** Audit op, `<entity>.<verb>`. */
  audit: string
  revision?: number | null
}

/** An audit row without a change-log row (layers, leases and package tables are not indexed). */
export type AuditSpec = Omit<ChangeSpec, 'change'>

/**
 * The channel a PostgreSQL store notifies (at commit, payload: its schema name) after a write
 * that recorded a change, so another process's store can wake and catch up from `store_changes`.
 */
export const CHANGES_CHANNEL = 'dsh_memory_changes'

const MAX_ACTOR = 200

/**
 * The audit actor of a write: `options.actor`, else the store's default, else none.
 * @throws MemoryStoreError `invalid-argument` for an empty or over-long actor.
 */
export function writeActor(options: WriteOptions | undefined, fallback: string | null): string | null {
  const actor = options?.actor ?? fallback
  if (actor !== null && actor !== undefined && (typeof actor !== 'string' || actor.length === 0 || actor.length > MAX_ACTOR)) {
    throw new MemoryStoreError('invalid-argument', `actor must be a non-empty string of at most ${MAX_ACTOR} characters`)
  }
  return actor ?? null
}
