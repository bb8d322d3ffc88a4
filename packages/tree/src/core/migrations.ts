import { fileURLToPath } from 'node:url'
import { findPackageMigrations, type MigrationSet } from '@dsh-memory/store'
import { TreeError } from './errors.js'

/** Migration owner of this package: its tables are named `tree_…`. */
export const TREE_MIGRATION_OWNER = 'tree'

/**
 * The package's versioned SQL migrations (`migrations/tree/NNNN_name.sql`), for the store's
 * migration runner: `store.migrate(treeMigrations())` or `openMemoryStore({ extraMigrations })`.
 * @throws TreeError `not-found` when the package was installed without its migrations folder.
 */
export function treeMigrations(): MigrationSet {
  const set = findPackageMigrations(import.meta.url, TREE_MIGRATION_OWNER)
  if (set) return set
  throw new TreeError('not-found', `the memory-tree migrations folder is missing next to ${fileURLToPath(import.meta.url)}`)
}
