import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import { openMemoryStore } from '@dsh-memory/store'
import { describe, expect, it } from 'vitest'
import { DistillStateRepository } from '../src/core/state.js'
import { onCleanup, tempDir } from './fixtures.js'

/**
 * A data dir written by the code before the distill tables (state and per-day ledger as JSON
 * in the meta table); `fixtures/pre-tables-generate.mjs` wrote it with a real Distiller run.
 */
function preTablesDataDir(): string {
  const path = join(tempDir(), 'memory.db')
  writeFileSync(path, gunzipSync(readFileSync(join(import.meta.dirname, 'fixtures', 'pre-tables-memory.db.gz'))))
  return path
}

function open(path: string, readonly = false) {
  const store = openMemoryStore({ path, readonly })
  onCleanup(() => store.close())
  return store
}

/** The totals the old code reported for the fixture (printed by the generator). */
const LEGACY_TOTALS = [
  { provider: 'deepseek-official', model: 'deepseek-v4-flash', layer: 'l3', calls: 3, failures: 0, inputTokens: 3619, outputTokens: 259, cacheReadTokens: 300, estimatedCalls: 0 },
  { provider: 'deepseek-official', model: 'deepseek-v4-flash', layer: 'l2', calls: 3, failures: 0, inputTokens: 3616, outputTokens: 256, cacheReadTokens: 300, estimatedCalls: 0 },
  { provider: 'deepseek-official', model: 'deepseek-v4-flash', layer: 'l1', calls: 3, failures: 1, inputTokens: 3610, outputTokens: 250, cacheReadTokens: 300, estimatedCalls: 0 },
]

describe('a data dir written before the distill tables', () => {
  it('moves the meta state and the per-day ledger into the tables at open and removes the meta keys', async () => {
    const path = preTablesDataDir()
    const store = open(path)
    expect((await store.meta.list('distill.')).length).toBe(11)
    const state = new DistillStateRepository(store)
    await state.ready()

    expect(await store.meta.list('distill.')).toEqual([])
    const conversations = await state.conversations()
    expect(conversations.map((entry) => entry.conversationId)).toEqual(['conv-fail', 'conv-ja', 'conv-next', 'conv-skip', 'conv-zh'])
    expect(await state.conversation('conv-zh')).toMatchObject({ cursorSeq: 1, stage: 1, attempts: 0, lastError: null, lease: null, skipped: [] })
    expect((await state.conversation('conv-zh')).lastRunAt).toBe(Date.UTC(2026, 10, 29, 9))
    expect(await state.conversation('conv-fail')).toMatchObject({ cursorSeq: -1, attempts: 2, lastError: 'model-unavailable: HTTP 503', gaveUpAt: null })
    expect((await state.conversation('conv-skip')).skipped).toEqual([{ fromSeq: 0, toSeq: 4, at: Date.UTC(2026, 10, 30, 9), reason: '不是 JSON' }])
    expect(await state.pendingIds()).toEqual(['conv-fail'])
    expect(await state.lastScan()).toBeGreaterThan(0)
    expect(Object.keys(await state.layers()).sort()).toEqual(['workspace:/work/blog', 'workspace:/work/shop'])
    expect((await state.layers())['workspace:/work/shop']).toMatchObject({ sinceL2: 0, sinceL3: 0, lastL2At: Date.UTC(2026, 10, 30, 9) })

    // The old ledger had day totals, never single calls: they carry over as totals only.
    expect(await state.costs()).toEqual(LEGACY_TOTALS)
    expect((await state.costDays()).map((day) => day.day)).toEqual(['2026-11-29', '2026-11-30'])
    expect(await state.calls()).toEqual([])

    // New calls add to the carried-over totals of their day.
    const at = Date.UTC(2026, 10, 30, 18)
    await state.recordCost({ at, provider: 'deepseek-official', model: 'deepseek-v4-flash', layer: 'l1', ok: true, inputTokens: 10, outputTokens: 1, cacheReadTokens: 0, estimated: false }, 365, at)
    expect((await state.costs({ layer: 'l1' }))[0]).toMatchObject({ calls: 4, failures: 1, inputTokens: 3620 })
    expect(await state.calls()).toHaveLength(1)
    expect((await store.meta.migrations()).some((migration) => migration.owner === 'distill' && migration.version === 1)).toBe(true)
  })

  it('upgrades once: a second open finds the tables as the first left them', async () => {
    const path = preTablesDataDir()
    const first = open(path)
    await new DistillStateRepository(first).ready()
    await first.close()
    const again = new DistillStateRepository(open(path))
    expect(await again.costs()).toEqual(LEGACY_TOTALS)
    expect((await again.conversations()).length).toBe(5)
  })

  it('a read-only open before the upgrade still reads the legacy state and changes nothing', async () => {
    const path = preTablesDataDir()
    // The store's own migrations (if this version added any) need one writable open; distill's do not run.
    await open(path).close()
    const store = open(path, true)
    const state = new DistillStateRepository(store)
    expect(await state.costs()).toEqual(LEGACY_TOTALS)
    expect(await state.pendingIds()).toEqual(['conv-fail'])
    expect((await state.conversation('conv-skip')).skipped).toHaveLength(1)
    expect((await state.conversations()).length).toBe(5)
    await expect(state.markScan(1)).rejects.toMatchObject({ code: 'unsupported-state' })
    expect((await store.meta.list('distill.')).length).toBe(11)
  })

  it('refuses a legacy value it cannot read, naming the key and field, and loses nothing', async () => {
    const path = preTablesDataDir()
    const store = open(path)
    const bad = JSON.stringify({ v: 1, conversationId: 'conv-zh', cursorSeq: 'one', stage: 1, attempts: 0, notBefore: 0, lastError: null, lastRunAt: null, skipped: [], lease: null })
    await store.meta.set('distill.conversation.conv-zh', bad)
    const state = new DistillStateRepository(store)
    await expect(state.ready()).rejects.toMatchObject({ code: 'unsupported-state', message: expect.stringMatching(/distill\.conversation\.conv-zh is malformed at cursorSeq/) })
    expect((await store.meta.list('distill.')).length).toBe(11)
    expect(await store.meta.get('distill.conversation.conv-zh')).toBe(bad)
    // Repaired, the next call upgrades.
    await store.meta.set('distill.conversation.conv-zh', bad.replace('"one"', '1'))
    expect((await state.conversation('conv-zh')).cursorSeq).toBe(1)
    expect(await store.meta.list('distill.')).toEqual([])
  })
})
