/**
 * The SQLite backend of {@link MemoryStore}: better-sqlite3 (WAL, busy timeout, foreign
 * keys, synchronous=NORMAL) with drizzle for typed queries. Callers never see SQL.
 */
import { existsSync, mkdirSync, rmSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { and, asc, desc, eq, gt, gte, inArray, isNull, lte, ne, or, sql, type SQL } from 'drizzle-orm'
import { type BetterSQLite3Database, drizzle } from 'drizzle-orm/better-sqlite3'
import { isMemoryStoreError, MemoryStoreError } from './errors.ts'
import { encodeExportRecord, EXPORT_FORMAT, EXPORT_VERSION, parseImportLine, type ExportRecord } from './export-format.ts'
import { newId } from './ids.ts'
import { AUDIT_ID_SQL_FUNCTION, auditEntityId } from './audit-id.ts'
import { applyMigrations, readAppliedMigrations } from './migrations.ts'
import { type MemoryStoreOptions, type ResolvedStoreOptions, resolveStoreOptions } from './options.ts'
import { toConversation, toMemory, toMessage, toPersona, toScene } from './rows.ts'
import * as schema from './schema.ts'
import { asArray } from './scope-filter.ts'
import { currentFtsManifest, FTS_META_KEY, FtsIndex, type FtsState, MEMORY_TABLES, MESSAGE_TABLES, parseFtsState, RANK_CAP, sameManifest } from './search-index.ts'
import { storeMigrations } from './store-migrations.ts'
import { estimateTokens, prepareLabel, prepareText } from './text.ts'
import { ConnectionGate } from './gate.ts'
import { layerKeyOf, layerKeyOfRow, parseLayerKey } from './layers.ts'
import {
  openPackageTables,
  type PackageDatabase,
  type PackageSessionPort,
  type PackageTables,
  type PackageTablesHost,
  type PackageTablesDeclaration,
  validateDeclaration,
} from './package-tables.ts'
import type {
  AddMemoryInput,
  AddSceneInput,
  AppendMessageInput,
  AppendMessageResult,
  AcquireLeaseOptions,
  AppliedMigration,
  AuditEntry,
  AuditFilter,
  AuditLog,
  Conversation,
  ConversationFilter,
  ConversationRepository,
  CoordinatedMemoryStore,
  EnsureConversationInput,
  IndexBuildReason,
  EntityName,
  ImportResult,
  LayerKey,
  LayerRepository,
  LayerRevision,
  Lease,
  LeaseFence,
  LeaseRepository,
  Memory,
  MemoryFilter,
  MemoryHit,
  MemoryRepository,
  MemoryScopeFilter,
  MemorySearchOptions,
  MemoryStore,
  Message,
  MessageFilter,
  MessageHit,
  MessageRepository,
  MessageSearchOptions,
  MetaEntry,
  MetaRepository,
  MigrationSet,
  Persona,
  PersonaKey,
  PersonaRepository,
  PutPersonaInput,
  RecordCounts,
  Scene,
  SceneFilter,
  SceneRepository,
  Scope,
  SearchIndexStatus,
  SearchService,
  StoreDiagnostics,
  TransactionOptions,
  UpdateMemoryPatch,
  UpdateScenePatch,
  WriteOptions,
} from './types.ts'
import {
  embeddingToBuffer,
  embeddingValue,
  flagsObject,
  idList,
  optionalTime,
  pageSize,
  requireCount,
  requireFinite,
  requireId,
  requireRole,
  requireScope,
  requireTime,
} from './validate.ts'

type Db = BetterSQLite3Database

/** Meta key of the MiniSearch manifest written by versions before FTS5 (removed at open). */
const LEGACY_INDEX_META_KEY = 'store.search-index'
/** Rows indexed per backfill transaction: short write locks, so other processes keep writing. */
const BACKFILL_BATCH = 5_000
/** The longest SQLite waits for a lock inside one call (it blocks the thread while it waits). */
const BUSY_SLICE_MS = 50
/** FTS5 pages merged per transaction after a backfill. */
const MERGE_PAGES = 2_000
const RESERVED_META_PREFIX = 'store.'
const MAX_META_KEY = 200
const MAX_META_VALUE = 64 * 1024
const DEFAULT_PAGE = 100
const MAX_PAGE = 10_000
const DEFAULT_HITS = 20
const MAX_HITS = 1_000
const MAX_LEASE_NAME = 200
const MAX_LEASE_HOLDER = 200
/** A lease longer than a day is a lock nobody can recover from a crash; refuse it. */
const MAX_LEASE_TTL_MS = 86_400_000

/**
 * Open (creating if needed) a memory store on one SQLite file and bring its schema up to
 * date. Synchronous: the store is ready when this returns. Opening is cheap; the search
 * index is built on first use.
 * @throws MemoryStoreError `schema-too-new` for a database written by a newer version;
 *   `migration-failed`, `migration-mismatch`, `corrupt` (not a database), `busy`,
 *   `not-found` (read-only and missing), `invalid-argument` (bad options).
 */
export function openMemoryStore(options: MemoryStoreOptions): CoordinatedMemoryStore & PackageTablesHost {
  const resolved = resolveStoreOptions(options)
  const inMemory = resolved.path === ':memory:'
  if (!inMemory) {
    if (resolved.readonly && !existsSync(resolved.path)) {
      throw new MemoryStoreError('not-found', `no memory database at ${resolved.path}`)
    }
    if (!resolved.readonly) mkdirSync(dirname(resolved.path), { recursive: true })
  }
  let sqlite: Database.Database
  try {
    sqlite = new Database(resolved.path, { readonly: resolved.readonly, fileMustExist: resolved.readonly, timeout: resolved.busyTimeoutMs })
  } catch (error) {
    throw translateSqliteError(error, `cannot open ${resolved.path}`)
  }
  try {
    sqlite.pragma(`busy_timeout = ${resolved.busyTimeoutMs}`)
    if (!resolved.readonly && !inMemory) {
      // WAL lets readers in other processes proceed while one process writes.
      const mode = sqlite.pragma('journal_mode = WAL', { simple: true })
      if (String(mode).toLowerCase() !== 'wal') throw new MemoryStoreError('corrupt', `could not enable WAL on ${resolved.path} (got ${String(mode)})`)
    }
    // NORMAL is durable in WAL mode except for the last transactions on power loss.
    sqlite.pragma('synchronous = NORMAL')
    sqlite.pragma('foreign_keys = ON')
    sqlite.pragma(`cache_size = -${resolved.cacheMiB * 1024}`)
    sqlite.function(AUDIT_ID_SQL_FUNCTION, { deterministic: true }, (entity, id) => auditEntityId(String(entity), String(id)))
    applyMigrations(sqlite, [storeMigrations(), ...resolved.extraMigrations], resolved.now(), {
      readonly: resolved.readonly,
      package: '@dsh-memory/store',
    })
    const store = new SqliteMemoryStore(sqlite, resolved)
    // From here on SQLite's own (thread-blocking) wait is one short slice; longer waits for
    // another process's write lock happen between slices without blocking the event loop.
    sqlite.pragma(`busy_timeout = ${Math.min(resolved.busyTimeoutMs, BUSY_SLICE_MS)}`)
    return store
  } catch (error) {
    sqlite.close()
    throw translateSqliteError(error, `cannot open ${resolved.path}`)
  }
}

function isBusy(error: unknown): boolean {
  return isMemoryStoreError(error) && error.code === 'busy'
}

/**
 * Run `attempt` until it succeeds, or fails with something other than `busy`, or `retryable()`
 * says the failed attempt changed something, or `budgetMs` has passed; waits asynchronously
 * (jittered) between attempts so the event loop keeps running.
 */
async function retryWhileBusy<T>(budgetMs: number, attempt: () => Promise<T>, retryable: () => boolean = () => true): Promise<T> {
  const deadline = Date.now() + budgetMs
  for (let count = 1; ; count++) {
    try {
      return await attempt()
    } catch (error) {
      if (!isBusy(error) || !retryable() || Date.now() >= deadline) throw error
      await sleep(busyBackoffMs(count))
    }
  }
}

/** Jittered, growing pause between lock attempts (5 ms .. 250 ms), so waiting writers spread out. */
function busyBackoffMs(attempt: number): number {
  const ceiling = Math.min(250, 5 * 2 ** Math.min(attempt, 6))
  return ceiling / 2 + Math.random() * (ceiling / 2)
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** Map driver errors to stable codes; our own errors pass through. */
function translateSqliteError(error: unknown, context: string): unknown {
  if (isMemoryStoreError(error)) return error
  const code = (error as { code?: unknown })?.code
  if (typeof code === 'string') {
    if (code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_') || code === 'SQLITE_LOCKED') {
      return new MemoryStoreError('busy', `${context}: the database stayed locked by another connection`, { cause: error })
    }
    if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT' || code.startsWith('SQLITE_CORRUPT_')) {
      return new MemoryStoreError('corrupt', `${context}: not a valid SQLite database`, { cause: error })
    }
    if (code === 'SQLITE_READONLY' || code.startsWith('SQLITE_READONLY_')) {
      return new MemoryStoreError('readonly', `${context}: the database is read-only`, { cause: error })
    }
  }
  return error
}

interface ChangeSpec {
  entity: EntityName
  entityId: string
  /** Change-log op. Every write names one, so any derived view (not only search) can follow. */
  change: 'insert' | 'update' | 'delete'
  /** Audit op, `<entity>.<verb>`. */
  audit: string
  revision?: number | null
}

/** The SQLite store. Construct through {@link openMemoryStore}. */
class SqliteMemoryStore implements CoordinatedMemoryStore, PackageTablesHost {
  readonly path: string
  readonly readonly: boolean
  readonly conversations: ConversationRepository
  readonly messages: MessageRepository
  readonly memories: MemoryRepository
  readonly scenes: SceneRepository
  readonly persona: PersonaRepository
  readonly audit: AuditLog
  readonly search: SearchService
  readonly meta: MetaRepository
  readonly layers: LayerRepository
  readonly leases: LeaseRepository

  readonly #sqlite: Database.Database
  readonly #db: Db
  readonly #options: ResolvedStoreOptions
  readonly #gate = new ConnectionGate()
  readonly #fts: FtsIndex
  #ftsReason: IndexBuildReason | null = null
  readonly #snapshots = new Set<Database.Database>()
  readonly #runImmediate: Database.Transaction<(op: () => unknown) => unknown>
  readonly #packageTables = new Map<string, PackageTables<Record<string, unknown>>>()
  #closed = false
  #sqliteClosed = false
  #closing: Promise<void> | undefined

  constructor(sqlite: Database.Database, options: ResolvedStoreOptions) {
    this.#sqlite = sqlite
    this.#db = drizzle({ client: sqlite })
    this.#options = options
    this.path = options.path
    this.readonly = options.readonly
    this.#runImmediate = sqlite.transaction((op: () => unknown) => op())
    this.#fts = new FtsIndex(sqlite)

    this.conversations = this.#conversationRepository()
    this.messages = this.#messageRepository()
    this.memories = this.#memoryRepository()
    this.scenes = this.#sceneRepository()
    this.persona = this.#personaRepository()
    this.audit = { list: (filter) => this.#read(() => this.#listAudit(filter ?? {})) }
    this.meta = this.#metaRepository()
    this.search = this.#searchService()
    this.layers = this.#layerRepository()
    this.leases = this.#leaseRepository()
    if (!options.readonly) {
      // The MiniSearch file of versions before FTS5 is dead weight now.
      if (options.legacyIndexPath) rmSync(options.legacyIndexPath, { force: true })
      this.#syncSearchIndex()
    }
  }

  get closed(): boolean {
    return this.#closed
  }

  // -------------------------------------------------------------------------------------------
  // plumbing

  #assertOpen(): void {
    // While closing, the transaction that close() waits for may still finish its work.
    if (this.#closed && (this.#sqliteClosed || !this.#gate.insideTransaction)) {
      throw new MemoryStoreError('closed', 'the memory store is closed')
    }
  }

  #now(): number {
    return Math.round(this.#options.now())
  }

  readonly #statements = new Map<string, Database.Statement>()

  /**
   * A prepared statement, compiled once per connection. The capture hot path (one append per
   * host event) uses these instead of the query builder, which prepares on every call.
   */
  #stmt(source: string): Database.Statement {
    let statement = this.#statements.get(source)
    if (!statement) {
      statement = this.#sqlite.prepare(source)
      this.#statements.set(source, statement)
    }
    return statement
  }

  /** Run a read when the connection is free. */
  #read<T>(op: () => T): Promise<T> {
    return this.#call(false, op)
  }

  /**
   * Run a write atomically (IMMEDIATE: take the write lock up front, so no upgrade deadlock).
   * A fence in `options` is checked first, under that lock.
   */
  #write<T>(op: () => T, options?: WriteOptions): Promise<T> {
    const fence = options?.fence === undefined ? undefined : this.#fenceOf(options.fence)
    let began = false
    return this.#call(
      true,
      () => {
        began = false
        return this.#runImmediate.immediate(() => {
          began = true
          if (fence) this.#assertFence(fence)
          return op()
        }) as T
      },
      // `busy` from BEGIN IMMEDIATE means nothing ran yet: safe to try again.
      () => !began,
    )
  }

  #fenceOf(fence: unknown): LeaseFence {
    const value = fence as LeaseFence | undefined
    if (!value || typeof value !== 'object') throw new MemoryStoreError('invalid-argument', 'fence must be { name, token }')
    return { name: this.#leaseName(value.name), token: requireCount(value.token, 'fence.token') }
  }

  /** Throw `fenced` unless `fence` names the live lease (call inside the write transaction). */
  #assertFence(fence: LeaseFence): void {
    const row = this.#db.select().from(schema.leases).where(eq(schema.leases.name, fence.name)).get()
    const now = this.#now()
    if (row && row.token === fence.token && row.expiresAt > now) return
    const why = !row
      ? 'was never acquired'
      : row.token !== fence.token
        ? `was taken over (token ${row.token} now, this writer holds ${fence.token})`
        : row.expiresAt === 0
          ? 'was released'
          : 'expired'
    throw new MemoryStoreError('fenced', `lease ${fence.name} ${why}; a stale holder may not write`)
  }

  #leaseName(value: unknown): string {
    const name = requireId(value, 'lease name')
    if (name.length > MAX_LEASE_NAME) throw new MemoryStoreError('invalid-argument', `lease name must be at most ${MAX_LEASE_NAME} characters`)
    return name
  }

  /** An audit row without a change-log row (layers and leases are not indexed). */
  #audit(spec: { entity: EntityName; entityId: string; audit: string; revision?: number | null }, options: WriteOptions | undefined, at: number): void {
    const actor = options?.actor ?? this.#options.actor
    this.#db
      .insert(schema.audit)
      .values({ at, op: spec.audit, entity: spec.entity, entityId: auditEntityId(spec.entity, spec.entityId), actor: actor ?? null, revision: spec.revision ?? null })
      .run()
  }

  /**
   * Bump the revision of every layer in `keys` once (inside the write's transaction) and
   * audit it: operation, revision and time, never content.
   */
  #bumpLayers(keys: Iterable<string | undefined>, options: WriteOptions | undefined, now = this.#now()): void {
    const t = schema.layerRevisions
    for (const key of new Set(keys)) {
      if (key === undefined) continue
      const row = this.#db
        .insert(t)
        .values({ layerKey: key, revision: 1, updatedAt: now })
        .onConflictDoUpdate({ target: t.layerKey, set: { revision: sql`${t.revision} + 1`, updatedAt: sql`max(${t.updatedAt}, ${now})` } })
        .returning({ revision: t.revision })
        .get()
      this.#audit({ entity: 'layer', entityId: key, audit: 'layer.change', revision: row?.revision ?? null }, options, now)
    }
  }

  /**
   * Run `op` on the connection. A `busy` failure is retried (asynchronously, with jitter) until
   * `busyTimeoutMs` has passed when `retryable()` says the attempt changed nothing; reads
   * always can be retried.
   */
  async #call<T>(write: boolean, op: () => T, retryable: () => boolean = () => !write): Promise<T> {
    this.#assertOpen()
    if (write && this.readonly) throw new MemoryStoreError('readonly', 'the memory store was opened read-only')
    return retryWhileBusy(
      this.#options.busyTimeoutMs,
      () =>
        this.#gate.run(() => {
          this.#assertOpen()
          try {
            return op()
          } catch (error) {
            throw translateSqliteError(error, write ? 'write failed' : 'read failed')
          }
        }),
      retryable,
    )
  }

  /** Record the audit row and the change-log row of a write, inside its transaction. */
  #record(spec: ChangeSpec, options: WriteOptions | undefined, at = this.#now()): void {
    const actor = options?.actor ?? this.#options.actor
    if (actor !== null && actor !== undefined && (typeof actor !== 'string' || actor.length === 0 || actor.length > 200)) {
      throw new MemoryStoreError('invalid-argument', 'actor must be a non-empty string of at most 200 characters')
    }
    this.#stmt('INSERT INTO store_audit (at, op, entity, entity_id, actor, revision) VALUES (?, ?, ?, ?, ?, ?)').run(at, spec.audit, spec.entity, auditEntityId(spec.entity, spec.entityId), actor ?? null, spec.revision ?? null)
    this.#stmt('INSERT INTO store_changes (entity, entity_id, op, at) VALUES (?, ?, ?, ?)').run(spec.entity, spec.entityId, spec.change, at)
  }

  #setMetaRow(key: string, value: string, options?: WriteOptions): void {
    const now = this.#now()
    const existed = this.#db.select({ key: schema.meta.key }).from(schema.meta).where(eq(schema.meta.key, key)).get()
    this.#db
      .insert(schema.meta)
      .values({ key, value, updatedAt: now })
      .onConflictDoUpdate({ target: schema.meta.key, set: { value, updatedAt: now } })
      .run()
    this.#record({ entity: 'meta', entityId: key, change: existed ? 'update' : 'insert', audit: 'meta.set' }, options, now)
  }

  // -------------------------------------------------------------------------------------------
  // conversations

  #conversationRepository(): ConversationRepository {
    const t = schema.conversations
    const getRow = (id: string) => this.#db.select().from(t).where(eq(t.id, id)).get()
    return {
      ensure: async (input: EnsureConversationInput, options?: WriteOptions) => {
        const id = requireId(input?.id, 'id')
        const workspace = prepareLabel(input.workspace ?? '', 'workspace', this.#options.limits.label, true)
        const title = input.title === undefined || input.title === null ? undefined : prepareLabel(input.title, 'title', this.#options.limits.label, true)
        const startedAt = input.startedAt === undefined ? undefined : requireTime(input.startedAt, 'startedAt')
        const unchanged = (existing: typeof t.$inferSelect | undefined): boolean =>
          existing !== undefined && (!workspace || workspace === existing.workspace) && (!title || title === existing.title)
        // Capture calls this before every message: when nothing would change, a read answers
        // without taking the write lock (the write path below re-checks under the lock).
        const current = await this.#read(() => getRow(id))
        if (unchanged(current)) return { created: false, conversation: toConversation(current!) }
        return this.#write(() => {
          const now = this.#now()
          const existing = getRow(id)
          if (!existing) {
            this.#db
              .insert(t)
              .values({ id, workspace, title: title || null, startedAt: startedAt ?? now, updatedAt: now, flags: {} })
              .run()
            this.#record({ entity: 'conversation', entityId: id, change: 'insert', audit: 'conversation.create' }, options, now)
            return { created: true, conversation: toConversation(getRow(id)!) }
          }
          const patch: Partial<typeof t.$inferInsert> = {}
          // An empty workspace means "unknown here", never "moved to nowhere".
          if (workspace && workspace !== existing.workspace) patch.workspace = workspace
          if (title && title !== existing.title) patch.title = title
          if (Object.keys(patch).length === 0) return { created: false, conversation: toConversation(existing) }
          this.#db.update(t).set({ ...patch, updatedAt: Math.max(now, existing.updatedAt) }).where(eq(t.id, id)).run()
          this.#record({ entity: 'conversation', entityId: id, change: 'update', audit: 'conversation.update' }, options, now)
          return { created: false, conversation: toConversation(getRow(id)!) }
        }, options)
      },
      get: async (id: string) => {
        requireId(id, 'id')
        return this.#read(() => {
          const row = getRow(id)
          return row ? toConversation(row) : undefined
        })
      },
      list: async (filter: ConversationFilter = {}) => {
        const limit = pageSize(filter.limit, DEFAULT_PAGE, MAX_PAGE)
        const offset = filter.offset === undefined ? 0 : requireCount(filter.offset, 'offset')
        const conditions: SQL[] = []
        if (filter.workspace !== undefined) conditions.push(eq(t.workspace, filter.workspace))
        if (filter.since !== undefined) conditions.push(gte(t.updatedAt, requireTime(filter.since, 'since')))
        if (filter.until !== undefined) conditions.push(lte(t.updatedAt, requireTime(filter.until, 'until')))
        return this.#read(() =>
          this.#db
            .select()
            .from(t)
            .where(and(...conditions))
            .orderBy(desc(t.updatedAt), desc(t.id))
            .limit(limit)
            .offset(offset)
            .all()
            .map(toConversation),
        )
      },
      end: async (id: string, at?: number, options?: WriteOptions) => {
        requireId(id, 'id')
        return this.#write(() => {
          const now = this.#now()
          const endedAt = optionalTime(at, 'at', now)
          const existing = getRow(id)
          if (!existing) throw new MemoryStoreError('not-found', `conversation ${id} does not exist`)
          this.#db.update(t).set({ endedAt, updatedAt: Math.max(now, existing.updatedAt) }).where(eq(t.id, id)).run()
          this.#record({ entity: 'conversation', entityId: id, change: 'update', audit: 'conversation.end' }, options, now)
          return toConversation(getRow(id)!)
        }, options)
      },
      delete: async (id: string, options?: WriteOptions) => {
        requireId(id, 'id')
        return this.#write(() => {
          if (!getRow(id)) return false
          const now = this.#now()
          const messageIds = this.#db.select({ id: schema.messages.id }).from(schema.messages).where(eq(schema.messages.conversationId, id)).all()
          this.#db.delete(t).where(eq(t.id, id)).run()
          // The cascade removed the messages; the index learns about each from the change log.
          for (const { id: messageId } of messageIds) {
            this.#fts.messages.remove(messageId)
            this.#db.insert(schema.changes).values({ entity: 'message', entityId: messageId, op: 'delete', at: now }).run()
          }
          this.#record({ entity: 'conversation', entityId: id, change: 'delete', audit: 'conversation.delete' }, options, now)
          return true
        }, options)
      },
    }
  }

  // -------------------------------------------------------------------------------------------
  // messages

  #messageRepository(): MessageRepository {
    const t = schema.messages
    const getRow = (id: string) => this.#db.select().from(t).where(eq(t.id, id)).get()
    const byHostId = (conversationId: string, hostMessageId: string) =>
      this.#db
        .select()
        .from(t)
        .where(and(eq(t.conversationId, conversationId), eq(t.hostMessageId, hostMessageId)))
        .get()
    return {
      append: async (input: AppendMessageInput, options?: WriteOptions): Promise<AppendMessageResult> => {
        const conversationId = requireId(input?.conversationId, 'conversationId')
        const hostMessageId = requireId(input.hostMessageId, 'hostMessageId')
        const role = requireRole(input.role)
        const prepared = prepareText(input.text, 'text', this.#options.limits.message)
        const turn = input.turn === undefined ? 0 : requireCount(input.turn, 'turn')
        const seq = input.seq === undefined ? undefined : requireCount(input.seq, 'seq')
        const sourceIds = idList(input.sourceIds, 'sourceIds')
        const tokensEstimate = input.tokensEstimate === undefined ? estimateTokens(prepared.text) : requireCount(input.tokensEstimate, 'tokensEstimate')
        const flags = flagsObject(input.flags)
        const createdAt = input.createdAt === undefined ? undefined : requireTime(input.createdAt, 'createdAt')
        return this.#write(() => {
          const existingId = this.#stmt('SELECT id FROM store_messages WHERE conversation_id = ? AND host_message_id = ?').pluck().get(conversationId, hostMessageId) as string | undefined
          if (existingId !== undefined) return { inserted: false, message: toMessage(getRow(existingId)!), redactions: 0 }
          const conversationUpdatedAt = this.#stmt('SELECT updated_at FROM store_conversations WHERE id = ?').pluck().get(conversationId) as number | undefined
          if (conversationUpdatedAt === undefined) {
            throw new MemoryStoreError('not-found', `conversation ${conversationId} does not exist; call conversations.ensure() first`)
          }
          const now = this.#now()
          const at = createdAt ?? now
          const nextSeq = seq ?? ((this.#stmt('SELECT max(seq) FROM store_messages WHERE conversation_id = ?').pluck().get(conversationId) as number | null) ?? 0) + 1
          const id = newId(at)
          this.#stmt(
            'INSERT INTO store_messages (id, conversation_id, host_message_id, role, text, turn, seq, source_ids, tokens_estimate, created_at, flags) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
          ).run(id, conversationId, hostMessageId, role, prepared.text, turn, nextSeq, JSON.stringify(sourceIds), tokensEstimate, at, JSON.stringify(flags))
          this.#fts.addMessage({ id, conversationId, role, createdAt: at, text: prepared.text })
          // Keeps "recent conversations" ordering right; not a change the index cares about.
          if (at > conversationUpdatedAt) this.#stmt('UPDATE store_conversations SET updated_at = ? WHERE id = ?').run(at, conversationId)
          this.#record({ entity: 'message', entityId: id, change: 'insert', audit: 'message.append' }, options, now)
          // The row as written (the same values a re-read would return).
          const message: Message = { id, conversationId, hostMessageId, role, text: prepared.text, turn, seq: nextSeq, sourceIds: [...sourceIds], tokensEstimate, createdAt: at, flags }
          return { inserted: true, message, redactions: prepared.redactions }
        }, options)
      },
      get: async (id: string) => {
        requireId(id, 'id')
        return this.#read(() => {
          const row = getRow(id)
          return row ? toMessage(row) : undefined
        })
      },
      getByHostId: async (conversationId: string, hostMessageId: string) => {
        requireId(conversationId, 'conversationId')
        requireId(hostMessageId, 'hostMessageId')
        return this.#read(() => {
          const row = byHostId(conversationId, hostMessageId)
          return row ? toMessage(row) : undefined
        })
      },
      list: async (filter: MessageFilter = {}) => {
        const limit = pageSize(filter.limit, DEFAULT_PAGE, MAX_PAGE)
        const offset = filter.offset === undefined ? 0 : requireCount(filter.offset, 'offset')
        const conditions: SQL[] = []
        if (filter.conversationId !== undefined) conditions.push(eq(t.conversationId, requireId(filter.conversationId, 'conversationId')))
        if (filter.role !== undefined) conditions.push(eq(t.role, requireRole(filter.role)))
        if (filter.since !== undefined) conditions.push(gte(t.createdAt, requireTime(filter.since, 'since')))
        if (filter.until !== undefined) conditions.push(lte(t.createdAt, requireTime(filter.until, 'until')))
        if (filter.afterSeq !== undefined) conditions.push(gt(t.seq, requireCount(filter.afterSeq, 'afterSeq')))
        if (filter.workspace !== undefined) {
          conditions.push(
            inArray(t.conversationId, this.#db.select({ id: schema.conversations.id }).from(schema.conversations).where(eq(schema.conversations.workspace, filter.workspace))),
          )
        }
        const direction = filter.order === 'desc' ? desc : asc
        return this.#read(() =>
          this.#db
            .select()
            .from(t)
            .where(and(...conditions))
            .orderBy(direction(t.createdAt), direction(t.seq), direction(t.id))
            .limit(limit)
            .offset(offset)
            .all()
            .map(toMessage),
        )
      },
      around: async (ids: readonly string[], span: number) => {
        const list = [...new Set(idList(ids, 'ids'))]
        if (list.length > 1_000) throw new MemoryStoreError('invalid-argument', 'around() takes at most 1000 ids')
        if (!Number.isSafeInteger(span) || span < 0 || span > 20) throw new MemoryStoreError('invalid-argument', 'span must be an integer between 0 and 20')
        if (list.length === 0) return []
        return this.#read(() => {
          // One query: each hit's (conversation, seq ± span) window through the (conversation_id, seq) index.
          const rowids = this.#stmt(
            `WITH hits(cid, lo, hi) AS (SELECT m.conversation_id, m.seq - ?, m.seq + ? FROM json_each(?) j JOIN store_messages m ON m.id = j.value)
             SELECT DISTINCT m.rowid FROM hits JOIN store_messages m ON m.conversation_id = hits.cid AND m.seq BETWEEN hits.lo AND hits.hi`,
          )
            .pluck()
            .all(span, span, JSON.stringify(list)) as number[]
          if (rowids.length === 0) return []
          return this.#db
            .select()
            .from(t)
            .where(sql`rowid IN (SELECT value FROM json_each(${JSON.stringify(rowids)}))`)
            .orderBy(asc(t.conversationId), asc(t.seq), asc(t.id))
            .all()
            .map(toMessage)
        })
      },
      count: async (filter: Pick<MessageFilter, 'workspace' | 'conversationId' | 'role' | 'since' | 'until'> = {}) => {
        const conditions: SQL[] = []
        if (filter.conversationId !== undefined) conditions.push(eq(t.conversationId, requireId(filter.conversationId, 'conversationId')))
        if (filter.role !== undefined) conditions.push(eq(t.role, requireRole(filter.role)))
        if (filter.since !== undefined) conditions.push(gte(t.createdAt, requireTime(filter.since, 'since')))
        if (filter.until !== undefined) conditions.push(lte(t.createdAt, requireTime(filter.until, 'until')))
        if (filter.workspace !== undefined) {
          conditions.push(
            inArray(t.conversationId, this.#db.select({ id: schema.conversations.id }).from(schema.conversations).where(eq(schema.conversations.workspace, filter.workspace))),
          )
        }
        return this.#read(() => this.#db.select({ n: sql<number>`count(*)` }).from(t).where(and(...conditions)).get()?.n ?? 0)
      },
      delete: async (id: string, options?: WriteOptions) => {
        requireId(id, 'id')
        return this.#write(() => {
          if (!getRow(id)) return false
          this.#db.delete(t).where(eq(t.id, id)).run()
          this.#fts.messages.remove(id)
          this.#record({ entity: 'message', entityId: id, change: 'delete', audit: 'message.delete' }, options)
          return true
        }, options)
      },
    }
  }

  // -------------------------------------------------------------------------------------------
  // memories

  #memoryRepository(): MemoryRepository {
    const t = schema.memories
    const getRow = (id: string) => this.#db.select().from(t).where(eq(t.id, id)).get()

    const insertMemory = (values: MemoryValues, createdAtInput: number | undefined, options: WriteOptions | undefined): string => {
      const now = this.#now()
      const createdAt = createdAtInput ?? now
      const id = newId(createdAt)
      this.#db
        .insert(t)
        .values({ id, ...values, revision: 1, createdAt, updatedAt: createdAt })
        .run()
      this.#fts.addMemory(id, values.text)
      this.#record({ entity: 'memory', entityId: id, change: 'insert', audit: 'memory.add', revision: 1 }, options, now)
      return id
    }

    return {
      add: async (input: AddMemoryInput, options?: WriteOptions) => {
        // Validate before waiting for the connection, so bad input fails fast.
        const values = this.#memoryValues(input)
        const createdAt = input.createdAt === undefined ? undefined : requireTime(input.createdAt, 'createdAt')
        return this.#write(() => {
          const memory = toMemory(getRow(insertMemory(values, createdAt, options))!)
          this.#bumpLayers([layerKeyOfRow(memory.scope, memory.workspace)], options)
          return memory
        }, options)
      },
      get: async (id: string) => {
        requireId(id, 'id')
        return this.#read(() => {
          const row = getRow(id)
          return row ? toMemory(row) : undefined
        })
      },
      update: async (id: string, patch: UpdateMemoryPatch, options?: WriteOptions) => {
        requireId(id, 'id')
        if (!patch || typeof patch !== 'object') throw new MemoryStoreError('invalid-argument', 'patch must be an object')
        const set: Partial<typeof t.$inferInsert> = {}
        if (patch.text !== undefined) set.text = prepareText(patch.text, 'text', this.#options.limits.memory).text
        if (patch.kind !== undefined) set.kind = prepareLabel(patch.kind, 'kind', this.#options.limits.label)
        if (patch.priority !== undefined) set.priority = requireFinite(patch.priority, 'priority')
        if (patch.flags !== undefined) set.flags = flagsObject(patch.flags)
        const embedding = embeddingValue(patch.embedding)
        if (embedding !== undefined) {
          set.embedding = embedding ? embeddingToBuffer(embedding) : null
          set.embeddingDims = embedding ? embedding.length : null
          if (!embedding) set.embeddingModel = null
        }
        if (patch.embeddingModel !== undefined) {
          set.embeddingModel = patch.embeddingModel === null ? null : prepareLabel(patch.embeddingModel, 'embeddingModel', this.#options.limits.label)
        }
        return this.#write(() => {
          const existing = getRow(id)
          if (!existing) throw new MemoryStoreError('not-found', `memory ${id} does not exist`)
          if (Object.keys(set).length === 0) return toMemory(existing)
          const now = this.#now()
          const revision = existing.revision + 1
          this.#db
            .update(t)
            .set({ ...set, revision, updatedAt: Math.max(now, existing.updatedAt) })
            .where(eq(t.id, id))
            .run()
          if (set.text !== undefined && set.text !== existing.text) this.#fts.updateMemory(id, set.text)
          this.#record({ entity: 'memory', entityId: id, change: 'update', audit: 'memory.update', revision }, options, now)
          // An embedding is derived data: attaching one does not change what the layer holds.
          if (Object.keys(set).some((key) => key !== 'embedding' && key !== 'embeddingDims' && key !== 'embeddingModel')) {
            this.#bumpLayers([layerKeyOfRow(existing.scope, existing.workspace)], options, now)
          }
          return toMemory(getRow(id)!)
        }, options)
      },
      supersede: async (oldId: string, input: Partial<AddMemoryInput> & { text: string }, options?: WriteOptions) => {
        requireId(oldId, 'oldId')
        if (!input || typeof input !== 'object') throw new MemoryStoreError('invalid-argument', 'input must be an object')
        return this.#write(() => {
          const old = getRow(oldId)
          if (!old) throw new MemoryStoreError('not-found', `memory ${oldId} does not exist`)
          if (old.supersededBy) {
            throw new MemoryStoreError('conflict', `memory ${oldId} is already superseded by ${old.supersededBy}; supersede the newest version`)
          }
          const merged: AddMemoryInput = {
            kind: input.kind ?? old.kind,
            scope: input.scope ?? old.scope,
            workspace: input.scope === undefined && input.workspace === undefined ? old.workspace : input.workspace,
            sessionId: input.scope === undefined && input.sessionId === undefined ? old.sessionId : input.sessionId,
            priority: input.priority ?? old.priority,
            flags: input.flags ?? old.flags,
            text: input.text,
            sourceMessageIds: input.sourceMessageIds ?? [],
            embedding: input.embedding,
            embeddingModel: input.embeddingModel,
            createdAt: input.createdAt,
          }
          const createdAt = merged.createdAt === undefined ? undefined : requireTime(merged.createdAt, 'createdAt')
          const newId = insertMemory(this.#memoryValues(merged), createdAt, options)
          const now = this.#now()
          const revision = old.revision + 1
          this.#db
            .update(t)
            .set({ supersededBy: newId, revision, updatedAt: Math.max(now, old.updatedAt) })
            .where(eq(t.id, oldId))
            .run()
          this.#record({ entity: 'memory', entityId: oldId, change: 'update', audit: 'memory.supersede', revision }, options, now)
          const created = toMemory(getRow(newId)!)
          this.#bumpLayers([layerKeyOfRow(old.scope, old.workspace), layerKeyOfRow(created.scope, created.workspace)], options, now)
          return created
        }, options)
      },
      history: async (id: string) => {
        requireId(id, 'id')
        return this.#read(() => {
          const ids = this.#memoryChain(id, 'both')
          if (ids.length === 0) return []
          return this.#db.select().from(t).where(inArray(t.id, ids)).orderBy(asc(t.createdAt), asc(t.id)).all().map(toMemory)
        })
      },
      delete: async (id: string, options?: WriteOptions) => {
        requireId(id, 'id')
        return this.#write(() => {
          if (!getRow(id)) return 0
          const ids = this.#memoryChain(id, 'older')
          const now = this.#now()
          const placements = this.#db.select({ scope: t.scope, workspace: t.workspace }).from(t).where(inArray(t.id, ids)).all()
          this.#db.delete(t).where(inArray(t.id, ids)).run()
          for (const deleted of ids) {
            this.#fts.memories.remove(deleted)
            this.#record({ entity: 'memory', entityId: deleted, change: 'delete', audit: 'memory.delete' }, options, now)
          }
          const sceneLayers = this.#pruneSceneReferences(ids, options, now)
          this.#bumpLayers([...placements.map((row) => layerKeyOfRow(row.scope, row.workspace)), ...sceneLayers], options, now)
          return ids.length
        }, options)
      },
      list: async (filter: MemoryFilter = {}) => {
        const limit = pageSize(filter.limit, DEFAULT_PAGE, MAX_PAGE)
        const offset = filter.offset === undefined ? 0 : requireCount(filter.offset, 'offset')
        const where = this.#memoryScopeCondition(filter)
        const order =
          filter.orderBy === 'updated'
            ? [desc(t.updatedAt), desc(t.id)]
            : filter.orderBy === 'priority'
              ? [desc(t.priority), desc(t.createdAt), desc(t.id)]
              : [desc(t.createdAt), desc(t.id)]
        return this.#read(() =>
          this.#db
            .select()
            .from(t)
            .where(where)
            .orderBy(...order)
            .limit(limit)
            .offset(offset)
            .all()
            .map(toMemory),
        )
      },
      count: async (filter: MemoryScopeFilter = {}) => {
        const where = this.#memoryScopeCondition(filter)
        return this.#read(() => this.#db.select({ n: sql<number>`count(*)` }).from(t).where(where).get()?.n ?? 0)
      },
      touchRecalled: async (ids: readonly string[], at?: number, options?: WriteOptions) => {
        const list = [...new Set(idList(ids, 'ids'))]
        if (list.length === 0) return 0
        return this.#write(() => {
          const now = this.#now()
          const recalledAt = optionalTime(at, 'at', now)
          const existing = this.#db.select({ id: t.id }).from(t).where(inArray(t.id, list)).all()
          if (existing.length === 0) return 0
          this.#db
            .update(t)
            .set({ lastRecalledAt: recalledAt })
            .where(inArray(t.id, existing.map((row) => row.id)))
            .run()
          for (const row of existing) this.#record({ entity: 'memory', entityId: row.id, change: 'update', audit: 'memory.recall' }, options, now)
          return existing.length
        }, options)
      },
      mergeInto: async (targetId: string, sourceIds: readonly string[], options?: WriteOptions) => {
        requireId(targetId, 'targetId')
        const sources = [...new Set(idList(sourceIds, 'sourceIds'))]
        if (sources.includes(targetId)) throw new MemoryStoreError('invalid-argument', 'a memory cannot be merged into itself')
        return this.#write(() => {
          const target = getRow(targetId)
          if (!target) throw new MemoryStoreError('not-found', `memory ${targetId} does not exist`)
          if (target.supersededBy) throw new MemoryStoreError('conflict', `memory ${targetId} is already superseded by ${target.supersededBy}; merge into the newest version`)
          if (sources.length === 0) return toMemory(target)
          const rows = sources.map((sourceId) => {
            const row = getRow(sourceId)
            if (!row) throw new MemoryStoreError('not-found', `memory ${sourceId} does not exist`)
            if (row.supersededBy) throw new MemoryStoreError('conflict', `memory ${sourceId} is already superseded by ${row.supersededBy}`)
            return row
          })
          const now = this.#now()
          for (const row of rows) {
            const revision = row.revision + 1
            this.#db
              .update(t)
              .set({ supersededBy: targetId, revision, updatedAt: Math.max(now, row.updatedAt) })
              .where(eq(t.id, row.id))
              .run()
            this.#record({ entity: 'memory', entityId: row.id, change: 'update', audit: 'memory.merge', revision }, options, now)
          }
          const sourceMessageIds = [...new Set([...target.sourceMessageIds, ...rows.flatMap((row) => row.sourceMessageIds)])]
          const revision = target.revision + 1
          this.#db
            .update(t)
            .set({ sourceMessageIds, revision, updatedAt: Math.max(now, target.updatedAt) })
            .where(eq(t.id, targetId))
            .run()
          this.#record({ entity: 'memory', entityId: targetId, change: 'update', audit: 'memory.merge', revision }, options, now)
          this.#bumpLayers([target, ...rows].map((row) => layerKeyOfRow(row.scope, row.workspace)), options, now)
          return toMemory(getRow(targetId)!)
        }, options)
      },
    }
  }

  /** Validate and normalise memory input into column values (everything but ids and times). */
  #memoryValues(input: AddMemoryInput): MemoryValues {
    if (!input || typeof input !== 'object') throw new MemoryStoreError('invalid-argument', 'memory input must be an object')
    const limits = this.#options.limits
    const scope = requireScope(input.scope)
    const placement = this.#placement(scope, input.workspace, input.sessionId)
    const embedding = embeddingValue(input.embedding)
    return {
      kind: prepareLabel(input.kind, 'kind', limits.label),
      text: prepareText(input.text, 'text', limits.memory).text,
      scope,
      ...placement,
      sourceMessageIds: idList(input.sourceMessageIds, 'sourceMessageIds'),
      priority: input.priority === undefined ? 0 : requireFinite(input.priority, 'priority'),
      flags: flagsObject(input.flags),
      embedding: embedding ? embeddingToBuffer(embedding) : null,
      embeddingDims: embedding ? embedding.length : null,
      embeddingModel:
        embedding && input.embeddingModel !== undefined && input.embeddingModel !== null
          ? prepareLabel(input.embeddingModel, 'embeddingModel', limits.label)
          : null,
    }
  }

  /** The workspace/session columns for a scope, enforcing which are required or forbidden. */
  #placement(scope: Scope, workspaceInput: unknown, sessionInput: unknown): { workspace: string | null; sessionId: string | null } {
    const limit = this.#options.limits.label
    const workspace =
      workspaceInput === undefined || workspaceInput === null || workspaceInput === '' ? null : prepareLabel(workspaceInput, 'workspace', limit)
    const sessionId = sessionInput === undefined || sessionInput === null ? null : requireId(sessionInput, 'sessionId')
    if (scope === 'global' && workspace !== null) {
      throw new MemoryStoreError('invalid-argument', 'a global memory must not have a workspace (use scope "workspace")')
    }
    if (scope === 'workspace' && workspace === null) throw new MemoryStoreError('invalid-argument', 'a workspace memory needs a workspace')
    if (scope === 'session' && sessionId === null) throw new MemoryStoreError('invalid-argument', 'a session memory needs a sessionId')
    return { workspace, sessionId }
  }

  /** SQL twin of `matchesScope` (scope-filter.ts); keep the two in step. */
  #memoryScopeCondition(filter: MemoryScopeFilter, table: typeof schema.memories | typeof schema.scenes = schema.memories): SQL | undefined {
    const t = table
    const conditions: (SQL | undefined)[] = []
    if (t === schema.memories && !filter.includeSuperseded) conditions.push(isNull(schema.memories.supersededBy))
    if (filter.scope !== undefined) conditions.push(inArray(t.scope, asArray(filter.scope).map((s) => requireScope(s))))
    if (t === schema.memories && filter.kind !== undefined) conditions.push(inArray(schema.memories.kind, [...asArray(filter.kind)]))
    if (filter.since !== undefined) conditions.push(gte(t.createdAt, requireTime(filter.since, 'since')))
    if (filter.until !== undefined) conditions.push(lte(t.createdAt, requireTime(filter.until, 'until')))
    const local: (SQL | undefined)[] = [ne(t.scope, 'global')]
    if (filter.workspace !== undefined) local.push(eq(t.workspace, filter.workspace))
    if (filter.sessionId !== undefined) local.push(or(ne(t.scope, 'session'), eq(t.sessionId, filter.sessionId)))
    conditions.push(filter.includeGlobal === false ? and(...local) : or(eq(t.scope, 'global'), and(...local)))
    return and(...conditions)
  }

  /** Ids linked to `id` through `superseded_by`: the older versions, or the whole chain. */
  #memoryChain(id: string, direction: 'older' | 'both'): string[] {
    const older = `WITH RECURSIVE older(id) AS (
        SELECT id FROM store_memories WHERE id = ?
        UNION SELECT m.id FROM store_memories m JOIN older o ON m.superseded_by = o.id)`
    if (direction === 'older') {
      return (this.#sqlite.prepare(`${older} SELECT id FROM older`).all(id) as { id: string }[]).map((row) => row.id)
    }
    // Walk to the newest version, then collect everything older than it.
    const newest = this.#sqlite
      .prepare(
        `WITH RECURSIVE newer(id, depth) AS (
          SELECT id, 0 FROM store_memories WHERE id = ?
          UNION SELECT m.superseded_by, n.depth + 1 FROM store_memories m JOIN newer n ON m.id = n.id WHERE m.superseded_by IS NOT NULL)
        SELECT id FROM newer ORDER BY depth DESC LIMIT 1`,
      )
      .get(id) as { id: string } | undefined
    if (!newest) return []
    return this.#memoryChain(newest.id, 'older')
  }

  /**
   * Remove deleted memory ids from scenes that list them (a deletion must not leave pointers behind).
   * @returns the layer keys of the scenes changed (the caller bumps them with its own).
   */
  #pruneSceneReferences(deleted: string[], options: WriteOptions | undefined, now: number): (string | undefined)[] {
    const layers: (string | undefined)[] = []
    const gone = new Set(deleted)
    const placeholders = deleted.map(() => '?').join(',')
    const sceneIds = this.#sqlite
      .prepare(`SELECT DISTINCT s.id AS id FROM store_scenes s, json_each(s.memory_ids) j WHERE j.value IN (${placeholders})`)
      .all(...deleted) as { id: string }[]
    for (const { id } of sceneIds) {
      const scene = this.#db.select().from(schema.scenes).where(eq(schema.scenes.id, id)).get()!
      const revision = scene.revision + 1
      this.#db
        .update(schema.scenes)
        .set({ memoryIds: scene.memoryIds.filter((memoryId) => !gone.has(memoryId)), revision, updatedAt: Math.max(now, scene.updatedAt) })
        .where(eq(schema.scenes.id, id))
        .run()
      this.#record({ entity: 'scene', entityId: id, change: 'update', audit: 'scene.update', revision }, options, now)
      layers.push(layerKeyOfRow(scene.scope, scene.workspace))
    }
    return layers
  }

  // -------------------------------------------------------------------------------------------
  // scenes

  #sceneRepository(): SceneRepository {
    const t = schema.scenes
    const getRow = (id: string) => this.#db.select().from(t).where(eq(t.id, id)).get()
    return {
      add: async (input: AddSceneInput, options?: WriteOptions) => {
        if (!input || typeof input !== 'object') throw new MemoryStoreError('invalid-argument', 'scene input must be an object')
        const scope = requireScope(input.scope)
        const values = {
          title: prepareLabel(input.title, 'title', this.#options.limits.label),
          summary: prepareText(input.summary, 'summary', this.#options.limits.scene).text,
          scope,
          ...this.#placement(scope, input.workspace, input.sessionId),
          memoryIds: idList(input.memoryIds, 'memoryIds'),
          flags: flagsObject(input.flags),
        }
        return this.#write(() => {
          const now = this.#now()
          const createdAt = optionalTime(input.createdAt, 'createdAt', now)
          const id = newId(createdAt)
          this.#db
            .insert(t)
            .values({ id, ...values, revision: 1, createdAt, updatedAt: createdAt })
            .run()
          this.#record({ entity: 'scene', entityId: id, change: 'insert', audit: 'scene.add', revision: 1 }, options, now)
          this.#bumpLayers([layerKeyOfRow(values.scope, values.workspace)], options, now)
          return toScene(getRow(id)!)
        }, options)
      },
      get: async (id: string) => {
        requireId(id, 'id')
        return this.#read(() => {
          const row = getRow(id)
          return row ? toScene(row) : undefined
        })
      },
      update: async (id: string, patch: UpdateScenePatch, options?: WriteOptions) => {
        requireId(id, 'id')
        if (!patch || typeof patch !== 'object') throw new MemoryStoreError('invalid-argument', 'patch must be an object')
        const set: Partial<typeof t.$inferInsert> = {}
        if (patch.title !== undefined) set.title = prepareLabel(patch.title, 'title', this.#options.limits.label)
        if (patch.summary !== undefined) set.summary = prepareText(patch.summary, 'summary', this.#options.limits.scene).text
        if (patch.memoryIds !== undefined) set.memoryIds = idList(patch.memoryIds, 'memoryIds')
        if (patch.flags !== undefined) set.flags = flagsObject(patch.flags)
        return this.#write(() => {
          const existing = getRow(id)
          if (!existing) throw new MemoryStoreError('not-found', `scene ${id} does not exist`)
          if (Object.keys(set).length === 0) return toScene(existing)
          const now = this.#now()
          const revision = existing.revision + 1
          this.#db
            .update(t)
            .set({ ...set, revision, updatedAt: Math.max(now, existing.updatedAt) })
            .where(eq(t.id, id))
            .run()
          this.#record({ entity: 'scene', entityId: id, change: 'update', audit: 'scene.update', revision }, options, now)
          this.#bumpLayers([layerKeyOfRow(existing.scope, existing.workspace)], options, now)
          return toScene(getRow(id)!)
        }, options)
      },
      delete: async (id: string, options?: WriteOptions) => {
        requireId(id, 'id')
        return this.#write(() => {
          const existing = getRow(id)
          if (!existing) return false
          this.#db.delete(t).where(eq(t.id, id)).run()
          this.#record({ entity: 'scene', entityId: id, change: 'delete', audit: 'scene.delete' }, options)
          this.#bumpLayers([layerKeyOfRow(existing.scope, existing.workspace)], options)
          return true
        }, options)
      },
      list: async (filter: SceneFilter = {}) => {
        const limit = pageSize(filter.limit, DEFAULT_PAGE, MAX_PAGE)
        const offset = filter.offset === undefined ? 0 : requireCount(filter.offset, 'offset')
        const where = this.#memoryScopeCondition(filter, t)
        return this.#read(() =>
          this.#db.select().from(t).where(where).orderBy(desc(t.updatedAt), desc(t.id)).limit(limit).offset(offset).all().map(toScene),
        )
      },
    }
  }

  // -------------------------------------------------------------------------------------------
  // persona

  #personaKey(key: PersonaKey): { scope: 'global' | 'workspace'; workspace: string } {
    if (!key || typeof key !== 'object') throw new MemoryStoreError('invalid-argument', 'persona key must be an object')
    if (key.scope === 'global') {
      if (key.workspace !== undefined && key.workspace !== null && key.workspace !== '') {
        throw new MemoryStoreError('invalid-argument', 'the global persona has no workspace')
      }
      return { scope: 'global', workspace: '' }
    }
    if (key.scope === 'workspace') {
      return { scope: 'workspace', workspace: prepareLabel(key.workspace, 'workspace', this.#options.limits.label) }
    }
    throw new MemoryStoreError('invalid-argument', `persona scope must be 'global' or 'workspace', got ${JSON.stringify(key.scope)}`)
  }

  #personaRepository(): PersonaRepository {
    const t = schema.persona
    const getRow = (key: { scope: 'global' | 'workspace'; workspace: string }) =>
      this.#db
        .select()
        .from(t)
        .where(and(eq(t.scope, key.scope), eq(t.workspace, key.workspace)))
        .get()
    const entityId = (key: { scope: string; workspace: string }) => (key.scope === 'global' ? 'global' : `workspace:${key.workspace}`)
    return {
      get: async (key: PersonaKey) => {
        const resolved = this.#personaKey(key)
        return this.#read(() => {
          const row = getRow(resolved)
          return row ? toPersona(row) : undefined
        })
      },
      put: async (input: PutPersonaInput, options?: WriteOptions) => {
        const key = this.#personaKey(input)
        const text = prepareText(input.text, 'text', this.#options.limits.persona).text
        const expected = input.expectedVersion === undefined ? undefined : requireCount(input.expectedVersion, 'expectedVersion')
        return this.#write(() => {
          const existing = getRow(key)
          const current = existing?.version ?? 0
          if (expected !== undefined && expected !== current) {
            throw new MemoryStoreError('conflict', `persona ${entityId(key)} is at version ${current}, not ${expected}`)
          }
          const now = this.#now()
          const version = current + 1
          this.#db
            .insert(t)
            .values({ ...key, text, version, updatedAt: now })
            .onConflictDoUpdate({ target: [t.scope, t.workspace], set: { text, version, updatedAt: now } })
            .run()
          this.#record({ entity: 'persona', entityId: entityId(key), change: existing ? 'update' : 'insert', audit: 'persona.put', revision: version }, options, now)
          this.#bumpLayers([layerKeyOfRow(key.scope, key.workspace)], options, now)
          return toPersona(getRow(key)!)
        }, options)
      },
      list: async () => this.#read(() => this.#db.select().from(t).orderBy(asc(t.scope), asc(t.workspace)).all().map(toPersona)),
      delete: async (key: PersonaKey, options?: WriteOptions) => {
        const resolved = this.#personaKey(key)
        return this.#write(() => {
          if (!getRow(resolved)) return false
          this.#db
            .delete(t)
            .where(and(eq(t.scope, resolved.scope), eq(t.workspace, resolved.workspace)))
            .run()
          this.#record({ entity: 'persona', entityId: entityId(resolved), change: 'delete', audit: 'persona.delete' }, options)
          this.#bumpLayers([layerKeyOfRow(resolved.scope, resolved.workspace)], options)
          return true
        }, options)
      },
    }
  }

  // -------------------------------------------------------------------------------------------
  // audit and meta

  #listAudit(filter: AuditFilter): AuditEntry[] {
    const t = schema.audit
    const limit = pageSize(filter.limit, DEFAULT_PAGE, MAX_PAGE)
    const conditions: SQL[] = []
    if (filter.entity !== undefined) conditions.push(eq(t.entity, filter.entity))
    // Keys are recorded opaquely (audit-id.ts): a caller asks with the key it knows.
    if (filter.entityId !== undefined) conditions.push(eq(t.entityId, auditEntityId(filter.entity ?? '', filter.entityId)))
    if (filter.op !== undefined) conditions.push(eq(t.op, filter.op))
    if (filter.actor !== undefined) conditions.push(eq(t.actor, filter.actor))
    if (filter.since !== undefined) conditions.push(gte(t.at, requireTime(filter.since, 'since')))
    if (filter.until !== undefined) conditions.push(lte(t.at, requireTime(filter.until, 'until')))
    if (filter.afterId !== undefined) conditions.push(gt(t.id, requireCount(filter.afterId, 'afterId')))
    return this.#db
      .select()
      .from(t)
      .where(and(...conditions))
      .orderBy(asc(t.id))
      .limit(limit)
      .all()
      .map((row) => ({ ...row, op: row.op as AuditEntry['op'], entity: row.entity as EntityName }))
  }

  #metaRepository(): MetaRepository {
    const t = schema.meta
    const checkKey = (key: unknown, write: boolean): string => {
      if (typeof key !== 'string' || key.length === 0 || key.length > MAX_META_KEY) {
        throw new MemoryStoreError('invalid-argument', `meta key must be a string of 1..${MAX_META_KEY} characters`)
      }
      if (write && key.startsWith(RESERVED_META_PREFIX)) throw new MemoryStoreError('invalid-argument', `meta keys under '${RESERVED_META_PREFIX}' are reserved`)
      return key
    }
    return {
      get: async (key: string) => {
        checkKey(key, false)
        return this.#read(() => this.#db.select().from(t).where(eq(t.key, key)).get()?.value)
      },
      list: async (prefix: string, options: { limit?: number } = {}): Promise<MetaEntry[]> => {
        if (typeof prefix !== 'string' || prefix.length > MAX_META_KEY) throw new MemoryStoreError('invalid-argument', `meta prefix must be a string of at most ${MAX_META_KEY} characters`)
        const limit = pageSize(options?.limit, 1_000, MAX_PAGE)
        return this.#read(() =>
          this.#db
            .select()
            .from(t)
            // substr/length count characters on both sides, so any prefix (CJK included) matches exactly.
            .where(sql`substr(${t.key}, 1, length(${prefix})) = ${prefix}`)
            .orderBy(asc(t.key))
            .limit(limit)
            .all()
            .map((row) => ({ key: row.key, value: row.value, updatedAt: row.updatedAt })),
        )
      },
      set: async (key: string, value: string, options?: WriteOptions) => {
        checkKey(key, true)
        if (typeof value !== 'string' || value.length > MAX_META_VALUE) {
          throw new MemoryStoreError('invalid-argument', `meta value must be a string of at most ${MAX_META_VALUE} characters`)
        }
        return this.#write(() => this.#setMetaRow(key, value, options), options)
      },
      delete: async (key: string, options?: WriteOptions) => {
        checkKey(key, true)
        return this.#write(() => {
          const result = this.#db.delete(t).where(eq(t.key, key)).run()
          if (result.changes === 0) return false
          this.#record({ entity: 'meta', entityId: key, change: 'delete', audit: 'meta.delete' }, options)
          return true
        }, options)
      },
      migrations: async () => this.#read(() => readAppliedMigrations(this.#sqlite)),
      diagnostics: async (): Promise<StoreDiagnostics> =>
        this.#read(() => {
          const pragma = (name: string) => this.#sqlite.pragma(name, { simple: true }) as string | number
          const synchronous = ['OFF', 'NORMAL', 'FULL', 'EXTRA'][Number(pragma('synchronous'))] ?? String(pragma('synchronous'))
          return {
            backend: 'sqlite',
            location: this.path,
            details: {
              sqliteVersion: (this.#sqlite.prepare('SELECT sqlite_version() AS v').get() as { v: string }).v,
              journalMode: String(pragma('journal_mode')),
              synchronous,
              foreignKeys: Number(pragma('foreign_keys')) === 1,
              busyTimeoutMs: this.#options.busyTimeoutMs,
              // Read back from SQLite (negative = KiB), so the report shows what is applied.
              cacheMiB: -Number(pragma('cache_size')) / 1024,
              readonly: this.readonly,
              sizeBytes: Number(pragma('page_count')) * Number(pragma('page_size')),
              changeLogSeq: (this.#sqlite.prepare('SELECT max(seq) AS seq FROM store_changes').get() as { seq: number | null }).seq ?? 0,
            },
          }
        }),
    }
  }

  // -------------------------------------------------------------------------------------------
  // layers and leases

  #layerRepository(): LayerRepository {
    const t = schema.layerRevisions
    const toRevision = (key: string, row: { revision: number; updatedAt: number } | undefined): LayerRevision => {
      const layer = parseLayerKey(key)!
      return { scope: layer.scope, workspace: layer.workspace, key, revision: row?.revision ?? 0, updatedAt: row?.updatedAt ?? 0 }
    }
    return {
      revision: async (key: LayerKey) => {
        layerKeyOf(key)
        // The same normalisation as the rows' workspace column, so the keys agree.
        const resolved = key.scope === 'global' ? 'global' : layerKeyOf({ scope: 'workspace', workspace: prepareLabel(key.workspace, 'workspace', this.#options.limits.label) })
        return this.#read(() => toRevision(resolved, this.#db.select().from(t).where(eq(t.layerKey, resolved)).get()))
      },
      list: async () =>
        this.#read(() =>
          this.#db
            .select()
            .from(t)
            .orderBy(sql`${t.layerKey} <> 'global'`, asc(t.layerKey))
            .all()
            .filter((row) => parseLayerKey(row.layerKey) !== undefined)
            .map((row) => toRevision(row.layerKey, row)),
        ),
    }
  }

  #leaseRepository(): LeaseRepository {
    const t = schema.leases
    const holderOf = (value: unknown): string => {
      const holder = requireId(value, 'holder')
      if (holder.length > MAX_LEASE_HOLDER) throw new MemoryStoreError('invalid-argument', `holder must be at most ${MAX_LEASE_HOLDER} characters`)
      return holder
    }
    const ttlOf = (value: unknown): number => {
      if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > MAX_LEASE_TTL_MS) {
        throw new MemoryStoreError('invalid-argument', `ttlMs must be an integer between 1 and ${MAX_LEASE_TTL_MS}`)
      }
      return value
    }
    const getRow = (name: string) => this.#db.select().from(t).where(eq(t.name, name)).get()
    const toLease = (row: typeof t.$inferSelect): Lease => ({ ...row })
    return {
      acquire: async (nameInput: string, holderInput: string, ttlInput: number, options?: AcquireLeaseOptions) => {
        const name = this.#leaseName(nameInput)
        const holder = holderOf(holderInput)
        const ttlMs = ttlOf(ttlInput)
        const isHolderStale = options?.isHolderStale
        return this.#write(() => {
          const now = this.#now()
          const row = getRow(name)
          if (row && row.holder === holder && row.expiresAt > now) {
            // Re-acquiring a live lease of one's own is a renewal: same token.
            this.#db.update(t).set({ expiresAt: now + ttlMs }).where(eq(t.name, name)).run()
            return toLease(getRow(name)!)
          }
          if (row && row.expiresAt > now) {
            let stale = false
            try {
              stale = isHolderStale?.(row.holder) === true
            } catch {
              stale = false
            }
            if (!stale) return undefined
          }
          const token = (row?.token ?? 0) + 1
          const takeover = row !== undefined && row.expiresAt > 0
          this.#db
            .insert(t)
            .values({ name, holder, token, acquiredAt: now, expiresAt: now + ttlMs })
            .onConflictDoUpdate({ target: t.name, set: { holder, token, acquiredAt: now, expiresAt: now + ttlMs } })
            .run()
          this.#audit({ entity: 'lease', entityId: name, audit: takeover ? 'lease.takeover' : 'lease.acquire', revision: token }, options, now)
          return toLease(getRow(name)!)
        }, options)
      },
      renew: async (lease, ttlInput, options) => {
        const fence = this.#fenceOf(lease)
        const holder = holderOf(lease?.holder)
        const ttlMs = ttlOf(ttlInput)
        return this.#write(() => {
          const row = getRow(fence.name)
          if (!row || row.token !== fence.token || row.holder !== holder || row.expiresAt === 0) {
            this.#assertFence(fence)
            throw new MemoryStoreError('fenced', `lease ${fence.name} is not held by ${holder}`)
          }
          // An expired lease nobody took over still carries this token: renewing it is safe.
          this.#db.update(t).set({ expiresAt: this.#now() + ttlMs }).where(eq(t.name, fence.name)).run()
          return toLease(getRow(fence.name)!)
        }, options)
      },
      release: async (lease, options) => {
        const fence = this.#fenceOf(lease)
        const holder = holderOf(lease?.holder)
        return this.#write(() => {
          const row = getRow(fence.name)
          if (!row || row.token !== fence.token || row.holder !== holder || row.expiresAt === 0) return false
          const now = this.#now()
          // The row stays (expires_at 0) so the next holder's token is still larger.
          this.#db.update(t).set({ expiresAt: 0 }).where(eq(t.name, fence.name)).run()
          this.#audit({ entity: 'lease', entityId: fence.name, audit: 'lease.release', revision: fence.token }, options, now)
          return true
        }, options)
      },
      get: async (nameInput: string) => {
        const name = this.#leaseName(nameInput)
        return this.#read(() => {
          const row = getRow(name)
          return row ? toLease(row) : undefined
        })
      },
      check: async (fenceInput: LeaseFence) => {
        const fence = this.#fenceOf(fenceInput)
        return this.#read(() => this.#assertFence(fence))
      },
    }
  }

  // -------------------------------------------------------------------------------------------
  // search

  /** The recorded FTS state, if any. */
  #readFtsState(): FtsState | undefined {
    return parseFtsState(this.#db.select().from(schema.meta).where(eq(schema.meta.key, FTS_META_KEY)).get()?.value)
  }

  /** Record the FTS state (internal bookkeeping: no audit or change-log row). */
  #writeFtsState(state: FtsState): void {
    const value = JSON.stringify(state)
    const now = this.#now()
    this.#db.insert(schema.meta).values({ key: FTS_META_KEY, value, updatedAt: now }).onConflictDoUpdate({ target: schema.meta.key, set: { value, updatedAt: now } }).run()
  }

  /**
   * Bring the FTS tables up to date at open: clear them when they were built with another
   * tokenizer (or never), then backfill rows not indexed yet, in short transactions that each
   * advance a cursor recorded in store_meta, so a crash or a second process resumes instead of
   * starting over and other processes' writes are never blocked for long.
   */
  #syncSearchIndex(force?: IndexBuildReason): void {
    const manifest = currentFtsManifest()
    const seen = this.#readFtsState()
    // The common case takes no lock: the index is current.
    if (!force && seen && sameManifest(seen, manifest) && seen.messagesAfter === null && seen.memoriesAfter === null) return
    let reason: IndexBuildReason | null = null
    this.#runImmediate.immediate(() => {
      const state = this.#readFtsState()
      if (!force && state && sameManifest(state, manifest)) {
        if (state.messagesAfter !== null || state.memoriesAfter !== null) reason = 'resumed'
        return
      }
      reason = force ?? (state ? 'tokenizer-changed' : 'backfill')
      this.#fts.messages.clear()
      this.#fts.memories.clear()
      this.#db.delete(schema.meta).where(eq(schema.meta.key, LEGACY_INDEX_META_KEY)).run()
      this.#writeFtsState({ ...manifest, messagesAfter: '', memoriesAfter: '' })
    })
    for (;;) {
      const more = this.#runImmediate.immediate(() => this.#backfillBatch()) as boolean
      if (!more) break
    }
    // Merge the backfill's segments now (part of the build), in bounded steps so other
    // writers get the lock between them.
    for (const kind of [this.#fts.messages, this.#fts.memories]) {
      // Bounded: a merge step always makes progress, but never loop forever on a surprise.
      for (let step = 0; step < 100_000 && (this.#runImmediate.immediate(() => kind.mergeStep(MERGE_PAGES)) as boolean); step++);
    }
    if (reason) this.#ftsReason = reason
  }

  /** Index the next batch of unindexed rows. @returns false when the backfill is complete. */
  #backfillBatch(): boolean {
    const state = this.#readFtsState()
    if (!state) return false
    const m = schema.messages
    const mem = schema.memories
    if (state.messagesAfter !== null) {
      const rows = this.#db
        .select({ id: m.id, conversationId: m.conversationId, role: m.role, createdAt: m.createdAt, text: m.text })
        .from(m)
        .where(and(gt(m.id, state.messagesAfter), sql`NOT EXISTS (SELECT 1 FROM ${sql.raw(MESSAGE_TABLES.docs)} d WHERE d.message_id = ${m.id})`))
        .orderBy(asc(m.id))
        .limit(BACKFILL_BATCH)
        .all()
      for (const row of rows) this.#fts.addMessage(row)
      this.#writeFtsState({ ...state, messagesAfter: rows.length < BACKFILL_BATCH ? null : rows[rows.length - 1]!.id })
      return true
    }
    if (state.memoriesAfter !== null) {
      const rows = this.#db
        .select({ id: mem.id, text: mem.text })
        .from(mem)
        .where(and(gt(mem.id, state.memoriesAfter), sql`NOT EXISTS (SELECT 1 FROM ${sql.raw(MEMORY_TABLES.docs)} d WHERE d.memory_id = ${mem.id})`))
        .orderBy(asc(mem.id))
        .limit(BACKFILL_BATCH)
        .all()
      for (const row of rows) this.#fts.addMemory(row.id, row.text)
      this.#writeFtsState({ ...state, memoriesAfter: rows.length < BACKFILL_BATCH ? null : rows[rows.length - 1]!.id })
      return true
    }
    return false
  }

  #searchStatus(): SearchIndexStatus {
    const state = this.#readFtsState()
    const manifest = currentFtsManifest()
    return {
      built: state !== undefined && sameManifest(state, manifest) && state.messagesAfter === null && state.memoriesAfter === null,
      reason: this.#ftsReason,
      documents: { messages: this.#fts.messages.count(), memories: this.#fts.memories.count() },
      tokenizerVersion: manifest.tokenizer,
      icu: manifest.icu,
    }
  }

  #searchService(): SearchService {
    const query = (value: unknown): string => {
      if (typeof value !== 'string') throw new MemoryStoreError('invalid-argument', 'query must be a string')
      return value
    }
    return {
      memories: async (text: string, options: MemorySearchOptions = {}): Promise<MemoryHit[]> => {
        const q = query(text)
        const limit = pageSize(options.limit, DEFAULT_HITS, MAX_HITS)
        const filter: MemoryScopeFilter = { ...options }
        if (filter.scope !== undefined) asArray(filter.scope).forEach((s) => requireScope(s))
        if (filter.since !== undefined) requireTime(filter.since, 'since')
        if (filter.until !== undefined) requireTime(filter.until, 'until')
        return this.#read(() => {
          if (q.trim().length === 0) return []
          const planned = this.#fts.memories.plan(q)
          if (planned.match === undefined) return []
          const fts = sql.raw(MEMORY_TABLES.fts)
          const where = this.#memoryScopeCondition(filter)
          // The newest RANK_CAP matches in scope, then the best by bm25 among them.
          const hits = this.#db.all<{ id: string; score: number }>(sql`
            SELECT id, score FROM (
              SELECT d.memory_id AS id, bm25(${fts}) AS score
              FROM ${fts} JOIN ${sql.raw(MEMORY_TABLES.docs)} d ON d.doc = ${fts}.rowid
              JOIN ${schema.memories} ON ${schema.memories.id} = d.memory_id
              WHERE ${fts} MATCH ${planned.match} ${where ? sql`AND ${where}` : sql``}
              ORDER BY ${fts}.rowid DESC LIMIT ${RANK_CAP}
            ) ORDER BY score LIMIT ${limit}`)
          if (hits.length === 0) return []
          const rows = new Map(
            this.#db
              .select()
              .from(schema.memories)
              .where(inArray(schema.memories.id, hits.map((hit) => hit.id)))
              .all()
              .map((row) => [row.id, row]),
          )
          return hits.flatMap((hit) => {
            const row = rows.get(hit.id)
            return row ? [{ memory: toMemory(row), score: -hit.score }] : []
          })
        })
      },
      messages: async (text: string, options: MessageSearchOptions = {}): Promise<MessageHit[]> => {
        const q = query(text)
        const limit = pageSize(options.limit, DEFAULT_HITS, MAX_HITS)
        const role = options.role === undefined ? undefined : requireRole(options.role)
        const since = options.since === undefined ? undefined : requireTime(options.since, 'since')
        const until = options.until === undefined ? undefined : requireTime(options.until, 'until')
        const conversationId = options.conversationId === undefined ? undefined : requireId(options.conversationId, 'conversationId')
        return this.#read(() => {
          if (q.trim().length === 0) return []
          const planned = this.#fts.messages.plan(q)
          if (planned.match === undefined) return []
          const fts = sql.raw(MESSAGE_TABLES.fts)
          const conditions: SQL[] = [sql`${fts} MATCH ${planned.match}`]
          if (options.workspace !== undefined) conditions.push(sql`d.conversation_id IN (SELECT id FROM store_conversations WHERE workspace = ${String(options.workspace)})`)
          if (conversationId !== undefined) conditions.push(sql`d.conversation_id = ${conversationId}`)
          if (role !== undefined) conditions.push(sql`d.role = ${role}`)
          if (since !== undefined) conditions.push(sql`d.created_at >= ${since}`)
          if (until !== undefined) conditions.push(sql`d.created_at <= ${until}`)
          const hits = this.#db.all<{ id: string; score: number }>(sql`
            SELECT id, score FROM (
              SELECT d.message_id AS id, bm25(${fts}) AS score
              FROM ${fts} JOIN ${sql.raw(MESSAGE_TABLES.docs)} d ON d.doc = ${fts}.rowid
              WHERE ${sql.join(conditions, sql` AND `)}
              ORDER BY ${fts}.rowid DESC LIMIT ${RANK_CAP}
            ) ORDER BY score LIMIT ${limit}`)
          if (hits.length === 0) return []
          const rows = new Map(
            this.#db
              .select()
              .from(schema.messages)
              .where(inArray(schema.messages.id, hits.map((hit) => hit.id)))
              .all()
              .map((row) => [row.id, row]),
          )
          return hits.flatMap((hit) => {
            const row = rows.get(hit.id)
            return row ? [{ message: toMessage(row), score: -hit.score }] : []
          })
        })
      },
      warm: async (): Promise<SearchIndexStatus> =>
        this.#call(false, () => {
          if (!this.readonly) this.#syncSearchIndex()
          return this.#searchStatus()
        }),
      rebuild: async (): Promise<SearchIndexStatus> =>
        this.#call(true, () => {
          this.#syncSearchIndex('manual')
          return this.#searchStatus()
        }),
      status: async (): Promise<SearchIndexStatus> => this.#read(() => this.#searchStatus()),
    }
  }

  // -------------------------------------------------------------------------------------------
  // transactions

  async transaction<T>(fn: (store: CoordinatedMemoryStore) => Promise<T> | T, options?: TransactionOptions): Promise<T> {
    this.#assertOpen()
    if (typeof fn !== 'function') throw new MemoryStoreError('invalid-argument', 'transaction needs a function')
    const fence = options?.fence === undefined ? undefined : this.#fenceOf(options.fence)
    if (fence && this.readonly) throw new MemoryStoreError('readonly', 'the memory store was opened read-only')
    if (this.#gate.insideTransaction) {
      if (fence) this.#assertFence(fence)
      return this.#savepoint(fn)
    }
    return this.#gate.hold(async () => {
      this.#assertOpen()
      // Nothing ran yet when BEGIN is busy: wait for the other process's write to end.
      await retryWhileBusy(this.#options.busyTimeoutMs, async () => {
        this.#assertOpen()
        try {
          this.#sqlite.exec(this.readonly ? 'BEGIN' : 'BEGIN IMMEDIATE')
        } catch (error) {
          throw translateSqliteError(error, 'cannot start a transaction')
        }
      })
      try {
        // Under the write lock: nobody can take the lease over until this transaction ends.
        if (fence) this.#assertFence(fence)
        const result = await fn(this)
        this.#sqlite.exec('COMMIT')
        return result
      } catch (error) {
        this.#rollback('ROLLBACK')
        throw translateSqliteError(error, 'transaction failed')
      }
    })
  }

  #savepointCounter = 0

  async #savepoint<T>(fn: (store: CoordinatedMemoryStore) => Promise<T> | T): Promise<T> {
    const name = `dshm_sp_${++this.#savepointCounter}`
    this.#sqlite.exec(`SAVEPOINT ${name}`)
    try {
      const result = await fn(this)
      this.#sqlite.exec(`RELEASE ${name}`)
      return result
    } catch (error) {
      this.#rollback(`ROLLBACK TO ${name}; RELEASE ${name}`)
      throw error
    }
  }

  #rollback(statement: string): void {
    // The search index lives in the same tables' transaction: it rolls back with the rows.
    if (this.#sqlite.inTransaction) this.#sqlite.exec(statement)
  }

  // -------------------------------------------------------------------------------------------
  // migrations

  async migrate(sets: MigrationSet | readonly MigrationSet[]): Promise<AppliedMigration[]> {
    const list = Array.isArray(sets) ? [...(sets as readonly MigrationSet[])] : [sets as MigrationSet]
    for (const set of list) {
      if (set?.owner === 'store') throw new MemoryStoreError('invalid-argument', "migration owner 'store' is reserved for @dsh-memory/store")
    }
    return this.#call(!this.readonly, () => applyMigrations(this.#sqlite, list, this.#now(), { readonly: this.readonly }))
  }

  // -------------------------------------------------------------------------------------------
  // package tables (the extension seam, see package-tables.ts)

  async tables<TSchema extends Record<string, unknown> = Record<string, never>>(declaration: PackageTablesDeclaration<TSchema>): Promise<PackageTables<TSchema>> {
    this.#assertOpen()
    validateDeclaration(declaration)
    const owner = declaration.migrations.owner
    await this.migrate(declaration.migrations)
    let tables = this.#packageTables.get(owner)
    if (!tables) {
      const db = drizzle({ client: this.#sqlite, schema: declaration.schema ?? {} }) as unknown as PackageDatabase<Record<string, unknown>>
      tables = openPackageTables(owner, db, this.#packagePort)
      this.#packageTables.set(owner, tables)
    }
    return tables as unknown as PackageTables<TSchema>
  }

  readonly #packagePort: PackageSessionPort = {
    // A deferred transaction: every statement of the read sees one snapshot.
    read: (op) => this.#read(() => this.#runImmediate.deferred(op) as ReturnType<typeof op>),
    write: (op, options) => this.#write(op, options),
    readSync: (op) => this.#sync(false, () => this.#runImmediate.deferred(op) as ReturnType<typeof op>),
    writeSync: (op, options) => {
      const fence = options?.fence === undefined ? undefined : this.#fenceOf(options.fence)
      return this.#sync(true, () =>
        this.#runImmediate.immediate(() => {
          if (fence) this.#assertFence(fence)
          return op()
        }) as ReturnType<typeof op>,
      )
    },
    audit: (owner, entry, options) =>
      this.#audit({ entity: owner as EntityName, entityId: entry.entityId, audit: entry.op, revision: entry.revision ?? null }, options, this.#now()),
  }

  /**
   * Run `op` on the connection now, without waiting: `busy` when another caller's async
   * transaction holds the connection (joining it would tie our work to its commit) or when
   * SQLite's short wait for another process's lock runs out.
   */
  #sync<T>(write: boolean, op: () => T): T {
    this.#assertOpen()
    if (write && this.readonly) throw new MemoryStoreError('readonly', 'the memory store was opened read-only')
    if (write && this.#gate.held && !this.#gate.insideTransaction) {
      throw new MemoryStoreError('busy', 'another transaction of this store is open; a synchronous write cannot wait for it')
    }
    try {
      return op()
    } catch (error) {
      throw translateSqliteError(error, write ? 'write failed' : 'read failed')
    }
  }

  // -------------------------------------------------------------------------------------------
  // export / import

  exportJsonl(): AsyncIterable<string> {
    this.#assertOpen()
    return this.#exportRecords()
  }

  async *#exportRecords(): AsyncGenerator<string> {
    this.#assertOpen()
    const inMemory = this.path === ':memory:'
    // A second read-only connection in a read transaction sees one consistent WAL snapshot
    // and never blocks (or is blocked by) this store's own writes.
    const snapshot = inMemory ? undefined : new Database(this.path, { readonly: true, fileMustExist: true, timeout: this.#options.busyTimeoutMs })
    if (snapshot) this.#snapshots.add(snapshot)
    try {
      if (snapshot) snapshot.exec('BEGIN')
      const migrations = snapshot ? readAppliedMigrations(snapshot) : await this.#read(() => readAppliedMigrations(this.#sqlite))
      yield encodeExportRecord({
        type: 'header',
        format: EXPORT_FORMAT,
        version: EXPORT_VERSION,
        exportedAt: this.#now(),
        schema: migrations.filter((m) => m.owner === 'store').reduce((max, m) => Math.max(max, m.version), 0),
      })
      const snapshotDb = snapshot ? drizzle({ client: snapshot }) : undefined
      // Pages rather than one open iterator: the in-memory case shares the store's
      // connection, which must stay usable (and go through the gate) between yields.
      const page = <R>(query: (db: Db, offset: number) => R[], offset: number): R[] | Promise<R[]> => {
        if (!snapshotDb) return this.#read(() => query(this.#db, offset))
        this.#assertOpen()
        return query(snapshotDb, offset)
      }
      const PAGE = 1_000
      async function* pages<R, T>(type: string, query: (db: Db, offset: number) => R[], map: (row: R) => T): AsyncGenerator<string> {
        for (let offset = 0; ; offset += PAGE) {
          const rows = await page(query, offset)
          for (const row of rows) yield encodeExportRecord({ type, data: map(row) } as ExportRecord)
          if (rows.length < PAGE) return
        }
      }
      const c = schema.conversations
      const m = schema.messages
      const mem = schema.memories
      const sc = schema.scenes
      const p = schema.persona
      yield* pages('conversation', (db, offset) => db.select().from(c).orderBy(asc(c.startedAt), asc(c.id)).limit(PAGE).offset(offset).all(), toConversation)
      yield* pages('message', (db, offset) => db.select().from(m).orderBy(asc(m.conversationId), asc(m.seq), asc(m.id)).limit(PAGE).offset(offset).all(), toMessage)
      yield* pages('memory', (db, offset) => db.select().from(mem).orderBy(asc(mem.createdAt), asc(mem.id)).limit(PAGE).offset(offset).all(), toMemory)
      yield* pages('scene', (db, offset) => db.select().from(sc).orderBy(asc(sc.createdAt), asc(sc.id)).limit(PAGE).offset(offset).all(), toScene)
      yield* pages('persona', (db, offset) => db.select().from(p).orderBy(asc(p.scope), asc(p.workspace)).limit(PAGE).offset(offset).all(), toPersona)
      if (snapshot) snapshot.exec('COMMIT')
    } finally {
      if (snapshot) {
        this.#snapshots.delete(snapshot)
        snapshot.close()
      }
    }
  }

  async importJsonl(lines: string | Iterable<string> | AsyncIterable<string>, options?: WriteOptions): Promise<ImportResult> {
    this.#assertOpen()
    if (this.readonly) throw new MemoryStoreError('readonly', 'the memory store was opened read-only')
    const source: Iterable<string> | AsyncIterable<string> = typeof lines === 'string' ? lines.split('\n') : lines
    if (!source || (typeof (source as Iterable<string>)[Symbol.iterator] !== 'function' && typeof (source as AsyncIterable<string>)[Symbol.asyncIterator] !== 'function')) {
      throw new MemoryStoreError('invalid-argument', 'importJsonl needs a string or an iterable of lines')
    }
    const inserted: RecordCounts = { conversations: 0, messages: 0, memories: 0, scenes: 0, persona: 0 }
    const skipped: RecordCounts = { conversations: 0, messages: 0, memories: 0, scenes: 0, persona: 0 }
    return this.transaction(async () => {
      // Memories may name a successor that appears later in the file.
      this.#sqlite.pragma('defer_foreign_keys = ON')
      let lineNumber = 0
      let sawHeader = false
      for await (const raw of source) {
        lineNumber++
        for (const line of String(raw).split('\n')) {
          if (line.trim().length === 0) continue
          const record = parseImportLine(line, lineNumber, sawHeader)
          if (record.type === 'header') {
            sawHeader = true
            continue
          }
          const counter = COUNTER_OF[record.type]
          const added = this.#importRecord(record, lineNumber, options)
          if (added) inserted[counter]++
          else skipped[counter]++
        }
      }
      if (!sawHeader) throw new MemoryStoreError('unsupported-format', `not a ${EXPORT_FORMAT} stream: no header line`)
      const dangling = this.#sqlite.pragma('foreign_key_check') as unknown[]
      if (dangling.length > 0) {
        throw new MemoryStoreError('invalid-argument', `import refers to ${dangling.length} missing row(s) (e.g. a superseding memory not in the file); nothing was imported`)
      }
      return { inserted, skipped }
    })
  }

  /** Insert one imported record unless its id (or key) exists. @returns true when inserted. */
  #importRecord(record: Exclude<ExportRecord, { type: 'header' }>, line: number, options: WriteOptions | undefined): boolean {
    const limits = this.#options.limits
    const now = this.#now()
    const where = `line ${line}`
    const withLine = <T>(fn: () => T): T => {
      try {
        return fn()
      } catch (error) {
        if (isMemoryStoreError(error, 'invalid-argument')) throw new MemoryStoreError('invalid-argument', `${where}: ${error.message}`)
        throw error
      }
    }
    return withLine(() => {
      switch (record.type) {
        case 'conversation': {
          const d = record.data
          const id = requireId(d.id, 'id')
          if (this.#db.select({ id: schema.conversations.id }).from(schema.conversations).where(eq(schema.conversations.id, id)).get()) return false
          this.#db
            .insert(schema.conversations)
            .values({
              id,
              workspace: prepareLabel(d.workspace ?? '', 'workspace', limits.label, true),
              title: d.title === null || d.title === undefined ? null : prepareLabel(d.title, 'title', limits.label, true) || null,
              startedAt: requireTime(d.startedAt, 'startedAt'),
              endedAt: d.endedAt === null || d.endedAt === undefined ? null : requireTime(d.endedAt, 'endedAt'),
              updatedAt: requireTime(d.updatedAt, 'updatedAt'),
              flags: flagsObject(d.flags ?? {}),
            })
            .run()
          this.#record({ entity: 'conversation', entityId: id, change: 'insert', audit: 'conversation.import' }, options, now)
          return true
        }
        case 'message': {
          const d = record.data
          const id = requireId(d.id, 'id')
          const conversationId = requireId(d.conversationId, 'conversationId')
          const hostMessageId = requireId(d.hostMessageId, 'hostMessageId')
          const m = schema.messages
          // Prepared once: imports of large logs run this per line.
          const exists =
            this.#stmt('SELECT 1 FROM store_messages WHERE id = ?').pluck().get(id) !== undefined ||
            this.#stmt('SELECT 1 FROM store_messages WHERE conversation_id = ? AND host_message_id = ?').pluck().get(conversationId, hostMessageId) !== undefined
          if (exists) return false
          if (this.#stmt('SELECT 1 FROM store_conversations WHERE id = ?').pluck().get(conversationId) === undefined) {
            throw new MemoryStoreError('invalid-argument', `message ${id} belongs to conversation ${conversationId}, which is not in the database or earlier in the file`)
          }
          const text = prepareText(d.text, 'text', limits.message).text
          const role = requireRole(d.role)
          const createdAt = requireTime(d.createdAt, 'createdAt')
          this.#stmt(
            'INSERT INTO store_messages (id, conversation_id, host_message_id, role, text, turn, seq, source_ids, tokens_estimate, created_at, flags) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
          ).run(
            id,
            conversationId,
            hostMessageId,
            role,
            text,
            requireCount(d.turn ?? 0, 'turn'),
            requireCount(d.seq, 'seq'),
            JSON.stringify(idList(d.sourceIds, 'sourceIds')),
            d.tokensEstimate === undefined ? estimateTokens(text) : requireCount(d.tokensEstimate, 'tokensEstimate'),
            createdAt,
            JSON.stringify(flagsObject(d.flags ?? {})),
          )
          this.#fts.addMessage({ id, conversationId, role, createdAt, text })
          this.#record({ entity: 'message', entityId: id, change: 'insert', audit: 'message.import' }, options, now)
          return true
        }
        case 'memory': {
          const d = record.data
          const id = requireId(d.id, 'id')
          if (this.#db.select({ id: schema.memories.id }).from(schema.memories).where(eq(schema.memories.id, id)).get()) return false
          const values = this.#memoryValues({
            kind: d.kind,
            text: d.text,
            scope: d.scope,
            workspace: d.workspace,
            sessionId: d.sessionId,
            sourceMessageIds: d.sourceMessageIds,
            priority: d.priority,
            flags: d.flags ?? {},
            embedding: d.embedding ?? null,
            embeddingModel: d.embeddingModel ?? null,
          })
          const revision = d.revision === undefined ? 1 : Math.max(1, requireCount(d.revision, 'revision'))
          this.#db
            .insert(schema.memories)
            .values({
              id,
              ...values,
              revision,
              createdAt: requireTime(d.createdAt, 'createdAt'),
              updatedAt: requireTime(d.updatedAt, 'updatedAt'),
              lastRecalledAt: d.lastRecalledAt === null || d.lastRecalledAt === undefined ? null : requireTime(d.lastRecalledAt, 'lastRecalledAt'),
              supersededBy: d.supersededBy === null || d.supersededBy === undefined ? null : requireId(d.supersededBy, 'supersededBy'),
            })
            .run()
          this.#fts.addMemory(id, values.text)
          this.#record({ entity: 'memory', entityId: id, change: 'insert', audit: 'memory.import', revision }, options, now)
          this.#bumpLayers([layerKeyOfRow(values.scope, values.workspace)], options, now)
          return true
        }
        case 'scene': {
          const d = record.data
          const id = requireId(d.id, 'id')
          if (this.#db.select({ id: schema.scenes.id }).from(schema.scenes).where(eq(schema.scenes.id, id)).get()) return false
          const scope = requireScope(d.scope)
          const placement = this.#placement(scope, d.workspace, d.sessionId)
          const revision = d.revision === undefined ? 1 : Math.max(1, requireCount(d.revision, 'revision'))
          this.#db
            .insert(schema.scenes)
            .values({
              id,
              title: prepareLabel(d.title, 'title', limits.label),
              summary: prepareText(d.summary, 'summary', limits.scene).text,
              scope,
              ...placement,
              memoryIds: idList(d.memoryIds, 'memoryIds'),
              revision,
              createdAt: requireTime(d.createdAt, 'createdAt'),
              updatedAt: requireTime(d.updatedAt, 'updatedAt'),
              flags: flagsObject(d.flags ?? {}),
            })
            .run()
          this.#record({ entity: 'scene', entityId: id, change: 'insert', audit: 'scene.import', revision }, options, now)
          this.#bumpLayers([layerKeyOfRow(scope, placement.workspace)], options, now)
          return true
        }
        case 'persona': {
          const d = record.data
          const key = this.#personaKey({ scope: d.scope, workspace: d.workspace })
          const t = schema.persona
          if (this.#db.select({ v: t.version }).from(t).where(and(eq(t.scope, key.scope), eq(t.workspace, key.workspace))).get()) return false
          const version = Math.max(1, requireCount(d.version, 'version'))
          this.#db
            .insert(t)
            .values({ ...key, text: prepareText(d.text, 'text', limits.persona).text, version, updatedAt: requireTime(d.updatedAt, 'updatedAt') })
            .run()
          const entityId = key.scope === 'global' ? 'global' : `workspace:${key.workspace}`
          this.#record({ entity: 'persona', entityId, change: 'insert', audit: 'persona.import', revision: version }, options, now)
          this.#bumpLayers([layerKeyOfRow(key.scope, key.workspace)], options, now)
          return true
        }
      }
    })
  }

  // -------------------------------------------------------------------------------------------
  // lifecycle

  close(): Promise<void> {
    this.#closing ??= this.#close()
    return this.#closing
  }

  async #close(): Promise<void> {
    // Refuse new calls at once; let a running transaction finish first.
    this.#closed = true
    await this.#gate.idle()
    for (const snapshot of this.#snapshots) snapshot.close()
    this.#snapshots.clear()
    this.#sqlite.close()
    this.#sqliteClosed = true
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close()
  }
}

/** Memory columns derived from input (all but id, revision and times). */
type MemoryValues = Omit<typeof schema.memories.$inferInsert, 'id' | 'revision' | 'createdAt' | 'updatedAt' | 'lastRecalledAt' | 'supersededBy'> & {
  scope: Scope
}

const COUNTER_OF = {
  conversation: 'conversations',
  message: 'messages',
  memory: 'memories',
  scene: 'scenes',
  persona: 'persona',
} as const satisfies Record<Exclude<ExportRecord['type'], 'header'>, keyof RecordCounts>
