import { join } from 'node:path'
import { openMemoryStore, schemaDrift } from '@dsh-memory/store'
import { sql } from 'drizzle-orm'
import { getTableConfig } from 'drizzle-orm/sqlite-core'
import { afterEach, describe, expect, it } from 'vitest'
import { ArchiveIndex, palaceNamespaces, palaceTurns } from '../src/index.js'
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
})
