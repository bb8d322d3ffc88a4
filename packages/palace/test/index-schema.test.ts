import { join } from 'node:path'
import { openMemoryStore, schemaDrift } from '@dsh-memory/store'
import { getTableColumns, sql, type Table } from 'drizzle-orm'
import { getTableConfig } from 'drizzle-orm/sqlite-core'
import { afterEach, describe, expect, it } from 'vitest'
import { backends } from '../../store/test/contract/backends.js'
import { pgSchemaDrift } from '../../store/test/support/pg-schema-drift.js'
import { ArchiveIndex, palaceNamespaces, palacePgSchema, palaceSchema, palaceTurns } from '../src/index.js'
import { tempDir } from './fixtures.js'

const cleanups: (() => void | Promise<void>)[] = []
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!()
})

describe('palace tables', () => {
  it('the drizzle schema matches what migrations/palace/ creates (names, types, not-null, keys)', async () => {
    const temp = tempDir('palace-schema')
    cleanups.push(temp.remove)
    const store = openMemoryStore({ path: join(temp.dir, 'memory.db') })
    cleanups.push(() => store.close())
    const tables = await new ArchiveIndex(store).tables()
    for (const table of [palaceNamespaces, palaceTurns]) {
      const config = getTableConfig(table)
      const declared = config.columns.map((column) => [column.name, column.getSQLType().toUpperCase(), column.notNull]).sort()
      const migrated = await tables.read((handle) =>
        handle.all<{ name: string; type: string; nn: number; pk: number }>(sql`SELECT name, type, "notnull" AS nn, pk FROM pragma_table_info(${config.name})`).map(
          (row) => [row.name, row.type, row.nn === 1 || row.pk > 0],
        ),
      )
      expect([config.name, migrated.sort()]).toEqual([config.name, declared])
    }
    const indexes = await tables.read((handle) => handle.all(sql`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'palace_turns' AND sql IS NOT NULL`))
    expect(indexes).toEqual([{ name: 'palace_turns_turn' }])
    expect(await tables.read((handle) => schemaDrift(handle, { palaceNamespaces, palaceTurns }))).toEqual([])
  })

  it('on PostgreSQL, pg-index-schema.ts matches what migrations-postgres/palace/ creates (types, NOT NULLs, collation, indexes)', async () => {
    const postgres = backends.find((backend) => backend.name === 'postgres')!
    const store = await postgres.open()
    await new ArchiveIndex(store).tables()
    expect(await pgSchemaDrift((text) => postgres.sql(store, text), palacePgSchema)).toEqual([])
  })

  it('has the same tables and column names on both backends, so one query serves both', () => {
    const shape = (schema: Record<string, unknown>) => Object.fromEntries(Object.entries(schema).map(([key, table]) => [key, Object.keys(getTableColumns(table as Table)).sort()]))
    expect(shape(palacePgSchema)).toEqual(shape(palaceSchema))
  })
})
