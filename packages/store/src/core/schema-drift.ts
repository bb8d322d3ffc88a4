/**
 * Compare a package's drizzle schema with the tables its SQL migrations created, so neither
 * can drift silently: the migrations create the tables, the schema types the queries, and a
 * column or index present in one but not the other would only show as a runtime error (or a
 * silently unused index). Packages call it from a test on their migrated tables.
 */
import { sql } from 'drizzle-orm'
import { getTableConfig, SQLiteTable } from 'drizzle-orm/sqlite-core'
import type { PackageDatabase } from './package-tables.ts'

/**
 * The differences between `schema`'s tables and the live database, one readable line each
 * (empty when they agree): missing or extra columns, NOT NULL mismatches, and indexes created
 * by `CREATE INDEX` that the schema does not declare (or the other way round).
 */
export function schemaDrift(db: PackageDatabase<Record<string, unknown>>, schema: Record<string, unknown>): string[] {
  const problems: string[] = []
  for (const table of Object.values(schema)) {
    if (!(table instanceof SQLiteTable)) continue
    const config = getTableConfig(table)
    const live = db.all<{ name: string; notnull: number; pk: number }>(sql`SELECT name, "notnull", pk FROM pragma_table_info(${config.name})`)
    if (live.length === 0) {
      problems.push(`${config.name}: no such table`)
      continue
    }
    const liveColumns = new Map(live.map((column) => [column.name, column.notnull === 1 || column.pk > 0]))
    const declared = new Set<string>()
    for (const column of config.columns) {
      declared.add(column.name)
      const notNull = liveColumns.get(column.name)
      if (notNull === undefined) problems.push(`${config.name}.${column.name}: declared, not in the database`)
      else if (column.notNull && !notNull) problems.push(`${config.name}.${column.name}: declared NOT NULL, nullable in the database`)
    }
    for (const name of liveColumns.keys()) if (!declared.has(name)) problems.push(`${config.name}.${name}: in the database, not declared`)
    const liveIndexes = db
      .all<{ name: string; origin: string }>(sql`SELECT name, origin FROM pragma_index_list(${config.name})`)
      .filter((index) => index.origin === 'c')
      .map((index) => index.name)
    const declaredIndexes = config.indexes.map((index) => index.config.name)
    for (const name of declaredIndexes) if (!liveIndexes.includes(name)) problems.push(`${config.name}: index ${name} declared, not in the database`)
    for (const name of liveIndexes) if (!declaredIndexes.includes(name)) problems.push(`${config.name}: index ${name} in the database, not declared`)
  }
  return problems
}
