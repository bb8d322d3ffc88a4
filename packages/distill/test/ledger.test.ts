import { describe, expect, it } from 'vitest'
import { addToDay, dayKey, expiredDays, summarizeLedger } from '../src/core/ledger.js'
import type { LedgerEntry } from '../src/core/model.js'
import { DistillStateRepository } from '../src/core/state.js'
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

describe('ledger buckets', () => {
  it('sums per provider/model/layer within a day and counts failures and estimates', () => {
    let bucket = addToDay(undefined, entry())
    bucket = addToDay(bucket, entry({ inputTokens: 50, estimated: true }))
    bucket = addToDay(bucket, entry({ layer: 'dedup', inputTokens: 30 }))
    bucket = addToDay(bucket, entry({ ok: false, inputTokens: 0, outputTokens: 0 }))
    expect(bucket.day).toBe('2025-06-01')
    expect(bucket.rows).toEqual([
      { provider: 'deepseek-official', model: 'deepseek-v4-flash', layer: 'l1', calls: 2, failures: 1, inputTokens: 150, outputTokens: 20, cacheReadTokens: 0, estimatedCalls: 1 },
      { provider: 'deepseek-official', model: 'deepseek-v4-flash', layer: 'dedup', calls: 1, failures: 0, inputTokens: 30, outputTokens: 10, cacheReadTokens: 0, estimatedCalls: 0 },
    ])
  })

  it('starts a new bucket on a new day', () => {
    const first = addToDay(undefined, entry())
    const next = addToDay(first, entry({ at: day + 86_400_000 }))
    expect(next.day).toBe('2025-06-02')
    expect(next.rows[0]!.calls).toBe(1)
  })

  it('expires days older than the retention, keeps all with 0', () => {
    const days = ['2025-01-01', '2025-05-30', '2025-05-31', '2025-06-01']
    // A day is kept while any part of it lies within the retention window.
    expect(expiredDays(days, day, 2)).toEqual(['2025-01-01'])
    expect(expiredDays(days, day, 1)).toEqual(['2025-01-01', '2025-05-30'])
    expect(expiredDays(days, day, 0)).toEqual([])
  })

  it('summarizes across days with filters', () => {
    const a = addToDay(undefined, entry())
    const b = addToDay(undefined, entry({ at: day + 86_400_000, model: 'other', inputTokens: 7 }))
    expect(summarizeLedger([a, b]).map((row) => [row.model, row.inputTokens])).toEqual([
      ['deepseek-v4-flash', 100],
      ['other', 7],
    ])
    expect(summarizeLedger([a, b], { fromDay: dayKey(day + 86_400_000) }).map((row) => row.model)).toEqual(['other'])
    expect(summarizeLedger([a, b], { layer: 'l2' })).toEqual([])
  })
})

describe('ledger persisted in the store', () => {
  it('records entries by day and prunes days beyond tokenCost.retentionDays', async () => {
    const { store } = openTempStore()
    const state = new DistillStateRepository(store)
    await state.recordCost(entry({ at: day - 10 * 86_400_000 }), 365, day - 10 * 86_400_000)
    await state.recordCost(entry({ at: day - 86_400_000, layer: 'l2' }), 365, day - 86_400_000)
    await state.recordCost(entry(), 365, day)
    expect((await state.costDays()).map((bucket) => bucket.day)).toEqual(['2025-05-22', '2025-05-31', '2025-06-01'])
    // Recording with a 3-day retention drops the 10-day-old bucket.
    await state.recordCost(entry({ outputTokens: 5 }), 3, day)
    expect((await state.costDays()).map((bucket) => bucket.day)).toEqual(['2025-05-31', '2025-06-01'])
    expect(await store.meta.get('distill.ledger.2025-05-22')).toBeUndefined()
    const rows = await state.costs()
    expect(rows.find((row) => row.layer === 'l1')).toMatchObject({ calls: 2, inputTokens: 200, outputTokens: 15 })
    expect(await state.pruneCosts(1, day + 86_400_000)).toEqual(['2025-05-31'])
  })

  it('fails loudly on a ledger written by a newer version', async () => {
    const { store } = openTempStore()
    await store.meta.set('distill.ledger.days', JSON.stringify({ v: 99, days: [] }))
    await expect(new DistillStateRepository(store).costs()).rejects.toMatchObject({ code: 'unsupported-state' })
  })
})
