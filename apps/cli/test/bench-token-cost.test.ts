import { PassThrough } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { runTokenCostBench, TOKEN_COST_FACTS, tokenCostConversation } from '../src/bench/token-cost.ts'
import { runCli } from '../src/program.ts'

describe('dsh-memory bench token-cost', () => {
  it('the scripted conversation has at least 60 messages and states every fact exactly once', () => {
    const turns = tokenCostConversation()
    expect(turns.length * 2).toBeGreaterThanOrEqual(60)
    for (const fact of TOKEN_COST_FACTS) expect(turns.filter((turn) => turn.user.includes(fact.match))).toHaveLength(1)
  })

  it('extracts every known fact (and nothing else) for under 1,000 input tokens per captured message', async () => {
    const report = await runTokenCostBench()
    expect(report.captured_messages).toBe(72)
    expect(report.facts_missing).toEqual([])
    expect(report.unexpected_memories).toEqual([])
    expect(report.facts_extracted).toBe(TOKEN_COST_FACTS.length)
    expect(report.input_tokens_per_message).toBeLessThanOrEqual(1_000)
    expect(report.target.met).toBe(true)
    // The stand-in's count and the distiller's own ledger agree call for call.
    expect(report.ledger.input_tokens).toBe(report.input_tokens)
    expect(report.ledger.output_tokens).toBe(report.output_tokens)
    expect(report.by_layer.l1!.calls).toBeGreaterThan(5)
  })

  it('--json prints exactly one object', async () => {
    const stdout = new PassThrough()
    const stderr = new PassThrough()
    let out = ''
    stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk))
    const code = await runCli(['bench', 'token-cost', '--json'], { stdout, stderr })
    expect(code).toBe(0)
    const lines = out.trim().split('\n')
    expect(lines).toHaveLength(1)
    expect(JSON.parse(lines[0]!)).toMatchObject({
      captured_messages: 72,
      input_tokens_per_message: expect.any(Number),
      output_tokens_per_message: expect.any(Number),
      by_layer: { l1: { calls: expect.any(Number), input_tokens: expect.any(Number), output_tokens: expect.any(Number) } },
      facts_expected: 20,
      facts_extracted: 20,
      reference: { input_tokens_per_message: 2727, output_tokens_per_message: 240 },
    })
  })
})
