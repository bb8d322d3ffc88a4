/**
 * The backend-neutral store contract. The SQLite backend (`sqlite-store.ts`) implements
 * {@link CoordinatedMemoryStore}; a PostgreSQL backend would implement the same interfaces.
 * That is why every method returns a Promise even though SQLite answers synchronously: a
 * network database cannot, and callers should not have to change. The parts live beside this
 * file, one per repository (`types-conversations.ts`, `types-memories.ts`, …).
 */
import type { PackageTablesHost } from './package-tables.ts'
import type { ChangeFeed } from './types-changes.ts'
import type { TransactionOptions, WriteOptions } from './types-common.ts'
import type { ConversationRepository, MessageRepository } from './types-conversations.ts'
import type { LayerRepository, LeaseRepository } from './types-coordination.ts'
import type { MemoryRepository } from './types-memories.ts'
import type { AppliedMigration, AuditLog, MetaRepository, MigrationSet } from './types-meta.ts'
import type { PersonaRepository } from './types-persona.ts'
import type { SceneRepository } from './types-scenes.ts'
import type { SearchService } from './types-search.ts'
import type { StatsService } from './types-stats.ts'

/** Counts per record type. */
export interface RecordCounts {
  conversations: number
  messages: number
  memories: number
  scenes: number
  persona: number
}

/** Result of {@link MemoryStore.importJsonl}. */
export interface ImportResult {
  inserted: RecordCounts
  /** Records whose id (or key) already existed; they are left untouched. */
  skipped: RecordCounts
}

/** Options of {@link MemoryStore.importJsonl}. */
export interface ImportOptions extends WriteOptions {
  /**
   * The author given to imported records that have none (`createdBy` absent or `''`: exports
   * from before user identities). Default: they stay unattributed (`''`, visible to everyone).
   * `dsh-memory migrate` passes the target user (`--user`).
   */
  unattributedAs?: string
}

/**
 * The memory store: repositories over one database. It is also a {@link PackageTablesHost}
 * (the extension seam): `tables(declaration)` applies a package's migrations through this
 * store's runner (a read-only store only checks them: `schema-too-old` while some are pending)
 * and returns the package's tables on this store's session. The same owner gets the same handle.
 */
export interface MemoryStore extends PackageTablesHost {
  /** Where the database lives (`':memory:'` for a private in-memory store). */
  readonly path: string
  /**
   * Who this session writes as (`MemoryStoreOptions.user`, resolved): stamped on every row it
   * writes, and the only user whose global memories, scenes and persona its reads show.
   */
  readonly user: string
  readonly readonly: boolean
  /** True after {@link MemoryStore.close}. */
  readonly closed: boolean
  readonly conversations: ConversationRepository
  readonly messages: MessageRepository
  readonly memories: MemoryRepository
  readonly scenes: SceneRepository
  readonly persona: PersonaRepository
  readonly audit: AuditLog
  readonly search: SearchService
  readonly meta: MetaRepository
  /** Counts and groupings of what the store holds (overviews, `status`), without loading rows. */
  readonly stats: StatsService
  /**
   * Run `fn` atomically: every store call made inside it (on this store, awaited within
   * `fn`) commits together or not at all. Other callers of this store wait until it ends.
   * Nested calls become savepoints. Searches inside do not see the transaction's own writes.
   * With `options.fence` the transaction fails with `fenced` (nothing written) unless that
   * lease is live when the write lock is taken.
   */
  transaction<T>(fn: (store: MemoryStore) => Promise<T> | T, options?: TransactionOptions): Promise<T>
  /**
   * Versioned JSONL export: a header line, then conversations, messages, memories, scenes
   * and persona documents, one JSON object per line (no trailing newline). A consistent
   * snapshot of the database at the time iteration starts.
   */
  exportJsonl(): AsyncIterable<string>
  /**
   * Import an export. Idempotent on ids (existing rows are skipped, never overwritten);
   * text passes the same redaction and limits as live writes; all or nothing.
   * @throws MemoryStoreError `unsupported-format` for a missing header or an unknown version
   */
  importJsonl(lines: string | Iterable<string> | AsyncIterable<string>, options?: ImportOptions): Promise<ImportResult>
  /** Apply another package's migrations now (same rules as `extraMigrations` at open). */
  migrate(sets: MigrationSet | readonly MigrationSet[]): Promise<AppliedMigration[]>
  /** Persist the search index (if it changed) and close the database. Idempotent. */
  close(): Promise<void>
}

/**
 * A {@link MemoryStore} that also tracks layer revisions and hands out fenced leases: what
 * several processes on one database need to coordinate. Every store opened by
 * `openMemoryStore` is one; {@link coordinatedStore} finds it behind a service wrapper.
 */
export interface CoordinatedMemoryStore extends MemoryStore {
  readonly layers: LayerRepository
  readonly leases: LeaseRepository
  /** Committed writes of every process on this database, as they happen (see {@link ChangeFeed}). */
  readonly changes: ChangeFeed
  transaction<T>(fn: (store: CoordinatedMemoryStore) => Promise<T> | T, options?: TransactionOptions): Promise<T>
}

/** What `openMemoryStore`, `openPostgresStore` and `openStore` return: the coordinated store plus the package-tables seam. */
export type OpenedMemoryStore = CoordinatedMemoryStore & PackageTablesHost
