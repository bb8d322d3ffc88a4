import Database from 'better-sqlite3'
import { getTableConfig } from 'drizzle-orm/sqlite-core'
import { describe, expect, it } from 'vitest'
import { storeSchema } from '../src/core/schema.ts'
import { openTemp } from './helpers.ts'

describe('drizzle schema and SQL migrations', () => {
  it('describe the same tables and columns', async () => {
    const { store, path } = openTemp()
    await store.close()
    const db = new Database(path, { readonly: true })
    try {
      for (const table of Object.values(storeSchema)) {
        const config = getTableConfig(table)
        const actual = db.prepare(`PRAGMA table_info(${config.name})`).all() as { name: string; notnull: number; pk: number }[]
        expect(actual.length, config.name).toBeGreaterThan(0)
        const declared = config.columns.map((column) => ({ name: column.name, notNull: column.notNull }))
        expect(
          actual.map((column) => ({ name: column.name, notNull: column.notnull === 1 || column.pk === 1 })),
          config.name,
        ).toEqual(expect.arrayContaining(declared))
        expect(actual.map((column) => column.name).sort(), config.name).toEqual(declared.map((column) => column.name).sort())
        const declaredIndexes = config.indexes.map((index) => index.config.name).sort()
        const actualIndexes = (db.prepare(`PRAGMA index_list(${config.name})`).all() as { name: string; origin: string }[])
          .filter((index) => index.origin === 'c')
          .map((index) => index.name)
          .sort()
        expect(actualIndexes, config.name).toEqual(declaredIndexes)
      }
    } finally {
      db.close()
    }
  })
})
