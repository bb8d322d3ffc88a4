import { describe, expect, it } from 'vitest'
import { cueOf, dedupe, extractFromBranch, extractStatements, labelOf, parseSummary } from '../src/core/extract.js'
import type { BranchEvent } from '../src/core/types.js'

const event = (kind: BranchEvent['kind'], text: string, id = 1): BranchEvent => ({ id, branchId: 'br-x', kind, text, sessionId: 's', createdAt: 0 })

/** Expected statements, written as [kind, text] rows. */
const statements = (...rows: [string, string][]) => rows.map(([kind, text]) => ({ kind, text }))

describe('summary parsing', () => {
  it('reads labelled lines in English, Chinese and Japanese', () => {
    const summary = [
      'Decision: use PostgreSQL 16 for the orders service',
      'Constraint: p99 latency must stay under 50 ms',
      '结论:连接池设为 20 时吞吐最高',
      '待解:分库分表的时间点',
      '決定:マイグレーションは Flyway を採用',
      '制約: 本番では root ユーザーを使わない',
    ].join('\n')
    expect(parseSummary(summary, 500)).toEqual(statements(
      ['decision', 'use PostgreSQL 16 for the orders service'],
      ['constraint', 'p99 latency must stay under 50 ms'],
      ['outcome', '连接池设为 20 时吞吐最高'],
      ['question', '分库分表的时间点'],
      ['decision', 'マイグレーションは Flyway を採用'],
      ['constraint', '本番では root ユーザーを使わない'],
    ))
  })

  it('takes the kind of a heading for the bullets under it, and a cue or outcome otherwise', () => {
    const summary = '## Decisions\n- Go with Redis streams\n- Keep the v1 API\n\n## Open questions\n- Who owns the runbook?\n\nBenchmarks showed a 3x speedup.\nThe retry queue is simple'
    expect(parseSummary(summary, 500)).toEqual(statements(
      ['decision', 'Go with Redis streams'],
      ['decision', 'Keep the v1 API'],
      ['question', 'Who owns the runbook?'],
      ['outcome', 'Benchmarks showed a 3x speedup.'],
      ['outcome', 'The retry queue is simple'],
    ))
  })

  it('clips long statements and drops duplicates', () => {
    const long = `Decision: ${'x'.repeat(100)}`
    const parsed = parseSummary(`${long}\n${long}`, 40)
    expect(parsed).toHaveLength(1)
    expect([...parsed[0]!.text].length).toBeLessThanOrEqual(40)
    expect(parsed[0]!.text.endsWith('…')).toBe(true)
  })
})

describe('statement extraction from user messages', () => {
  it('finds constraints and decisions by wording, not questions', () => {
    const text = 'The API must stay backwards compatible. We decided to use pnpm. Should we use yarn instead? 所有接口必须支持幂等。我们决定采用 gRPC。本番では必ずレビューを通すこと。'
    expect(extractStatements(text, ['constraint', 'decision'], 500)).toEqual(statements(
      ['constraint', 'The API must stay backwards compatible.'],
      ['decision', 'We decided to use pnpm.'],
      ['constraint', '所有接口必须支持幂等。'],
      ['decision', '我们决定采用 gRPC。'],
      ['constraint', '本番では必ずレビューを通すこと。'],
    ))
  })

  it('ignores code blocks', () => {
    expect(extractStatements('```\n// must never happen\n```\nplease look', ['constraint'], 500)).toEqual([])
  })

  it('labels and cues are exposed for reuse', () => {
    expect(labelOf('约束:不能用 MySQL')).toEqual({ kind: 'constraint', text: '不能用 MySQL' })
    expect(cueOf('It turns out the cache was cold')).toBe('outcome')
    expect(cueOf('nothing to see')).toBeUndefined()
  })
})

describe('heuristic merge extraction', () => {
  it('takes marked sentences from the log, latest last, at most max', () => {
    const events = [
      event('opened', 'compare ORMs'),
      event('user', 'Which ORM is faster for our workload?'),
      event('assistant', 'I ran both. Drizzle turned out 2x faster on inserts. We decided to adopt Drizzle. Prisma needs a binary engine.'),
      event('note', 'Constraint: the ORM must support SQLite and Postgres.'),
    ]
    expect(extractFromBranch('compare ORMs', events, 5, 500)).toEqual(statements(
      ['outcome', 'Drizzle turned out 2x faster on inserts.'],
      ['decision', 'We decided to adopt Drizzle.'],
      ['constraint', 'the ORM must support SQLite and Postgres.'],
    ))
    expect(extractFromBranch('compare ORMs', events, 1, 500)).toEqual([{ kind: 'constraint', text: 'the ORM must support SQLite and Postgres.' }])
  })

  it('falls back to one outcome naming the branch when nothing is marked', () => {
    expect(extractFromBranch('look at logs', [event('opened', 'x'), event('assistant', 'The logs mostly contain health checks. Nothing else.')], 5, 500)).toEqual(statements(
      ['outcome', 'Explored "look at logs": The logs mostly contain health checks.'],
    ))
    expect(extractFromBranch('empty', [event('opened', 'x')], 5, 500)).toEqual([{ kind: 'outcome', text: 'Explored "empty" (no conclusion was recorded)' }])
  })

  it('dedupes against existing texts by key and by token similarity', () => {
    const kept = dedupe(
      [
        { kind: 'decision', text: 'Use PostgreSQL 16 for orders.' },
        { kind: 'decision', text: 'use postgresql 16 for orders' },
        { kind: 'outcome', text: '吞吐提升了三倍' },
      ],
      ['吞吐提升了三倍。'],
    )
    expect(kept).toEqual([{ kind: 'decision', text: 'Use PostgreSQL 16 for orders.' }])
  })
})
