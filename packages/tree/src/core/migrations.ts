import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { loadMigrationDir, type MigrationSet } from '@dsh-memory/store'
import { TreeError } from './errors.js'

/** Migration owner of this package: its tables are named `tree_…`. */
export const TREE_MIGRATION_OWNER = 'tree'

/**
 * The package's versioned SQL migrations (`migrations/tree/NNNN_name.sql`), for the store's
 * migration runner: `store.migrate(treeMigrations())` or `openMemoryStore({ extraMigrations })`.
 * @throws TreeError `not-found` when the package was installed without its migrations folder.
 */
export function treeMigrations(): MigrationSet {
  // Bundled code runs from dist/, sources from src/core/ (tests): try both layouts.
  for (const candidate of ['../migrations/tree/', '../../migrations/tree/']) {
    const url = new URL(candidate, import.meta.url)
    if (existsSync(fileURLToPath(url))) return loadMigrationDir(url, TREE_MIGRATION_OWNER)
  }
  throw new TreeError('not-found', `the memory-tree migrations folder is missing next to ${fileURLToPath(import.meta.url)}`)
}
