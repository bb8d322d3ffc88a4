/**
 * Recall's tables on both backends (a fresh SQLite file / PostgreSQL schema per test, see
 * `packages/store/test/contract/backends.ts`): each backend's migrations create exactly the
 * tables its drizzle schema declares, and the SQLite-only upgrade of old meta records is
 * skipped on PostgreSQL.
 */
import { getTableColumns, getTableName, type Table } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { recallPgSchema } from '../src/core/pg-state-schema.ts'
import { SessionSettingsRepository } from '../src/core/session-settings.ts'
import { recallSchema } from '../src/core/state-schema.ts'
import { openRecallTables } from '../src/core/state-tables.ts'
import { backends } from '../../store/test/contract/backends.ts'

describe.each(backends)('recall tables on $name', (backend) => {
  it("are the backend's schema after the migrations; both schemas share table keys and column properties", async () => {
    const store = await backend.open()
    const tables = await openRecallTables(store)
    expect(tables.dialect).toBe(backend.name === 'postgres' ? 'postgresql' : 'sqlite')
    const declared: Record<string, unknown> = backend.name === 'postgres' ? recallPgSchema : recallSchema
    for (const [key, table] of Object.entries(declared)) {
      const columns = getTableColumns(table as Table)
      const live = await backend.columns(store, getTableName(table as Table))
      expect({ key, columns: live.sort() }).toEqual({ key, columns: Object.values(columns).map((column) => column.name).sort() })
      expect(Object.keys(columns)).toEqual(Object.keys(getTableColumns(recallSchema[key as keyof typeof recallSchema])))
    }
    expect(Object.keys(recallPgSchema)).toEqual(Object.keys(recallSchema))
    expect((await store.meta.migrations()).filter((migration) => migration.owner === 'recall').map((migration) => migration.version)).toEqual([1, 2])
  })
})

describe('recall tables on PostgreSQL', () => {
  it('skip the old-format meta upgrade: such keys are left alone and never read', async () => {
    const store = await backends.find((backend) => backend.name === 'postgres')!.open()
    const old = JSON.stringify({ version: 1, mode: 'chat', inject: 'on', updatedAt: 5 })
    await store.meta.set('recall.session.s1', old)
    const settings = new SessionSettingsRepository(store, { mode: 'auto', inject: 'follow' })
    expect(await settings.get('s1')).toEqual({ mode: 'auto', inject: 'follow', updatedAt: null })
    expect(await store.meta.get('recall.session.s1')).toBe(old)
  })
})
