/**
 * Recall's own tables on the store's session: the `recall` migrations, the drizzle schema,
 * and the one open per store that also upgrades a data dir of the old format in place (see
 * `legacy-state.ts`). Session settings, the injection ledger and the lifecycle all reach
 * their rows through {@link openRecallTables}.
 */
import { type MemoryStore, type MigrationSet, packageDeclaration, packageMigrations, type PackageTables, type PackageTablesDeclaration } from '@dsh-memory/store'
import { RECALL_WORKSPACE_KEYS } from './workspace-keys.ts'
import { RecallError } from './errors.ts'
import { upgradeLegacyState } from './legacy-state.ts'
import { recallPgSchema } from './pg-state-schema.ts'
import { type RecallSchema, recallSchema } from './state-schema.ts'

/** Migration owner of this package: its tables are named `recall_…`. */
export const RECALL_MIGRATION_OWNER = 'recall'

/** Recall's tables on one store. */
export type RecallTables = PackageTables<RecallSchema>

/** What recall's state needs of a store (the Cordis service and a plain store both fit). */
export type RecallStateHost = Pick<MemoryStore, 'tables' | 'meta' | 'transaction'>

/**
 * The package's versioned SQL migrations (`<root>/recall/NNNN_name.sql`; `migrations-postgres`
 * holds the PostgreSQL twins).
 * @throws RecallError `not-found` when the package was installed without its migrations folder.
 */
export function recallMigrations(root: 'migrations' | 'migrations-postgres' = 'migrations'): MigrationSet {
  return packageMigrations(import.meta.url, RECALL_MIGRATION_OWNER, root, missing)
}

/** What `store.tables(...)` gets: the SQLite tables and, for a PostgreSQL store, their pg-core twins. */
export function recallDeclaration(): PackageTablesDeclaration<RecallSchema> {
  return packageDeclaration(import.meta.url, RECALL_MIGRATION_OWNER, { schema: recallSchema, pgSchema: recallPgSchema, missing })
}

function missing(message: string): RecallError {
  return new RecallError('not-found', message)
}

const opened = new WeakMap<object, Promise<RecallTables>>()

/**
 * Recall's tables on `store`: the first call per store applies the migrations and moves
 * old-format records out of the meta table (unreadable ones are left there and reported
 * through `onWarning`); later calls get the same handle. A failed open is not remembered,
 * so the next call tries again.
 * @throws MemoryStoreError from the store (`schema-too-new`, `schema-too-old` on a read-only store, `busy`, `closed`)
 */
export function openRecallTables(store: RecallStateHost, options: { onWarning?: (message: string) => void } = {}): Promise<RecallTables> {
  // The Cordis service wraps the store it opened: remember per underlying store, so a
  // service restart (a new store) opens again.
  const key = ((store as { store?: unknown }).store as object | undefined) ?? store
  let pending = opened.get(key)
  if (!pending) {
    pending = open(store, options.onWarning)
    opened.set(key, pending)
    pending.catch(() => {
      if (opened.get(key) === pending) opened.delete(key)
    })
  }
  return pending
}

async function open(store: RecallStateHost, warn: ((message: string) => void) | undefined): Promise<RecallTables> {
  const tables = await store.tables({ ...recallDeclaration(), workspaceKeys: RECALL_WORKSPACE_KEYS })
  // A read-only store cannot move anything; it reads the tables as they are. Old-format meta
  // records are SQLite history: a PostgreSQL store never had them.
  if ((store as { readonly?: unknown }).readonly === true || tables.dialect !== 'sqlite') return tables
  const report = await upgradeLegacyState(store, tables)
  if (report.kept.length > 0) {
    const listed = report.kept.map((entry) => `${entry.key} (${entry.reason})`).join('; ')
    warn?.(`memory-recall: ${report.kept.length} record(s) of the old format could not be read and stay in the meta table; their sessions use the defaults: ${listed}`)
  }
  return tables
}
