/**
 * The backend-neutral vocabulary every part of the store contract shares: scopes, roles,
 * entity names and the options of every write. A PostgreSQL backend implements the same
 * contract (see `types-store.ts`).
 */

/** Visibility of a memory, scene or persona. */
export type Scope = 'global' | 'workspace' | 'session'

/** The author of an L0 message. Tool output is not captured as a message of its own. */
export type MessageRole = 'user' | 'assistant'

/** Well-known memory kinds; any other non-empty string is accepted for plugin-specific kinds. */
export type MemoryKind = 'fact' | 'preference' | 'instruction' | 'episode' | (string & {})

/** A JSON object stored as-is in `flags` columns, for later use without a migration. */
export type Flags = Record<string, unknown>

/** Entities that appear in the audit log and the change log. */
export type EntityName = 'conversation' | 'message' | 'memory' | 'scene' | 'persona' | 'meta' | 'layer' | 'lease'

/** Options every write method accepts. */
export interface WriteOptions {
  /** Who made the change (a plugin id such as `'distill'`, or `'user'`); recorded in the audit log. */
  actor?: string
  /**
   * Refuse the write unless this lease is still held with this token. Checked inside the
   * write's own transaction (which holds the database write lock), so a holder whose lease
   * expired or was taken over cannot write, however late it wakes up.
   * @see LeaseRepository
   */
  fence?: LeaseFence
}

/** Options of {@link MemoryStore.transaction}. */
export interface TransactionOptions {
  /** Check this fence right after the transaction took the write lock (see {@link WriteOptions.fence}). */
  fence?: LeaseFence
}

/** What a fenced write names: the lease and the token its writer holds. */
export interface LeaseFence {
  name: string
  token: number
}

/** Paging of every list: `limit` defaults to 100 and is at most 10 000. */
export interface PageOptions {
  /** Default 100, at most 10 000. */
  limit?: number
  offset?: number
}
