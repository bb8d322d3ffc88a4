import { fileURLToPath } from 'node:url'
import { MemoryStoreError } from './errors.ts'
import { findPackageMigrations } from './migrations.ts'
import type { MigrationSet } from './types-meta.ts'

/** The migration owner of this package's own tables. */
export const STORE_MIGRATION_OWNER = 'store'

const cached = new Map<string, MigrationSet>()

/** The store's migrations under `<root>/store/` of the package root, read once per root. */
function packaged(root: string): MigrationSet {
  let set = cached.get(root)
  if (!set) {
    set = findPackageMigrations(import.meta.url, STORE_MIGRATION_OWNER, root)
    if (!set) throw new MemoryStoreError('corrupt', `@dsh-memory/store is missing its ${root}/ folder (looked beside ${fileURLToPath(import.meta.url)})`)
    cached.set(root, set)
  }
  return set
}

/**
 * This package's SQLite migrations, read once from `migrations/store/` in the package root. The
 * file sits at `dist/<chunk>.js` when built and at `src/core/store-migrations.ts` under
 * vitest, so both depths are tried, nearest first.
 * @throws MemoryStoreError `corrupt` when the package was installed without its `migrations/` folder.
 */
export function storeMigrations(): MigrationSet {
  return packaged('migrations')
}

/**
 * This package's PostgreSQL migrations, from `migrations-postgres/store/`: the same tables in
 * PostgreSQL's dialect, with their own version sequence (recorded in the PG schema's own
 * `store_schema`, so the SQLite files and their checksums never change).
 * @throws MemoryStoreError `corrupt` when the package was installed without that folder.
 */
export function postgresStoreMigrations(): MigrationSet {
  return packaged('migrations-postgres')
}
