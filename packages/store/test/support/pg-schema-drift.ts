/**
 * PostgreSQL's counterpart of the store's `schemaDrift` (SQLite), for the tests of packages
 * whose tables run on both backends: the differences between their pg-core tables and what
 * their `migrations-postgres/` SQL created in a store's schema, one readable line each. Beyond
 * names, NOT NULL and `CREATE INDEX` indexes it compares SQL types (an `integer` where epoch ms
 * need `bigint` overflows) and that text columns compare in code-point order (`COLLATE "C"`,
 * like SQLite's BINARY), so listings sort alike on both backends.
 */
import { getTableConfig, PgTable } from 'drizzle-orm/pg-core'

/** Runs SQL on the store's schema (e.g. `backend.sql(store, text)` of `test/contract/backends.ts`). */
export type SqlRunner = (text: string) => Promise<Record<string, unknown>[]>

const COLUMNS = `SELECT c.relname AS "table", a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS "notNull",
    coalesce((SELECT collname FROM pg_collation WHERE oid = a.attcollation), '') AS collation
  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
  WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped`
// Indexes made by CREATE INDEX: those backing a primary key or UNIQUE constraint are the table's own.
const INDEXES = `SELECT t.relname AS "table", i.relname AS name
  FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
  WHERE t.relnamespace = current_schema()::regnamespace AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = x.indexrelid)`

export async function pgSchemaDrift(run: SqlRunner, schema: Record<string, unknown>): Promise<string[]> {
  const columns = await run(COLUMNS)
  const indexes = await run(INDEXES)
  const problems: string[] = []
  for (const table of Object.values(schema)) {
    if (!(table instanceof PgTable)) continue
    const config = getTableConfig(table)
    const live = new Map(columns.filter((column) => column.table === config.name).map((column) => [String(column.name), column]))
    if (live.size === 0) {
      problems.push(`${config.name}: no such table`)
      continue
    }
    for (const column of config.columns) {
      const found = live.get(column.name)
      const where = `${config.name}.${column.name}`
      if (!found) {
        problems.push(`${where}: declared, not in the database`)
        continue
      }
      if (found.type !== column.getSQLType()) problems.push(`${where}: declared ${column.getSQLType()}, ${String(found.type)} in the database`)
      if ((column.notNull || column.primary) && !found.notNull) problems.push(`${where}: declared NOT NULL, nullable in the database`)
      if (found.type === 'text' && found.collation !== 'C') problems.push(`${where}: text without COLLATE "C"`)
    }
    const declared = new Set(config.columns.map((column) => column.name))
    for (const name of live.keys()) if (!declared.has(name)) problems.push(`${config.name}.${name}: in the database, not declared`)
    const liveIndexes = indexes.filter((index) => index.table === config.name).map((index) => String(index.name))
    const declaredIndexes = config.indexes.map((index) => index.config.name!)
    for (const name of declaredIndexes) if (!liveIndexes.includes(name)) problems.push(`${config.name}: index ${name} declared, not in the database`)
    for (const name of liveIndexes) if (!declaredIndexes.includes(name)) problems.push(`${config.name}: index ${name} in the database, not declared`)
  }
  return problems
}
