/**
 * Injected-memory precision and recall on LoCoMo: what the automatic recall (the plugin's
 * `agent/pre-step` path, `RecallInjector.prepare` with the default budgets, threshold and
 * mode) puts in front of the model for each question, measured against the observations
 * (L1 memories) distilled from the question's evidence turns.
 *
 * A memory counts as relevant to a question when one of its source turns is an evidence turn.
 * Per question: precision = relevant injected / injected, recall = relevant injected / relevant.
 */
import type { MemoryStore } from '@dsh-memory/store'
import { createEmbedder, type Embedder, type EmbeddingOptions, MAX_SCAN, RecallEngine, RecallInjector, type RecallOptions, resolveRecallOptions } from '@dsh-memory/recall'
import type { BenchProgress, LocomoSample } from './locomo-format.ts'
import { eligibleQuestions, workspaceOf } from './locomo-format.ts'
import { embeddingLabel, embedTexts } from './embed.ts'

/** Injection metrics of one category, or overall. */
export interface InjectionMetrics {
  readonly questions: number
  /** Questions that got at least one memory injected. */
  readonly injected_questions: number
  /** Questions that have at least one relevant memory in the store. */
  readonly answerable_questions: number
  /** Mean memories injected per question. */
  readonly injected_per_question: number
  /** Mean per-question precision over the questions that got an injection. */
  readonly precision: number
  /** Mean per-question recall over the answerable questions. */
  readonly recall: number
  /** Share of questions with an injection of which every memory is irrelevant (false matches). */
  readonly false_injection_rate: number
  /** Share of answerable questions that got at least one relevant memory. */
  readonly hit_rate: number
  /** Questions whose recall ran out of `recall.timeoutMs` (should be 0; a busy machine shows here). */
  readonly timeouts: number
}

/** The `injection` entry of the `--json` object. */
export interface InjectionReport extends InjectionMetrics {
  /** The `recall.scoreThreshold` the questions ran with (the default unless `--threshold`). */
  readonly threshold: number
  /** With an embedder only: the `recall.strategy` the questions ran with (`hybrid` unless `--strategy embedding`). */
  readonly strategy?: string
  /** With an embedder only: the `recall.hybridThreshold` the questions ran with (the default unless `--hybrid-threshold`). */
  readonly hybrid_threshold?: number
  /** With an embedder only: the key (`model@dimensions`) of the memories' vectors the questions were compared with. */
  readonly embedding_model?: string
  readonly by_category: Record<string, InjectionMetrics>
}

interface InjectionTally {
  questions: number
  injectedQuestions: number
  answerable: number
  injected: number
  precisionSum: number
  recallSum: number
  allWrong: number
  hits: number
  timeouts: number
}

const newTally = (): InjectionTally => ({ questions: 0, injectedQuestions: 0, answerable: 0, injected: 0, precisionSum: 0, recallSum: 0, allWrong: 0, hits: 0, timeouts: 0 })

function metricsOf(tally: InjectionTally): InjectionMetrics {
  const share = (part: number, whole: number) => (whole === 0 ? 0 : part / whole)
  return {
    questions: tally.questions,
    injected_questions: tally.injectedQuestions,
    answerable_questions: tally.answerable,
    injected_per_question: share(tally.injected, tally.questions),
    precision: share(tally.precisionSum, tally.injectedQuestions),
    recall: share(tally.recallSum, tally.answerable),
    false_injection_rate: share(tally.allWrong, tally.injectedQuestions),
    hit_rate: share(tally.hits, tally.answerable),
    timeouts: tally.timeouts,
  }
}

const DAY_MS = 86_400_000

/**
 * Run every eligible question through the injection path over a store loaded with
 * observations (`loadLocomo(…, true)`). The clock of each sample is one day after its last
 * session, so time decay treats the conversation as recent, as it is for a user.
 */
export async function evaluateInjection(
  store: MemoryStore,
  samples: readonly LocomoSample[],
  {
    progress,
    scoreThreshold,
    hybridThreshold,
    strategy = 'hybrid',
    embedding,
    vectorCache = new Map(),
  }: {
    progress?: BenchProgress
    scoreThreshold?: number
    hybridThreshold?: number
    strategy?: 'hybrid' | 'embedding'
    embedding?: EmbeddingOptions
    vectorCache?: Map<string, Float32Array>
  } = {},
): Promise<InjectionReport> {
  // The default options; another threshold only to calibrate one (`--threshold`); with an
  // embedder the documented opt-in (strategy hybrid, the given embedding options).
  const options = resolveRecallOptions({
    ...(scoreThreshold === undefined ? {} : { recall: { scoreThreshold } }),
    ...(embedding
      ? {
          recall: { strategy, ...(scoreThreshold === undefined ? {} : { scoreThreshold }), ...(hybridThreshold === undefined ? {} : { hybridThreshold }) },
          embedding: { ...embedding, enabled: true },
        }
      : {}),
  })
  const embedder = embedding ? createEmbedder(options.embedding) : null
  try {
    if (embedder) await embedMemories(store, samples, embedder, embeddingLabel(options.embedding), vectorCache, progress)
    return await injectAll(store, samples, options, embedder, progress)
  } finally {
    await embedder?.close?.()
  }
}

/**
 * Every memory of the samples gets its vector (texts the embedder's guard refuses none), as
 * recall's backfill or `dsh-memory reembed` leaves a store; an in-process model is loaded
 * before the first question, so no question is ranked while it loads.
 */
async function embedMemories(store: MemoryStore, samples: readonly LocomoSample[], embedder: Embedder, label: string, known: Map<string, Float32Array>, progress?: BenchProgress): Promise<void> {
  progress?.start(`${label} memories`, samples.length)
  for (const sample of samples) {
    const memories = await store.memories.list({ workspace: workspaceOf(sample), includeGlobal: false, limit: MAX_SCAN })
    const vectors = await embedTexts(embedder, memories.map((memory) => memory.text), known)
    await store.transaction(async (tx) => {
      for (const memory of memories) {
        const embedding = vectors.get(memory.text)
        if (embedding) await tx.memories.update(memory.id, { embedding, embeddingModel: embedder.modelKey }, { actor: 'bench' })
      }
    })
    progress?.tick(sample.sampleId)
  }
  progress?.stop()
}

async function injectAll(store: MemoryStore, samples: readonly LocomoSample[], options: RecallOptions, embedder: Embedder | null, progress?: BenchProgress): Promise<InjectionReport> {
  progress?.start('injection', samples.reduce((sum, sample) => sum + eligibleQuestions(sample).length, 0))
  const overall = newTally()
  const byCategory = new Map<number, InjectionTally>()
  for (const sample of samples) {
    const workspace = workspaceOf(sample)
    const now = Math.max(...sample.sessions.map((session) => session.time)) + DAY_MS
    const engine = new RecallEngine(store, options, { now: () => now, embedder })
    const injector = new RecallInjector(engine, { now: () => now })
    // Which memories each evidence turn produced (the relevant set of a question).
    const memoriesOfTurn = new Map<string, string[]>()
    const messages = await store.messages.list({ workspace, limit: MAX_SCAN })
    const turnOfMessage = new Map(messages.map((message) => [message.id, message.hostMessageId]))
    for (const memory of await store.memories.list({ workspace, includeGlobal: false, limit: MAX_SCAN })) {
      for (const id of memory.sourceMessageIds) {
        const turn = turnOfMessage.get(id)
        if (turn) memoriesOfTurn.set(turn, [...(memoriesOfTurn.get(turn) ?? []), memory.id])
      }
    }
    for (const question of eligibleQuestions(sample)) {
      const relevant = new Set(question.evidence.flatMap((turn) => memoriesOfTurn.get(turn) ?? []))
      // A fresh session per question: nothing is "already in context".
      const scope = { sessionId: `bench-${sample.sampleId}-${overall.questions}`, workspace }
      const result = await injector.prepare(scope, [{ role: 'user', source: { kind: 'user' }, content: [{ type: 'text', text: question.question }] }], [])
      const injected = result.plan?.memoryIds ?? []
      const right = injected.filter((id) => relevant.has(id)).length
      const tally = byCategory.get(question.category) ?? newTally()
      byCategory.set(question.category, tally)
      for (const target of [overall, tally]) {
        target.questions++
        target.injected += injected.length
        if (result.miss === 'timeout') target.timeouts++
        if (injected.length > 0) {
          target.injectedQuestions++
          target.precisionSum += right / injected.length
          if (right === 0) target.allWrong++
        }
        if (relevant.size > 0) {
          target.answerable++
          target.recallSum += right / relevant.size
          if (right > 0) target.hits++
        }
      }
      progress?.tick()
    }
  }
  progress?.stop()
  const by_category: Record<string, InjectionMetrics> = {}
  for (const category of [...byCategory.keys()].sort((a, b) => a - b)) by_category[String(category)] = metricsOf(byCategory.get(category)!)
  const hybrid = embedder ? { strategy: options.recall.strategy, hybrid_threshold: options.recall.hybridThreshold, embedding_model: embedder.modelKey } : {}
  return { ...metricsOf(overall), threshold: options.recall.scoreThreshold, ...hybrid, by_category }
}

/** Plain-text lines of an injection report. */
export function formatInjectionReport(report: InjectionReport, categories: Readonly<Record<string, string>>): string {
  const pct = (value: number) => `${(value * 100).toFixed(1)}%`.padStart(9)
  const { maxResults, maxTotalRecallChars } = resolveRecallOptions({}).recall
  const lines = [
    `mode injection (${report.questions} questions; default budgets: ${maxResults} memories, ${maxTotalRecallChars} chars, threshold ${report.threshold}${report.hybrid_threshold === undefined ? '' : `, hybrid threshold ${report.hybrid_threshold}`})`,
    `  ${'category'.padEnd(22)}${['precision', 'recall', 'hit', 'false', 'per q'].map((label) => label.padStart(9)).join('')}`,
  ]
  const row = (label: string, m: InjectionMetrics) =>
    `  ${label.padEnd(22)}${pct(m.precision)}${pct(m.recall)}${pct(m.hit_rate)}${pct(m.false_injection_rate)}${m.injected_per_question.toFixed(2).padStart(9)}`
  lines.push(row('overall', report))
  for (const [category, m] of Object.entries(report.by_category)) lines.push(row(`${category} ${categories[category] ?? ''} (${m.questions})`, m))
  lines.push(
    `  (precision: relevant share of what was injected, over the ${report.injected_questions} questions with an injection; recall: share of the relevant memories injected, over the ${report.answerable_questions} questions that have one;`,
    `   hit: answerable questions with at least one relevant memory injected; false: injections with no relevant memory; timeouts: ${report.timeouts})`,
  )
  return lines.join('\n')
}
