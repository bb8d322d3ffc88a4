/**
 * The versioned-SQL migration runner on PostgreSQL: the same rules as `migrations.ts`
 * (`planMigrations`: per-owner versions, checksums, `schema-too-new`, `migration-mismatch`,
 * `schema-too-old` for a read-only store) with the record in the store schema's own
 * `store_schema` table. Everything of one open applies in one transaction under the schema's
 * writer lock (`pg_advisory_xact_lock`, see `pg-session.ts`), so two processes opening one
 * fresh database do not race: the second waits, plans again and finds nothing left to do.
 */
import { MemoryStoreError } from './errors.ts'
import { migrationChecksum, migrationFailure, pendingMigrationsError, planMigrations, SCHEMA_TABLE, validateMigrationSets } from './migrations.ts'
import type { PgSession, PgTx } from './pg-session.ts'
import type { AppliedMigration, MigrationSet } from './types-meta.ts'

const CREATE_SCHEMA_TABLE = `CREATE TABLE IF NOT EXISTS ${SCHEMA_TABLE} (
  owner TEXT COLLATE "C" NOT NULL,
  version INTEGER NOT NULL,
  name TEXT NOT NULL,
  checksum TEXT NOT NULL,
  applied_at BIGINT NOT NULL,
  PRIMARY KEY (owner, version)
)`

interface SchemaRow extends Record<string, unknown> {
  owner: string
  version: number
  name: string
  checksum: string
  applied_at: number
}

/** Every recorded migration of the store's schema; empty when its record table does not exist yet. */
export async function readPgAppliedMigrations(tx: PgTx): Promise<AppliedMigration[]> {
  // to_regclass resolves through the search path (the store's schema) and is NULL when missing.
  const [exists] = await tx.query<{ found: boolean }>(`SELECT to_regclass('${SCHEMA_TABLE}') IS NOT NULL AS found`)
  if (!exists?.found) return []
  const rows = await tx.query<SchemaRow>(`SELECT owner, version, name, checksum, applied_at FROM ${SCHEMA_TABLE} ORDER BY owner, version`)
  return rows.map((row) => ({ owner: row.owner, version: row.version, name: row.name, checksum: row.checksum, appliedAt: row.applied_at }))
}

/**
 * Bring the store's schema up to date with `sets` (creating the schema when missing); a
 * read-only store only checks.
 * @returns the migrations applied by this call.
 * @throws MemoryStoreError `schema-too-new`, `migration-mismatch`, `migration-failed` (nothing
 *   of this call applied), `schema-too-old` (read-only, pending), `not-found` (read-only, no
 *   such schema)
 */
export async function applyPgMigrations(s: PgSession, sets: readonly MigrationSet[], now: number, packageName?: string): Promise<AppliedMigration[]> {
  validateMigrationSets(sets)
  // Plan with a plain snapshot first: most opens have nothing to apply and never wait for
  // the writer lock (another process may be in the middle of a long write).
  const first = await s.read(async (tx) => {
    const applied = await readPgAppliedMigrations(tx)
    if (applied.length === 0 && s.readonly && !(await schemaExists(tx, s.schema))) {
      throw new MemoryStoreError('not-found', `no memory store in schema ${s.schema} at ${s.path}`)
    }
    return planMigrations(applied, sets, packageName)
  })
  if (s.readonly) {
    const refusal = pendingMigrationsError(first)
    if (refusal) throw refusal
    return []
  }
  if (first.length === 0) return []
  return s.write(async (tx) => {
    // Only when missing: a role without CREATE on the database can use a schema made for it.
    if (!(await schemaExists(tx, s.schema))) await tx.query(`CREATE SCHEMA "${s.schema}"`)
    await tx.query(CREATE_SCHEMA_TABLE)
    // Plan again under the lock: another process may have migrated since the snapshot.
    const pending = planMigrations(await readPgAppliedMigrations(tx), sets, packageName)
    const done: AppliedMigration[] = []
    for (const { owner, migration } of pending) {
      try {
        await tx.query(migration.sql)
      } catch (error) {
        throw migrationFailure(owner, migration, error)
      }
      const checksum = migrationChecksum(migration.sql)
      await tx.query(`INSERT INTO ${SCHEMA_TABLE} (owner, version, name, checksum, applied_at) VALUES ($1, $2, $3, $4, $5)`, [owner, migration.version, migration.name, checksum, now])
      done.push({ owner, version: migration.version, name: migration.name, checksum, appliedAt: now })
    }
    return done
  })
}

async function schemaExists(tx: PgTx, schema: string): Promise<boolean> {
  const rows = await tx.query<{ found: number }>('SELECT 1 AS found FROM pg_namespace WHERE nspname = $1', [schema])
  return rows.length > 0
}
