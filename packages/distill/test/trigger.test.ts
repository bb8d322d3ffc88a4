import { describe, expect, it } from 'vitest'
import { decideTrigger, rampThreshold, retryDelayMs, type TriggerInput } from '../src/core/trigger.js'

const base: TriggerInput = { pending: 0, stage: 0, lastMessageAt: 0, agentRunning: false, orphan: false, notBefore: 0 }
const options = { minMessages: 6, idleSeconds: 300 }

describe('rampThreshold', () => {
  it('ramps 1 → 2 → 4 → N and stays at N', () => {
    expect([0, 1, 2, 3, 4, 10, 100].map((stage) => rampThreshold(stage, 6))).toEqual([1, 2, 4, 6, 6, 6, 6])
    expect([0, 1, 2, 3, 4, 5].map((stage) => rampThreshold(stage, 16))).toEqual([1, 2, 4, 8, 16, 16])
    expect(rampThreshold(0, 1)).toBe(1)
    expect(rampThreshold(5, 1)).toBe(1)
  })
})

describe('decideTrigger', () => {
  const now = 1_000_000

  it('is not due without pending messages', () => {
    expect(decideTrigger({ ...base, orphan: true }, now, options)).toEqual({ due: false })
  })

  it('fires at the ramp threshold once the agent is idle', () => {
    expect(decideTrigger({ ...base, pending: 1, lastMessageAt: now }, now, options)).toEqual({ due: true, reason: 'threshold' })
    expect(decideTrigger({ ...base, pending: 1, stage: 1, lastMessageAt: now }, now, options)).toEqual({ due: false, wakeAt: now + 300_000 })
    expect(decideTrigger({ ...base, pending: 2, stage: 1, lastMessageAt: now }, now, options)).toEqual({ due: true, reason: 'threshold' })
    expect(decideTrigger({ ...base, pending: 5, stage: 3, lastMessageAt: now }, now, options).due).toBe(false)
    expect(decideTrigger({ ...base, pending: 6, stage: 3, lastMessageAt: now }, now, options).due).toBe(true)
  })

  it('waits for a running agent to go idle before the threshold fires', () => {
    expect(decideTrigger({ ...base, pending: 10, agentRunning: true, lastMessageAt: now }, now, options)).toEqual({ due: false, wakeAt: now + 300_000 })
  })

  it('falls back to idle after idleSeconds of silence, even below the threshold or while running', () => {
    const quiet = { ...base, pending: 1, stage: 3, lastMessageAt: now - 300_000 }
    expect(decideTrigger(quiet, now, options)).toEqual({ due: true, reason: 'idle' })
    expect(decideTrigger({ ...quiet, agentRunning: true }, now, options)).toEqual({ due: true, reason: 'idle' })
    expect(decideTrigger({ ...quiet, lastMessageAt: now - 299_999 }, now, options)).toEqual({ due: false, wakeAt: now + 1 })
  })

  it('never wakes by time when the idle fallback is disabled', () => {
    expect(decideTrigger({ ...base, pending: 1, stage: 3, lastMessageAt: 0 }, now, { minMessages: 6, idleSeconds: 0 })).toEqual({ due: false })
  })

  it('treats orphaned slices (no live agent) as due at once', () => {
    expect(decideTrigger({ ...base, pending: 1, stage: 5, orphan: true, lastMessageAt: now }, now, options)).toEqual({ due: true, reason: 'orphan' })
  })

  it('respects a retry backoff', () => {
    expect(decideTrigger({ ...base, pending: 3, orphan: true, notBefore: now + 30_000 }, now, options)).toEqual({ due: false, wakeAt: now + 30_000 })
    expect(decideTrigger({ ...base, pending: 3, orphan: true, notBefore: now }, now, options).due).toBe(true)
  })
})

describe('retryDelayMs', () => {
  it('doubles from 30 s and caps at one hour', () => {
    expect([1, 2, 3, 4].map(retryDelayMs)).toEqual([30_000, 60_000, 120_000, 240_000])
    expect(retryDelayMs(50)).toBe(3_600_000)
  })
})
