/**
 * The SQLite store's session: its one better-sqlite3 connection and everything every
 * repository of `sqlite-store.ts` shares on it: the connection gate (one caller at a time,
 * transactions hold it), the busy retry that waits for other processes without blocking the
 * event loop, IMMEDIATE write transactions with their lease fence, savepoints, the audit and
 * change log, layer revisions, and close. The repositories (`sqlite-conversations.ts`,
 * `sqlite-memories.ts`, …) only build queries on top of it.
 */
import type Database from 'better-sqlite3'
import { type BetterSQLite3Database, drizzle } from 'drizzle-orm/better-sqlite3'
import { eq, sql } from 'drizzle-orm'
import { auditEntityId } from './audit-id.ts'
import { type AuditSpec, type ChangeSpec, writeActor } from './change-spec.ts'
import { isMemoryStoreError, MemoryStoreError } from './errors.ts'
import { retryWhileBusy } from './busy-retry.ts'
import { ConnectionGate } from './gate.ts'
import { isThenable } from './package-tables.ts'
import type { ResolvedStoreOptions } from './options.ts'
import * as schema from './schema.ts'
import { FtsIndex } from './search-index.ts'
import { fenceRefusal, leaseFence, leaseName } from './lease-rules.ts'
import type { LeaseFence, TransactionOptions, WriteOptions } from './types-common.ts'

export type Db = BetterSQLite3Database

/** The longest SQLite waits for a lock inside one call (it blocks the thread while it waits). */
export const BUSY_SLICE_MS = 50
export { DEFAULT_PAGE, MAX_PAGE } from './validate.ts'
export type { AuditSpec, ChangeSpec } from './change-spec.ts'

/** Map driver errors to stable codes; our own errors pass through. */
export function translateSqliteError(error: unknown, context: string): unknown {
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

/** The session every repository of one SQLite store runs on. Internal to the store. */
export class SqliteSession {
  readonly sqlite: Database.Database
  readonly db: Db
  readonly options: ResolvedStoreOptions
  readonly path: string
  readonly readonly: boolean
  /** The search index, written in the same transaction as the rows it indexes. */
  readonly fts: FtsIndex
  /** Second read-only connections of running exports, closed with the store. */
  readonly snapshots: Set<Database.Database> = new Set()
  readonly #gate = new ConnectionGate()
  readonly #runImmediate: Database.Transaction<(op: () => unknown) => unknown>
  readonly #statements = new Map<string, Database.Statement>()
  #closed = false
  #sqliteClosed = false
  #closing: Promise<void> | undefined
  #savepointCounter = 0

  constructor(sqlite: Database.Database, options: ResolvedStoreOptions) {
    this.sqlite = sqlite
    this.db = drizzle({ client: sqlite })
    this.options = options
    this.path = options.path
    this.readonly = options.readonly
    this.#runImmediate = sqlite.transaction((op: () => unknown) => op())
    this.fts = new FtsIndex(sqlite)
  }

  get closed(): boolean {
    return this.#closed
  }

  assertOpen(): void {
    // While closing, the transaction that close() waits for may still finish its work.
    if (this.#closed && (this.#sqliteClosed || !this.#gate.insideTransaction)) {
      throw new MemoryStoreError('closed', 'the memory store is closed')
    }
  }

  assertWritable(): void {
    if (this.readonly) throw new MemoryStoreError('readonly', 'the memory store was opened read-only')
  }

  now(): number {
    return Math.round(this.options.now())
  }

  /**
   * A prepared statement, compiled once per connection. The capture hot path (one append per
   * host event) uses these instead of the query builder, which prepares on every call.
   */
  stmt(source: string): Database.Statement {
    let statement = this.#statements.get(source)
    if (!statement) {
      statement = this.sqlite.prepare(source)
      this.#statements.set(source, statement)
    }
    return statement
  }

  /** Run `op` in an IMMEDIATE transaction now (the caller holds the connection). */
  immediate<T>(op: () => T): T {
    return this.#runImmediate.immediate(op) as T
  }

  /** Run `op` in a deferred transaction now: every statement sees one snapshot. */
  deferred<T>(op: () => T): T {
    return this.#runImmediate.deferred(op) as T
  }

  /** Run a read when the connection is free. */
  read<T>(op: () => T): Promise<T> {
    return this.call(false, op)
  }

  /**
   * Run a write atomically (IMMEDIATE: take the write lock up front, so no upgrade deadlock).
   * A fence in `options` is checked first, under that lock.
   */
  write<T>(op: () => T, options?: WriteOptions): Promise<T> {
    const fence = options?.fence === undefined ? undefined : this.fenceOf(options.fence)
    let began = false
    return this.call(
      true,
      () => {
        began = false
        return this.immediate(() => {
          began = true
          if (fence) this.assertFence(fence)
          return op()
        })
      },
      // `busy` from BEGIN IMMEDIATE means nothing ran yet: safe to try again.
      () => !began,
    )
  }

  /**
   * Run `op` on the connection. A `busy` failure is retried (asynchronously, with jitter) until
   * `busyTimeoutMs` has passed when `retryable()` says the attempt changed nothing; reads
   * always can be retried.
   */
  async call<T>(write: boolean, op: () => T, retryable: () => boolean = () => !write): Promise<T> {
    this.assertOpen()
    if (write) this.assertWritable()
    return retryWhileBusy(
      this.options.busyTimeoutMs,
      () =>
        this.#gate.run(() => {
          this.assertOpen()
          try {
            return op()
          } catch (error) {
            throw translateSqliteError(error, write ? 'write failed' : 'read failed')
          }
        }),
      retryable,
    )
  }

  /**
   * Run `op` on the connection now, without waiting: `busy` when another caller's async
   * transaction holds the connection (joining it would tie our work to its commit) or when
   * SQLite's short wait for another process's lock runs out.
   */
  sync<T>(write: boolean, op: () => T): T {
    this.assertOpen()
    if (write) this.assertWritable()
    if (write && this.#gate.held && !this.#gate.insideTransaction) {
      throw new MemoryStoreError('busy', 'another transaction of this store is open; a synchronous write cannot wait for it')
    }
    try {
      return op()
    } catch (error) {
      throw translateSqliteError(error, write ? 'write failed' : 'read failed')
    }
  }

  fenceOf(fence: unknown): LeaseFence {
    return leaseFence(fence)
  }

  leaseName(value: unknown): string {
    return leaseName(value)
  }

  /** Throw `fenced` unless `fence` names the live lease (call inside the write transaction). */
  assertFence(fence: LeaseFence): void {
    const refusal = fenceRefusal(fence, this.db.select().from(schema.leases).where(eq(schema.leases.name, fence.name)).get(), this.now())
    if (refusal) throw refusal
  }

  /** An audit row without a change-log row (layers and leases are not indexed). */
  audit(spec: AuditSpec, options: WriteOptions | undefined, at: number): void {
    const actor = writeActor(options, this.options.actor)
    this.db
      .insert(schema.audit)
      .values({ at, op: spec.audit, entity: spec.entity, entityId: auditEntityId(spec.entity, spec.entityId), actor, revision: spec.revision ?? null, createdBy: this.options.user })
      .run()
  }

  /** Record the audit row and the change-log row of a write, inside its transaction. */
  record(spec: ChangeSpec, options: WriteOptions | undefined, at = this.now()): void {
    const actor = writeActor(options, this.options.actor)
    this.stmt('INSERT INTO store_audit (at, op, entity, entity_id, actor, revision, created_by) VALUES (?, ?, ?, ?, ?, ?, ?)').run(at, spec.audit, spec.entity, auditEntityId(spec.entity, spec.entityId), actor, spec.revision ?? null, this.options.user)
    this.stmt('INSERT INTO store_changes (entity, entity_id, op, at) VALUES (?, ?, ?, ?)').run(spec.entity, spec.entityId, spec.change, at)
  }

  /**
   * Bump the revision of every layer in `keys` once (inside the write's transaction) and
   * audit it: operation, revision and time, never content.
   */
  bumpLayers(keys: Iterable<string | undefined>, options: WriteOptions | undefined, now = this.now()): void {
    const t = schema.layerRevisions
    for (const key of new Set(keys)) {
      if (key === undefined) continue
      const row = this.db
        .insert(t)
        .values({ layerKey: key, revision: 1, updatedAt: now })
        .onConflictDoUpdate({ target: t.layerKey, set: { revision: sql`${t.revision} + 1`, updatedAt: sql`max(${t.updatedAt}, ${now})` } })
        .returning({ revision: t.revision })
        .get()
      this.audit({ entity: 'layer', entityId: key, audit: 'layer.change', revision: row?.revision ?? null }, options, now)
    }
  }

  /**
   * Run `fn(arg)` as one transaction holding the connection (see `MemoryStore.transaction`,
   * which passes the store as `arg`); inside another, as a savepoint.
   */
  async transaction<T, A = undefined>(fn: (arg: A) => Promise<T> | T, options?: TransactionOptions, arg?: A): Promise<T> {
    this.assertOpen()
    if (typeof fn !== 'function') throw new MemoryStoreError('invalid-argument', 'transaction needs a function')
    const fence = options?.fence === undefined ? undefined : this.fenceOf(options.fence)
    if (fence) this.assertWritable()
    return this.unit(!this.readonly, () => fn(arg as A), { fence, context: 'transaction failed' })
  }

  /**
   * Run `op` as one unit holding the connection: in its own transaction (a write: BEGIN
   * IMMEDIATE, so the write lock is taken up front and the fence is checked under it; a read:
   * a deferred transaction, one snapshot), or as a savepoint of the caller's open transaction.
   * `op` may be async: the connection stays held (this process's other callers wait) until it
   * settles, and it commits or rolls back whole. A synchronous `op` commits and frees the
   * connection before this returns, as a plain call does. A `busy` attempt is retried while
   * nothing ran yet (or always, with `rerun`, for reads that may simply run again).
   */
  unit<T>(write: boolean, op: () => T | PromiseLike<T>, options: { fence?: LeaseFence | undefined; context?: string; rerun?: boolean } = {}): Promise<T> {
    this.assertOpen()
    if (write) this.assertWritable()
    const { fence } = options
    const context = options.context ?? (write ? 'write failed' : 'read failed')
    if (this.#gate.insideTransaction) {
      if (fence) this.assertFence(fence)
      return this.#savepoint(op)
    }
    let began = false
    const attempt = () =>
      this.#gate.hold(() => {
        // A call that queued for the connection while close() began is new work: refuse it.
        if (this.#closed) throw new MemoryStoreError('closed', 'the memory store is closed')
        began = false
        try {
          this.stmt(write ? 'BEGIN IMMEDIATE' : 'BEGIN').run()
        } catch (error) {
          throw translateSqliteError(error, context)
        }
        began = true
        let result: T | PromiseLike<T>
        try {
          // Under the write lock: nobody can take the lease over until this transaction ends.
          if (fence) this.assertFence(fence)
          result = op()
        } catch (error) {
          this.#rollback('ROLLBACK')
          throw translateSqliteError(error, context)
        }
        if (!isThenable(result)) return this.#commit(result, context)
        return Promise.resolve(result).then(
          (value) => this.#commit(value, context),
          (error: unknown) => {
            this.#rollback('ROLLBACK')
            throw translateSqliteError(error, context)
          },
        )
      })
    return retryWhileBusy(this.options.busyTimeoutMs, attempt, () => options.rerun === true || !began)
  }

  #commit<T>(result: T, context: string): T {
    try {
      this.stmt('COMMIT').run()
    } catch (error) {
      this.#rollback('ROLLBACK')
      throw translateSqliteError(error, context)
    }
    return result
  }

  async #savepoint<T>(fn: () => PromiseLike<T> | T): Promise<T> {
    const name = `dshm_sp_${++this.#savepointCounter}`
    this.sqlite.exec(`SAVEPOINT ${name}`)
    try {
      const result = await fn()
      this.sqlite.exec(`RELEASE ${name}`)
      return result
    } catch (error) {
      this.#rollback(`ROLLBACK TO ${name}; RELEASE ${name}`)
      throw error
    }
  }

  #rollback(statement: string): void {
    // The search index lives in the same tables' transaction: it rolls back with the rows.
    if (this.sqlite.inTransaction) this.sqlite.exec(statement)
  }

  close(): Promise<void> {
    this.#closing ??= this.#close()
    return this.#closing
  }

  async #close(): Promise<void> {
    // Refuse new calls at once; let a running transaction finish first.
    this.#closed = true
    await this.#gate.idle()
    for (const snapshot of this.snapshots) snapshot.close()
    this.snapshots.clear()
    this.sqlite.close()
    this.#sqliteClosed = true
  }
}
