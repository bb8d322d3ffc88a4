/**
 * The versioned-SQL migration runner shared by every package that brings tables. Each
 * owner (a package prefix) has its own version sequence recorded in `store_schema` with a
 * checksum of the SQL that was applied, so history edits and downgrades fail loudly.
 */
import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type Database from 'better-sqlite3'
import { MemoryStoreError } from './errors.ts'
import type { AppliedMigration, Migration, MigrationSet } from './types-meta.ts'

/** The table that records applied migrations (owner, version, name, checksum, applied_at). */
export const SCHEMA_TABLE = 'store_schema'

const CREATE_SCHEMA_TABLE = `CREATE TABLE IF NOT EXISTS ${SCHEMA_TABLE} (
  owner TEXT NOT NULL,
  version INTEGER NOT NULL,
  name TEXT NOT NULL,
  checksum TEXT NOT NULL,
  applied_at INTEGER NOT NULL,
  PRIMARY KEY (owner, version)
)`

const OWNER_PATTERN = /^[a-z][a-z0-9-]{0,63}$/
const FILE_PATTERN = /^(\d+)_([A-Za-z0-9][A-Za-z0-9_\-]*)\.sql$/

/**
 * sha256 (hex) of a migration's SQL with line endings normalised, so a Windows checkout of
 * the same file has the same checksum.
 */
export function migrationChecksum(sql: string): string {
  return createHash('sha256').update(sql.replace(/\r\n?/g, '\n')).digest('hex')
}

/**
 * Read a directory of `NNNN_name.sql` files into a {@link MigrationSet}. Other files are
 * ignored. Each file is applied as one script inside the open's transaction, so it must
 * not contain BEGIN/COMMIT.
 * @param dir - directory path or `file:` URL (e.g. `new URL('../migrations/cue-bank/', import.meta.url)`).
 * @param owner - defaults to the directory's name.
 * @throws MemoryStoreError `invalid-argument` for a missing directory, a bad owner or duplicate versions.
 */
export function loadMigrationDir(dir: string | URL, owner?: string): MigrationSet {
  const path = typeof dir === 'string' ? dir : fileURLToPath(dir)
  if (!existsSync(path)) throw new MemoryStoreError('invalid-argument', `migration directory not found: ${path}`)
  const resolvedOwner = owner ?? basename(path.replace(/[\\/]+$/, ''))
  const migrations: Migration[] = []
  for (const file of readdirSync(path).sort()) {
    const match = FILE_PATTERN.exec(file)
    if (!match) continue
    migrations.push({ version: Number(match[1]), name: match[2]!, sql: readFileSync(join(path, file), 'utf8') })
  }
  const set = { owner: resolvedOwner, migrations: migrations.sort((a, b) => a.version - b.version) }
  validateMigrationSet(set)
  return set
}

/**
 * A package's own migrations, `migrations/<owner>/` in its package root, found from one of its
 * modules. Bundled code runs from `dist/` (one level below the root), sources from `src/core/`
 * under vitest (two levels), so both depths are tried, nearest first.
 * @param from - the calling module's `import.meta.url`.
 * @param root - the folder of migration trees in the package root: `migrations` (SQLite) or
 *   `migrations-postgres` (the same owners' PostgreSQL SQL).
 * @returns undefined when neither folder exists (the package was installed without it); the
 *   caller throws its own coded error then.
 */
export function findPackageMigrations(from: string | URL, owner: string, root = 'migrations'): MigrationSet | undefined {
  for (const relative of [`../${root}/${owner}/`, `../../${root}/${owner}/`]) {
    const url = new URL(relative, from)
    if (existsSync(fileURLToPath(url))) return loadMigrationDir(url, owner)
  }
  return undefined
}

/**
 * Check a set's shape: owner `[a-z][a-z0-9-]*`, positive integer versions without
 * duplicates, non-empty names and SQL strings.
 * @throws MemoryStoreError `invalid-argument`
 */
export function validateMigrationSet(set: MigrationSet): void {
  if (!set || typeof set.owner !== 'string' || !OWNER_PATTERN.test(set.owner)) {
    throw new MemoryStoreError('invalid-argument', `migration owner must match ${OWNER_PATTERN}, got ${JSON.stringify(set?.owner)}`)
  }
  if (!Array.isArray(set.migrations)) throw new MemoryStoreError('invalid-argument', `migrations of '${set.owner}' must be an array`)
  const seen = new Set<number>()
  for (const migration of set.migrations) {
    if (!Number.isSafeInteger(migration.version) || migration.version < 1) {
      throw new MemoryStoreError('invalid-argument', `migration versions of '${set.owner}' must be positive integers, got ${migration.version}`)
    }
    if (seen.has(migration.version)) {
      throw new MemoryStoreError('invalid-argument', `duplicate migration version ${migration.version} for '${set.owner}'`)
    }
    seen.add(migration.version)
    if (typeof migration.name !== 'string' || migration.name.length === 0 || typeof migration.sql !== 'string') {
      throw new MemoryStoreError('invalid-argument', `migration ${migration.version} of '${set.owner}' needs a name and SQL`)
    }
  }
}

interface SchemaRow {
  owner: string
  version: number
  name: string
  checksum: string
  applied_at: number
}

/** Every recorded migration; empty when the schema table does not exist yet. */
export function readAppliedMigrations(db: Database.Database): AppliedMigration[] {
  const exists = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).get(SCHEMA_TABLE)
  if (!exists) return []
  const rows = db.prepare(`SELECT owner, version, name, checksum, applied_at FROM ${SCHEMA_TABLE} ORDER BY owner, version`).all() as SchemaRow[]
  return rows.map((row) => ({ owner: row.owner, version: row.version, name: row.name, checksum: row.checksum, appliedAt: row.applied_at }))
}

/**
 * The sets given to `store.migrate(sets)`: one set or a list, none of them the store's own.
 * @throws MemoryStoreError `invalid-argument` for the reserved owner `store`
 */
export function packageMigrationSets(sets: MigrationSet | readonly MigrationSet[]): MigrationSet[] {
  const list = Array.isArray(sets) ? [...(sets as readonly MigrationSet[])] : [sets as MigrationSet]
  for (const set of list) {
    if (set?.owner === 'store') throw new MemoryStoreError('invalid-argument', "migration owner 'store' is reserved for @dsh-memory/store")
  }
  return list
}

/** One migration an open still has to apply. */
export interface PendingMigration {
  owner: string
  migration: Migration
}

/**
 * Check `sets` before anything is planned: each valid, no owner given twice.
 * @throws MemoryStoreError `invalid-argument`
 */
export function validateMigrationSets(sets: readonly MigrationSet[]): void {
  const owners = new Set<string>()
  for (const set of sets) {
    validateMigrationSet(set)
    if (owners.has(set.owner)) throw new MemoryStoreError('invalid-argument', `migration owner '${set.owner}' given twice`)
    owners.add(set.owner)
  }
}

/**
 * What `sets` still need on a database that recorded `applied`, in apply order. The rules every
 * backend shares (pure: SQLite and PostgreSQL only differ in how they read and write the record).
 * @param packageName - names the code in `schema-too-new` (default: the owner's code).
 * @throws MemoryStoreError `schema-too-new` when the database knows a newer version of an
 *   owner; `migration-mismatch` when an applied migration's checksum differs.
 */
export function planMigrations(applied: readonly AppliedMigration[], sets: readonly MigrationSet[], packageName?: string): PendingMigration[] {
  const pending: PendingMigration[] = []
  for (const set of sets) {
    const recorded = applied.filter((row) => row.owner === set.owner)
    const known = Math.max(0, ...set.migrations.map((m) => m.version))
    const newest = Math.max(0, ...recorded.map((row) => row.version))
    if (newest > known) {
      throw new MemoryStoreError(
        'schema-too-new',
        `the database has '${set.owner}' schema version ${newest}, but ${packageName ?? `the code for '${set.owner}'`} only knows up to version ${known}; ` +
          'upgrade the package (a downgrade could corrupt data)',
      )
    }
    for (const migration of [...set.migrations].sort((a, b) => a.version - b.version)) {
      const row = recorded.find((r) => r.version === migration.version)
      if (!row) {
        pending.push({ owner: set.owner, migration })
      } else if (row.checksum !== migrationChecksum(migration.sql)) {
        throw new MemoryStoreError(
          'migration-mismatch',
          `'${set.owner}' migration ${migration.version} (${migration.name}) differs from the one applied to this database; shipped migrations must never be edited`,
        )
      }
    }
  }
  return pending
}

/**
 * The `schema-too-old` refusal of a read-only store that found `pending` migrations; undefined
 * when nothing is pending.
 */
export function pendingMigrationsError(pending: readonly PendingMigration[]): MemoryStoreError | undefined {
  if (pending.length === 0) return undefined
  const names = pending.map(({ owner, migration }) => `${owner}@${migration.version}`).join(', ')
  return new MemoryStoreError('schema-too-old', `the database needs migrations (${names}); open it once read-write to apply them`)
}

/** The `migration-failed` error of one migration whose SQL failed (nothing of the open is kept). */
export function migrationFailure(owner: string, migration: Migration, error: unknown): MemoryStoreError {
  return new MemoryStoreError(
    'migration-failed',
    `'${owner}' migration ${migration.version} (${migration.name}) failed: ${(error as Error).message}; no migration of this open was applied`,
    { cause: error },
  )
}

/**
 * Bring the database up to date with `sets`, all in one IMMEDIATE transaction (so
 * processes opening the same file at once serialise and the loser sees no work left).
 * Read-only databases are only checked.
 * @returns the migrations applied by this call.
 * @throws MemoryStoreError `schema-too-new` when the database knows a newer version of an
 *   owner; `migration-mismatch` when an applied migration's checksum differs;
 *   `migration-failed` (nothing applied) when SQL fails; `schema-too-old` for a read-only
 *   database with pending migrations.
 */
export function applyMigrations(
  db: Database.Database,
  sets: readonly MigrationSet[],
  now: number,
  options: { readonly?: boolean; package?: string } = {},
): AppliedMigration[] {
  validateMigrationSets(sets)
  const plan = () => planMigrations(readAppliedMigrations(db), sets, options.package)

  // Plan with a plain read first: most opens have nothing to apply and then never take
  // the write lock (another process may be in the middle of a long write).
  const pendingNow = plan()
  if (options.readonly) {
    const refusal = pendingMigrationsError(pendingNow)
    if (refusal) throw refusal
    return []
  }

  if (pendingNow.length === 0) return []

  const run = db.transaction((): AppliedMigration[] => {
    db.exec(CREATE_SCHEMA_TABLE)
    const done: AppliedMigration[] = []
    const record = db.prepare(`INSERT INTO ${SCHEMA_TABLE} (owner, version, name, checksum, applied_at) VALUES (?, ?, ?, ?, ?)`)
    // Plan again under the lock: another process may have migrated since the read.
    for (const { owner, migration } of plan()) {
      try {
        db.exec(migration.sql)
      } catch (error) {
        throw migrationFailure(owner, migration, error)
      }
      const checksum = migrationChecksum(migration.sql)
      record.run(owner, migration.version, migration.name, checksum, now)
      done.push({ owner, version: migration.version, name: migration.name, checksum, appliedAt: now })
    }
    return done
  })
  return run.immediate()
}
