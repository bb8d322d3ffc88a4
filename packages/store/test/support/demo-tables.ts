/**
 * A small test package for the package-tables seam (`store.tables()`): owner `demo`, one table
 * `demo_notes` declared in both dialects (same keys, same column property names), so the same
 * test code, written in the portable style, runs on every backend.
 */
import { integer as pgInteger, pgTable, text as pgText } from 'drizzle-orm/pg-core'
import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import type { MigrationSet, PackageTablesDeclaration } from '../../src/index.ts'

export const demoSchema = {
  notes: sqliteTable('demo_notes', {
    id: text('id').primaryKey(),
    body: text('body').notNull(),
    hits: integer('hits').notNull().default(0),
  }),
}
export type DemoSchema = typeof demoSchema

/** The same table on PostgreSQL. */
export const demoPgSchema = {
  notes: pgTable('demo_notes', {
    id: pgText('id').primaryKey(),
    body: pgText('body').notNull(),
    hits: pgInteger('hits').notNull().default(0),
  }),
}

// This one statement is valid SQL on both; a real package ships a file per dialect.
const INIT = 'CREATE TABLE demo_notes (id TEXT PRIMARY KEY, body TEXT NOT NULL, hits INTEGER NOT NULL DEFAULT 0);'

/** The demo migrations; `edit` appends to the applied SQL (what `migration-mismatch` catches). */
export function demoMigrations(edit = ''): MigrationSet {
  return { owner: 'demo', migrations: [{ version: 1, name: 'init', sql: `${INIT}${edit}` }] }
}

/** The declaration a package would pass to `store.tables()`: both dialects, or SQLite only. */
export function demoDeclaration(options: { edit?: string; sqliteOnly?: boolean } = {}): PackageTablesDeclaration<DemoSchema> {
  const migrations = demoMigrations(options.edit)
  return options.sqliteOnly ? { migrations, schema: demoSchema } : { migrations, schema: demoSchema, postgres: { migrations, schema: demoPgSchema } }
}
