import { openMemoryStore, schemaDrift } from '@dsh-memory/store'
import { sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { describe, expect, it } from 'vitest'
import { treeMigrations } from '../src/core/migrations.js'
import { treeSchema } from '../src/core/schema.js'
import { openStoreTreeRepository } from '../src/core/store-repository.js'

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
})
