import { fileURLToPath } from 'node:url'
import { MemoryStoreError } from './errors.ts'
import { findPackageMigrations } from './migrations.ts'
import type { MigrationSet } from './types-meta.ts'

/** The migration owner of this package's own tables. */
export const STORE_MIGRATION_OWNER = 'store'

let cached: MigrationSet | undefined

/**
 * This package's migrations, read once from `migrations/store/` in the package root. The
 * file sits at `dist/<chunk>.js` when built and at `src/core/store-migrations.ts` under
 * vitest, so both depths are tried, nearest first.
 * @throws MemoryStoreError `corrupt` when the package was installed without its `migrations/` folder.
 */
export function storeMigrations(): MigrationSet {
  cached ??= findPackageMigrations(import.meta.url, STORE_MIGRATION_OWNER)
  if (cached) return cached
  throw new MemoryStoreError('corrupt', `@dsh-memory/store is missing its migrations/ folder (looked beside ${fileURLToPath(import.meta.url)})`)
}
