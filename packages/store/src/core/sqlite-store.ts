/**
 * The SQLite backend of {@link MemoryStore}: better-sqlite3 (WAL, busy timeout, foreign
 * keys, synchronous=NORMAL) with drizzle for typed queries. Callers never see SQL.
 *
 * This file opens the database and assembles the store from its parts, one per job: the
 * session (`sqlite-session.ts`: connection, busy retry, transactions, fencing, audit), one
 * module per repository (`sqlite-conversations.ts`, `sqlite-memories.ts`, `sqlite-scenes.ts`,
 * `sqlite-persona.ts`, `sqlite-meta.ts`, `sqlite-leases.ts`), search (`sqlite-search.ts`),
 * counts (`sqlite-stats.ts`) and export/import (`sqlite-transfer.ts`).
 */
import { existsSync, mkdirSync, rmSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { drizzle } from 'drizzle-orm/better-sqlite3'
import { AUDIT_ID_SQL_FUNCTION, auditEntityId } from './audit-id.ts'
import { ChangeFeedCore } from './change-feed.ts'
import { MemoryStoreError } from './errors.ts'
import { applyMigrations, packageMigrationSets } from './migrations.ts'
import { type MemoryStoreOptions, resolveStoreOptions } from './options.ts'
import {
  openPackageTables,
  type PackageAuditWriter,
  type PackageDatabase,
  type PackageSessionPort,
  type PackageTables,
  type PackageTablesDeclaration,
  type PackageTablesHost,
  validateDeclaration,
} from './package-tables.ts'
import { conversationRepository, messageRepository } from './sqlite-conversations.ts'
import { layerRepository, leaseRepository } from './sqlite-leases.ts'
import { memoryRepository } from './sqlite-memories.ts'
import { auditLog, metaRepository } from './sqlite-meta.ts'
import { personaRepository } from './sqlite-persona.ts'
import { sceneRepository } from './sqlite-scenes.ts'
import { searchService } from './sqlite-search.ts'
import { BUSY_SLICE_MS, SqliteSession, translateSqliteError } from './sqlite-session.ts'
import { statsService } from './sqlite-stats.ts'
import { exportJsonl, importJsonl, transferService } from './sqlite-transfer.ts'
import { storeMigrations } from './store-migrations.ts'
import type { StoreChange } from './types-changes.ts'
import type { EntityName, WriteOptions } from './types-common.ts'
import type { AppliedMigration, MigrationSet } from './types-meta.ts'
import type { CoordinatedMemoryStore } from './types-store.ts'

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
    // The MiniSearch file of versions before FTS5 is dead weight now.
    if (!resolved.readonly && resolved.legacyIndexPath) rmSync(resolved.legacyIndexPath, { force: true })
    const store = assembleStore(new SqliteSession(sqlite, resolved))
    // From here on SQLite's own (thread-blocking) wait is one short slice; longer waits for
    // another process's write lock happen between slices without blocking the event loop.
    sqlite.pragma(`busy_timeout = ${Math.min(resolved.busyTimeoutMs, BUSY_SLICE_MS)}`)
    return store
  } catch (error) {
    sqlite.close()
    throw translateSqliteError(error, `cannot open ${resolved.path}`)
  }
}

/** The store: the repositories of one session, plus migrations and the package-tables seam. */
function assembleStore(s: SqliteSession): CoordinatedMemoryStore & PackageTablesHost & AsyncDisposable {
  const packageTables = new Map<string, PackageTables<Record<string, unknown>>>()
  const audit =
    (options: WriteOptions | undefined): PackageAuditWriter =>
    (owner, entry) =>
      s.audit({ entity: owner as EntityName, entityId: entry.entityId, audit: entry.op, revision: entry.revision ?? null }, options, s.now())
  const packagePort: PackageSessionPort = {
    dialect: 'sqlite',
    // A deferred transaction: every statement of the read sees one snapshot; a busy read may run again.
    read: (op) => s.unit(false, op, { rerun: true }),
    write: (op, options) => s.unit(true, () => op(audit(options)), { fence: options?.fence === undefined ? undefined : s.fenceOf(options.fence) }),
    readSync: (op) => s.sync(false, () => s.deferred(op)),
    writeSync: (op, options) => {
      const fence = options?.fence === undefined ? undefined : s.fenceOf(options.fence)
      return s.sync(true, () =>
        s.immediate(() => {
          if (fence) s.assertFence(fence)
          return op(audit(options))
        }),
      )
    },
  }
  const migrate = async (sets: MigrationSet | readonly MigrationSet[]): Promise<AppliedMigration[]> => {
    const list = packageMigrationSets(sets)
    return s.call(!s.readonly, () => applyMigrations(s.sqlite, list, s.now(), { readonly: s.readonly }))
  }
  // No notifications on SQLite: a subscribed feed polls the change log (`changePollMs`).
  const changes = new ChangeFeedCore(
    {
      head: () => s.read(() => (s.sqlite.prepare('SELECT max(seq) AS seq FROM store_changes').get() as { seq: number | null }).seq ?? 0),
      since: (after, limit) =>
        s.read(() =>
          (s.sqlite.prepare('SELECT seq, entity, entity_id AS entityId, op, at FROM store_changes WHERE seq > ? ORDER BY seq LIMIT ?').all(after, limit) as StoreChange[]),
        ),
    },
    s.options.changePollMs,
  )
  const close = async () => {
    await changes.close()
    await s.close()
  }
  const store: CoordinatedMemoryStore & PackageTablesHost & AsyncDisposable = {
    path: s.path,
    user: s.options.user,
    readonly: s.readonly,
    get closed() {
      return s.closed
    },
    conversations: conversationRepository(s),
    messages: messageRepository(s),
    memories: memoryRepository(s),
    scenes: sceneRepository(s),
    persona: personaRepository(s),
    audit: auditLog(s),
    meta: metaRepository(s),
    // Last: opening a writable store brings the search index up to date here.
    search: searchService(s),
    stats: statsService(s),
    transfer: transferService(s),
    changes,
    layers: layerRepository(s),
    leases: leaseRepository(s),
    transaction: (fn, options) => s.transaction(fn, options, store),
    exportJsonl: () => exportJsonl(s),
    importJsonl: (lines, options) => importJsonl(s, lines, options),
    migrate,
    async tables<TSchema extends Record<string, unknown> = Record<string, never>>(declaration: PackageTablesDeclaration<TSchema>): Promise<PackageTables<TSchema>> {
      s.assertOpen()
      validateDeclaration(declaration)
      const owner = declaration.migrations.owner
      await migrate(declaration.migrations)
      let tables = packageTables.get(owner)
      if (!tables) {
        const schema = declaration.schema ?? {}
        const db = drizzle({ client: s.sqlite, schema }) as unknown as PackageDatabase<Record<string, unknown>>
        tables = openPackageTables(owner, db, schema, packagePort)
        packageTables.set(owner, tables)
      }
      return tables as unknown as PackageTables<TSchema>
    },
    close,
    [Symbol.asyncDispose]: close,
  }
  return store
}
