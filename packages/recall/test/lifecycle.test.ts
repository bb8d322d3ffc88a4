import { describe, expect, it } from 'vitest'
import type { CoordinatedMemoryStore } from '@dsh-memory/store'
import { consolidationLease, jaccard, Lifecycle, planConsolidation, RETENTION_LEASE, type ReviewReason } from '../src/core/lifecycle.ts'
import { DEFAULT_RECALL_OPTIONS, resolveRecallOptions } from '../src/core/options.ts'
import { backends } from '../../store/test/contract/backends.ts'

const HOUR = 3_600_000
const DAY = 24 * HOUR
const WS = '/work/alpha'

/** A clock the test moves by hand. */
function manualClock(start = Date.UTC(2025, 5, 1)) {
  let t = start
  return { now: () => t, advance: (ms: number) => (t += ms) }
}

describe.each(backends)('lifecycle ($name)', (backend) => {
  // Stores are closed after each test by the backends harness.
  let first: CoordinatedMemoryStore | undefined

  async function setup(overrides: Parameters<typeof resolveRecallOptions>[0] = {}) {
    const clock = manualClock()
    first = await backend.open({ now: clock.now })
    const store = () => first!
    const reviews: [ReviewReason, number][] = []
    const options = resolveRecallOptions(overrides)
    const lifecycle = new Lifecycle({ store, options, holder: 'host-a:1:test', now: clock.now, review: async (reason, turns) => void reviews.push([reason, turns]) })
    return { clock, store, reviews, lifecycle, options }
  }

  describe('review', () => {
    it('counts completed user turns and reviews after reviewEveryUserTurns; the count is shared through the store', async () => {
      const { lifecycle, reviews, store, clock, options } = await setup({ lifecycle: { reviewEveryUserTurns: 3, idleDelayMinutes: 0 } })
      expect(await lifecycle.noteUserTurn()).toBe(false)
      // Another process on the same database counts into the same record.
      const other = await backend.reopen(first!, { now: clock.now })
      const second = new Lifecycle({ store: () => other, options, holder: 'host-b:2:test', now: clock.now, review: async (reason, turns) => void reviews.push([reason, turns]) })
      expect(await second.noteUserTurn()).toBe(false)
      expect(await lifecycle.noteUserTurn()).toBe(true)
      expect(reviews).toEqual([['turns', 3]])
      expect(await lifecycle.turns()).toMatchObject({ sinceReview: 0, total: 3 })
      // The count lives in recall's own table, read back by the other process too.
      expect(await second.turns()).toMatchObject({ sinceReview: 0, total: 3 })
      expect(await store().meta.list('recall.')).toEqual([])
    })

    it('reviews after idleDelayMinutes without a turn, once', async () => {
      const { lifecycle, reviews, clock } = await setup({ lifecycle: { reviewEveryUserTurns: 0, idleDelayMinutes: 30 } })
      await lifecycle.noteUserTurn()
      await lifecycle.noteUserTurn()
      clock.advance(29 * 60_000)
      expect((await lifecycle.tick()).review).toBeUndefined()
      clock.advance(2 * 60_000)
      expect((await lifecycle.tick()).review).toBe('idle')
      expect(reviews).toEqual([['idle', 2]])
      clock.advance(60 * 60_000)
      expect((await lifecycle.tick()).review).toBeUndefined()
    })
  })

  describe('consolidation', () => {
    it('plans a deterministic merge of near-duplicates of one kind into the newest, CJK included', async () => {
      const store = await backend.open()
      const a = await store.memories.add({ kind: 'fact', text: 'The staging deploy uses Kamal and runs on Fridays.', scope: 'global', createdAt: 1_000 })
      const b = await store.memories.add({ kind: 'fact', text: 'The staging deploy uses Kamal, and runs on Fridays!', scope: 'global', createdAt: 2_000 })
      const c = await store.memories.add({ kind: 'preference', text: 'The staging deploy uses Kamal and runs on Fridays.', scope: 'global', createdAt: 3_000 })
      const d = await store.memories.add({ kind: 'fact', text: '用户每天早上喝黑咖啡，不加糖', scope: 'global', createdAt: 4_000 })
      const e = await store.memories.add({ kind: 'fact', text: '用户每天早上喝黑咖啡不加糖。', scope: 'global', createdAt: 5_000 })
      await store.memories.add({ kind: 'fact', text: 'The production deploy uses Capistrano on Mondays.', scope: 'global', createdAt: 6_000 })
      const plan = planConsolidation(await store.memories.list({ scope: 'global' }), 0.8)
      expect(plan.map((group) => [group.into.id, group.merged.map((memory) => memory.id)]).sort()).toEqual([
        [b.id, [a.id]],
        [e.id, [d.id]],
      ].sort())
      expect(plan.some((group) => group.into.id === c.id || group.merged.some((memory) => memory.id === c.id))).toBe(false)
      expect(jaccard(new Set(['a', 'b']), new Set(['a', 'b', 'c', 'd']))).toBe(0.5)
      // A memory flagged for review neither absorbs nor is absorbed.
      await store.memories.update(b.id, { flags: { needsReview: true } })
      expect(planConsolidation(await store.memories.list({ scope: 'global' }), 0.8).map((group) => group.into.id)).toEqual([e.id])
    })

    it('waits consolidationCooldownHours after the first change (later writes do not postpone it), merges under a lease, keeps history', async () => {
      const { lifecycle, store, clock } = await setup({ lifecycle: { consolidationCooldownHours: 20, globalConsolidationCooldownDays: 7, retentionSweepHours: 0 } })
      const older = await store().memories.add({ kind: 'fact', text: 'CI runs on Buildkite agents.', scope: 'workspace', workspace: WS })
      expect((await lifecycle.tick()).consolidated).toEqual([])
      clock.advance(10 * HOUR)
      const newer = await store().memories.add({ kind: 'fact', text: 'CI runs on Buildkite agents', scope: 'workspace', workspace: WS })
      expect((await lifecycle.tick()).consolidated).toEqual([])
      expect((await lifecycle.schedule(`workspace:${WS}`)).dueAt).toBe(clock.now() - 10 * HOUR + 20 * HOUR)
      clock.advance(10 * HOUR)
      const report = await lifecycle.tick()
      expect(report.consolidated).toEqual([{ layerKey: `workspace:${WS}`, groups: [{ into: newer.id, merged: [older.id] }], revision: expect.any(Number) }])
      expect((await store().memories.list({ workspace: WS })).map((memory) => memory.id)).toEqual([newer.id])
      expect((await store().memories.history(newer.id)).map((memory) => memory.id)).toEqual([older.id, newer.id])
      expect((await store().audit.list({ op: 'memory.merge' })).every((entry) => entry.actor === 'recall-consolidation')).toBe(true)
      // Clean now: nothing further is scheduled until the layer changes again.
      clock.advance(100 * HOUR)
      expect((await lifecycle.tick()).consolidated).toEqual([])
      expect((await store().leases.get(consolidationLease(`workspace:${WS}`)))!.expiresAt).toBe(0)
    })

    it('the global layer waits globalConsolidationCooldownDays', async () => {
      const { lifecycle, store, clock } = await setup({ lifecycle: { consolidationCooldownHours: 1, globalConsolidationCooldownDays: 7, retentionSweepHours: 0 } })
      await store().memories.add({ kind: 'fact', text: 'Prefers tea over coffee.', scope: 'global' })
      await store().memories.add({ kind: 'fact', text: 'Prefers tea over coffee', scope: 'global' })
      await lifecycle.tick()
      clock.advance(6 * DAY)
      expect((await lifecycle.tick()).consolidated).toEqual([])
      clock.advance(1 * DAY + 1)
      expect((await lifecycle.tick()).consolidated).toHaveLength(1)
      expect(await store().memories.list({ scope: 'global' })).toHaveLength(1)
    })

    it('two processes: one consolidates, the other finds the lease busy; a stale holder\'s merges are refused', async () => {
      const { lifecycle, store, clock } = await setup({ lifecycle: { consolidationCooldownHours: 0, retentionSweepHours: 0 } })
      await store().memories.add({ kind: 'fact', text: 'Uses pnpm workspaces.', scope: 'global' })
      await store().memories.add({ kind: 'fact', text: 'Uses pnpm workspaces', scope: 'global' })
      const other = await backend.reopen(first!, { now: clock.now })
      // Process B holds the lease (it is mid-consolidation somewhere else).
      const held = (await other.leases.acquire(consolidationLease('global'), 'host-b:2:test', 60_000))!
      expect(await lifecycle.consolidate('global')).toBe('busy')
      expect(await store().memories.list({ scope: 'global' })).toHaveLength(2)
      // B stalls past its TTL; A takes over and consolidates; B's late write is refused.
      clock.advance(61_000)
      const result = await lifecycle.consolidate('global')
      expect(result).not.toBe('busy')
      const survivor = (await store().memories.list({ scope: 'global' }))[0]!
      const late = await other.memories.add({ kind: 'fact', text: 'late', scope: 'global' }, { fence: held }).catch((error: { code?: string }) => error.code)
      expect(late).toBe('fenced')
      expect((await store().memories.list({ scope: 'global' })).map((memory) => memory.id)).toEqual([survivor.id])
      // And B, noticing on its next heartbeat, cannot renew either.
      expect(await other.leases.renew(held, 60_000).catch((error: { code?: string }) => error.code)).toBe('fenced')
    })
  })

  describe('retention', () => {
    it('sweeps by kind every retentionSweepHours: unused for maxAgeDays, then least recently used beyond maxCount', async () => {
      const { lifecycle, store, clock } = await setup({
        lifecycle: { retentionSweepHours: 24, consolidationCooldownHours: 1_000, globalConsolidationCooldownDays: 1_000 },
        retention: { rules: [{ kind: 'episode', maxAgeDays: 30, maxCount: 2 }] },
      })
      const start = clock.now()
      const old = await store().memories.add({ kind: 'episode', text: 'Old trip to Oslo.', scope: 'workspace', workspace: WS, createdAt: start - 40 * DAY })
      const recalled = await store().memories.add({ kind: 'episode', text: 'Old trip to Bergen, recalled recently.', scope: 'workspace', workspace: WS, createdAt: start - 40 * DAY })
      await store().memories.touchRecalled([recalled.id], start - DAY)
      const e1 = await store().memories.add({ kind: 'episode', text: 'Episode one.', scope: 'workspace', workspace: WS, createdAt: start - 3 * DAY })
      const e2 = await store().memories.add({ kind: 'episode', text: 'Episode two.', scope: 'workspace', workspace: WS, createdAt: start - 2 * DAY })
      const fact = await store().memories.add({ kind: 'fact', text: 'A very old fact.', scope: 'workspace', workspace: WS, createdAt: start - 400 * DAY })
      const globalEpisode = await store().memories.add({ kind: 'episode', text: 'Global episode.', scope: 'global', createdAt: start - 5 * DAY })
      // The first start only starts the clock.
      expect((await lifecycle.tick()).swept).toBeUndefined()
      clock.advance(23 * HOUR)
      expect((await lifecycle.tick()).swept).toBeUndefined()
      clock.advance(HOUR)
      const report = await lifecycle.tick()
      expect(report.swept).toEqual({ deleted: 2, byLayerKind: { [`workspace:${WS}/episode`]: 2 } })
      const left = (await store().memories.list({ limit: 100 })).map((memory) => memory.id).sort()
      expect(left).toEqual([recalled.id, e2.id, fact.id, globalEpisode.id].sort())
      expect(left).not.toContain(old.id)
      expect(left).not.toContain(e1.id)
      expect((await store().audit.list({ op: 'memory.delete' })).every((entry) => entry.actor === 'recall-retention')).toBe(true)
      expect((await store().leases.get(RETENTION_LEASE))!.expiresAt).toBe(0)
    })

    it('does nothing when disabled or without rules', async () => {
      const { lifecycle, store, clock } = await setup({ lifecycle: { retentionSweepHours: 0 } })
      await store().memories.add({ kind: 'episode', text: 'x', scope: 'global', createdAt: 0 })
      await lifecycle.tick()
      clock.advance(1_000 * DAY)
      expect((await lifecycle.tick()).swept).toBeUndefined()
      expect(await store().memories.list()).toHaveLength(1)
      expect(DEFAULT_RECALL_OPTIONS.retention.rules).toEqual([{ kind: 'episode', maxAgeDays: 180, maxCount: 500 }])
    })
  })
})
