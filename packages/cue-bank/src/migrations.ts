import { type MigrationSet, packageDeclaration, packageMigrations, type PackageTablesDeclaration } from '@dsh-memory/store'
import { CueBankError } from './core/errors.js'
import { cueBankPgSchema } from './core/pg-schema.js'
import { type CueBankSchema, cueBankSchema } from './core/schema.js'

/** The migration owner of the cue bank (its tables are named `cue_bank_…`). */
export const CUE_BANK_MIGRATION_OWNER = 'cue-bank'

function missing(message: string): CueBankError {
  return new CueBankError('not-found', message)
}

/**
 * The cue bank's versioned SQL migrations, shipped in `migrations/cue-bank/` of the package.
 * @throws CueBankError `not-found` when the package was installed without that folder
 */
export function cueBankMigrations(): MigrationSet {
  return packageMigrations(import.meta.url, CUE_BANK_MIGRATION_OWNER, 'migrations', missing)
}

/**
 * The same tables' PostgreSQL migrations, shipped in `migrations-postgres/cue-bank/` (same owner).
 * @throws CueBankError `not-found` when the package was installed without that folder
 */
export function cueBankPostgresMigrations(): MigrationSet {
  return packageMigrations(import.meta.url, CUE_BANK_MIGRATION_OWNER, 'migrations-postgres', missing)
}

let cached: PackageTablesDeclaration<CueBankSchema> | undefined

/** The cue tables on both backends, for `store.tables(...)` (read from disk once per process). */
export function cueBankDeclaration(): PackageTablesDeclaration<CueBankSchema> {
  cached ??= packageDeclaration(import.meta.url, CUE_BANK_MIGRATION_OWNER, { schema: cueBankSchema, pgSchema: cueBankPgSchema, missing })
  return cached
}
