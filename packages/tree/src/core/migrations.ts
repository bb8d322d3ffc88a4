import { type MigrationSet, packageMigrations } from '@dsh-memory/store'
import { TreeError } from './errors.js'

/** Migration owner of this package: its tables are named `tree_…`. */
export const TREE_MIGRATION_OWNER = 'tree'

/** The package's own error for a migrations folder missing from its install. */
export function missingTreeMigrations(message: string): TreeError {
  return new TreeError('not-found', message)
}

/**
 * The package's versioned SQL migrations (`migrations/tree/NNNN_name.sql`), for the store's
 * migration runner: `store.migrate(treeMigrations())` or `openMemoryStore({ extraMigrations })`.
 * @throws TreeError `not-found` when the package was installed without its migrations folder.
 */
export function treeMigrations(): MigrationSet {
  return packageMigrations(import.meta.url, TREE_MIGRATION_OWNER, 'migrations', missingTreeMigrations)
}

/**
 * The same tables' PostgreSQL migrations (`migrations-postgres/tree/NNNN_name.sql`, same owner
 * and versions), for the store's runner on a PostgreSQL store.
 * @throws TreeError `not-found` when the package was installed without that folder.
 */
export function treePgMigrations(): MigrationSet {
  return packageMigrations(import.meta.url, TREE_MIGRATION_OWNER, 'migrations-postgres', missingTreeMigrations)
}
