import { describe, expect, it } from 'vitest'
import { buildTurns, CheckCadence, DEFAULT_PALACE_OPTIONS, evaluateGates, retainBudget, splitArchivable, type Turn } from '../src/index.js'
import { EventLog } from './fixtures.js'

function turnsOf(count: number, chars = 400): Turn[] {
  const log = new EventLog()
  for (let i = 0; i < count; i++) log.exchange(`question ${i} ${'q'.repeat(chars)}`, `answer ${i} ${'a'.repeat(chars)}`)
  return buildTurns(log.events, { includeReasoning: true })
}

const settings = { triggerPressure: 0.6, minBatchTurns: 10, batchByteFraction: 0.5 }

describe('gates', () => {
  it('keeps the newest turns that fit the retained budget out of the archivable set', () => {
    const turns = turnsOf(10) // 20 turns of ~100 tokens each
    const perTurn = turns[0]!.tokens
    const split = splitArchivable(turns, () => false, perTurn * 3 + 1)
    expect(split.retained.map((turn) => turn.turn)).toEqual(turns.slice(-3).map((turn) => turn.turn))
    expect(split.archivable).toHaveLength(17)
    expect(split.firstUnarchived?.turn).toBe(turns[0]!.turn)
    expect(split.archivableTokens).toBe(turns.slice(0, 17).reduce((sum, turn) => sum + turn.tokens, 0))
  })

  it('starts after archived turns and stops at a turn still waiting for tools', () => {
    const log = new EventLog()
    const turns0 = [log.user('one'), log.assistant('two'), log.user('three')]
    log.assistant('', { calls: [{ id: 'x', name: 'bash', args: {} }] })
    log.user('after the running call')
    const turns = buildTurns(log.events, { includeReasoning: true })
    const split = splitArchivable(turns, (turn) => turn === turns0[0], 0)
    expect(split.firstUnarchived?.turn).toBe(turns0[1])
    expect(split.archivable.map((turn) => turn.turn)).toEqual([turns0[1], turns0[2]])
  })

  it('opens only when pressure and batch both hold', () => {
    const turns = turnsOf(6) // 12 turns
    const split = splitArchivable(turns, () => false, 0)
    const window = 10_000
    expect(evaluateGates({ historyTokens: 5_999, contextWindow: window, split }, settings).open).toBe(false)
    const open = evaluateGates({ historyTokens: 6_000, contextWindow: window, split }, settings)
    expect(open.open).toBe(true)
    expect(open.pressure).toEqual({ open: true, ratio: 0.6, threshold: 0.6 })
    expect(open.batch.turns).toBe(12)

    const few = splitArchivable(turns.slice(0, 4), () => false, 0)
    const noBatch = evaluateGates({ historyTokens: 9_000, contextWindow: window, split: few }, settings)
    expect(noBatch.pressure.open).toBe(true)
    expect(noBatch.batch.open).toBe(false)
    expect(noBatch.open).toBe(false)
  })

  it('opens the batch gate by volume when few but large turns are archivable', () => {
    const turns = turnsOf(2, 8000) // 4 turns of ~2000 tokens
    const window = 20_000
    const split = splitArchivable(turns, () => false, retainBudget(window, { retainFraction: 0.12 }))
    // Retained budget 2400 tokens keeps the last turn; 3 turns (~6000 tokens) ≥ 0.5 × 2400.
    expect(split.archivable.length).toBeLessThan(10)
    const gates = evaluateGates({ historyTokens: 15_000, contextWindow: window, split }, settings)
    expect(gates.batch.minTokens).toBe(1200)
    expect(gates.batch.open).toBe(true)
    expect(gates.open).toBe(true)
  })

  it('keeps the pressure gate closed when the window or history is unknown', () => {
    const split = splitArchivable(turnsOf(8), () => false, 0)
    expect(evaluateGates({ historyTokens: undefined, contextWindow: 1000, split }, settings).open).toBe(false)
    expect(evaluateGates({ historyTokens: 900, contextWindow: undefined, split }, settings).pressure.ratio).toBeUndefined()
  })

  it('checks once every checkEveryTurns new turns per session', () => {
    const cadence = new CheckCadence()
    expect(cadence.due('s', 4, 5)).toBe(false)
    expect(cadence.due('s', 5, 5)).toBe(true)
    expect(cadence.due('s', 7, 5)).toBe(false)
    expect(cadence.due('s', 10, 5)).toBe(true)
    expect(cadence.due('other', 5, 5)).toBe(true)
    cadence.forget('s')
    expect(cadence.due('s', 5, 5)).toBe(true)
  })

  it('uses the reference defaults', () => {
    expect(DEFAULT_PALACE_OPTIONS).toMatchObject({ triggerPressure: 0.6, retainFraction: 0.12, batchByteFraction: 0.5, minBatchTurns: 10, checkEveryTurns: 5, maxFileBytes: 5_000_000 })
  })
})
