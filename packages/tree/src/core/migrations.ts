import { fileURLToPath } from 'node:url'
import { findPackageMigrations, type MigrationSet } from '@dsh-memory/store'
import { TreeError } from './errors.js'

/** Migration owner of this package: its tables are named `tree_…`. */
export const TREE_MIGRATION_OWNER = 'tree'

function packageMigrations(root: 'migrations' | 'migrations-postgres'): MigrationSet {
  const set = findPackageMigrations(import.meta.url, TREE_MIGRATION_OWNER, root)
  if (set) return set
  throw new TreeError('not-found', `the memory-tree ${root} folder is missing next to ${fileURLToPath(import.meta.url)}`)
}

/**
 * The package's versioned SQL migrations (`migrations/tree/NNNN_name.sql`), for the store's
 * migration runner: `store.migrate(treeMigrations())` or `openMemoryStore({ extraMigrations })`.
 * @throws TreeError `not-found` when the package was installed without its migrations folder.
 */
export function treeMigrations(): MigrationSet {
  return packageMigrations('migrations')
}

/**
 * The same tables' PostgreSQL migrations (`migrations-postgres/tree/NNNN_name.sql`, same owner
 * and versions), for the store's runner on a PostgreSQL store.
 * @throws TreeError `not-found` when the package was installed without that folder.
 */
export function treePgMigrations(): MigrationSet {
  return packageMigrations('migrations-postgres')
}
