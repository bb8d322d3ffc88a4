/**
 * The extension seam: a package declares its own tables (a drizzle schema + versioned SQL
 * migrations, per backend) and queries them on the store's own session: the store's one
 * connection, its busy retry, its transactions (a package write inside `store.transaction(...)`
 * commits or rolls back with the store's writes), its lease fencing and its audit log.
 *
 * Backend-neutral contract: callers get a drizzle database handle and never the driver. On
 * SQLite it is the synchronous better-sqlite3 drizzle database (so host hooks that must answer
 * synchronously can read); on PostgreSQL a node-postgres drizzle database on the session's
 * client, and the synchronous paths refuse with `unsupported`. Both are typed as the SQLite
 * database: code in the portable style (README, "Package tables") runs on both.
 */
import type { BaseSQLiteDatabase } from 'drizzle-orm/sqlite-core'
import { MemoryStoreError } from './errors.ts'
import { validateMigrationSet } from './migrations.ts'
import type { WriteOptions } from './types-common.ts'
import type { MigrationSet } from './types-meta.ts'

/** The backend a store runs on, as package code branches on it (`tables.dialect`). */
export type PackageDialect = 'sqlite' | 'postgresql'

/** What a write statement's `.run()` reports (SQLite only: the portable style counts with `.returning()`). */
export interface PackageRunResult {
  /** Rows inserted, updated or deleted. */
  readonly changes: number
  /** Row id of the last inserted row. */
  readonly lastInsertRowid: number | bigint
}

/**
 * The drizzle database a package's queries run on: the store's connection, typed by `schema`.
 * Typed as SQLite's on both backends; on PostgreSQL only the portable subset (awaited builders,
 * no `.all()`/`.get()`/`.run()`/`.values()`) exists.
 */
export type PackageDatabase<TSchema extends Record<string, unknown> = Record<string, never>> = BaseSQLiteDatabase<'sync', PackageRunResult, TSchema>

/** A column that holds a workspace id, as the workspace carry-over (`workspace-carry-over.ts`) re-keys it. */
export interface WorkspaceKeyColumn {
  /** The table, unqualified (PostgreSQL: the store's schema is the session's search_path). */
  readonly table: string
  readonly column: string
  /** What precedes the workspace in the column (`'workspace:'` for layer keys); default none. */
  readonly prefix?: string
  /**
   * The other columns of a unique key that includes `column`: a row moves only when no row
   * already holds (new key, same values of these). `[]` when `column` alone is unique; omit
   * when no unique key involves it.
   */
  readonly unique?: readonly string[]
  /** The change-log entity of the table's rows (`id` column), so derived views follow the move. */
  readonly changeEntity?: string
}

/** What a package declares to get its tables on the store's session. */
export interface PackageTablesDeclaration<TSchema extends Record<string, unknown> = Record<string, never>> {
  /** The package's SQLite migrations; their owner (e.g. `tree`) is the package's table prefix and audit entity. */
  readonly migrations: MigrationSet
  /** The SQLite drizzle tables of the package (what `t` and `db` are typed by); optional. */
  readonly schema?: TSchema
  /**
   * The same tables on PostgreSQL: migrations with the SAME owner (files in
   * `<package>/migrations-postgres/<owner>/NNNN_name.sql`, found with
   * `findPackageMigrations(import.meta.url, owner, 'migrations-postgres')`) and pg-core tables
   * with the SAME keys and the same column property names as `schema`. Without it,
   * `tables()` on PostgreSQL rejects with `unsupported` naming the owner.
   */
  readonly postgres?: { readonly migrations: MigrationSet; readonly schema: Record<string, unknown> }
  /**
   * The package's columns that hold a workspace id (the session's workspace, or a key embedding
   * it after a prefix). The DSH store service re-keys rows under a path that is now a git
   * workspace id the first time the package opens its tables (see `workspace-carry-over.ts`).
   */
  readonly workspaceKeys?: readonly WorkspaceKeyColumn[]
}

/** One audit row of a package write: the op is `<owner>.<verb>`, never content. */
export interface PackageAuditEntry {
  /** `<owner>.<verb>`, e.g. `tree.item.add`. */
  readonly op: string
  /** The id of what changed (workspace paths are replaced by an opaque digest, as for store rows). */
  readonly entityId: string
  readonly revision?: number | null
}

/** Options of a package write: the store's {@link WriteOptions} (fence, actor) plus audit rows. */
export interface PackageWriteOptions extends WriteOptions {
  /** Audit rows recorded in the write's own transaction (entity = the package's owner). */
  readonly audit?: PackageAuditEntry | readonly PackageAuditEntry[]
}

/**
 * A package's tables on the store's session. One `read`/`write` callback is one unit: it holds
 * the store's connection for its whole run (this process's other callers wait) inside one
 * transaction, so it may be async, but it must await only its own `db` queries, never the
 * network, a timer or another store call: everybody else waits while it runs.
 */
export interface PackageTables<TSchema extends Record<string, unknown> = Record<string, never>> {
  /** The migration owner: the package's table prefix and audit entity. */
  readonly owner: string
  /** The backend in use: raw `sql` fragments that differ between dialects branch on it. */
  readonly dialect: PackageDialect
  /**
   * The tables of the backend in use (SQLite: `declaration.schema`; PostgreSQL:
   * `declaration.postgres.schema`), typed as the SQLite schema: same keys, same column names.
   * Queries take their tables from here (or the callback's `t`), never from a module import.
   */
  readonly t: TSchema
  /**
   * Run `op` as one consistent read (one snapshot). Waits for the store's open transaction of
   * another caller; retries while another process holds a lock the read needs. Inside
   * `store.transaction(...)` it reads that transaction's state.
   */
  read<T>(op: (db: PackageDatabase<TSchema>, t: TSchema) => T | Promise<T>): Promise<T>
  /**
   * Run `op` as one atomic write (SQLite: the write lock is taken up front; PostgreSQL: the
   * store's writer lock). Inside `store.transaction(...)` it joins that transaction as a
   * savepoint. With `options.fence` it fails with `fenced` (nothing written) unless the lease is
   * live under the write lock; `options.audit` rows are written in the same transaction. When
   * `op` throws (or rejects), nothing it wrote survives.
   * @throws MemoryStoreError `readonly`, `fenced`, `busy` (the lock stayed taken for `busyTimeoutMs`), `closed`
   */
  write<T>(op: (db: PackageDatabase<TSchema>, t: TSchema) => T | Promise<T>, options?: PackageWriteOptions): Promise<T>
  /**
   * {@link read} for a host hook that must answer synchronously; `op` must be synchronous. Never
   * waits: fails with `busy` at once when another process holds a lock for longer than one short
   * slice (the caller answers without memory). It sees the connection's current state, which
   * includes an open transaction of this process.
   * @throws MemoryStoreError `unsupported` on a backend without synchronous access (PostgreSQL)
   */
  readSync<T>(op: (db: PackageDatabase<TSchema>, t: TSchema) => T): T
  /**
   * {@link write} for code that must finish synchronously; `op` must be synchronous. Fails with
   * `busy` at once when the store's connection is held by another caller's open transaction, or
   * another process keeps the write lock longer than one short slice: the caller retries later.
   * @throws MemoryStoreError `unsupported` on a backend without synchronous access (PostgreSQL)
   */
  writeSync<T>(op: (db: PackageDatabase<TSchema>, t: TSchema) => T, options?: PackageWriteOptions): T
}

/** The part of every store (`MemoryStore.tables`) that hands out {@link PackageTables}. */
export interface PackageTablesHost {
  /**
   * Apply a package's migrations (of the backend in use) through the store's runner (a
   * read-only store only checks them: `schema-too-old` while some are pending) and return the
   * package's tables on the store's session. The same owner gets the same handle.
   * @throws MemoryStoreError `unsupported` on PostgreSQL when the declaration has no `postgres` part
   */
  tables<TSchema extends Record<string, unknown> = Record<string, never>>(declaration: PackageTablesDeclaration<TSchema>): Promise<PackageTables<TSchema>>
}

/** Records one audit row inside the running write (SQLite: synchronously). */
export type PackageAuditWriter = (owner: string, entry: PackageAuditEntry) => void | Promise<void>

/**
 * What a backend gives {@link openPackageTables}: its session's units. Internal. Each runs `op`
 * as one unit (see {@link PackageTables}) and hands it the audit writer of that unit.
 */
export interface PackageSessionPort {
  readonly dialect: PackageDialect
  read<T>(op: () => T | Promise<T>): Promise<T>
  write<T>(op: (audit: PackageAuditWriter) => T | Promise<T>, options?: WriteOptions): Promise<T>
  readSync<T>(op: () => T): T
  writeSync<T>(op: (audit: PackageAuditWriter) => T, options?: WriteOptions): T
}

/** True for a promise or any other thenable (a drizzle query builder returned unawaited is one). */
export function isThenable<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | null | undefined)?.then === 'function'
}

/** `next(value)`, after `value` settles when it is a thenable: keeps synchronous work synchronous. */
function andThen<A, B>(value: A | PromiseLike<A>, next: (value: A) => B | PromiseLike<B>): B | Promise<B> {
  return isThenable(value) ? Promise.resolve(value).then(next) : (next(value) as B | Promise<B>)
}

/** The migration owner of the store's own tables; no package may declare it. */
const RESERVED_OWNER = 'store'

/**
 * Check a declaration before anything is migrated.
 * @throws MemoryStoreError `invalid-argument` naming the bad field
 */
export function validateDeclaration(declaration: PackageTablesDeclaration<Record<string, unknown>>): void {
  if (!declaration || typeof declaration !== 'object') throw new MemoryStoreError('invalid-argument', 'tables: the declaration must be an object { migrations, schema? }')
  validateMigrationSet(declaration.migrations)
  if (declaration.migrations.owner === RESERVED_OWNER) {
    throw new MemoryStoreError('invalid-argument', "tables: migrations.owner 'store' is reserved for @dsh-memory/store")
  }
  if (declaration.schema !== undefined && (declaration.schema === null || typeof declaration.schema !== 'object')) {
    throw new MemoryStoreError('invalid-argument', 'tables: schema must be an object of drizzle tables')
  }
  const postgres = declaration.postgres
  if (postgres === undefined) return
  const owner = declaration.migrations.owner
  const fail = (field: string, why: string) => new MemoryStoreError('invalid-argument', `tables: ${field} ${why} (owner '${owner}')`, { path: field })
  if (!postgres || typeof postgres !== 'object') throw fail('postgres', 'must be an object { migrations, schema }')
  try {
    validateMigrationSet(postgres.migrations)
  } catch (error) {
    throw fail('postgres.migrations', `is not a valid migration set: ${(error as Error).message}`)
  }
  if (postgres.migrations.owner !== owner) throw fail('postgres.migrations.owner', `must be the same owner as migrations.owner, got '${postgres.migrations.owner}'`)
  if (!postgres.schema || typeof postgres.schema !== 'object') throw fail('postgres.schema', 'must be an object of pg-core tables')
}

/** Build the {@link PackageTables} of `owner` over a backend's session units. */
export function openPackageTables<TSchema extends Record<string, unknown>>(
  owner: string,
  db: PackageDatabase<TSchema>,
  t: TSchema,
  port: PackageSessionPort,
): PackageTables<TSchema> {
  const audits = (options: PackageWriteOptions | undefined): PackageAuditEntry[] => {
    const given = options?.audit
    const list = given === undefined ? [] : Array.isArray(given) ? [...(given as readonly PackageAuditEntry[])] : [given as PackageAuditEntry]
    list.forEach((entry, index) => {
      const path = `audit[${index}]`
      if (!entry || typeof entry.op !== 'string' || !entry.op.startsWith(`${owner}.`) || entry.op.length > 200) {
        throw new MemoryStoreError('invalid-argument', `${path}.op must be '${owner}.<verb>' (at most 200 characters)`)
      }
      if (typeof entry.entityId !== 'string' || entry.entityId.length === 0 || entry.entityId.length > 500) {
        throw new MemoryStoreError('invalid-argument', `${path}.entityId must be a non-empty string of at most 500 characters`)
      }
    })
    return list
  }
  /** The op, then its audit rows, in one unit; synchronous as long as both are. */
  const unit =
    <T>(op: (db: PackageDatabase<TSchema>, t: TSchema) => T | Promise<T>, entries: readonly PackageAuditEntry[]) =>
    (audit: PackageAuditWriter): T | Promise<T> =>
      andThen(op(db, t), (result) => andThen(
        entries.reduce<void | Promise<void>>((done, entry) => andThen(done, () => audit(owner, entry)), undefined),
        () => result,
      ))
  return {
    owner,
    dialect: port.dialect,
    t,
    read: (op) => port.read(() => op(db, t)),
    readSync: (op) => port.readSync(() => synchronous(op(db, t))),
    write: async (op, options) => {
      const entries = audits(options)
      return port.write(unit(op, entries), options)
    },
    writeSync: (op, options) => {
      const entries = audits(options)
      return port.writeSync((audit) => synchronous(unit(op, entries)(audit)), options)
    },
  }

  function synchronous<T>(result: T | PromiseLike<T>): T {
    // Throwing rolls the unit back: nothing an async callback wrote before its first await survives.
    if (isThenable(result)) {
      throw new MemoryStoreError('invalid-argument', `${owner}: a readSync/writeSync callback must be synchronous (it returned a promise or an unawaited query); use read/write`)
    }
    return result
  }
}
