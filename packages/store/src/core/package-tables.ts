/**
 * The extension seam: a package declares its own tables (a drizzle schema + versioned SQL
 * migrations) and queries them on the store's own session: the store's one connection, its
 * busy retry, its transactions (a package write inside `store.transaction(...)` commits or
 * rolls back with the store's writes), its lease fencing and its audit log.
 *
 * Backend-neutral contract: callers get a drizzle database handle and never the driver. The
 * SQLite backend hands out a synchronous drizzle database (so host hooks that must answer
 * synchronously can read); a server backend would implement the same interface with the
 * synchronous paths refusing with `unsupported`.
 */
import type { BaseSQLiteDatabase } from 'drizzle-orm/sqlite-core'
import { MemoryStoreError } from './errors.ts'
import { validateMigrationSet } from './migrations.ts'
import type { WriteOptions } from './types-common.ts'
import type { MigrationSet } from './types-meta.ts'

/** What a write statement's `.run()` reports. */
export interface PackageRunResult {
  /** Rows inserted, updated or deleted. */
  readonly changes: number
  /** Row id of the last inserted row. */
  readonly lastInsertRowid: number | bigint
}

/** The drizzle database a package's queries run on: the store's connection, typed by `schema`. */
export type PackageDatabase<TSchema extends Record<string, unknown> = Record<string, never>> = BaseSQLiteDatabase<'sync', PackageRunResult, TSchema>

/** What a package declares to get its tables on the store's session. */
export interface PackageTablesDeclaration<TSchema extends Record<string, unknown> = Record<string, never>> {
  /** The package's migrations; their owner (e.g. `tree`) is the package's table prefix and audit entity. */
  readonly migrations: MigrationSet
  /** The drizzle tables of the package (for the typed relational query API); optional. */
  readonly schema?: TSchema
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
 * A package's tables on the store's session. Every callback is synchronous (it must not
 * return a promise): one callback is one atomic unit that never spans an await, so other
 * processes serialise on the database's write lock and this process's other callers are
 * never left waiting on a half-done unit.
 */
export interface PackageTables<TSchema extends Record<string, unknown> = Record<string, never>> {
  /** The migration owner: the package's table prefix and audit entity. */
  readonly owner: string
  /**
   * Run `op` as one consistent read (one snapshot). Waits for the store's open transaction of
   * another caller; retries while another process holds a lock the read needs.
   */
  read<T>(op: (db: PackageDatabase<TSchema>) => T): Promise<T>
  /**
   * Run `op` as one atomic write (the write lock is taken up front). Inside
   * `store.transaction(...)` it joins that transaction as a savepoint. With `options.fence` it
   * fails with `fenced` (nothing written) unless the lease is live under the write lock;
   * `options.audit` rows are written in the same transaction.
   * @throws MemoryStoreError `readonly`, `fenced`, `busy` (the lock stayed taken for `busyTimeoutMs`), `closed`
   */
  write<T>(op: (db: PackageDatabase<TSchema>) => T, options?: PackageWriteOptions): Promise<T>
  /**
   * {@link read} for a host hook that must answer synchronously. Never waits: fails with `busy`
   * at once when another process holds a lock for longer than one short slice (the caller
   * answers without memory). It sees the connection's current state, which includes an open
   * transaction of this process.
   * @throws MemoryStoreError `unsupported` on a backend without synchronous access
   */
  readSync<T>(op: (db: PackageDatabase<TSchema>) => T): T
  /**
   * {@link write} for code that must finish synchronously. Fails with `busy` at once when the
   * store's connection is held by another caller's open transaction, or another process keeps
   * the write lock longer than one short slice: the caller retries later.
   */
  writeSync<T>(op: (db: PackageDatabase<TSchema>) => T, options?: PackageWriteOptions): T
}

/** The part of every store (`MemoryStore.tables`) that hands out {@link PackageTables}. */
export interface PackageTablesHost {
  /**
   * Apply a package's migrations through the store's runner (a read-only store only checks
   * them: `schema-too-old` while some are pending) and return the package's tables on the
   * store's session. The same owner gets the same handle.
   */
  tables<TSchema extends Record<string, unknown> = Record<string, never>>(declaration: PackageTablesDeclaration<TSchema>): Promise<PackageTables<TSchema>>
}

/** What a backend gives {@link openPackageTables}: its session's primitives. Internal. */
export interface PackageSessionPort {
  read<T>(op: () => T): Promise<T>
  write<T>(op: () => T, options?: WriteOptions): Promise<T>
  readSync<T>(op: () => T): T
  writeSync<T>(op: () => T, options?: WriteOptions): T
  /** Record an audit row inside the running write. */
  audit(owner: string, entry: PackageAuditEntry, options: WriteOptions | undefined): void
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
}

/** Build the {@link PackageTables} of `owner` over a backend's session primitives. */
export function openPackageTables<TSchema extends Record<string, unknown>>(
  owner: string,
  db: PackageDatabase<TSchema>,
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
  const unit =
    <T>(op: (db: PackageDatabase<TSchema>) => T, entries: readonly PackageAuditEntry[] = [], options?: WriteOptions) =>
    (): T => {
      const result = op(db)
      if (result instanceof Promise) {
        // Throwing rolls the unit back: nothing an async callback wrote before its first await survives.
        throw new MemoryStoreError('invalid-argument', `${owner}: a table callback must be synchronous (it returned a promise); split the work or use store.transaction`)
      }
      for (const entry of entries) port.audit(owner, entry, options)
      return result
    }
  return {
    owner,
    read: (op) => port.read(unit(op)),
    readSync: (op) => port.readSync(unit(op)),
    write: async (op, options) => {
      const entries = audits(options)
      return port.write(unit(op, entries, options), options)
    },
    writeSync: (op, options) => {
      const entries = audits(options)
      return port.writeSync(unit(op, entries, options), options)
    },
  }
}
