/**
 * The backend-neutral shape of the memory store. The SQLite implementation in
 * `sqlite-store.ts` implements {@link MemoryStore}; a PostgreSQL backend would implement the
 * same interfaces. That is why every method returns a Promise even though SQLite answers
 * synchronously: a network database cannot, and callers should not have to change.
 */
import type { PackageTables, PackageTablesDeclaration } from './package-tables.ts'

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

// ---------------------------------------------------------------------------------------------
// L0: conversations and messages

/** A host session, the container of L0 messages. */
export interface Conversation {
  /** The host's session id. */
  id: string
  /** The session's working directory; `''` when unknown. */
  workspace: string
  title: string | null
  startedAt: number
  endedAt: number | null
  updatedAt: number
  flags: Flags
}

/** Input of {@link ConversationRepository.ensure}. */
export interface EnsureConversationInput {
  id: string
  /** The session's working directory. An empty value never overwrites a known workspace. */
  workspace: string
  /** Set when given and non-empty; an existing title is replaced. */
  title?: string
  /** Defaults to the store clock; ignored when the conversation already exists. */
  startedAt?: number
}

/** Filter of {@link ConversationRepository.list}. */
export interface ConversationFilter {
  workspace?: string
  /** Only conversations updated at or after this epoch-ms time. */
  since?: number
  /** Only conversations updated at or before this epoch-ms time. */
  until?: number
  /** Default 100, at most 10 000. */
  limit?: number
  offset?: number
}

/** L0 container repository. */
export interface ConversationRepository {
  /**
   * Create the conversation or update it in place (idempotent upsert). An existing
   * workspace is only replaced by a non-empty one; `startedAt` of an existing row is kept.
   * @returns `created` is true when the row did not exist before.
   */
  ensure(input: EnsureConversationInput, options?: WriteOptions): Promise<{ created: boolean; conversation: Conversation }>
  /** The conversation, or `undefined`. */
  get(id: string): Promise<Conversation | undefined>
  /** Conversations, most recently updated first. */
  list(filter?: ConversationFilter): Promise<Conversation[]>
  /**
   * Mark the conversation ended at `at` (default: now).
   * @throws MemoryStoreError `not-found`
   */
  end(id: string, at?: number, options?: WriteOptions): Promise<Conversation>
  /**
   * Hard-delete the conversation and all its messages (audited, without content).
   * @returns false when it did not exist.
   */
  delete(id: string, options?: WriteOptions): Promise<boolean>
}

/** An L0 message: one user or assistant utterance, verbatim after redaction. */
export interface Message {
  /** Store id (UUIDv7, time-sortable). */
  id: string
  conversationId: string
  /** The host's id for this message; unique per conversation, the idempotency key of `append`. */
  hostMessageId: string
  role: MessageRole
  /** Text after control-character stripping, secret redaction and the length cap. */
  text: string
  /** The host turn number the message belongs to. */
  turn: number
  /** Position in the conversation; assigned as last+1 when not given. */
  seq: number
  /** Host event ids (or other provenance) this message was assembled from. */
  sourceIds: string[]
  tokensEstimate: number
  createdAt: number
  flags: Flags
}

/** Input of {@link MessageRepository.append}. */
export interface AppendMessageInput {
  conversationId: string
  hostMessageId: string
  role: MessageRole
  text: string
  turn?: number
  seq?: number
  sourceIds?: string[]
  /** Defaults to {@link estimateTokens} of the stored text. */
  tokensEstimate?: number
  /** Defaults to the store clock. */
  createdAt?: number
  flags?: Flags
}

/** Result of {@link MessageRepository.append}. */
export interface AppendMessageResult {
  /** False when a message with the same (conversationId, hostMessageId) already existed. */
  inserted: boolean
  /** The stored message (the existing one when `inserted` is false). */
  message: Message
  /** Number of secrets replaced in this call's text (0 when not inserted). */
  redactions: number
}

/** Filter of {@link MessageRepository.list}. */
export interface MessageFilter {
  conversationId?: string
  workspace?: string
  role?: MessageRole
  since?: number
  until?: number
  /** Only messages with `seq` greater than this (within `conversationId`). */
  afterSeq?: number
  /** Default `'asc'` (conversation order, then creation time). */
  order?: 'asc' | 'desc'
  /** Default 100, at most 10 000. */
  limit?: number
  offset?: number
}

/** L0 message repository. */
export interface MessageRepository {
  /**
   * Store a message once. Appending the same (conversationId, hostMessageId) again returns
   * the existing message with `inserted: false` and writes nothing.
   * @throws MemoryStoreError `not-found` when the conversation does not exist (call `conversations.ensure` first)
   * @throws MemoryStoreError `invalid-argument` for empty text or an unknown role
   */
  append(input: AppendMessageInput, options?: WriteOptions): Promise<AppendMessageResult>
  get(id: string): Promise<Message | undefined>
  getByHostId(conversationId: string, hostMessageId: string): Promise<Message | undefined>
  list(filter?: MessageFilter): Promise<Message[]>
  /**
   * The messages within `span` positions (seq) of each given message in its own
   * conversation, the given ones included, ordered by conversation then seq. Unknown ids are
   * ignored. Recall reads a search hit's context turns with it in one query.
   * @param ids - at most 1 000. @param span - 0..20.
   */
  around(ids: readonly string[], span: number): Promise<Message[]>
  /** How many messages match (workspace, conversation, role and time filters; no paging). */
  count(filter?: Pick<MessageFilter, 'workspace' | 'conversationId' | 'role' | 'since' | 'until'>): Promise<number>
  /** Hard-delete one message (audited). @returns false when it did not exist. */
  delete(id: string, options?: WriteOptions): Promise<boolean>
}

// ---------------------------------------------------------------------------------------------
// L1: memories

/** An atomic L1 memory. */
export interface Memory {
  /** Store id (UUIDv7, time-sortable). */
  id: string
  kind: MemoryKind
  text: string
  scope: Scope
  /** Set for workspace scope; may be set for session scope; always null for global scope. */
  workspace: string | null
  /** Set for session scope. */
  sessionId: string | null
  sourceMessageIds: string[]
  /** Higher is more important; the store does not interpret it. */
  priority: number
  /** 1 on insert, +1 on every update. */
  revision: number
  createdAt: number
  updatedAt: number
  lastRecalledAt: number | null
  /** Id of the memory that replaced this one; superseded memories are hidden by default. */
  supersededBy: string | null
  embedding: Float32Array | null
  /** Identifies the model that produced `embedding`, so vectors of different models are never compared. */
  embeddingModel: string | null
  flags: Flags
}

/** Input of {@link MemoryRepository.add}. */
export interface AddMemoryInput {
  kind: MemoryKind
  text: string
  scope: Scope
  /** Required for workspace scope; recorded for session scope; must be absent for global scope. */
  workspace?: string | null
  /** Required for session scope. */
  sessionId?: string | null
  sourceMessageIds?: string[]
  priority?: number
  flags?: Flags
  embedding?: Float32Array | null
  embeddingModel?: string | null
  /** Defaults to the store clock. */
  createdAt?: number
}

/** Patch of {@link MemoryRepository.update}; absent fields are unchanged. */
export interface UpdateMemoryPatch {
  text?: string
  kind?: MemoryKind
  priority?: number
  flags?: Flags
  /** `null` clears the embedding. */
  embedding?: Float32Array | null
  embeddingModel?: string | null
}

/**
 * Scope filter shared by memory list and search.
 *
 * With `workspace` set the result holds global memories (unless `includeGlobal` is false)
 * plus workspace- and session-scoped memories of that workspace, never another
 * workspace's. With `sessionId` set, session-scoped memories are limited to that session.
 */
export interface MemoryScopeFilter {
  scope?: Scope | Scope[]
  workspace?: string
  sessionId?: string
  kind?: MemoryKind | MemoryKind[]
  /** Only memories created at or after this epoch-ms time. */
  since?: number
  /** Only memories created at or before this epoch-ms time. */
  until?: number
  /** Default true. */
  includeGlobal?: boolean
  /** Default false: superseded memories are history, not current knowledge. */
  includeSuperseded?: boolean
}

/** Filter of {@link MemoryRepository.list}. */
export interface MemoryFilter extends MemoryScopeFilter {
  /** `'created'` (default) or `'updated'`, newest first. */
  orderBy?: 'created' | 'updated' | 'priority'
  /** Default 100, at most 10 000. */
  limit?: number
  offset?: number
}

/** L1 memory repository. */
export interface MemoryRepository {
  /** Store a new memory (redacted, capped). @throws MemoryStoreError `invalid-argument` */
  add(input: AddMemoryInput, options?: WriteOptions): Promise<Memory>
  get(id: string): Promise<Memory | undefined>
  /** Change text/kind/priority/flags/embedding in place; bumps `revision`. @throws MemoryStoreError `not-found` */
  update(id: string, patch: UpdateMemoryPatch, options?: WriteOptions): Promise<Memory>
  /**
   * Replace a memory by a new one, keeping history: the old row stays with
   * `supersededBy` = the new id. Missing input fields default to the old memory's.
   * @returns the new memory.
   * @throws MemoryStoreError `not-found`; `conflict` when the old memory is already superseded
   */
  supersede(oldId: string, input: Partial<AddMemoryInput> & { text: string }, options?: WriteOptions): Promise<Memory>
  /** The version chain containing `id`, oldest first; empty when `id` is unknown. */
  history(id: string): Promise<Memory[]>
  /**
   * Hard-delete a memory together with every older version it superseded, so a forgotten
   * fact cannot resurface from history. Audited without content.
   * @returns the number of rows deleted (0 when it did not exist).
   */
  delete(id: string, options?: WriteOptions): Promise<number>
  list(filter?: MemoryFilter): Promise<Memory[]>
  /**
   * How many memories match the scope filter (no paging). Recall uses it as the collection
   * size when it ranks search candidates.
   */
  count(filter?: MemoryScopeFilter): Promise<number>
  /** Set `lastRecalledAt` (default now) on the given memories. @returns how many existed. */
  touchRecalled(ids: readonly string[], at?: number, options?: WriteOptions): Promise<number>
  /**
   * Fold near-duplicates into one existing memory (consolidation): every source keeps its
   * row as history with `supersededBy` = the target, and the target gains the sources'
   * `sourceMessageIds`. Unlike {@link MemoryRepository.supersede} no new row is written.
   * @returns the updated target.
   * @throws MemoryStoreError `not-found`; `conflict` when the target or a source is already
   *   superseded; `invalid-argument` when a source is the target.
   */
  mergeInto(targetId: string, sourceIds: readonly string[], options?: WriteOptions): Promise<Memory>
}

// ---------------------------------------------------------------------------------------------
// L2: scenes

/** An L2 scene: a titled summary grouping related memories. */
export interface Scene {
  id: string
  title: string
  summary: string
  scope: Scope
  workspace: string | null
  sessionId: string | null
  memoryIds: string[]
  revision: number
  createdAt: number
  updatedAt: number
  flags: Flags
}

/** Input of {@link SceneRepository.add}. */
export interface AddSceneInput {
  title: string
  summary: string
  scope: Scope
  workspace?: string | null
  sessionId?: string | null
  memoryIds?: string[]
  flags?: Flags
  createdAt?: number
}

/** Patch of {@link SceneRepository.update}. */
export interface UpdateScenePatch {
  title?: string
  summary?: string
  memoryIds?: string[]
  flags?: Flags
}

/** Filter of {@link SceneRepository.list}; scope rules as in {@link MemoryScopeFilter}. */
export interface SceneFilter {
  scope?: Scope | Scope[]
  workspace?: string
  sessionId?: string
  includeGlobal?: boolean
  since?: number
  until?: number
  limit?: number
  offset?: number
}

/** L2 scene repository. */
export interface SceneRepository {
  add(input: AddSceneInput, options?: WriteOptions): Promise<Scene>
  get(id: string): Promise<Scene | undefined>
  /** @throws MemoryStoreError `not-found` */
  update(id: string, patch: UpdateScenePatch, options?: WriteOptions): Promise<Scene>
  /** @returns false when it did not exist. */
  delete(id: string, options?: WriteOptions): Promise<boolean>
  /** Newest updated first. */
  list(filter?: SceneFilter): Promise<Scene[]>
}

// ---------------------------------------------------------------------------------------------
// L3: persona

/** Which persona document: the global one or one workspace's. */
export interface PersonaKey {
  scope: 'global' | 'workspace'
  /** Required for workspace scope. */
  workspace?: string | null
}

/** An L3 persona document: markdown describing the user, one per key. */
export interface Persona {
  scope: 'global' | 'workspace'
  workspace: string | null
  text: string
  /** 1 on first put, +1 on every put. */
  version: number
  updatedAt: number
}

/** Input of {@link PersonaRepository.put}. */
export interface PutPersonaInput extends PersonaKey {
  text: string
  /** When given, the put fails with `conflict` unless the stored version equals it (0 = absent). */
  expectedVersion?: number
}

/** L3 persona repository. */
export interface PersonaRepository {
  get(key: PersonaKey): Promise<Persona | undefined>
  /** Replace the document, bumping `version`. @throws MemoryStoreError `conflict` on a stale `expectedVersion` */
  put(input: PutPersonaInput, options?: WriteOptions): Promise<Persona>
  list(): Promise<Persona[]>
  /** @returns false when it did not exist. */
  delete(key: PersonaKey, options?: WriteOptions): Promise<boolean>
}

// ---------------------------------------------------------------------------------------------
// audit, meta, search

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

/** Options of {@link SearchService.memories}. */
export interface MemorySearchOptions extends MemoryScopeFilter {
  /** Default 20, at most 1 000. */
  limit?: number
}

/** Options of {@link SearchService.messages}. */
export interface MessageSearchOptions {
  workspace?: string
  conversationId?: string
  role?: MessageRole
  since?: number
  until?: number
  /** Default 20, at most 1 000. */
  limit?: number
}

/** A ranked memory. `score` is BM25, comparable only within one query. */
export interface MemoryHit {
  memory: Memory
  score: number
}

/** A ranked message. `score` is BM25, comparable only within one query. */
export interface MessageHit {
  message: Message
  score: number
}

/** Why this process (re)built the search index, for diagnostics and tests. */
export type IndexBuildReason =
  /** The FTS tables were new (first open after the upgrade, or a new database): existing rows were indexed. */
  | 'backfill'
  /** A backfill interrupted by a crash (or run by another process) was completed. */
  | 'resumed'
  /** The tokenizer (or ICU) version differs from the one the index was built with. */
  | 'tokenizer-changed'
  /** `search.rebuild()`. */
  | 'manual'

/** State of the search index (SQLite FTS5 tables in the database). */
export interface SearchIndexStatus {
  /** True when every row is indexed with the current tokenizer (a read-only store may see a pending backfill). */
  built: boolean
  /** What this process last did to the index (`null`: it found it current). */
  reason: IndexBuildReason | null
  /** Documents in the index; equal to the row counts unless rows were written behind the store's back. */
  documents: { messages: number; memories: number }
  tokenizerVersion: string
  /** The ICU version the CJK word boundaries come from. */
  icu: string
}

/** Full-text search over messages and memories. */
export interface SearchService {
  /**
   * Rank memories matching `query` (BM25 over the CJK-aware tokenizer). Applies the scope
   * filter; superseded memories are excluded unless asked for. Sees every committed write,
   * including writes by other processes on the same database.
   */
  memories(query: string, options?: MemorySearchOptions): Promise<MemoryHit[]>
  /** Rank messages matching `query`; same freshness guarantee as {@link SearchService.memories}. */
  messages(query: string, options?: MessageSearchOptions): Promise<MessageHit[]>
  /**
   * Finish any pending backfill (done at open already; a read-only store only reports) and
   * return the status.
   */
  warm(): Promise<SearchIndexStatus>
  /** Drop the index and rebuild it from the rows (repairs rows written behind the store's back). */
  rebuild(): Promise<SearchIndexStatus>
  status(): Promise<SearchIndexStatus>
}

// ---------------------------------------------------------------------------------------------
// layers

/**
 * A memory layer: the global one, or one workspace's. Session-scoped rows belong to no layer.
 * Layer keys are `'global'` and `'workspace:<path>'` (see {@link layerKeyOf}).
 */
export interface LayerKey {
  scope: 'global' | 'workspace'
  /** Required for workspace scope. */
  workspace?: string | null
}

/** The current revision of a layer. */
export interface LayerRevision {
  scope: 'global' | 'workspace'
  /** `null` for the global layer. */
  workspace: string | null
  /** `'global'` or `'workspace:<path>'`. */
  key: string
  /** 0 for a layer that never changed; +1 with every committed write to it. */
  revision: number
  /** When it last changed (0 when never). */
  updatedAt: number
}

/**
 * Revisions of the memory layers. A layer's revision increases in the same transaction as
 * every write that changes what the layer holds: adding, updating (text, kind, priority,
 * flags), superseding, merging, deleting or importing one of its memories, a write to one of
 * its scenes, or to its persona. Recording a recall (`touchRecalled`) and attaching an
 * embedding do not change what the layer holds and do not bump it.
 */
export interface LayerRepository {
  /** The layer's revision (0 when it never changed). */
  revision(key: LayerKey): Promise<LayerRevision>
  /** Every layer that ever changed: global first, then workspaces by path. */
  list(): Promise<LayerRevision[]>
}

// ---------------------------------------------------------------------------------------------
// leases

/** A lease as stored. */
export interface Lease {
  name: string
  /** Who holds it (any stable id of the holding process or job, e.g. `host:pid:uuid`). */
  holder: string
  /** The fencing token: grows with every acquisition by a new holder, never reused. */
  token: number
  acquiredAt: number
  /** Epoch ms after which another holder may take the lease over; 0 once released. */
  expiresAt: number
}

/** What a fenced write names: the lease and the token its writer holds. */
export interface LeaseFence {
  name: string
  token: number
}

/** Options of {@link LeaseRepository.acquire}. */
export interface AcquireLeaseOptions extends WriteOptions {
  /**
   * Whether the current (unexpired) holder is known to be gone, e.g. a process on this host
   * that no longer runs; such a lease is taken over at once instead of after it expires.
   * Called inside the acquiring transaction; must be synchronous and must not throw.
   */
  isHolderStale?: (holder: string) => boolean
}

/**
 * Time-limited single-writer leases with fencing tokens, for background writers that several
 * processes on one database might run at once (distillation, consolidation, sweeps). A
 * holder renews its lease (heartbeat) well before `expiresAt`; a crashed holder stops renewing
 * and its lease is taken over after it expires. Every write made on behalf of the lease names
 * it in {@link WriteOptions.fence}, so a holder that was paused past its expiry and lost the
 * lease cannot write any more. Interactive writes do not need a lease: SQLite's locking keeps
 * them correct.
 */
export interface LeaseRepository {
  /**
   * Take the lease for `ttlMs` when it is free, expired, released, stale, or already held by
   * `holder` (then it is extended, same token).
   * @returns the lease, or `undefined` when another holder has it.
   */
  acquire(name: string, holder: string, ttlMs: number, options?: AcquireLeaseOptions): Promise<Lease | undefined>
  /**
   * Extend a held lease to now + `ttlMs`. An expired lease nobody took over is renewed.
   * @throws MemoryStoreError `fenced` when another holder took it over (or it was released).
   */
  renew(lease: LeaseFence & { holder: string }, ttlMs: number, options?: WriteOptions): Promise<Lease>
  /** Give the lease up (its token is kept, so it is never reused). @returns false when it was not held with this token. */
  release(lease: LeaseFence & { holder: string }, options?: WriteOptions): Promise<boolean>
  /** The lease as stored, held or not. */
  get(name: string): Promise<Lease | undefined>
  /**
   * Resolve when `fence` is the live lease, reject with `fenced` otherwise. Inside
   * {@link MemoryStore.transaction} the answer holds until the transaction ends (it holds the
   * write lock); outside it is only a hint. Prefer {@link WriteOptions.fence}.
   */
  check(fence: LeaseFence): Promise<void>
}

// ---------------------------------------------------------------------------------------------
// export / import

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

// ---------------------------------------------------------------------------------------------
// the store

/** The memory store: repositories over one database. */
export interface MemoryStore {
  /** Where the database lives (`':memory:'` for a private in-memory store). */
  readonly path: string
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
  importJsonl(lines: string | Iterable<string> | AsyncIterable<string>, options?: WriteOptions): Promise<ImportResult>
  /** Apply another package's migrations now (same rules as `extraMigrations` at open). */
  migrate(sets: MigrationSet | readonly MigrationSet[]): Promise<AppliedMigration[]>
  /**
   * The extension seam: apply a package's migrations through this store's runner (a read-only
   * store only checks them: `schema-too-old` while some are pending) and return the package's
   * tables on this store's session (see `package-tables.ts`). The same owner gets the same handle.
   */
  tables<TSchema extends Record<string, unknown> = Record<string, never>>(declaration: PackageTablesDeclaration<TSchema>): Promise<PackageTables<TSchema>>
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
  transaction<T>(fn: (store: CoordinatedMemoryStore) => Promise<T> | T, options?: TransactionOptions): Promise<T>
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
