/**
 * A small test package for the package-tables seam (`store.tables()`): owner `demo`, one table
 * `demo_notes` declared in the SQLite dialect, written in the portable style so the same test
 * code runs on every backend.
 */
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

export const demoMigrations: MigrationSet = {
  owner: 'demo',
  migrations: [{ version: 1, name: 'init', sql: 'CREATE TABLE demo_notes (id TEXT PRIMARY KEY, body TEXT NOT NULL, hits INTEGER NOT NULL DEFAULT 0);' }],
}

/** The declaration a package would pass to `store.tables()`. */
export function demoDeclaration(): PackageTablesDeclaration<DemoSchema> {
  return { migrations: demoMigrations, schema: demoSchema }
}
