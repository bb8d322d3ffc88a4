import { loadMigrationDir, type MigrationSet } from '@dsh-memory/store'

/** The migration owner of the cue bank (its tables are named `cue_bank_…`). */
export const CUE_BANK_MIGRATION_OWNER = 'cue-bank'

let cached: MigrationSet | undefined
let cachedPostgres: MigrationSet | undefined

/**
 * The cue bank's versioned SQL migrations, shipped in `migrations/cue-bank/` of the package.
 * This file sits one level below the package root both as source (`src/`) and bundled
 * (`dist/`), so the same relative URL finds the folder in tests and when installed.
 */
export function cueBankMigrations(): MigrationSet {
  cached ??= loadMigrationDir(new URL('../migrations/cue-bank/', import.meta.url), CUE_BANK_MIGRATION_OWNER)
  return cached
}

/** The same tables' PostgreSQL migrations, shipped in `migrations-postgres/cue-bank/` (same owner). */
export function cueBankPostgresMigrations(): MigrationSet {
  cachedPostgres ??= loadMigrationDir(new URL('../migrations-postgres/cue-bank/', import.meta.url), CUE_BANK_MIGRATION_OWNER)
  return cachedPostgres
}
