import { openMemoryStore, schemaDrift } from '@dsh-memory/store'
import { getTableColumns, type Table } from 'drizzle-orm'
import { integer, pgTable, text as pgText } from 'drizzle-orm/pg-core'
import { sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { describe, expect, it } from 'vitest'
import { pgSchemaDrift } from '../../store/test/support/pg-schema-drift.js'
import { treeMigrations } from '../src/core/migrations.js'
import { treePgSchema } from '../src/core/pg-schema.js'
import { treeSchema } from '../src/core/schema.js'
import { openStoreTreeRepository } from '../src/core/store-repository.js'
import { backends } from './helpers.js'

const postgres = backends.find((backend) => backend.name === 'postgres')!

/** Table key → its column property names: what the portable queries address. */
const shape = (schema: Record<string, unknown>) => Object.fromEntries(Object.entries(schema).map(([key, table]) => [key, Object.keys(getTableColumns(table as Table)).sort()]))

describe('the tree drizzle schema', () => {
  it('describes exactly the tables, columns and indexes the tree migrations create', async () => {
    const store = openMemoryStore({ path: ':memory:' })
    try {
      const repository = await openStoreTreeRepository(store)
      const tables = await store.tables({ migrations: treeMigrations(), schema: treeSchema })
      expect(await tables.read((db) => schemaDrift(db, treeSchema))).toEqual([])
      // A schema that names a column the migrations never created (and misses one) is caught.
      const drifted = { settings: sqliteTable('tree_settings', { key: text('key').primaryKey(), value: text('value').notNull(), note: text('note') }) }
      expect(await tables.read((db) => schemaDrift(db, drifted))).toEqual([
        'tree_settings.note: declared, not in the database',
        'tree_settings.updated_at: in the database, not declared',
      ])
      await repository.close()
    } finally {
      await store.close()
    }
  })

  it('on PostgreSQL, describes exactly what migrations-postgres/tree creates: columns, types, NOT NULLs, collation, indexes', async () => {
    const store = await postgres.open()
    await openStoreTreeRepository(store)
    const run = (sql: string) => postgres.sql(store, sql)
    expect(await pgSchemaDrift(run, treePgSchema)).toEqual([])
    // An epoch-ms column declared int4 (it would overflow) and a missing column are caught.
    const drifted = { settings: pgTable('tree_settings', { key: pgText('key').primaryKey(), value: pgText('value').notNull(), updatedAt: integer('updated_at').notNull() }), extra: pgTable('tree_extra', { id: pgText('id') }) }
    expect(await pgSchemaDrift(run, drifted)).toEqual(['tree_settings.updated_at: declared integer, bigint in the database', 'tree_extra: no such table'])
  })

  it('has the same tables and column names on both backends, so one query serves both', () => {
    expect(shape(treePgSchema)).toEqual(shape(treeSchema))
  })
})
