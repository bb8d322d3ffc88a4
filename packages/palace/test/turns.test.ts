import { describe, expect, it } from 'vitest'
import { buildTurns, countTurns, fenced } from '../src/index.js'
import { EventLog } from './fixtures.js'

describe('buildTurns', () => {
  it('numbers turns by log seq and groups an assistant message with its tool results', () => {
    const log = new EventLog()
    const q = log.user('Please check the deploy script')
    const a = log.assistant('Reading it.', { reasoning: 'I should read deploy.sh', calls: [{ id: 'c1', name: 'read', args: { path: 'deploy.sh' } }] })
    log.noise('tool/call')
    log.toolResult('c1', '#!/bin/sh\necho deploy')
    const done = log.assistant('The script echoes deploy.')
    const turns = buildTurns(log.events, { includeReasoning: true })

    expect(turns.map((turn) => [turn.turn, turn.speaker])).toEqual([
      [q, 'user'],
      [a, 'assistant'],
      [done, 'assistant'],
    ])
    // Turn numbers are log seqs: log-only events in between leave gaps.
    expect(q).toBeGreaterThan(1)
    expect(a - q).toBeGreaterThan(1)
    const tool = turns[1]!
    expect(tool.complete).toBe(true)
    expect(tool.tools).toEqual(['read'])
    expect(tool.seqs).toHaveLength(2)
    const sections = ['### Reasoning\n\nI should read deploy.sh', '### Tool call · read (c1)', '"path": "deploy.sh"', '### Tool result · read (c1)', 'echo deploy']
    for (const section of sections) expect(tool.body).toContain(section)
    expect(tool.head).toBe('Reading it. → read({"path":"deploy.sh"})')
  })

  it('counts turns cheaply, matching buildTurns', () => {
    const log = new EventLog()
    log.exchange('a', 'b')
    log.assistant('', { calls: [{ id: 'c', name: 'bash', args: {} }] })
    log.toolResult('c', 'out')
    log.checkpoint('summary')
    log.plugin('memory-palace', 'note')
    expect(countTurns(log.events)).toBe(buildTurns(log.events, { includeReasoning: true }).length)
    expect(countTurns(log.events)).toBe(4)
  })

  it('leaves reasoning out when includeReasoning is false', () => {
    const log = new EventLog()
    log.assistant('visible', { reasoning: 'secret chain of thought' })
    const [turn] = buildTurns(log.events, { includeReasoning: false })
    expect(turn!.body).toBe('visible')
    expect(turn!.body).not.toContain('secret')
  })

  it('marks an assistant turn waiting for tool results as incomplete', () => {
    const log = new EventLog()
    log.assistant('', { calls: [{ id: 'a', name: 'bash', args: { cmd: 'ls' } }, { id: 'b', name: 'bash', args: { cmd: 'pwd' } }] })
    log.toolResult('a', 'file.txt')
    expect(buildTurns(log.events, { includeReasoning: true })[0]!.complete).toBe(false)
    log.toolResult('b', '/work')
    expect(buildTurns(log.events, { includeReasoning: true })[0]!.complete).toBe(true)
  })

  it('names plugin-made messages by plugin and skips compaction replacements', () => {
    const log = new EventLog()
    log.user('hello')
    const steer = log.plugin('memory-palace', 'please archive')
    log.checkpoint('<compacted-summary>old stuff</compacted-summary>')
    const turns = buildTurns(log.events, { includeReasoning: true })
    expect(turns.map((turn) => turn.speaker)).toEqual(['user', 'plugin:memory-palace'])
    expect(turns[1]!.turn).toBe(steer)
    expect(turns.some((turn) => turn.body.includes('compacted-summary'))).toBe(false)
  })

  it('keeps the first 70 characters as the head, CJK included', () => {
    const log = new EventLog()
    const long = '我们决定把主数据库从 MySQL 迁移到 PostgreSQL，原因是需要更好的 JSON 支持和更严格的事务隔离级别，迁移窗口定在下周六凌晨两点到四点。'
    log.user(long)
    const [turn] = buildTurns(log.events, { includeReasoning: true })
    expect([...turn!.head]).toHaveLength(70)
    expect(long.startsWith(turn!.head)).toBe(true)
    expect(turn!.tokens).toBeGreaterThan(40)
  })

  it('fences tool output with a fence longer than any backtick run inside it', () => {
    const inner = 'before\n```\ncode\n```\nafter'
    const block = fenced(inner, '')
    expect(block.startsWith('````\n')).toBe(true)
    expect(block.endsWith('\n````')).toBe(true)
  })
})
