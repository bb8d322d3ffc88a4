import { describe, expect, it } from 'vitest'
import { buildTurns, isPalaceError, planArchive, planAutoArchive, type ArchiveRequest, type Turn } from '../src/index.js'
import { EventLog } from './fixtures.js'

function session(): { turns: Turn[]; n: number[] } {
  const log = new EventLog()
  const n: number[] = []
  for (let i = 0; i < 5; i++) n.push(...log.exchange(`q${i}`, `a${i}`))
  return { turns: buildTurns(log.events, { includeReasoning: true }), n }
}

function code(fn: () => unknown): string {
  try {
    fn()
  } catch (error) {
    if (isPalaceError(error)) return `${error.code}: ${error.message}`
    throw error
  }
  return 'ok'
}

const base = (segments: ArchiveRequest['segments'], extra: Partial<ArchiveRequest> = {}): ArchiveRequest => ({
  segments,
  summaries: [...new Set(segments.map((segment) => segment.category))].map((category) => ({ category, text: `about ${category}` })),
  selfName: 'assistant',
  ...extra,
})

describe('planArchive', () => {
  const { turns, n } = session()
  const none = (): boolean => false
  /** The error code and message of planning `segments` over `turns` with nothing archived yet. */
  const refusal = (segments: ArchiveRequest['segments']): string => code(() => planArchive(base(segments), turns, none, { maxFileBytes: 1e6 }))

  it('groups segments by category in first-appearance order; one category may take several segments', () => {
    const plan = planArchive(
      base([
        { category: 'setup', fromTurn: n[0]!, toTurn: n[1]! },
        { category: 'debugging', fromTurn: n[2]!, toTurn: n[5]! },
        { category: 'setup', fromTurn: n[6]!, toTurn: n[7]! },
      ]),
      turns,
      none,
      { maxFileBytes: 1e6 },
    )
    expect(plan.groups.map((group) => [group.category, group.turns.map((turn) => turn.turn)])).toEqual([
      ['setup', [n[0], n[1], n[6], n[7]]],
      ['debugging', [n[2], n[3], n[4], n[5]]],
    ])
    expect(plan.summaries.get('debugging')).toBe('about debugging')
    expect(plan.kind).toBe('model')
  })

  it('refuses overlapping segments, naming both', () => {
    expect(
      refusal([
        { category: 'a', fromTurn: n[0]!, toTurn: n[3]! },
        { category: 'b', fromTurn: n[3]!, toTurn: n[5]! },
      ]),
    ).toMatch(/^overlap: segments overlap: a .* and b /)
  })

  it('refuses a gap: archives start at the first unarchived turn and leave no hole', () => {
    expect(refusal([{ category: 'a', fromTurn: n[2]!, toTurn: n[4]! }])).toMatch(
      new RegExp(`^gap: .*${n[0]} \\(user: “q0”\\), ${n[1]} \\(assistant: “a0”\\)`),
    )
    expect(
      refusal([
        { category: 'a', fromTurn: n[0]!, toTurn: n[1]! },
        { category: 'b', fromTurn: n[3]!, toTurn: n[4]! },
      ]),
    ).toMatch(new RegExp(`^gap: .*${n[2]} \\(user`))
  })

  it('refuses turns that are already archived and says where to start', () => {
    const archived = new Set([n[0], n[1]])
    expect(code(() => planArchive(base([{ category: 'a', fromTurn: n[0]!, toTurn: n[3]! }]), turns, (t) => archived.has(t), { maxFileBytes: 1e6 }))).toBe(
      `overlap: turns ${n[0]}–${n[1]} are already archived; the first unarchived turn is ${n[2]}`,
    )
    const ok = planArchive(base([{ category: 'a', fromTurn: n[2]!, toTurn: n[3]! }]), turns, (t) => archived.has(t), { maxFileBytes: 1e6 })
    expect(ok.groups[0]!.turns).toHaveLength(2)
  })

  it('refuses a segment without turns, a reversed range, bad categories and running turns', () => {
    expect(refusal([{ category: 'a', fromTurn: 9000, toTurn: 9001 }])).toMatch(/^not-archivable: segment a 9000–9001 contains no turn/)
    expect(refusal([{ category: 'a', fromTurn: n[3]!, toTurn: n[1]! }])).toMatch(/^invalid-argument: segments\[0\]: fromTurn/)
    expect(refusal([{ category: '../etc', fromTurn: n[0]!, toTurn: n[1]! }])).toMatch(/^invalid-name: .*path separator/)
    const log = new EventLog()
    log.user('go')
    log.assistant('', { calls: [{ id: 'c', name: 'bash', args: {} }] })
    const running = buildTurns(log.events, { includeReasoning: true })
    expect(code(() => planArchive(base([{ category: 'a', fromTurn: 0, toTurn: 100 }]), running, none, { maxFileBytes: 1e6 }))).toMatch(/^not-archivable: turn \d+ is still waiting/)
  })

  it('needs one summary per category; summary stands in for a single category', () => {
    const segments = [
      { category: 'a', fromTurn: n[0]!, toTurn: n[1]! },
      { category: 'b', fromTurn: n[2]!, toTurn: n[3]! },
    ]
    expect(code(() => planArchive({ segments, summaries: [{ category: 'a', text: 'x' }], selfName: 'assistant' }, turns, none, { maxFileBytes: 1e6 }))).toMatch(/missing: b/)
    expect(code(() => planArchive({ segments, summary: 'x', selfName: 'assistant' }, turns, none, { maxFileBytes: 1e6 }))).toMatch(/single category/)
    expect(code(() => planArchive({ segments, summaries: [{ category: 'a', text: 'x' }, { category: 'b', text: 'y' }, { category: 'c', text: 'z' }], selfName: 'assistant' }, turns, none, { maxFileBytes: 1e6 }))).toMatch(/"c", which no segment uses/)
    const single = planArchive({ segments: [segments[0]!], summary: '  setup notes  ', selfName: 'assistant' }, turns, none, { maxFileBytes: 1e6 })
    expect(single.summaries.get('a')).toBe('setup notes')
  })

  it('plans an automatic archive through the last dropped turn', () => {
    const plan = planAutoArchive(turns, (t) => t === n[0], n[5]!, { category: 'auto', selfName: 'assistant', maxFileBytes: 1e6, summarize: (list) => `${list.length} turns` })!
    expect(plan.kind).toBe('auto')
    expect(plan.groups[0]!.turns.map((turn) => turn.turn)).toEqual([n[1], n[2], n[3], n[4], n[5]])
    expect(plan.summaries.get('auto')).toBe('5 turns')
    expect(planAutoArchive(turns, () => true, n[9]!, { category: 'auto', selfName: 'assistant', maxFileBytes: 1e6, summarize: () => '' })).toBeUndefined()
  })
})
