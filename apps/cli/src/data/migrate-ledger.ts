/**
 * What `migrate` remembers in the target (its own package tables, owner `migrate`), so that a
 * resumed run, and the next laptop's run into the same team database, neither duplicates nor
 * loses rows:
 *
 * - `migrate_sources`: one row per source database, keyed by its **fingerprint** (below), with
 *   the id of the last source audit entry copied (the audit log is append-only and read in id
 *   order, so one number is its whole resume point).
 * - `migrate_rows`: for every copied row of a package table keyed by an identity number (tree
 *   turns, palace turns, distill's ledger, …), the number it has in the source and the number
 *   it got in the target. A number already taken by another source's row is given a new one;
 *   the mapping is how a re-run knows the row is there, and how a child row's reference to it
 *   is rewritten.
 *
 * The fingerprint is a digest of when the source's store schema was created and upgraded (the
 * applied-at times of its `store` migrations, in milliseconds): the same for every run against
 * one database, whatever path or URL names it, and different for two databases created apart.
 * A copy of a data dir (`cp -r`) has its original's fingerprint: it is the same source.
 *
 * These tables are the target's own bookkeeping: `migrate` never copies them onward.
 */
import { createHash } from 'node:crypto'
import { and, eq, inArray, ne } from 'drizzle-orm'
import { bigint, pgTable, primaryKey as pgPrimaryKey, text as pgText } from 'drizzle-orm/pg-core'
import { integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { isMemoryStoreError, type MemoryStore, type PackageDatabase, type PackageTables, type PackageTablesDeclaration } from '@dsh-memory/store'

/** The migration owner (and table prefix) of the ledger. */
export const LEDGER_OWNER = 'migrate'

const sources = sqliteTable('migrate_sources', {
  source: text('source').primaryKey(),
  auditAfter: integer('audit_after').notNull(),
  firstAt: integer('first_at').notNull(),
  lastAt: integer('last_at').notNull(),
})

const rows = sqliteTable(
  'migrate_rows',
  {
    source: text('source').notNull(),
    tableName: text('table_name').notNull(),
    sourceId: integer('source_id').notNull(),
    targetId: integer('target_id').notNull(),
  },
  (t) => [primaryKey({ columns: [t.source, t.tableName, t.sourceId] })],
)

const big = (name: string) => bigint(name, { mode: 'number' })

const pgSources = pgTable('migrate_sources', {
  source: pgText('source').primaryKey(),
  auditAfter: big('audit_after').notNull(),
  firstAt: big('first_at').notNull(),
  lastAt: big('last_at').notNull(),
})

const pgRows = pgTable(
  'migrate_rows',
  {
    source: pgText('source').notNull(),
    tableName: pgText('table_name').notNull(),
    sourceId: big('source_id').notNull(),
    targetId: big('target_id').notNull(),
  },
  (t) => [pgPrimaryKey({ columns: [t.source, t.tableName, t.sourceId] })],
)

const ledgerSchema = { sources, rows }
type LedgerSchema = typeof ledgerSchema

/** The ledger's tables in a target. */
export type LedgerTables = PackageTables<LedgerSchema>

const SQLITE_SQL = `CREATE TABLE migrate_sources (
  source TEXT PRIMARY KEY NOT NULL,
  audit_after INTEGER NOT NULL,
  first_at INTEGER NOT NULL,
  last_at INTEGER NOT NULL
);
CREATE TABLE migrate_rows (
  source TEXT NOT NULL REFERENCES migrate_sources (source),
  table_name TEXT NOT NULL,
  source_id INTEGER NOT NULL,
  target_id INTEGER NOT NULL,
  PRIMARY KEY (source, table_name, source_id)
);`

const POSTGRES_SQL = `CREATE TABLE migrate_sources (
  source TEXT COLLATE "C" PRIMARY KEY,
  audit_after BIGINT NOT NULL,
  first_at BIGINT NOT NULL,
  last_at BIGINT NOT NULL
);
CREATE TABLE migrate_rows (
  source TEXT COLLATE "C" NOT NULL REFERENCES migrate_sources (source),
  table_name TEXT COLLATE "C" NOT NULL,
  source_id BIGINT NOT NULL,
  target_id BIGINT NOT NULL,
  PRIMARY KEY (source, table_name, source_id)
);`

/** The ledger's declaration (SQL inline: two small tables, shipped inside the CLI's bundle). */
export function ledgerDeclaration(): PackageTablesDeclaration<LedgerSchema> {
  return {
    migrations: { owner: LEDGER_OWNER, migrations: [{ version: 1, name: 'ledger', sql: SQLITE_SQL }] },
    schema: ledgerSchema,
    postgres: { migrations: { owner: LEDGER_OWNER, migrations: [{ version: 1, name: 'ledger', sql: POSTGRES_SQL }] }, schema: { sources: pgSources, rows: pgRows } },
  }
}

/** The fingerprint of a source database (see the module comment). */
export async function sourceFingerprint(store: MemoryStore): Promise<string> {
  const birth = (await store.meta.migrations()).filter((migration) => migration.owner === 'store').map((migration) => [migration.version, migration.appliedAt])
  return createHash('sha256').update(JSON.stringify(birth)).digest('hex').slice(0, 32)
}

/** One source's entries in a target's ledger. */
export class SourceLedger {
  readonly tables: LedgerTables | undefined
  readonly source: string

  private constructor(tables: LedgerTables | undefined, source: string) {
    this.tables = tables
    this.source = source
  }

  /**
   * The ledger of `source` in `target`: created when missing unless `checkOnly`; for a `--check`
   * of a target that never had it, an empty ledger (nothing was copied by this version).
   */
  static async open(target: MemoryStore, source: string, checkOnly: boolean, now: number): Promise<SourceLedger> {
    let tables: LedgerTables | undefined
    try {
      tables = await target.tables(ledgerDeclaration())
    } catch (error) {
      if (checkOnly && isMemoryStoreError(error, 'schema-too-old')) return new SourceLedger(undefined, source)
      throw error
    }
    if (!checkOnly) {
      await tables.write(async (db, t) => void (await db.insert(t.sources).values({ source, auditAfter: 0, firstAt: now, lastAt: now }).onConflictDoNothing()), {
        actor: 'cli',
        audit: { op: `${LEDGER_OWNER}.source`, entityId: source },
      })
    }
    return new SourceLedger(tables, source)
  }

  /** The id of the last source audit entry copied (0: none). */
  async auditAfter(): Promise<number> {
    if (!this.tables) return 0
    const [row] = await this.tables.read(async (db, t) => db.select({ after: t.sources.auditAfter }).from(t.sources).where(eq(t.sources.source, this.source)))
    return Number(row?.after ?? 0)
  }

  /** Record that audit entries up to `after` are copied (inside the transaction that copied them). */
  async setAuditAfter(after: number, now: number): Promise<void> {
    await this.tables!.write(async (db, t) => void (await db.update(t.sources).set({ auditAfter: after, lastAt: now }).where(eq(t.sources.source, this.source))))
  }

  /** The target numbers of `sourceIds` of `table` that this source's rows were copied under. */
  async mapped(db: PackageDatabase<Record<string, unknown>> | undefined, table: string, sourceIds: readonly number[]): Promise<Map<number, number>> {
    const found = new Map<number, number>()
    if (!this.tables || sourceIds.length === 0) return found
    const query = async (on: PackageDatabase<LedgerSchema>) => {
      const t = this.tables!.t.rows
      return on
        .select({ sourceId: t.sourceId, targetId: t.targetId })
        .from(t)
        .where(and(eq(t.source, this.source), eq(t.tableName, table), inArray(t.sourceId, [...sourceIds])))
    }
    const list = db ? await query(db as unknown as PackageDatabase<LedgerSchema>) : await this.tables.read((on) => query(on))
    for (const row of list) found.set(Number(row.sourceId), Number(row.targetId))
    return found
  }

  /** Whether any row of `table` from this source was given a new number (the copy keeps doing so, in source order). */
  async renumbered(table: string): Promise<boolean> {
    if (!this.tables) return false
    const found = await this.tables.read(async (db, t) =>
      db
        .select({ sourceId: t.rows.sourceId })
        .from(t.rows)
        .where(and(eq(t.rows.source, this.source), eq(t.rows.tableName, table), ne(t.rows.sourceId, t.rows.targetId)))
        .limit(1),
    )
    return found.length > 0
  }

  /** Record copied rows (`[source number, target number]`) on `db`, inside the write that copied them. */
  async record(db: PackageDatabase<Record<string, unknown>>, table: string, pairs: readonly (readonly [number, number])[]): Promise<void> {
    if (pairs.length === 0) return
    const t = this.tables!.t.rows
    await (db as unknown as PackageDatabase<LedgerSchema>)
      .insert(t)
      .values(pairs.map(([sourceId, targetId]) => ({ source: this.source, tableName: table, sourceId, targetId })))
      .onConflictDoNothing()
  }
}
