/**
 * Helpers for packages declaring their tables on the store's seam ({@link PackageTablesDeclaration}):
 * finding both migration trees of a package and the one scalar SQL function every package
 * needed in both dialects. They exist so each package does not keep its own copy.
 */
import { fileURLToPath } from 'node:url'
import { type AnyColumn, type SQL, sql, type SQLWrapper } from 'drizzle-orm'
import { MemoryStoreError } from './errors.ts'
import { findPackageMigrations } from './migrations.ts'
import type { PackageDialect, PackageTablesDeclaration } from './package-tables.ts'
import type { MigrationSet } from './types-meta.ts'

/** What {@link packageDeclaration} builds a declaration from. */
export interface PackageDeclarationOptions<TSchema extends Record<string, unknown>> {
  /** The SQLite drizzle tables (`declaration.schema`). */
  readonly schema?: TSchema
  /** The pg-core twins of `schema` (same keys, same column property names): `declaration.postgres.schema`. */
  readonly pgSchema: Record<string, unknown>
  /**
   * The package's own error for a migrations folder missing from its install (each package
   * keeps its own error type and code); default: MemoryStoreError `not-found`.
   */
  readonly missing?: (message: string) => Error
}

/** The folder, in a package root, of each backend's migration trees. */
export type PackageMigrationRoot = 'migrations' | 'migrations-postgres'

/**
 * A package's migrations of one backend, `<root>/<owner>/` in its package root, found from one
 * of its modules (see {@link findPackageMigrations}), or the package's own error when the folder
 * is not there.
 * @param moduleUrl - the calling module's `import.meta.url`.
 * @throws the error `missing` builds (default MemoryStoreError `not-found`) when the folder is missing
 */
export function packageMigrations(moduleUrl: string | URL, owner: string, root: PackageMigrationRoot, missing?: (message: string) => Error): MigrationSet {
  const set = findPackageMigrations(moduleUrl, owner, root)
  if (set) return set
  const message = `the ${owner} ${root} folder is missing next to ${fileURLToPath(moduleUrl)}`
  throw missing ? missing(message) : new MemoryStoreError('not-found', message)
}

/**
 * The declaration `store.tables(...)` takes, for a package shipping `migrations/<owner>/` and
 * `migrations-postgres/<owner>/` in its root: both trees are found from `moduleUrl` (the
 * calling module's `import.meta.url`, in `src/`, `src/core/` or the bundled `dist/`).
 * @throws the error `options.missing` builds (default MemoryStoreError `not-found`) when a folder is missing
 */
export function packageDeclaration<TSchema extends Record<string, unknown>>(
  moduleUrl: string | URL,
  owner: string,
  options: PackageDeclarationOptions<TSchema>,
): PackageTablesDeclaration<TSchema> {
  return {
    migrations: packageMigrations(moduleUrl, owner, 'migrations', options.missing),
    ...(options.schema === undefined ? {} : { schema: options.schema }),
    postgres: { migrations: packageMigrations(moduleUrl, owner, 'migrations-postgres', options.missing), schema: options.pgSchema },
  }
}

/**
 * `greatest(a, b)` of the backend in use: SQLite's two-argument scalar `max` is PostgreSQL's
 * `GREATEST` (PostgreSQL's `max` is only the aggregate). Both return the larger value; a NULL
 * argument differs (SQLite: NULL, PostgreSQL: the other value), so callers pass non-null values.
 */
export function sqlGreatest(dialect: PackageDialect, a: SQLWrapper | AnyColumn | number, b: SQLWrapper | AnyColumn | number): SQL {
  return dialect === 'postgresql' ? sql`GREATEST(${a}, ${b})` : sql`max(${a}, ${b})`
}
