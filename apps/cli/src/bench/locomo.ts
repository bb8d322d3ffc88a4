/**
 * The LoCoMo retrieval benchmark: load samples into a fresh store through the store API the
 * plugins use (each turn an L0 message stamped with its session time; observations as L1
 * memories linked to their turns), then rank every question (categories 1-4 with evidence)
 * with the recall ranking core and measure turn-level recall@k.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { MemoryStore } from '@dsh-memory/store'
import { createEmbedder, type EmbeddingOptions, MAX_SCAN, RankingCorpus, rankConversationTurns, rankConversationTurnsByMeaning, rankDocuments, TURN_RANKING } from '@dsh-memory/recall'
import { type BenchBackend, type BenchStore, openBenchStore } from './backend.ts'
import { embeddingLabel, embedTexts } from './embed.ts'
import type { BenchProgress } from './locomo-format.ts'
import { evaluateInjection, formatInjectionReport, type InjectionReport } from './locomo-injection.ts'
import { eligibleQuestions, type LocomoSample, workspaceOf } from './locomo-format.ts'

/**
 * Modes of the benchmark: turn retrieval (`turns`, `turns+observations`) and what the
 * automatic recall injects (`injection`, see locomo-injection.ts).
 */
export type LocomoMode = 'turns' | 'turns+observations' | 'injection'
/** Every mode, in report order. */
export const LOCOMO_MODES: readonly LocomoMode[] = ['turns', 'turns+observations', 'injection']
type RankingMode = Exclude<LocomoMode, 'injection'>
/** Question categories that have evidence turns (5, adversarial, is skipped). */
export const LOCOMO_CATEGORIES: Readonly<Record<string, string>> = Object.freeze({ '1': 'multi-hop', '2': 'temporal', '3': 'open-domain', '4': 'single-hop' })

/** recall@k per k (keys are k as strings), fractions between 0 and 1. */
export type RecallAtK = Record<string, number>

/** Metrics of one category. */
export interface CategoryMetrics {
  readonly questions: number
  readonly recall_any: RecallAtK
  readonly recall_all: RecallAtK
}

/** Metrics of one mode: the documented `--json` shape. */
export interface ModeMetrics {
  readonly recall_any: RecallAtK
  readonly recall_all: RecallAtK
  /** Mode `turns` with an embedder only: the key (`model@dimensions`) of the vectors conversation search fused. */
  readonly embedding_model?: string
  readonly by_category: Record<string, CategoryMetrics>
}

/** The `--json` object: one entry per mode that ran. */
export type LocomoReport = Partial<Record<RankingMode, ModeMetrics>> & { injection?: InjectionReport }

export type { BenchProgress } from './locomo-format.ts'

/** Options of {@link runLocomoBench}. */
export interface LocomoBenchOptions {
  /** The k values (at least one, positive integers). */
  readonly ks: readonly number[]
  readonly modes: readonly LocomoMode[]
  readonly progress?: BenchProgress
  /** Directory for the temporary store (default: a fresh OS temp dir, removed afterwards). */
  readonly workDir?: string
  /** `recall.scoreThreshold` of the injection mode (default: recall's default). */
  readonly scoreThreshold?: number
  /** `recall.hybridThreshold` of the injection mode with an embedder (default: recall's default). */
  readonly hybridThreshold?: number
  /** `recall.strategy` of the injection mode with an embedder (default `hybrid`, recall's default). */
  readonly strategy?: 'hybrid' | 'embedding'
  /** Where the store lives (default SQLite): the same load and questions run on either backend. */
  readonly backend?: BenchBackend
  /**
   * Recall's `embedding` options (enabled; provider `minilm`, the in-process model of the
   * optional packages, or `endpoint`, a local OpenAI-compatible server), as the plugin runs them
   * with strategy `hybrid`. Mode `turns`: every turn gets a vector in the store's message vectors
   * and conversation search re-ranks its candidates with them (`fuseConversationVectors`). Mode
   * `injection`: every memory gets a vector and the automatic recall ranks hybrid.
   */
  readonly embedding?: EmbeddingOptions
  /**
   * With `embedding`: vectors by text, filled as texts are embedded and reused when given again;
   * pass one map to the runs of several backends so each text is embedded once.
   */
  readonly vectorCache?: Map<string, Float32Array>
}

const conversationOf = (sample: LocomoSample, session: number) => `${sample.sampleId}/session_${session}`

/** The L0 text of a turn: speaker, words and, when a picture was shared, its caption. */
export function turnText(turn: { speaker: string; text: string; imageCaption?: string }): string {
  return `${turn.speaker}: ${turn.text}${turn.imageCaption ? ` [shares an image: ${turn.imageCaption}]` : ''}`
}

/** Write the samples into `store` as L0 messages and (optionally) L1 observations. */
export async function loadLocomo(store: MemoryStore, samples: readonly LocomoSample[], withObservations: boolean, progress?: BenchProgress): Promise<void> {
  progress?.start('load', samples.length)
  for (const sample of samples) {
    const workspace = workspaceOf(sample)
    const messageIds = new Map<string, string>()
    await store.transaction(async (tx) => {
      for (const session of sample.sessions) {
        const conversationId = conversationOf(sample, session.index)
        await tx.conversations.ensure({ id: conversationId, workspace, title: `${sample.sampleId} session ${session.index}`, startedAt: session.time })
        let seq = 0
        for (const turn of session.turns) {
          const { message } = await tx.messages.append({
            conversationId,
            hostMessageId: turn.diaId,
            // L0 roles are the two parties; the first speaker plays the user.
            role: turn.speaker === sample.speakers[0] ? 'user' : 'assistant',
            text: turnText(turn),
            turn: seq,
            seq,
            // Turns of a session keep their order one second apart from the session's time.
            createdAt: session.time + seq * 1000,
            flags: { speaker: turn.speaker },
          })
          messageIds.set(turn.diaId, message.id)
          seq++
        }
      }
      if (withObservations) {
        for (const observation of sample.observations) {
          const session = sample.sessions.find((candidate) => candidate.index === observation.session)
          const sourceMessageIds = observation.diaIds.map((id) => messageIds.get(id)).filter((id): id is string => id !== undefined)
          if (sourceMessageIds.length === 0) continue
          await tx.memories.add({
            kind: 'fact',
            text: observation.text,
            scope: 'workspace',
            workspace,
            sourceMessageIds,
            createdAt: session?.time,
            flags: { speaker: observation.speaker },
          })
        }
      }
    })
    progress?.tick(sample.sampleId)
  }
  progress?.stop()
}

interface Tally {
  questions: number
  any: number[]
  all: number[]
}

const newTally = (ks: readonly number[]): Tally => ({ questions: 0, any: ks.map(() => 0), all: ks.map(() => 0) })

function toMetrics(tally: Tally, ks: readonly number[]): { recall_any: RecallAtK; recall_all: RecallAtK } {
  const at = (counts: number[]) => Object.fromEntries(ks.map((k, i) => [String(k), tally.questions ? counts[i]! / tally.questions : 0]))
  return { recall_any: at(tally.any), recall_all: at(tally.all) }
}

/**
 * Rank every eligible question of the loaded samples in one mode.
 * @param vectors with mode `turns` and an embedder: the questions' vectors by text and the model of
 *   the turns' vectors in the store; each question's conversation-search ranking is then
 *   re-ranked with them (`fuseConversationVectors`, the plugin's path)
 * @returns the metrics in the documented shape.
 */
export async function evaluateLocomo(
  store: MemoryStore,
  samples: readonly LocomoSample[],
  mode: RankingMode,
  ks: readonly number[],
  progress?: BenchProgress,
  vectors?: QuestionVectors,
): Promise<ModeMetrics> {
  const eligible = eligibleQuestions
  progress?.start(mode, samples.reduce((sum, sample) => sum + eligible(sample).length, 0))
  const overall = newTally(ks)
  const byCategory = new Map<number, Tally>()

  for (const sample of samples) {
    const workspace = workspaceOf(sample)
    // Read back what was stored: the benchmark ranks store rows, as the plugin does.
    const messages = await store.messages.list({ workspace, limit: MAX_SCAN })
    // turns+observations: each turn document also carries the L1 memories distilled from it
    // (document expansion through `sourceMessageIds`), so a question phrased like the fact
    // finds the turn the fact came from.
    const linked = new Map<string, string[]>()
    if (mode === 'turns+observations') {
      for (const memory of await store.memories.list({ workspace, includeGlobal: false, limit: MAX_SCAN })) {
        for (const id of memory.sourceMessageIds) linked.set(id, [...(linked.get(id) ?? []), memory.text])
      }
    }
    const speakerOf = (message: { flags: Record<string, unknown> }) => (typeof message.flags.speaker === 'string' ? message.flags.speaker : undefined)
    const corpus = RankingCorpus.from(
      messages.map((message) => ({
        id: message.hostMessageId,
        text: [message.text, ...(linked.get(message.id) ?? [])].join('\n'),
        group: message.conversationId,
        position: message.seq,
        author: typeof message.flags.speaker === 'string' ? message.flags.speaker : undefined,
        time: message.createdAt,
      })),
    )

    for (const question of eligible(sample)) {
      // turns: exactly the host's L0 path (store full-text candidates + neighbours, then the
      // turn ranking), with an embedder re-ranked by the vectors. turns+observations ranks the
      // expanded documents in memory: the expansion exists only in this benchmark.
      const ranking =
        mode === 'turns'
          ? await rankTurns(store, workspace, sample, question.question, speakerOf, vectors)
          : rankDocuments(corpus, question.question, TURN_RANKING, { authors: sample.speakers }).map((ranked) => ranked.id)
      const tally = byCategory.get(question.category) ?? newTally(ks)
      byCategory.set(question.category, tally)
      for (const target of [overall, tally]) {
        target.questions++
        ks.forEach((k, i) => {
          const top = new Set(ranking.slice(0, k))
          if (question.evidence.some((id) => top.has(id))) target.any[i]!++
          if (question.evidence.every((id) => top.has(id))) target.all[i]!++
        })
      }
      progress?.tick()
    }
  }
  progress?.stop()
  const by_category: Record<string, CategoryMetrics> = {}
  for (const category of [...byCategory.keys()].sort((a, b) => a - b)) {
    const tally = byCategory.get(category)!
    by_category[String(category)] = { questions: tally.questions, ...toMetrics(tally, ks) }
  }
  return { ...toMetrics(overall, ks), ...(vectors ? { embedding_model: vectors.model } : {}), by_category }
}

/** With an embedder: the questions' vectors by text; the turns' are in the store under `model`. */
interface QuestionVectors {
  readonly model: string
  readonly queries: ReadonlyMap<string, Float32Array>
}

/** The host's L0 ranking of one question (dia_ids), re-ranked by the vectors when given. */
async function rankTurns(
  store: MemoryStore,
  workspace: string,
  sample: LocomoSample,
  query: string,
  speakerOf: (message: { flags: Record<string, unknown> }) => string | undefined,
  vectors: QuestionVectors | undefined,
): Promise<string[]> {
  const options = { workspace, authors: sample.speakers, authorOf: speakerOf }
  const queryVector = vectors?.queries.get(query)
  const ranked =
    vectors && queryVector ? await rankConversationTurnsByMeaning(store, query, { vector: queryVector, model: vectors.model }, options) : await rankConversationTurns(store, query, options)
  return ranked.map((turn) => turn.message.hostMessageId)
}

/**
 * With an embedder: vectors of every stored turn, written to the store's message vectors the way
 * recall's backfill writes them (texts the embedder's guard refuses get none), and of every
 * eligible question.
 */
async function embedLocomo(store: MemoryStore, samples: readonly LocomoSample[], embedding: EmbeddingOptions, known: Map<string, Float32Array>, progress?: BenchProgress): Promise<QuestionVectors> {
  const embedder = createEmbedder(embedding)
  const queries = new Map<string, Float32Array>()
  progress?.start(embeddingLabel(embedding), samples.length)
  try {
    for (const sample of samples) {
      const messages = await store.messages.list({ workspace: workspaceOf(sample), limit: MAX_SCAN })
      const questions = eligibleQuestions(sample).map((question) => question.question)
      // One vector per distinct text, each embedded once (LoCoMo repeats short turns such as "Thanks!").
      const vectors = await embedTexts(embedder, [...messages.map((message) => message.text), ...questions], known)
      const embedded = messages.filter((message) => vectors.has(message.text))
      for (let start = 0; start < embedded.length; start += 1_000) {
        const batch = embedded.slice(start, start + 1_000)
        await store.messages.setEmbeddings(batch.map((message) => ({ messageId: message.id, embedding: vectors.get(message.text)!, embeddingModel: embedder.modelKey })))
      }
      for (const question of questions) {
        const vector = vectors.get(question)
        if (vector) queries.set(question, vector)
      }
      progress?.tick(sample.sampleId)
    }
  } finally {
    progress?.stop()
    await embedder.close?.()
  }
  return { model: embedder.modelKey, queries }
}

/**
 * Load the samples into a fresh temporary store (a SQLite file, or a PostgreSQL schema of its
 * own) and evaluate each requested mode. The store is deleted afterwards (a PostgreSQL schema
 * is kept with the backend's `keep`).
 */
export async function runLocomoBench(samples: readonly LocomoSample[], options: LocomoBenchOptions): Promise<LocomoReport> {
  const dir = mkdtempSync(join(options.workDir ?? tmpdir(), 'dsh-memory-locomo-'))
  let bench: BenchStore
  try {
    bench = await openBenchStore(options.backend ?? { kind: 'sqlite' }, join(dir, 'store'), 'locomo')
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
  const store = bench.store
  try {
    await loadLocomo(store, samples, options.modes.some((mode) => mode !== 'turns'), options.progress)
    const known = options.vectorCache ?? new Map<string, Float32Array>()
    const vectors = options.embedding && options.modes.includes('turns') ? await embedLocomo(store, samples, options.embedding, known, options.progress) : undefined
    const report: LocomoReport = {}
    for (const mode of LOCOMO_MODES) {
      if (!options.modes.includes(mode)) continue
      if (mode === 'injection') report.injection = await evaluateInjection(store, samples, { progress: options.progress, scoreThreshold: options.scoreThreshold, hybridThreshold: options.hybridThreshold, strategy: options.strategy, embedding: options.embedding, vectorCache: known })
      else report[mode] = await evaluateLocomo(store, samples, mode, options.ks, options.progress, vectors)
    }
    return report
  } finally {
    await store.close()
    try {
      await bench.remove()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

/**
 * Reports of several backends, each in full, then how far each backend's recall is from the
 * first one's, in percentage points (#18's target: PostgreSQL within 1 point of SQLite).
 */
export function formatLocomoComparison(reports: Readonly<Record<string, LocomoReport>>, ks: readonly number[]): string {
  const entries = Object.entries(reports)
  const lines: string[] = []
  for (const [backend, report] of entries) lines.push(`== ${backend}`, formatLocomoReport(report, ks), '')
  const [baseline, ...others] = entries
  if (!baseline) return ''
  for (const [backend, report] of others) {
    for (const mode of LOCOMO_MODES) {
      const ours = mode === 'injection' ? undefined : report[mode]
      const theirs = mode === 'injection' ? undefined : baseline[1][mode]
      if (!ours || !theirs) continue
      for (const metric of ['recall_any', 'recall_all'] as const) {
        const cells = ks.map((k) => {
          const delta = (ours[metric][String(k)]! - theirs[metric][String(k)]!) * 100
          return `@${k} ${delta >= 0 ? '+' : ''}${delta.toFixed(1)}`
        })
        const worst = Math.max(...ks.map((k) => Math.abs(ours[metric][String(k)]! - theirs[metric][String(k)]!) * 100))
        lines.push(`${backend} − ${baseline[0]} ${mode} ${metric} (points): ${cells.join(', ')} (${worst <= 1 ? 'within' : 'NOT within'} 1 point)`)
      }
    }
    if (report.injection && baseline[1].injection) {
      const differ = Object.entries(injectionDelta(report.injection, baseline[1].injection)).map(([name, [was, now]]) => `${name} ${was} → ${now}`)
      lines.push(`${backend} − ${baseline[0]} injection (overall): ${differ.length ? differ.join(', ') : 'the same figures'}`)
    }
  }
  return lines.join('\n').trimEnd()
}

/** The injection figures of two runs that differ, as `{ name: [baseline, other] }`. */
function injectionDelta(ours: InjectionReport, theirs: InjectionReport): Record<string, [number, number]> {
  const delta: Record<string, [number, number]> = {}
  for (const [name, value] of Object.entries(ours)) {
    const other = (theirs as unknown as Record<string, unknown>)[name]
    if (typeof value === 'number' && typeof other === 'number' && value !== other) delta[name] = [other, value]
  }
  return delta
}

/** A plain-text table of a report (the non-JSON output). */
export function formatLocomoReport(report: LocomoReport, ks: readonly number[]): string {
  const pct = (value: number | undefined) => (value === undefined ? '-' : `${(value * 100).toFixed(1)}%`.padStart(7))
  const lines: string[] = []
  for (const mode of LOCOMO_MODES) {
    if (mode === 'injection') {
      if (report.injection) lines.push(formatInjectionReport(report.injection, LOCOMO_CATEGORIES), '')
      continue
    }
    const metrics = report[mode]
    if (!metrics) continue
    const questions = Object.values(metrics.by_category).reduce((sum, category) => sum + category.questions, 0)
    lines.push(`mode ${mode} (${questions} questions)`)
    lines.push(`  ${'category'.padEnd(22)}${ks.map((k) => `any@${k}`.padStart(8)).join('')}${ks.map((k) => `all@${k}`.padStart(8)).join('')}`)
    const row = (label: string, m: { recall_any: RecallAtK; recall_all: RecallAtK }) =>
      `  ${label.padEnd(22)}${ks.map((k) => ` ${pct(m.recall_any[String(k)])}`).join('')}${ks.map((k) => ` ${pct(m.recall_all[String(k)])}`).join('')}`
    lines.push(row('overall', metrics))
    for (const [category, m] of Object.entries(metrics.by_category)) {
      lines.push(row(`${category} ${LOCOMO_CATEGORIES[category] ?? ''} (${m.questions})`, m))
    }
    lines.push('')
  }
  return lines.join('\n').trimEnd()
}
