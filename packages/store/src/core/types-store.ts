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
import type { ConversationRepository, MessageEmbedding, MessageRepository, MessageVectorPage } from './types-conversations.ts'
import type { LayerRepository, LeaseRepository } from './types-coordination.ts'
import type { MemoryRepository } from './types-memories.ts'
import type { AppliedMigration, AuditEntry, AuditLog, MetaRepository, MigrationSet } from './types-meta.ts'
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

/** An audit entry another database recorded, as {@link TransferService.appendAudit} takes it: everything but its id. */
export type CopiedAuditEntry = Omit<AuditEntry, 'id'>

/**
 * What moving a whole database needs beyond the export and the import (`dsh-memory migrate`):
 * every user's rows, whoever the session's user is. It answers with existence and counts only,
 * never content, so it shows nothing of another user's global rows that the session's reads hide.
 */
export interface TransferService {
  /** Rows per record type, every user's (`stats.counts()` counts only the session user's global rows). */
  counts(): Promise<RecordCounts>
  /**
   * Whether the database holds each record of `lines` (record lines of an export, the header
   * left out), whoever wrote it: conversations, messages, memories and scenes by id; a persona
   * document by its stored key (a global one without an author as `options.unattributedAs`, as
   * `importJsonl` stores it).
   * @returns one flag per line, in order
   * @throws MemoryStoreError `invalid-argument` naming the line for a line that is not an export record
   */
  present(lines: readonly string[], options?: Pick<ImportOptions, 'unattributedAs'>): Promise<boolean[]>
  /**
   * Append audit entries another database recorded, in their order, under this database's next
   * ids; every other column is kept (a path in an entity id becomes its digest, as in the
   * store's own entries). No change-log rows: nothing changed that an index follows. Inside
   * `transaction(...)` it commits with the rest.
   * @returns how many were appended
   * @throws MemoryStoreError `invalid-argument` naming the entry and its field; `readonly`
   */
  appendAudit(entries: readonly CopiedAuditEntry[], options?: WriteOptions): Promise<number>
  /**
   * Message vectors (derived data the export leaves out), every model's, in (message id, model)
   * order after `page.after` (exclusive: pass the last vector of the previous page), at most
   * `page.limit` (1..1 000): what `dsh-memory migrate` copies with `messages.setEmbeddings`, so
   * the target need not compute them again.
   * @throws MemoryStoreError `invalid-argument` naming `after`, `after.messageId`, `after.embeddingModel` or `limit`
   */
  messageVectors(page: MessageVectorPage): Promise<MessageEmbedding[]>
  /** How many vectors there are, every model's (a message may hold one of each model). */
  messageVectorCount(): Promise<number>
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
  /** Every user's rows for moving the database (`dsh-memory migrate`): presence, counts, the audit copy. */
  readonly transfer: TransferService
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
