/**
 * The distill tables on both backends (a fresh SQLite file / a fresh PostgreSQL schema per
 * test, see `packages/store/test/contract/backends.ts`): every repository query, and the
 * atomicity that makes "distilled exactly once" hold when processes share one database.
 */
import { getTableColumns, getTableName, type Table } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { Distiller } from '../src/core/distiller.js'
import { resolveDistillOptions } from '../src/core/options.js'
import { distillPgSchema } from '../src/core/pg-tables.js'
import { DistillStateRepository, initialConversationState, initialLayerState, MAX_SKIPPED } from '../src/core/state.js'
import { distillSchema } from '../src/core/tables.js'
import { backends } from '../../store/test/contract/backends.js'
import { appendMessages, extraction, FakeClock, onCleanup, ScriptedModel } from './fixtures.js'

/** Column names of a drizzle table, sorted. */
const columnNames = (table: unknown) => Object.values(getTableColumns(table as Table)).map((column) => column.name).sort()

describe.each(backends)('distill state on $name', (backend) => {
  it("the migrated tables are the backend's schema, and both schemas have the same keys and properties", async () => {
    const store = await backend.open()
    await new DistillStateRepository(store).ready()
    const schema: Record<string, unknown> = backend.name === 'postgres' ? distillPgSchema : distillSchema
    for (const [key, table] of Object.entries(schema)) {
      expect([key, (await backend.columns(store, getTableName(table as Table))).sort()]).toEqual([key, columnNames(table)])
      expect(Object.keys(getTableColumns(table as Table))).toEqual(Object.keys(getTableColumns(distillSchema[key as keyof typeof distillSchema])))
    }
    expect(Object.keys(distillPgSchema)).toEqual(Object.keys(distillSchema))
  })

  it('keeps conversations, skipped ranges, the pending index, the scan mark and layer counters', async () => {
    const state = new DistillStateRepository(await backend.open())
    const base = initialConversationState('会话-甲')
    await state.putConversation({ ...base, cursorSeq: 7, stage: 2, notBefore: 1_800_000_000_000, lastError: 'タイムアウト', lastRunAt: 1_800_000_000_001, gaveUpAt: null, lease: null })
    for (let i = 0; i < MAX_SKIPPED + 2; i++) await state.addSkipped('会话-甲', { fromSeq: i, toSeq: i + 1, at: 1_800_000_000_000 + i, reason: `invalid ${i}` })
    const read = await state.conversation('会话-甲')
    expect(read).toMatchObject({ cursorSeq: 7, stage: 2, notBefore: 1_800_000_000_000, lastError: 'タイムアウト', lease: null })
    // Only the newest ranges are kept, oldest first.
    expect(read.skipped.map((range) => range.fromSeq)).toEqual(Array.from({ length: MAX_SKIPPED }, (_, i) => i + 2))
    expect(await state.conversation('never-seen')).toEqual(initialConversationState('never-seen'))

    await state.updatePending(['b', 'a', '会话-甲'], [])
    await state.updatePending([], ['b'])
    expect((await state.pendingIds()).sort()).toEqual(['a', '会话-甲'])
    // Marking pending keeps a conversation's cursor.
    expect((await state.conversation('会话-甲')).cursorSeq).toBe(7)
    expect((await state.conversations()).map((conversation) => conversation.conversationId)).toEqual(['a', 'b', '会话-甲'])

    expect(await state.lastScan()).toBeUndefined()
    await state.markScan(1_800_000_000_123)
    await state.markScan(1_800_000_000_456)
    expect(await state.lastScan()).toBe(1_800_000_000_456)

    await state.updateLayers((keys) => {
      keys.global = { ...initialLayerState(), sinceL2: 3, lastL2At: 1_800_000_000_000 }
      keys['workspace:/tmp/项目'] = { ...initialLayerState(), sinceL3: 1 }
    })
    await state.updateLayers((keys) => {
      delete keys.global
    })
    expect(await state.layers()).toEqual({ 'workspace:/tmp/项目': { ...initialLayerState(), sinceL3: 1 } })

    expect(await state.forgetConversations(['a', '会话-甲', 'missing'])).toBe(2)
    expect((await state.conversations()).map((conversation) => conversation.conversationId)).toEqual(['b'])
    expect((await state.conversation('会话-甲')).skipped).toEqual([])
  })

  it('two processes claiming the same conversations at once: each is leased to exactly one of them', async () => {
    const first = await backend.open()
    const second = await backend.reopen(first)
    const a = new DistillStateRepository(first)
    const b = new DistillStateRepository(second)
    const ids = Array.from({ length: 12 }, (_, i) => `conv-${i}`)
    const now = 1_800_000_000_000
    const claims = await Promise.all(ids.flatMap((id) => [a.claim(id, 'host:1:a', now, 60_000, () => true), b.claim(id, 'host:2:b', now, 60_000, () => true)]))
    for (const [index, id] of ids.entries()) {
      const [byA, byB] = [claims[2 * index], claims[2 * index + 1]]
      // Exactly one claim won, and the stored lease is the winner's.
      expect([byA, byB].filter(Boolean)).toHaveLength(1)
      expect((await a.conversation(id)).lease).toEqual((byA ?? byB)!.lease)
    }
  })

  it('two distillers on one database racing for one conversation distil it exactly once', async () => {
    const clock = new FakeClock(Date.now())
    const first = await backend.open({ now: () => clock.now() })
    const second = await backend.reopen(first, { now: () => clock.now() })
    await appendMessages(first, 'conv', '/w', ['我住在里斯本。', 'Noted.'])
    const options = resolveDistillOptions({ llm: { provider: 'test', model: 'scripted' } })
    const model = new ScriptedModel().on((call) => (call.layer === 'l1' ? extraction([{ text: 'The user lives in Lisbon (我住在里斯本).', scope: 'global' }]) : undefined))
    const distillers = [first, second].map((store) => new Distiller({ store, transport: model.transport, options, clock }))
    for (const distiller of distillers) onCleanup(() => distiller.close())
    await Promise.all(distillers.map((distiller) => distiller.runPending(60_000)))
    // One model call for the slice, one memory, and the cursor past the last message.
    expect(model.callsOf('l1')).toHaveLength(1)
    expect((await second.memories.list({ scope: 'global' })).map((memory) => memory.text)).toEqual(['The user lives in Lisbon (我住在里斯本).'])
    expect((await new DistillStateRepository(second).conversation('conv')).cursorSeq).toBe(1)
  })
})

describe('distill state on PostgreSQL has no legacy upgrade', () => {
  it('opens the tables and ignores distill.* meta keys (only SQLite data dirs ever had them)', async () => {
    const store = await backends.find((backend) => backend.name === 'postgres')!.open()
    // On SQLite this key would be read as a legacy ledger (and refused: version 99).
    const legacy = JSON.stringify({ v: 99, days: [] })
    await store.meta.set('distill.ledger.days', legacy)
    const state = new DistillStateRepository(store)
    expect(await state.costs()).toEqual([])
    expect(await store.meta.get('distill.ledger.days')).toBe(legacy)
    expect((await store.meta.migrations()).filter((migration) => migration.owner === 'distill').map((migration) => migration.version)).toEqual([1])
  })
})
