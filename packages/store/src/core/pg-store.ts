/**
 * The PostgreSQL backend of {@link MemoryStore}: node-postgres (one client per store) with
 * drizzle's pg dialect, behind the same contract as the SQLite backend. Callers never see SQL.
 *
 * This file opens the connection and assembles the store from its parts, one per job: the
 * session (`pg-session.ts`: client, gate, transactions, writer lock, fencing, audit), the
 * migrations (`pg-migrations.ts`), and one module per repository (`pg-meta.ts`,
 * `pg-leases.ts`, …). Loaded on the first PostgreSQL open (`open-store.ts` holds the
 * public openers), so SQLite users never load node-postgres.
 */
import { drizzle } from 'drizzle-orm/node-postgres'
import { ChangeFeedCore } from './change-feed.ts'
import { MemoryStoreError } from './errors.ts'
import { packageMigrationSets } from './migrations.ts'
import { type PostgresStoreOptions, resolvePostgresOptions } from './options.ts'
import {
  openPackageTables,
  type PackageDatabase,
  type PackageSessionPort,
  type PackageTables,
  type PackageTablesDeclaration,
  validateDeclaration,
} from './package-tables.ts'
import { pgLayerRepository, pgLeaseRepository } from './pg-leases.ts'
import { pgAuditLog, pgMetaRepository } from './pg-meta.ts'
import { pgConversationRepository, pgMessageRepository } from './pg-conversations.ts'
import { pgMemoryRepository } from './pg-memories.ts'
import { listenPg } from './pg-listener.ts'
import { applyPgMigrations } from './pg-migrations.ts'
import { pgPersonaRepository } from './pg-persona.ts'
import { pgSceneRepository } from './pg-scenes.ts'
import { openPgSearchIndex, pgSearchService } from './pg-search.ts'
import { pgStatsService } from './pg-stats.ts'
import { pgExportJsonl, pgImportJsonl, pgTransferService } from './pg-transfer.ts'
import { connectPg, PgSession } from './pg-session.ts'
import { postgresStoreMigrations } from './store-migrations.ts'
import type { EntityName } from './types-common.ts'
import type { AppliedMigration, MigrationSet } from './types-meta.ts'
import type { OpenedMemoryStore } from './types-store.ts'

/** {@link openPostgresStore}'s work, loaded on first use (see `open-store.ts`). */
export async function openPostgres(options: PostgresStoreOptions): Promise<OpenedMemoryStore> {
  const resolved = resolvePostgresOptions(options)
  const { client, lockKey } = await connectPg(resolved)
  const s = new PgSession(client, resolved, lockKey)
  try {
    await applyPgMigrations(s, [postgresStoreMigrations(), ...resolved.store.extraMigrations], s.now(), '@dsh-memory/store')
    await openPgSearchIndex(s)
    return assembleStore(s)
  } catch (error) {
    await s.close()
    throw error
  }
}

/** The store: the repositories of one session, plus migrations and the package-tables seam. */
function assembleStore(s: PgSession): OpenedMemoryStore & AsyncDisposable {
  const packageTables = new Map<string, PackageTables<Record<string, unknown>>>()
  const changes = new ChangeFeedCore(
    {
      head: () => s.read(async (tx) => (await tx.query<{ seq: number | null }>('SELECT max(seq) AS seq FROM store_changes'))[0]?.seq ?? 0),
      since: (after, limit) =>
        s.read(async (tx) =>
          (await tx.query<{ seq: number; entity: string; entity_id: string; op: string; at: number }>('SELECT seq, entity, entity_id, op, at FROM store_changes WHERE seq > $1 ORDER BY seq LIMIT $2', [after, limit])).map(
            (row) => ({ seq: row.seq, entity: row.entity as EntityName, entityId: row.entity_id, op: row.op as 'insert' | 'update' | 'delete', at: row.at }),
          ),
        ),
      listen: (handlers) => listenPg(s.connection, handlers),
    },
    s.options.changePollMs,
  )
  const close = async () => {
    await changes.close()
    await s.close()
  }
  const migrate = async (sets: MigrationSet | readonly MigrationSet[]): Promise<AppliedMigration[]> => applyPgMigrations(s, packageMigrationSets(sets), s.now())
  const store: OpenedMemoryStore & AsyncDisposable = {
    path: s.path,
    user: s.options.user,
    readonly: s.readonly,
    get closed() {
      return s.closed
    },
    conversations: pgConversationRepository(s),
    messages: pgMessageRepository(s),
    memories: pgMemoryRepository(s),
    scenes: pgSceneRepository(s),
    persona: pgPersonaRepository(s),
    audit: pgAuditLog(s),
    meta: pgMetaRepository(s),
    search: pgSearchService(s),
    layers: pgLayerRepository(s),
    leases: pgLeaseRepository(s),
    stats: pgStatsService(s),
    transfer: pgTransferService(s),
    changes,
    transaction: (fn, options) => s.transaction(fn, options, store),
    exportJsonl: () => pgExportJsonl(s),
    importJsonl: (lines, options) => pgImportJsonl(s, lines, options),
    migrate,
    async tables<TSchema extends Record<string, unknown> = Record<string, never>>(declaration: PackageTablesDeclaration<TSchema>): Promise<PackageTables<TSchema>> {
      s.assertOpen()
      validateDeclaration(declaration)
      const owner = declaration.migrations.owner
      const postgres = declaration.postgres
      if (!postgres) {
        throw new MemoryStoreError('unsupported', `package tables of '${owner}' are not declared for PostgreSQL (the declaration has no postgres part); use a SQLite store or a version of the package that declares them`)
      }
      await applyPgMigrations(s, [postgres.migrations], s.now())
      let tables = packageTables.get(owner)
      if (!tables) {
        // Drizzle on the session's one client (whichever is current after a reconnect): every
        // query runs inside the unit's transaction.
        const db = drizzle({ client: s.connectionProxy as never, schema: postgres.schema }) as unknown as PackageDatabase<Record<string, unknown>>
        tables = openPackageTables(owner, db, postgres.schema, pgPackagePort(s, owner))
        packageTables.set(owner, tables)
      }
      return tables as unknown as PackageTables<TSchema>
    },
    close,
    [Symbol.asyncDispose]: close,
  }
  return store
}

/**
 * The session units of one package's tables: a read is the session's snapshot read, a write
 * its serialised write (writer lock, fence, savepoint inside store.transaction) with the audit
 * rows on the same transaction. The client answers asynchronously only: the synchronous
 * paths refuse.
 */
function pgPackagePort(s: PgSession, owner: string): PackageSessionPort {
  const synchronous = (): never => {
    throw new MemoryStoreError('unsupported', `package tables of '${owner}': readSync/writeSync need a synchronous database, which PostgreSQL is not; use read/write (a host hook that must answer synchronously keeps a cache)`)
  }
  return {
    dialect: 'postgresql',
    read: (op) => s.read(async () => op()),
    write: (op, options) =>
      s.write(async (tx) => {
        // Other processes' views of these tables (the cue bank's) reload on the commit's notification.
        s.tablesChanged(owner)
        return op((entity, entry) => s.audit(tx, { entity: entity as EntityName, entityId: entry.entityId, audit: entry.op, revision: entry.revision ?? null }, options, s.now()))
      }, options),
    readSync: synchronous,
    writeSync: synchronous,
  }
}
