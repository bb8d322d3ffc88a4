/** The store's bookkeeping in its contract: audit log, meta rows, migrations, diagnostics. */
import type { EntityName, WriteOptions } from './types-common.ts'

/** Operations recorded in the audit log: `<entity>.<verb>`. */
export type AuditOp = `${EntityName}.${string}`

/** One audit row. It names what changed and who changed it, never the content. */
export interface AuditEntry {
  /** Monotonic per database. */
  id: number
  at: number
  op: AuditOp
  entity: EntityName
  /** The entity's id; a workspace path inside a key is recorded as an opaque digest (`ws_…`). */
  entityId: string
  actor: string | null
  /** The entity's revision/version after the write, when it has one. */
  revision: number | null
  /** The user whose session made the change (`actor` is the plugin); `''` before user identities. */
  createdBy: string
}

/** Filter of {@link AuditLog.list}. */
export interface AuditFilter {
  entity?: EntityName
  /** The real id or key (a path inside it is turned into the recorded digest). */
  entityId?: string
  op?: AuditOp
  actor?: string
  since?: number
  until?: number
  /** Only entries with id greater than this (for tailing). */
  afterId?: number
  /** Default 100, at most 10 000. */
  limit?: number
}

/** Read access to the audit log; every write path of the store appends to it. */
export interface AuditLog {
  /** Entries in id order (oldest first). */
  list(filter?: AuditFilter): Promise<AuditEntry[]>
}

/** One applied migration, as recorded in the database. */
export interface AppliedMigration {
  owner: string
  version: number
  name: string
  checksum: string
  appliedAt: number
}

/** What a backend reports about itself, for `doctor`-style tooling. */
export interface StoreDiagnostics {
  /** `'sqlite'` for this package's backend. */
  backend: string
  /** Where the data lives (a file path for SQLite). */
  location: string
  /** Backend-specific settings and sizes (for SQLite: journal mode, synchronous, foreign keys, busy timeout, version, size). */
  details: Record<string, string | number | boolean | null>
}

/** One row of the meta table. */
export interface MetaEntry {
  key: string
  value: string
  updatedAt: number
}

/** Small key/value settings stored in the database (keys under `store.` are reserved). */
export interface MetaRepository {
  get(key: string): Promise<string | undefined>
  /**
   * Every entry whose key starts with `prefix`, in key order (at most `limit`, default 1 000,
   * at most 10 000). Lets a package find its own records, e.g. every session it keeps state for.
   */
  list(prefix: string, options?: { limit?: number }): Promise<MetaEntry[]>
  set(key: string, value: string, options?: WriteOptions): Promise<void>
  /** @returns false when it did not exist. */
  delete(key: string, options?: WriteOptions): Promise<boolean>
  /** Every applied migration of every owner, in owner then version order. */
  migrations(): Promise<AppliedMigration[]>
  /** Connection settings and sizes as the backend sees them. */
  diagnostics(): Promise<StoreDiagnostics>
}


/** One versioned SQL migration. */
export interface Migration {
  /** Positive integer, unique within the owner; applied in ascending order. */
  version: number
  /** Human-readable name (from the file name). */
  name: string
  sql: string
}

/**
 * The migrations of one owner (a package prefix such as `'store'` or `'cue-bank'`). Owners
 * version independently, so packages add tables without coordinating version numbers.
 */
export interface MigrationSet {
  owner: string
  migrations: readonly Migration[]
}
