/**
 * The PostgreSQL store's session: its one `pg.Client` (the analogue of SQLite's one
 * connection) and everything the repositories of `pg-store.ts` share on it: the connection
 * gate (one caller at a time; `store.transaction` holds the client and every store call
 * awaited inside it joins), snapshot reads, serialised writes with their lease fence,
 * savepoints, the audit and change log, layer revisions, and close.
 *
 * Writers are serialised per schema, as SQLite serialises them per file: every write
 * transaction first takes a transaction-scoped advisory lock named after the store's schema
 * (waiting at most `busyTimeoutMs`, then `busy`). So the repositories may read-then-write
 * without races across processes, exactly as on SQLite, while readers (REPEATABLE READ READ
 * ONLY snapshots) never wait. Serialization and deadlock failures (possible only against
 * writers that bypass the store) are retried while nothing committed.
 *
 * A dropped connection (server restart, `pg_terminate_backend`, network) is replaced by the
 * next operation: the session connects a new client before its BEGIN (and once more when the
 * BEGIN itself finds the connection dead, nothing having run). A transaction in flight when the
 * connection drops fails with `unavailable` (retryable); the server rolled it back whole.
 */
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres'
import pg from 'pg'
import { auditEntityId } from './audit-id.ts'
import { retryWhileBusy } from './busy-retry.ts'
import { type AuditSpec, CHANGES_CHANNEL, type ChangeSpec, writeActor } from './change-spec.ts'
import { isMemoryStoreError, MemoryStoreError } from './errors.ts'
import { ConnectionGate } from './gate.ts'
import { fenceRefusal, leaseFence, leaseName } from './lease-rules.ts'
import type { ResolvedPostgresOptions, ResolvedStoreOptions } from './options.ts'
import { pgSchema } from './pg-schema.ts'
import type { LeaseFence, TransactionOptions, WriteOptions } from './types-common.ts'

/** Drizzle on the session's one client, typed by the store's PostgreSQL tables. */
export type PgDb = NodePgDatabase<typeof pgSchema>

/** What an operation of {@link PgSession.read} / {@link PgSession.write} runs on. */
export interface PgTx {
  readonly db: PgDb
  /** Raw parameterised SQL ($1, $2 …) on the same client and transaction. */
  query<R extends Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<R[]>
}


const INT8_OID = 20
/**
 * int8 (`bigint`, `count(*)`) as a JS number on this client's raw queries: epoch-ms times and
 * counts stay far below 2^53, and one number type lets `rows.ts` map both backends' rows.
 * Drizzle's own queries read `bigint` columns through `pg-schema.ts`'s number mode.
 */
const clientTypes = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary' ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
}

/** Node's socket errors that mean the server cannot be reached (or went away). */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET', 'EAI_AGAIN', 'EPIPE'])

/**
 * Map driver errors to stable codes; our own errors pass through, others (constraint
 * violations, SQL errors) are returned as they are for the caller to judge. `server` is
 * host:port, never the URL (which may hold the password).
 */
export function translatePgError(error: unknown, context: string, server: string): unknown {
  if (isMemoryStoreError(error)) return error
  const code = (error as { code?: unknown })?.code
  const message = (error as Error)?.message ?? String(error)
  if (code === '40001' || code === '40P01') {
    return new MemoryStoreError('busy', `${context}: a concurrent write conflicted with this one (${message})`, { cause: error })
  }
  if (code === '55P03') {
    return new MemoryStoreError('busy', `${context}: another writer held the store's lock for longer than busyTimeoutMs`, { cause: error })
  }
  if (code === '25006') return new MemoryStoreError('readonly', `${context}: the transaction is read-only`, { cause: error })
  if (code === '28P01' || code === '28000') {
    return new MemoryStoreError('invalid-argument', `${context}: databaseUrl was refused by PostgreSQL at ${server} (${message})`, { cause: error })
  }
  if (code === '3D000') return new MemoryStoreError('not-found', `${context}: databaseUrl names a database that does not exist at ${server} (${message})`, { cause: error })
  const lost =
    (typeof code === 'string' && (NETWORK_CODES.has(code) || code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03')) ||
    /Connection terminated|not queryable|timeout expired/i.test(message)
  if (lost) return new MemoryStoreError('unavailable', `${context}: PostgreSQL at ${server} is unavailable (${message})`, { cause: error })
  return error
}

/**
 * What drizzle and the repositories query through: forwards to the session's current client,
 * so handles built once (drizzle databases of the store and of package tables) survive a
 * reconnect.
 */
export interface PgQueryable {
  query: pg.Client['query']
}

/** The session every repository of one PostgreSQL store runs on. Internal to the store. */
export class PgSession {
  /** The current client's queries (see {@link PgQueryable}); the client itself changes on reconnect. */
  readonly connectionProxy: PgQueryable
  readonly db: PgDb
  readonly options: ResolvedStoreOptions
  readonly readonly: boolean
  /** The URL with any password removed. */
  readonly path: string
  /** The PostgreSQL schema the store's tables live in. */
  readonly schema: string
  /** host:port, for messages. */
  readonly server: string
  /** How this session connected: an export opens a second client the same way, for its snapshot. */
  readonly connection: ResolvedPostgresOptions
  /** Second clients of running exports, ended with the store (an abandoned export must not keep the process alive). */
  readonly snapshots: Set<pg.Client> = new Set()
  readonly #gate = new ConnectionGate()
  readonly #tx: PgTx
  /** The key of the schema's writer lock (`pg_advisory_xact_lock`), a bigint literal. */
  readonly #lockKey: string
  #closed = false
  #closing: Promise<void> | undefined
  #savepointCounter = 0
  /** Set when the running transaction recorded a change: its commit notifies. */
  #changed = false
  /** Owners of package tables the running transaction wrote: its commit notifies each. */
  readonly #tablesChanged = new Set<string>()
  #client: pg.Client
  /** Set when the current client's connection is gone: the next operation connects a new one. */
  #lost = false

  constructor(client: pg.Client, resolved: ResolvedPostgresOptions, lockKey: string) {
    this.#client = client
    this.#watch(client)
    const proxy: PgQueryable = { query: ((...args: Parameters<pg.Client['query']>) => (this.#client.query as (...a: unknown[]) => unknown)(...args)) as pg.Client['query'] }
    this.connectionProxy = proxy
    this.db = drizzle({ client: proxy as pg.Client, schema: pgSchema })
    this.options = resolved.store
    this.readonly = resolved.store.readonly
    this.path = resolved.store.path
    this.schema = resolved.schema
    this.server = resolved.server
    this.connection = resolved
    this.#lockKey = lockKey
    this.#tx = {
      db: this.db,
      query: async <R extends Record<string, unknown>>(text: string, params?: readonly unknown[]) => {
        const result = params === undefined ? await this.#client.query<R>(text) : await this.#client.query<R>(text, params as unknown[])
        return result.rows
      },
    }
  }

  /** The current client (replaced after a dropped connection). */
  get client(): pg.Client {
    return this.#client
  }

  get closed(): boolean {
    return this.#closed
  }

  assertOpen(): void {
    // While closing, the transaction that close() waits for may still finish its work.
    if (this.#closed && !this.#gate.insideTransaction) throw new MemoryStoreError('closed', 'the memory store is closed')
  }

  assertWritable(): void {
    if (this.readonly) throw new MemoryStoreError('readonly', 'the memory store was opened read-only')
  }

  now(): number {
    return Math.round(this.options.now())
  }

  /** One consistent snapshot (REPEATABLE READ READ ONLY); inside store.transaction it joins it. */
  async read<T>(op: (tx: PgTx) => Promise<T>): Promise<T> {
    this.assertOpen()
    if (this.#gate.insideTransaction) return this.#translate(() => op(this.#tx), 'read failed')
    return this.#gate.hold(() => this.#transaction('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', () => op(this.#tx), 'read failed'))
  }

  /**
   * Read statements that each see their own snapshot, without BEGIN and COMMIT: two round trips
   * fewer, for a read that is one statement (a list, a count, a get: a statement is its own
   * consistent snapshot) and for reads whose statements need not agree with each other (search:
   * its planning counts only weigh terms, and the ranking statement reads the rows it
   * returns). On a loaded machine each round trip waits for a CPU. Inside store.transaction it
   * joins it, as {@link read}.
   */
  async readEach<T>(op: (tx: PgTx) => Promise<T>): Promise<T> {
    this.assertOpen()
    if (this.#gate.insideTransaction) return this.#translate(() => op(this.#tx), 'read failed')
    return this.#gate.hold(async () => {
      // As in #transaction: a call that queued while close() began is new work.
      if (this.#closed) throw new MemoryStoreError('closed', 'the memory store is closed')
      if (this.#lost) await this.#reconnect()
      try {
        return await this.#translate(() => op(this.#tx), 'read failed')
      } catch (error) {
        if (!isMemoryStoreError(error, 'unavailable')) throw error
        // The connection was dead (the drop not yet noticed): reads change nothing, so read
        // once more on a new connection, as #begin does for a transaction.
        await this.#reconnect()
        return this.#translate(() => op(this.#tx), 'read failed')
      }
    })
  }

  /**
   * One atomic write under the schema's writer lock; a fence is checked first under a row lock
   * on the lease; inside store.transaction it joins it as a savepoint; serialization/deadlock
   * failures are retried while nothing committed, up to busyTimeoutMs, then `busy`.
   */
  async write<T>(op: (tx: PgTx) => Promise<T>, options?: WriteOptions): Promise<T> {
    this.assertOpen()
    this.assertWritable()
    const fence = options?.fence === undefined ? undefined : this.fenceOf(options.fence)
    const body = async () => {
      if (fence) await this.assertFence(this.#tx, fence)
      return op(this.#tx)
    }
    if (this.#gate.insideTransaction) return this.#savepoint(body)
    // A failed attempt was rolled back whole: trying again cannot repeat a committed effect.
    return retryWhileBusy(this.options.busyTimeoutMs, () => this.#gate.hold(() => this.#transaction(this.#beginWrite(), body, 'write failed')))
  }

  /**
   * Run `fn(arg)` as one transaction holding the client (see `MemoryStore.transaction`, which
   * passes the store as `arg`); inside another, as a savepoint.
   */
  async transaction<T, A = undefined>(fn: (arg: A) => Promise<T> | T, options?: TransactionOptions, arg?: A): Promise<T> {
    this.assertOpen()
    if (typeof fn !== 'function') throw new MemoryStoreError('invalid-argument', 'transaction needs a function')
    const fence = options?.fence === undefined ? undefined : this.fenceOf(options.fence)
    if (fence) this.assertWritable()
    const body = async () => {
      // Under the writer lock: nobody can take the lease over until this transaction ends.
      if (fence) await this.assertFence(this.#tx, fence)
      return fn(arg as A)
    }
    if (this.#gate.insideTransaction) return this.#savepoint(body)
    const begin = this.readonly ? 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY' : this.#beginWrite()
    return this.#gate.hold(() => this.#transaction(begin, body, 'transaction failed'))
  }

  /** Audit row + change-log row of a write (same as SqliteSession.record), in one round trip. */
  async record(tx: PgTx, spec: ChangeSpec, options: WriteOptions | undefined, at = this.now()): Promise<void> {
    const actor = writeActor(options, this.options.actor)
    await tx.query(
      `WITH audit AS (INSERT INTO store_audit (at, op, entity, entity_id, actor, revision, created_by) VALUES ($1, $2, $3, $4, $5, $6, $9))
       INSERT INTO store_changes (entity, entity_id, op, at) VALUES ($3, $7, $8, $1)`,
      [at, spec.audit, spec.entity, auditEntityId(spec.entity, spec.entityId), actor, spec.revision ?? null, spec.entityId, spec.change, this.options.user],
    )
    this.#changed = true
  }

  /** Note a write to `owner`'s package tables: the commit notifies `<schema>:<owner>` (views of them reload). */
  tablesChanged(owner: string): void {
    this.#tablesChanged.add(owner)
  }

  /**
   * The audit and change-log rows of many writes (a batched import), in one round trip: the
   * same rows, in the same order, as {@link record} once per spec (which keeps its plain
   * VALUES statement: cheaper to plan for the one row of every live write).
   */
  async recordMany(tx: PgTx, specs: readonly ChangeSpec[], options: WriteOptions | undefined, at = this.now()): Promise<void> {
    if (specs.length === 0) return
    const actor = writeActor(options, this.options.actor)
    await tx.query(
      `WITH spec AS (
         SELECT * FROM unnest($3::text[], $4::text[], $5::text[], $6::int[], $7::text[], $8::text[]) WITH ORDINALITY AS s(audit, entity, audit_id, revision, entity_id, change, n)
       ), audit AS (
         INSERT INTO store_audit (at, op, entity, entity_id, actor, revision, created_by) SELECT $1, audit, entity, audit_id, $2, revision, $9 FROM spec ORDER BY n
       )
       INSERT INTO store_changes (entity, entity_id, op, at) SELECT entity, entity_id, change, $1 FROM spec ORDER BY n`,
      [
        at,
        actor,
        specs.map((spec) => spec.audit),
        specs.map((spec) => spec.entity),
        specs.map((spec) => auditEntityId(spec.entity, spec.entityId)),
        specs.map((spec) => spec.revision ?? null),
        specs.map((spec) => spec.entityId),
        specs.map((spec) => spec.change),
        this.options.user,
      ],
    )
    this.#changed = true
  }

  /** An audit row without a change-log row (layers and leases are not indexed). */
  async audit(tx: PgTx, spec: AuditSpec, options: WriteOptions | undefined, at: number): Promise<void> {
    const actor = writeActor(options, this.options.actor)
    await tx.query('INSERT INTO store_audit (at, op, entity, entity_id, actor, revision, created_by) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
      at,
      spec.audit,
      spec.entity,
      auditEntityId(spec.entity, spec.entityId),
      actor,
      spec.revision ?? null,
      this.options.user,
    ])
  }

  /**
   * Bump the revision of every layer in `keys` once (inside the write's transaction) and
   * audit it: operation, revision and time, never content. One round trip per layer.
   */
  async bumpLayers(tx: PgTx, keys: Iterable<string | undefined>, options: WriteOptions | undefined, now = this.now()): Promise<void> {
    const actor = writeActor(options, this.options.actor)
    for (const key of new Set(keys)) {
      if (key === undefined) continue
      await tx.query(
        `WITH bumped AS (
           INSERT INTO store_layer_revisions AS l (layer_key, revision, updated_at) VALUES ($1, 1, $2)
           ON CONFLICT (layer_key) DO UPDATE SET revision = l.revision + 1, updated_at = greatest(l.updated_at, $2)
           RETURNING revision)
         INSERT INTO store_audit (at, op, entity, entity_id, actor, revision, created_by)
         SELECT $2, 'layer.change', 'layer', $3, $4, revision, $5 FROM bumped`,
        [key, now, auditEntityId('layer', key), actor, this.options.user],
      )
    }
  }

  /**
   * Bump each layer of `counts` that many times, with one audit row per bump: the same rows
   * as that many {@link bumpLayers} calls (a batched import bumps once per record, as SQLite
   * does), in one round trip per layer.
   */
  async bumpLayersBy(tx: PgTx, counts: ReadonlyMap<string, number>, options: WriteOptions | undefined, now = this.now()): Promise<void> {
    const actor = writeActor(options, this.options.actor)
    for (const [key, count] of counts) {
      if (count <= 0) continue
      await tx.query(
        `WITH bumped AS (
           INSERT INTO store_layer_revisions AS l (layer_key, revision, updated_at) VALUES ($1, $5::int, $2)
           ON CONFLICT (layer_key) DO UPDATE SET revision = l.revision + $5::int, updated_at = greatest(l.updated_at, $2)
           RETURNING revision)
         INSERT INTO store_audit (at, op, entity, entity_id, actor, revision, created_by)
         SELECT $2, 'layer.change', 'layer', $3, $4, revision - $5::int + g, $6 FROM bumped, generate_series(1, $5::int) AS g ORDER BY g`,
        [key, now, auditEntityId('layer', key), actor, count, this.options.user],
      )
    }
  }

  fenceOf(fence: unknown): LeaseFence {
    return leaseFence(fence)
  }

  leaseName(value: unknown): string {
    return leaseName(value)
  }

  /**
   * Throw `fenced` unless `fence` names the live lease. Inside a write the lease row is locked
   * until the transaction ends, so a takeover waits for this write to commit; `lock: false` is
   * for read-only snapshots, where the answer is only a hint.
   */
  async assertFence(tx: PgTx, fence: LeaseFence, lock = true): Promise<void> {
    const rows = await tx.query<{ holder: string; token: number; expires_at: number }>(
      `SELECT holder, token, expires_at FROM store_leases WHERE name = $1${lock ? ' FOR UPDATE' : ''}`,
      [fence.name],
    )
    const row = rows[0]
    const refusal = fenceRefusal(fence, row && { holder: row.holder, token: row.token, expiresAt: row.expires_at }, this.now())
    if (refusal) throw refusal
  }

  close(): Promise<void> {
    this.#closing ??= this.#close()
    return this.#closing
  }

  async #close(): Promise<void> {
    // Refuse new calls at once; let a running transaction finish first.
    this.#closed = true
    await this.#gate.idle()
    for (const client of [...this.snapshots, this.client]) {
      try {
        await client.end()
      } catch {
        // A connection the server already dropped is closed either way.
      }
    }
    this.snapshots.clear()
  }

  /** BEGIN plus the schema's writer lock, in one round trip. */
  #beginWrite(): string {
    return `BEGIN; SELECT pg_advisory_xact_lock(${this.#lockKey})`
  }

  /** Run `body` between `begin` and COMMIT (the caller holds the gate); roll back on failure. */
  async #transaction<T>(begin: string, body: () => Promise<T>, context: string): Promise<T> {
    // A call that queued for the client while close() began is new work: refuse it (inside the
    // gate assertOpen() would let it through, as it does for the transaction close waits for).
    if (this.#closed) throw new MemoryStoreError('closed', 'the memory store is closed')
    this.#changed = false
    this.#tablesChanged.clear()
    let stage: 'begin' | 'body' | 'commit' = 'begin'
    try {
      await this.#begin(begin)
      stage = 'body'
      const result = await body()
      stage = 'commit'
      // NOTIFY is delivered at commit only, and only when the transaction commits.
      await this.client.query(`${this.#notifications()}COMMIT`)
      return result
    } catch (error) {
      await this.#rollback('ROLLBACK')
      throw this.#lostInFlight(translatePgError(error, context, this.server), stage)
    } finally {
      this.#changed = false
      this.#tablesChanged.clear()
    }
  }

  /** The NOTIFYs of the running transaction's commit (payloads: see `pg-listener.ts`). */
  #notifications(): string {
    const payloads = [...(this.#changed ? [this.schema] : []), ...[...this.#tablesChanged].map((owner) => `${this.schema}:${owner}`)]
    // Schema and owner names are checked patterns ([a-z0-9_] / [a-z0-9-]): safe as literals.
    return payloads.map((payload) => `SELECT pg_notify('${CHANGES_CHANNEL}', '${payload}'); `).join('')
  }

  /**
   * BEGIN on a live connection: a client known to be lost is replaced first; a BEGIN that finds
   * the connection dead (the drop not yet noticed) reconnects and begins once more: nothing ran.
   */
  async #begin(begin: string): Promise<void> {
    if (this.#lost) await this.#reconnect()
    try {
      await this.client.query(begin)
    } catch (error) {
      if (!isMemoryStoreError(translatePgError(error, 'begin', this.server), 'unavailable')) throw error
      await this.#reconnect()
      await this.client.query(begin)
    }
  }

  /** Replace the lost client by a new connection (same settings); `unavailable` while the server is away. */
  async #reconnect(): Promise<void> {
    this.#lost = true
    // Not awaited: the old connection is gone already, ending it only frees the socket.
    void this.#client.end().catch(() => {})
    const { client } = await connectPg(this.connection)
    if (this.#closed) {
      await client.end().catch(() => {})
      throw new MemoryStoreError('closed', 'the memory store is closed')
    }
    this.#client = client
    this.#watch(client)
    this.#lost = false
  }

  /** Mark the session lost when `client`'s connection ends (the next operation reconnects). */
  #watch(client: pg.Client): void {
    client.on('end', () => {
      if (client === this.#client) this.#lost = true
    })
  }

  /**
   * A lost connection during a transaction: mark it for reconnect and say what happened to the
   * transaction. Before COMMIT the server rolled it back whole; during COMMIT nobody can know.
   */
  #lostInFlight(error: unknown, stage: 'begin' | 'body' | 'commit'): unknown {
    if (!isMemoryStoreError(error, 'unavailable')) return error
    this.#lost = true
    if (stage === 'begin') return error
    const outcome =
      stage === 'commit'
        ? 'the connection dropped during COMMIT: the transaction may or may not have committed; check before retrying'
        : 'the connection dropped during the transaction: PostgreSQL rolled it back, nothing of it was written; retry it'
    return new MemoryStoreError('unavailable', `${error.message}; ${outcome}`, { cause: (error as { cause?: unknown }).cause ?? error })
  }

  async #savepoint<T>(body: () => Promise<T>): Promise<T> {
    const name = `dshm_sp_${++this.#savepointCounter}`
    await this.#translate(() => this.client.query(`SAVEPOINT ${name}`), 'write failed')
    try {
      const result = await body()
      await this.client.query(`RELEASE SAVEPOINT ${name}`)
      return result
    } catch (error) {
      await this.#rollback(`ROLLBACK TO SAVEPOINT ${name}; RELEASE SAVEPOINT ${name}`)
      throw translatePgError(error, 'write failed', this.server)
    }
  }

  async #rollback(statement: string): Promise<void> {
    try {
      await this.client.query(statement)
    } catch {
      // The connection is gone (the server rolls back) or there was nothing to roll back.
    }
  }

  async #translate<T>(op: () => Promise<T>, context: string): Promise<T> {
    try {
      return await op()
    } catch (error) {
      throw translatePgError(error, context, this.server)
    }
  }
}

/**
 * Connect one client for a store: int8 as numbers, the store's schema first on the search
 * path (so every statement, migrations included, names tables unqualified), lock waits
 * bounded by `busyTimeoutMs`, no JIT.
 * @returns the client and the schema's writer-lock key.
 * @throws MemoryStoreError `unavailable` (host:port in the message, never the password),
 *   `invalid-argument` (credentials refused), `not-found` (no such database)
 */
export async function connectPg(resolved: ResolvedPostgresOptions): Promise<{ client: pg.Client; lockKey: string }> {
  const context = `cannot open ${resolved.store.path}`
  const client = new pg.Client({
    connectionString: resolved.databaseUrl,
    types: clientTypes,
    application_name: 'dsh-memory',
    connectionTimeoutMillis: Math.max(1_000, resolved.store.busyTimeoutMs),
  })
  // Without a listener a dropped connection would crash the process; the next query reports it.
  client.on('error', () => {})
  try {
    await client.connect()
    // lock_timeout 0 would mean "wait forever": the smallest real wait is 1 ms.
    const lockTimeout = Math.max(1, resolved.store.busyTimeoutMs)
    // No JIT: the store's statements are short, but the search ranking's per-candidate subplan
    // is costed far above jit_above_cost, and compiling it took 2.4 s of a 3.5 s search on a
    // loaded 2-core machine (EXPLAIN ANALYZE, 100 000 memories), more than it ever saves.
    // work_mem 32 MB (the default is 4 MB): a search term in a tenth of a million messages is a
    // GIN bitmap of ~120 000 rows, which at 4 MB turns lossy, and every row of a lossy page is
    // then read and re-checked (EXPLAIN ANALYZE: 4 939 lossy pages, 34 671 rows re-checked in
    // one search). Memory is taken only as a statement needs it, by this one connection.
    await client.query(`SET search_path TO "${resolved.schema}"; SET lock_timeout = ${lockTimeout}; SET jit = off; SET work_mem = '32MB'`)
    const [row] = (await client.query<{ key: string }>(`SELECT hashtextextended($1, 0)::text AS key`, [`dsh-memory:${resolved.schema}`])).rows
    return { client, lockKey: row!.key }
  } catch (error) {
    await client.end().catch(() => {})
    throw translatePgError(error, context, resolved.server)
  }
}
