/**
 * The token-cost benchmark: a scripted long conversation (72 messages, English, Chinese and
 * Japanese, with 20 known facts) is captured turn by turn into a real store with the real
 * `CaptureRecorder`, and distilled in the background by the real `Distiller` core, exactly
 * as the plugin wires them (agent busy during the turn, idle after it, a flush at the end).
 * The only stand-in is the model: it counts input and output tokens with the store's
 * `estimateTokens` and answers each request with the correct extraction of the facts that
 * appear in the new lines, so the measured cost is the cost of the prompts the distiller
 * really builds, at full extraction quality.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CaptureRecorder, resolveCaptureOptions } from '@dsh-memory/capture'
import { Distiller, type ModelCall, type ModelTransport, resolveDistillOptions } from '@dsh-memory/distill'
import { estimateTokens, openMemoryStore } from '@dsh-memory/store'

/** One fact of the scripted conversation: said in a user message, extracted as `text`. */
export interface ScriptedFact {
  /** Substring of the user line that carries the fact. */
  readonly match: string
  readonly kind: 'fact' | 'preference' | 'instruction' | 'episode'
  readonly text: string
  readonly scope: 'global' | 'workspace'
}

/** One turn: what the user says and what the assistant replies. */
export interface ScriptedTurn {
  readonly user: string
  readonly assistant: string
}

/** The facts the conversation states, each exactly once. */
export const TOKEN_COST_FACTS: readonly ScriptedFact[] = Object.freeze([
  { match: 'I live in Lisbon', kind: 'fact', text: 'The user lives in Lisbon.', scope: 'global' },
  { match: 'call me Sam', kind: 'preference', text: 'The user wants to be called Sam.', scope: 'global' },
  { match: 'runs on PostgreSQL 16', kind: 'fact', text: 'The orders service uses PostgreSQL 16.', scope: 'workspace' },
  { match: 'pnpm', kind: 'preference', text: 'The user prefers pnpm over npm for this repository.', scope: 'workspace' },
  { match: 'answer in English', kind: 'instruction', text: 'The user wants answers in English even when they write in Chinese.', scope: 'global' },
  { match: 'allergic to peanuts', kind: 'fact', text: 'The user is allergic to peanuts.', scope: 'global' },
  { match: 'deploys on Thursdays', kind: 'fact', text: 'The team deploys the orders service on Thursdays.', scope: 'workspace' },
  { match: '我养了一只猫', kind: 'fact', text: '用户养了一只叫年糕的猫。', scope: 'global' },
  { match: '主数据库迁移到', kind: 'episode', text: '用户的团队决定在三月把主数据库迁移到 PostgreSQL 16。', scope: 'workspace' },
  { match: '不要用分号', kind: 'preference', text: '用户写 TypeScript 时不要用分号。', scope: 'workspace' },
  { match: '大阪に出張', kind: 'episode', text: 'ユーザーは来月大阪に出張する。', scope: 'global' },
  { match: 'テストはVitest', kind: 'preference', text: 'ユーザーはテストに Vitest を使いたい。', scope: 'workspace' },
  { match: 'Grafana dashboard', kind: 'fact', text: 'The user owns the Grafana dashboard for the orders service.', scope: 'workspace' },
  { match: 'vim keybindings', kind: 'preference', text: 'The user uses vim keybindings in every editor.', scope: 'global' },
  { match: 'night shift', kind: 'fact', text: 'The user works night shifts on weekends.', scope: 'global' },
  { match: 'Redis for sessions', kind: 'fact', text: 'The orders service stores sessions in Redis.', scope: 'workspace' },
  { match: 'never push to main', kind: 'instruction', text: 'The assistant must never push directly to the main branch.', scope: 'workspace' },
  { match: 'learning Rust', kind: 'fact', text: 'The user is learning Rust in the evenings.', scope: 'global' },
  { match: 'code review on Mondays', kind: 'fact', text: 'The user does code review on Monday mornings.', scope: 'global' },
  { match: '周五下午不开会', kind: 'preference', text: '用户周五下午不想开会。', scope: 'global' },
])

const CHATTER = [
  'Can you explain why the build is slow today?',
  'Thanks, that makes sense.',
  'Show me how to rename this function across the repo.',
  'What does this stack trace mean: TypeError: cannot read properties of undefined?',
  '这个接口的返回值是什么格式？',
  'ログの出力先はどこですか？',
  'ok, next question.',
  'How do I write a test for the retry logic?',
  'Please summarise the last migration script.',
  'Is there a faster way to run only the failing tests?',
  '帮我看一下这段代码有没有问题。',
  'この関数の引数を説明してください。',
  'Let us look at the CI config next.',
  'What are the trade-offs of a queue here?',
  'Fine, go ahead.',
  'Could you format this JSON for me?',
]

const FACT_LINES = [
  'By the way, I live in Lisbon, so mind the time zone.',
  'Please call me Sam, not Samuel.',
  'The orders service runs on PostgreSQL 16 now.',
  'In this repo I always use pnpm, never npm.',
  'Even if I write Chinese, please answer in English.',
  'Remember that I am allergic to peanuts when suggesting snacks for the offsite.',
  'The team deploys on Thursdays, so plan the release for then.',
  '我养了一只猫，叫年糕。',
  '我们决定三月把主数据库迁移到 PostgreSQL 16。',
  '写 TypeScript 的时候不要用分号。',
  '来月、大阪に出張します。',
  'テストはVitestで書きたいです。',
  'I own the Grafana dashboard for the orders service.',
  'I use vim keybindings in every editor.',
  'I work the night shift on weekends.',
  'We keep Redis for sessions in the orders service.',
  'Rule: never push to main directly, open a PR.',
  'I am learning Rust in the evenings.',
  'I do code review on Mondays first thing.',
  '我周五下午不开会。',
]

/**
 * The scripted conversation: 36 turns (72 messages), the 20 facts spread among chatter, with
 * assistant replies of realistic length (the extractor must read them, they cost tokens too).
 */
export function tokenCostConversation(): ScriptedTurn[] {
  // Turns that state a fact; the other 16 are chatter.
  const factTurns = [0, 1, 3, 5, 6, 8, 10, 11, 13, 15, 17, 18, 20, 22, 24, 25, 27, 29, 31, 33]
  const replies = [
    'Understood. Here is what I would do: first check the configuration, then run the focused test suite, and finally compare the timings with the previous build.',
    '好的，我来解释一下：这个问题通常是因为缓存没有命中，可以先清理缓存再重新构建。',
    'Sure. The function is used in three modules; I renamed it and updated the imports and the tests. Let me know if you want a changelog entry.',
    '了解しました。設定ファイルを確認して、必要なら修正案を出します。',
  ]
  return Array.from({ length: 36 }, (_, i) => {
    const fact = factTurns.indexOf(i)
    const user = fact >= 0 ? `${FACT_LINES[fact]}${i % 3 === 0 ? ` ${CHATTER[i % CHATTER.length]}` : ''}` : CHATTER[i % CHATTER.length]!
    return { user, assistant: `${replies[i % replies.length]} (${i})` }
  })
}

/** Token counts of one layer. */
export interface LayerCost {
  readonly calls: number
  readonly input_tokens: number
  readonly output_tokens: number
}

/** The `--json` object. */
export interface TokenCostReport {
  readonly captured_messages: number
  readonly input_tokens_per_message: number
  readonly output_tokens_per_message: number
  readonly input_tokens: number
  readonly output_tokens: number
  /** Per layer (l1, dedup, l2, l3), counted by the model stand-in. */
  readonly by_layer: Record<string, LayerCost>
  /** The same totals as the distiller's own cost ledger reports them. */
  readonly ledger: { readonly input_tokens: number; readonly output_tokens: number; readonly calls: number }
  readonly facts_expected: number
  readonly facts_extracted: number
  /** Facts expected but not stored (empty at full quality). */
  readonly facts_missing: readonly string[]
  /** Stored memories that are not expected facts (empty at full quality). */
  readonly unexpected_memories: readonly string[]
  readonly reference: { readonly input_tokens_per_message: number; readonly output_tokens_per_message: number }
  readonly target: { readonly input_tokens_per_message: number; readonly met: boolean }
}

/** The reference plugin's published figures and the issue's target. */
export const TOKEN_COST_REFERENCE = Object.freeze({ inputPerMessage: 2727, outputPerMessage: 240, targetInputPerMessage: 1000 })

/** The new `[mN] user:` lines of an L1 prompt. */
function newUserLines(prompt: string): { alias: string; text: string }[] {
  return [...prompt.matchAll(/^\[(m\d+)\] user: (.*)$/gm)].map((match) => ({ alias: match[1]!, text: match[2]! }))
}

/**
 * The model stand-in: the correct answer for every distill request, with usage counted from
 * the request and reply text by the store's `estimateTokens`.
 */
export function scriptedDistillModel(facts: readonly ScriptedFact[]): { transport: ModelTransport; byLayer: Record<string, LayerCost> } {
  const byLayer: Record<string, { calls: number; input_tokens: number; output_tokens: number }> = {}
  const answer = (call: ModelCall): string => {
    if (call.layer === 'l1') {
      const memories = newUserLines(call.prompt).flatMap((line) =>
        facts.filter((fact) => line.text.includes(fact.match)).map((fact) => ({ kind: fact.kind, text: fact.text, scope: fact.scope, priority: 3, src: [line.alias] })),
      )
      return JSON.stringify({ memories })
    }
    if (call.layer === 'dedup') {
      // Every scripted fact is distinct: each candidate is new information.
      const ids = [...new Set([...call.prompt.matchAll(/^(n\d+)\b/gm)].map((match) => match[1]!))]
      return JSON.stringify({ decisions: ids.map((id) => ({ id, action: 'add' })) })
    }
    if (call.layer === 'l2') {
      const ids = [...new Set([...call.prompt.matchAll(/^(n\d+)\b/gm)].map((match) => match[1]!))]
      return JSON.stringify({ ops: ids.length ? [{ op: 'create', title: 'Work and habits', summary: 'What the user told about their work, their project and their habits.', memories: ids }] : [] })
    }
    return '# Persona\n- Sam, lives in Lisbon, works on the orders service (PostgreSQL 16, Redis, pnpm, Vitest).\n- Prefers answers in English; no semicolons in TypeScript; never push to main.\n'
  }
  const transport: ModelTransport = async (_route, call) => {
    const text = answer(call)
    const inputTokens = estimateTokens(call.system) + estimateTokens(call.prompt)
    const outputTokens = estimateTokens(text)
    const layer = (byLayer[call.layer] ??= { calls: 0, input_tokens: 0, output_tokens: 0 })
    layer.calls++
    layer.input_tokens += inputTokens
    layer.output_tokens += outputTokens
    return { text, usage: { inputTokens, outputTokens } }
  }
  return { transport, byLayer }
}

/** Options of {@link runTokenCostBench}. */
export interface TokenCostBenchOptions {
  /** Directory for the temporary store (default: a fresh OS temp dir, removed afterwards). */
  readonly workDir?: string
  readonly turns?: readonly ScriptedTurn[]
  readonly facts?: readonly ScriptedFact[]
}

/** Run the conversation through capture and the distiller with the default options. */
export async function runTokenCostBench(options: TokenCostBenchOptions = {}): Promise<TokenCostReport> {
  const turns = options.turns ?? tokenCostConversation()
  const facts = options.facts ?? TOKEN_COST_FACTS
  const ownDir = options.workDir === undefined
  const dir = options.workDir ?? mkdtempSync(join(tmpdir(), 'dshm-bench-tokens-'))
  const store = openMemoryStore({ path: join(dir, 'memory.db') })
  const model = scriptedDistillModel(facts)
  const distiller = new Distiller({ store, transport: model.transport, options: resolveDistillOptions({ llm: { provider: 'bench', model: 'scripted' } }) })
  const session = { id: 'token-cost-session', header: { cwd: '/bench/orders-service', createdAt: Date.UTC(2026, 0, 5) } }
  const recorder = new CaptureRecorder(store, resolveCaptureOptions({}), {
    onCaptured: (captured) => distiller.noteCaptured({ conversationId: captured.conversationId, workspace: captured.workspace }),
  })
  try {
    await distiller.start()
    let seq = 0
    for (const [turn, { user, assistant }] of turns.entries()) {
      distiller.noteAgentStatus(session.id, true, session.header.cwd)
      await recorder.handle(session, { type: 'turn/start', seq: seq++, data: { turn } })
      await recorder.handle(session, { type: 'user/message', seq: seq++, data: { id: `u${turn}`, role: 'user', content: [{ type: 'text', text: user }], source: { kind: 'user' } } })
      await recorder.handle(session, { type: 'assistant/message', seq: seq++, data: { turn, step: 0, message: { id: `a${turn}`, role: 'assistant', content: [{ type: 'text', text: assistant }] } } })
      // The turn ended: the agent is idle, the background distiller may run (as in the host).
      distiller.noteAgentStatus(session.id, false)
      await distiller.settle(session.id, 10_000)
    }
    // The session ends: everything left is distilled (as the next start would).
    distiller.noteAgentGone(session.id)
    await distiller.runPending(60_000)
    const stored = (await store.memories.list({ limit: 1_000 })).map((memory) => memory.text)
    const ledgerRows = await distiller.costs()
    const captured = recorder.stats.captured
    const layers = model.byLayer
    const input = Object.values(layers).reduce((sum, layer) => sum + layer.input_tokens, 0)
    const output = Object.values(layers).reduce((sum, layer) => sum + layer.output_tokens, 0)
    const perMessage = captured > 0 ? Math.round((input / captured) * 10) / 10 : 0
    return {
      captured_messages: captured,
      input_tokens_per_message: perMessage,
      output_tokens_per_message: captured > 0 ? Math.round((output / captured) * 10) / 10 : 0,
      input_tokens: input,
      output_tokens: output,
      by_layer: layers,
      ledger: {
        input_tokens: ledgerRows.reduce((sum, row) => sum + row.inputTokens, 0),
        output_tokens: ledgerRows.reduce((sum, row) => sum + row.outputTokens, 0),
        calls: ledgerRows.reduce((sum, row) => sum + row.calls, 0),
      },
      facts_expected: facts.length,
      facts_extracted: facts.filter((fact) => stored.includes(fact.text)).length,
      facts_missing: facts.filter((fact) => !stored.includes(fact.text)).map((fact) => fact.text),
      unexpected_memories: stored.filter((text) => !facts.some((fact) => fact.text === text)),
      reference: { input_tokens_per_message: TOKEN_COST_REFERENCE.inputPerMessage, output_tokens_per_message: TOKEN_COST_REFERENCE.outputPerMessage },
      target: { input_tokens_per_message: TOKEN_COST_REFERENCE.targetInputPerMessage, met: perMessage <= TOKEN_COST_REFERENCE.targetInputPerMessage },
    }
  } finally {
    await distiller.close()
    await store.close()
    if (ownDir) rmSync(dir, { recursive: true, force: true })
  }
}

/** A human-readable report. */
export function formatTokenCostReport(report: TokenCostReport): string {
  const lines = [
    `captured messages: ${report.captured_messages}`,
    `input tokens per captured message: ${report.input_tokens_per_message} (reference ~${report.reference.input_tokens_per_message}, target ≤ ${report.target.input_tokens_per_message}: ${report.target.met ? 'met' : 'MISSED'})`,
    `output tokens per captured message: ${report.output_tokens_per_message} (reference ~${report.reference.output_tokens_per_message})`,
    'layer   calls   input   output',
    ...Object.entries(report.by_layer).map(([layer, cost]) => `${layer.padEnd(6)} ${String(cost.calls).padStart(6)} ${String(cost.input_tokens).padStart(7)} ${String(cost.output_tokens).padStart(8)}`),
    `facts extracted: ${report.facts_extracted}/${report.facts_expected}${report.facts_missing.length ? ` (missing: ${report.facts_missing.join('; ')})` : ''}`,
  ]
  return lines.join('\n')
}
