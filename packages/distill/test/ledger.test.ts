import { describe, expect, it } from 'vitest'
import { dayKey, expiredDays, summarizeLedger } from '../src/core/ledger.js'
import type { LedgerEntry } from '../src/core/model.js'
import { DistillStateRepository } from '../src/core/state.js'
import { backends } from '../../store/test/contract/backends.js'
import { openTempStore } from './fixtures.js'

const day = Date.UTC(2025, 5, 1, 10)
const entry = (over: Partial<LedgerEntry> = {}): LedgerEntry => ({
  at: day,
  provider: 'deepseek-official',
  model: 'deepseek-v4-flash',
  layer: 'l1',
  ok: true,
  inputTokens: 100,
  outputTokens: 10,
  cacheReadTokens: 0,
  estimated: false,
  ...over,
})

describe('ledger days', () => {
  it('expires days older than the retention, keeps all with 0', () => {
    const days = ['2025-01-01', '2025-05-30', '2025-05-31', '2025-06-01']
    // A day is kept while any part of it lies within the retention window.
    expect(expiredDays(days, day, 2)).toEqual(['2025-01-01'])
    expect(expiredDays(days, day, 1)).toEqual(['2025-01-01', '2025-05-30'])
    expect(expiredDays(days, day, 0)).toEqual([])
  })

  it('summarizes across days with filters', () => {
    const row = { provider: 'deepseek-official', model: 'deepseek-v4-flash', layer: 'l1' as const, calls: 1, failures: 0, inputTokens: 100, outputTokens: 10, cacheReadTokens: 0, estimatedCalls: 0 }
    const a = { v: 1 as const, day: dayKey(day), rows: [row] }
    const b = { v: 1 as const, day: dayKey(day + 86_400_000), rows: [{ ...row, model: 'other', inputTokens: 7 }] }
    expect(summarizeLedger([a, b]).map((total) => [total.model, total.inputTokens])).toEqual([
      ['deepseek-v4-flash', 100],
      ['other', 7],
    ])
    expect(summarizeLedger([a, b], { fromDay: dayKey(day + 86_400_000) }).map((total) => total.model)).toEqual(['other'])
    expect(summarizeLedger([a, b], { layer: 'l2' })).toEqual([])
  })
})

describe.each(backends)('ledger persisted in the store ($name)', (backend) => {
  it('keeps one row per call and sums them per day, counting failures and estimates', async () => {
    const store = await backend.open()
    const state = new DistillStateRepository(store)
    await state.recordCost(entry({ conversationId: '会话-1', durationMs: 420 }), 365, day)
    await state.recordCost(entry({ inputTokens: 50, estimated: true }), 365, day)
    await state.recordCost(entry({ layer: 'dedup', inputTokens: 30 }), 365, day)
    await state.recordCost(entry({ ok: false, inputTokens: 0, outputTokens: 0 }), 365, day)
    const calls = await state.calls()
    expect(calls).toHaveLength(4)
    expect(calls.at(-1)).toMatchObject({ at: day, layer: 'l1', outcome: 'ok', inputTokens: 100, outputTokens: 10, estimated: false, durationMs: 420, conversationId: '会话-1' })
    expect(calls[0]).toMatchObject({ outcome: 'failed', inputTokens: 0, conversationId: null })
    expect(await state.costDays()).toEqual([
      {
        v: 1,
        day: '2025-06-01',
        rows: expect.arrayContaining([
          { provider: 'deepseek-official', model: 'deepseek-v4-flash', layer: 'l1', calls: 2, failures: 1, inputTokens: 150, outputTokens: 20, cacheReadTokens: 0, estimatedCalls: 1 },
          { provider: 'deepseek-official', model: 'deepseek-v4-flash', layer: 'dedup', calls: 1, failures: 0, inputTokens: 30, outputTokens: 10, cacheReadTokens: 0, estimatedCalls: 0 },
        ]),
      },
    ])
    expect(await state.calls({ layer: 'dedup' })).toHaveLength(1)
  })

  it('records entries by day and prunes days beyond tokenCost.retentionDays', async () => {
    const store = await backend.open()
    const state = new DistillStateRepository(store)
    await state.recordCost(entry({ at: day - 10 * 86_400_000 }), 365, day - 10 * 86_400_000)
    await state.recordCost(entry({ at: day - 86_400_000, layer: 'l2' }), 365, day - 86_400_000)
    await state.recordCost(entry(), 365, day)
    expect((await state.costDays()).map((bucket) => bucket.day)).toEqual(['2025-05-22', '2025-05-31', '2025-06-01'])
    // Recording with a 3-day retention drops the 10-day-old day's calls.
    await state.recordCost(entry({ outputTokens: 5 }), 3, day)
    expect((await state.costDays()).map((bucket) => bucket.day)).toEqual(['2025-05-31', '2025-06-01'])
    expect((await state.calls()).map((call) => dayKey(call.at))).not.toContain('2025-05-22')
    const rows = await state.costs()
    expect(rows.find((row) => row.layer === 'l1')).toMatchObject({ calls: 2, inputTokens: 200, outputTokens: 15 })
    expect(await state.pruneCosts(1, day + 86_400_000)).toEqual(['2025-05-31'])
  })
})

describe('a legacy ledger (SQLite data dirs only)', () => {
  it('fails loudly on a legacy ledger written by a newer version, and keeps it', async () => {
    const { store } = openTempStore()
    await store.meta.set('distill.ledger.days', JSON.stringify({ v: 99, days: [] }))
    await expect(new DistillStateRepository(store).costs()).rejects.toMatchObject({ code: 'unsupported-state', message: expect.stringMatching(/distill\.ledger\.days has version 99/) })
    expect(await store.meta.get('distill.ledger.days')).toBe(JSON.stringify({ v: 99, days: [] }))
  })
})
