/**
 * The scale benchmark: build real stores with many L0 messages and L1 memories through the
 * store API the plugins use, then measure what a user feels: the recall latency of the full
 * injection path (the recall core's `RecallInjector.prepare`, exactly what the pre-step
 * listener runs), the L0 recall path (`RecallEngine.searchConversations`, the
 * conversation-search tool), the store's own full-text search (SQLite FTS5 or PostgreSQL's
 * GIN-indexed tsvector, which both recall paths take their candidates from), capture overhead
 * per host event (`CaptureRecorder.handle` on a real store), index build time, database size
 * and memory use.
 *
 * Stores are opened through the store contract (`openStore`), so the same phases run on either
 * backend: a SQLite file in a temp dir, or a fresh schema of its own in a PostgreSQL database
 * (dropped afterwards unless `keep`).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { CaptureRecorder, resolveCaptureOptions } from '@dsh-memory/capture'
import { modePolicy, RecallEngine, RecallInjector, resolveRecallOptions } from '@dsh-memory/recall'
import { estimateTokens, EXPORT_FORMAT, EXPORT_VERSION, type MemoryStore } from '@dsh-memory/store'
import { type BenchBackend, type BenchStore, isUnsupported, openBenchStore } from './backend.ts'
import { BENCH_QUERIES, memoryText, messageText, seededRandom } from './corpus.ts'
import type { BenchProgress } from './locomo.ts'

/** What one store of the benchmark holds. */
export type ScaleKind = 'memories' | 'messages'

/** One store size to build and measure. */
export interface ScaleSize {
  readonly kind: ScaleKind
  readonly count: number
}

/** The default (full) sizes of the issue: 10k / 100k L1 memories and 10k / 100k / 1M L0 messages. */
export const FULL_SIZES: readonly ScaleSize[] = Object.freeze([
  { kind: 'memories', count: 10_000 },
  { kind: 'memories', count: 100_000 },
  { kind: 'messages', count: 10_000 },
  { kind: 'messages', count: 100_000 },
  { kind: 'messages', count: 1_000_000 },
])

/** `--quick`: tiny stores for a CI smoke test of the command (numbers are not meaningful). */
export const QUICK_SIZES: readonly ScaleSize[] = Object.freeze([
  { kind: 'memories', count: 1_000 },
  { kind: 'messages', count: 2_000 },
])

/** Targets of the issue, in ms. */
export const SCALE_TARGETS = Object.freeze({ recallP95MemoriesMs: 25, recallP95MessagesMs: 100, captureMsPerEvent: 1 })

/** Latency percentiles of one measurement (ms). */
export interface LatencyStats {
  readonly p50: number
  readonly p95: number
  readonly max: number
  readonly runs: number
}

/** Process memory after a phase (MiB). */
export interface MemoryUse {
  readonly rss_mb: number
  readonly heap_used_mb: number
}

/** Why a SQLite-only figure is `null` on PostgreSQL (printed by the human output, kept in `not_measured`). */
export const POSTGRES_NOT_MEASURED: Readonly<Record<string, string>> = Object.freeze({
  db_bytes: 'no file of its own on PostgreSQL (the SQLite figure is memory.db + -wal)',
})

/**
 * The `--json` object of one backend. Keys of the per-size maps are `<kind>_<count>` (e.g.
 * `memories_100000`). Both backends report the same keys.
 */
export interface ScaleReport {
  /** The store backend measured. */
  readonly backend: BenchBackend['kind']
  /**
   * p50/p95 of recall per store: for `memories_N` the full injection path over N memories;
   * for `messages_N` the L0 recall path (conversation search through the recall ranking core).
   */
  readonly recall_ms: Record<string, LatencyStats>
  /** The injection path on the message stores (they also hold {@link MESSAGE_STORE_MEMORIES} memories). */
  readonly injection_ms: Record<string, LatencyStats>
  /** The store's own BM25 search (`search.memories` / `search.messages`), index already built. */
  readonly store_search_ms: Record<string, LatencyStats>
  /** First recall after opening (cold analyzer memo), ms. */
  readonly recall_cold_ms: Record<string, number>
  /** Memories the injection path ranked in the first timed turn (the store's full-text candidates: at most `MEMORY_CANDIDATES` per scope part). */
  readonly recall_considered: Record<string, number>
  /** Capture cost per host event (user and assistant messages), ms, on the largest message store: the median of {@link CAPTURE_ROUNDS} rounds. */
  readonly capture_ms_per_event: number
  /** Capture cost per event on each store it was measured on (median of the rounds). */
  readonly capture_ms_per_event_by_store: Record<string, number>
  /**
   * Every round's capture cost per event, per store. One round can land on an FTS5 segment merge
   * (its cost grows with the index), so one figure alone says little at 1M messages.
   */
  readonly capture_rounds_ms_per_event: Record<string, number[]>
  /** Time to write the rows through the store's bulk path (`importJsonl`, batched transactions), ms. */
  readonly insert_ms: Record<string, number>
  readonly insert_rows_per_s: Record<string, number>
  /** Rows per second of the repository path (`memories.add` inside one transaction), 2 000-row sample per store. */
  readonly append_rows_per_s: Record<string, number>
  /**
   * Full rebuild of the store's FTS5 index from the rows (`search.rebuild()`: what an upgrade's
   * backfill or a tokenizer change costs at open), ms. The import already indexed every row in
   * its own transactions; this measures indexing all of them again.
   */
  readonly index_build_ms: Record<string, number>
  /** memory.db + -wal (the FTS5 index is inside the database), bytes, after close; `null` on PostgreSQL (see `not_measured`). */
  readonly db_bytes: Record<string, number | null>
  readonly memory: Record<string, MemoryUse>
  readonly targets: Record<string, { readonly target_ms: number; readonly measured_ms: number; readonly met: boolean }>
  /** Failures per store and phase (`<key>:index`, `<key>:close`, …); the run goes on with the next phase or size. */
  readonly errors: Record<string, string>
  /** Phases skipped because this backend cannot run them yet (`<key>:<phase>` → why), e.g. one needing a package table on PostgreSQL. */
  readonly skipped: Record<string, string>
  /** Figures that are `null` on this backend → why (empty on SQLite). */
  readonly not_measured: Record<string, string>
  readonly machine: { readonly node: string; readonly cpus: number; readonly cpu_model: string }
}

/** Options of {@link runScaleBench}. */
export interface ScaleBenchOptions {
  readonly sizes: readonly ScaleSize[]
  /** Timed recall runs per store (after warm-up). Default 40. */
  readonly runs?: number
  /** Host events fed to capture per store. Default 2 000. */
  readonly captureEvents?: number
  /** Rows per import transaction while building. Default 50 000. */
  readonly batch?: number
  readonly seed?: number
  /** Where the stores live (default SQLite). */
  readonly backend?: BenchBackend
  /** Directory for the temporary stores (default: a fresh OS temp dir, removed afterwards). */
  readonly workDir?: string
  readonly progress?: BenchProgress
  /** Phase lines (stderr in the CLI). */
  readonly log?: (line: string) => void
}

/** Memories in every message store, so the injection path there has something to rank. */
export const MESSAGE_STORE_MEMORIES = 1_000
/** Messages per generated conversation. */
const MESSAGES_PER_CONVERSATION = 100
/** Workspaces the generated conversations are spread over. */
const WORKSPACES = 10
const BENCH_WORKSPACE = '/bench/ws0'
const BENCH_SESSION = 'bench-session'

/** Parse `--sizes memories:10k,messages:1m` (also bare `10000` = memories). */
export function parseSizes(text: string): ScaleSize[] {
  const sizes: ScaleSize[] = []
  for (const part of text.split(',').map((item) => item.trim()).filter(Boolean)) {
    const match = /^(?:(memories|messages|mem|msg|l1|l0):)?(\d+(?:\.\d+)?)([km]?)$/i.exec(part)
    if (!match) throw new Error(`--sizes expects entries like memories:100k or messages:1m, got ${JSON.stringify(part)}`)
    const kindText = (match[1] ?? 'memories').toLowerCase()
    const kind: ScaleKind = kindText === 'messages' || kindText === 'msg' || kindText === 'l0' ? 'messages' : 'memories'
    const factor = match[3]?.toLowerCase() === 'm' ? 1_000_000 : match[3]?.toLowerCase() === 'k' ? 1_000 : 1
    const count = Math.round(Number(match[2]) * factor)
    if (!Number.isSafeInteger(count) || count < 10) throw new Error(`--sizes: ${JSON.stringify(part)} must be at least 10 rows`)
    sizes.push({ kind, count })
  }
  if (sizes.length === 0) throw new Error('--sizes is empty')
  return sizes
}

/** p50/p95/max of a list of durations. */
export function latencyStats(samples: readonly number[]): LatencyStats {
  const sorted = [...samples].sort((a, b) => a - b)
  const at = (q: number) => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!)
  return { p50: round(at(0.5)), p95: round(at(0.95)), max: round(sorted.at(-1) ?? 0), runs: sorted.length }
}

function describe(error: unknown): string {
  return `${(error as Error)?.name ?? 'Error'}: ${(error as Error)?.message ?? String(error)}`.slice(0, 500)
}

function round(value: number, digits = 3): number {
  const f = 10 ** digits
  return Math.round(value * f) / f
}

function memoryUse(): MemoryUse {
  const usage = process.memoryUsage()
  return { rss_mb: round(usage.rss / 2 ** 20, 1), heap_used_mb: round(usage.heapUsed / 2 ** 20, 1) }
}

const userStep = (text: string) => [{ role: 'user', source: { kind: 'user' }, content: [{ type: 'text', text }] }]

const HEADER = JSON.stringify({ type: 'header', format: EXPORT_FORMAT, version: EXPORT_VERSION, exportedAt: 0, schema: 1 })

/**
 * A memory row as the store's export format carries it, fresh: the fields `importJsonl` fills
 * for a new row (revision 1, never recalled or superseded, no embedding, no flags) are left out.
 */
function memoryRecord(i: number, count: number, random: () => number, base: number): string {
  const global = i % 2 === 0
  // Spread over a year so decay does real work.
  const at = base - (count - i) * Math.max(1, Math.floor((365 * 86_400_000) / count))
  return JSON.stringify({
    type: 'memory',
    data: {
      id: benchId(random),
      kind: i % 5 === 0 ? 'preference' : 'fact',
      text: memoryText(random, i),
      scope: global ? 'global' : 'workspace',
      workspace: global ? null : BENCH_WORKSPACE,
      sessionId: null,
      sourceMessageIds: [],
      priority: i % 3,
      createdAt: at,
      updatedAt: at,
    },
  })
}

/** A UUID-shaped id from the seeded generator (deterministic data, unique per row). */
function benchId(random: () => number): string {
  const hex = Array.from({ length: 32 }, () => Math.floor(random() * 16).toString(16)).join('')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`
}

/**
 * Write rows through the store's bulk path, `importJsonl` (validated, redacted and capped
 * like live writes, one transaction per batch). `records(start, end)` yields the lines of rows
 * start..end-1.
 */
async function bulkImport(store: MemoryStore, count: number, batch: number, records: (start: number, end: number) => Iterable<string>): Promise<void> {
  for (let start = 0; start < count; start += batch) {
    const end = Math.min(count, start + batch)
    function* lines(): Generator<string> {
      yield HEADER
      yield* records(start, end)
    }
    await store.importJsonl(lines(), { actor: 'bench' })
    // The store's calls finish synchronously: yield once a batch so a Ctrl-C handler can run.
    await new Promise((resolve) => setImmediate(resolve))
  }
}

/** Write `count` memories: half global, half in the bench workspace (all visible to recall). */
async function buildMemories(store: MemoryStore, count: number, random: () => number, batch: number, base: number): Promise<void> {
  await bulkImport(store, count, batch, function* (start, end) {
    for (let i = start; i < end; i++) yield memoryRecord(i, count, random, base)
  })
}

/**
 * Write `count` messages in conversations of 100 over ten workspaces. A batch's conversations
 * come before its messages (as in an export), so PostgreSQL's import writes each type in long
 * runs (`pg-import.ts`) instead of a short run per conversation.
 */
async function buildMessages(store: MemoryStore, count: number, random: () => number, batch: number, base: number): Promise<void> {
  const step = Math.max(1, Math.floor((365 * 86_400_000) / count))
  const createdAt = (i: number) => base - (count - i) * step
  await bulkImport(store, count, batch, function* (start, end) {
    for (let i = start; i < end; i++) {
      if (i % MESSAGES_PER_CONVERSATION !== 0) continue
      const conversation = i / MESSAGES_PER_CONVERSATION
      yield JSON.stringify({
        type: 'conversation',
        data: { id: `bench-conv-${conversation}`, workspace: `/bench/ws${conversation % WORKSPACES}`, title: null, startedAt: createdAt(i), endedAt: null, updatedAt: createdAt(i), flags: {} },
      })
    }
    for (let i = start; i < end; i++) {
      const position = i % MESSAGES_PER_CONVERSATION
      const conversationId = `bench-conv-${Math.floor(i / MESSAGES_PER_CONVERSATION)}`
      const role = position % 2 === 0 ? 'user' : 'assistant'
      const text = messageText(random, role, i)
      yield JSON.stringify({
        type: 'message',
        data: { id: benchId(random), conversationId, hostMessageId: `m${i}`, role, text, turn: Math.floor(position / 2), seq: position, sourceIds: [], tokensEstimate: estimateTokens(text), createdAt: createdAt(i), flags: {} },
      })
    }
  })
}

/** Rows per second of the repository write path (`memories.add` in one transaction), on a sample. */
async function measureAppendRate(store: MemoryStore, rows: number, random: () => number): Promise<number> {
  const started = performance.now()
  await store.transaction(async (tx) => {
    for (let i = 0; i < rows; i++) await tx.memories.add({ kind: 'fact', text: memoryText(random, i), scope: 'session', sessionId: 'append-probe' })
  })
  return Math.round(rows / ((performance.now() - started) / 1000))
}

/** Rounds of capture timing per store (each `captureEvents` events in a session of its own). */
export const CAPTURE_ROUNDS = 3

/** Feed `events` host events (turn start, user, assistant) through capture; returns ms per captured event. */
async function measureCapture(store: MemoryStore, events: number, random: () => number, label: string): Promise<number> {
  const recorder = new CaptureRecorder(store, resolveCaptureOptions({}))
  const session = { id: `capture-${label}`, header: { cwd: BENCH_WORKSPACE, createdAt: Date.now() } }
  // Warm the statements once so the measurement is the steady state.
  await recorder.handle(session, { type: 'user/message', seq: 0, time: Date.now(), data: { id: 'warm', role: 'user', content: [{ type: 'text', text: 'warm up' }], source: { kind: 'user' } } })
  await recorder.whenIdle()
  const texts = Array.from({ length: events }, (_, i) => messageText(random, i % 2 === 0 ? 'user' : 'assistant', i))
  const started = performance.now()
  for (let i = 0; i < events; i++) {
    const seq = i * 2 + 1
    if (i % 2 === 0) {
      void recorder.handle(session, { type: 'turn/start', seq, time: Date.now(), data: { turn: i / 2 } })
      void recorder.handle(session, { type: 'user/message', seq: seq + 1, time: Date.now(), data: { id: `u${i}`, role: 'user', content: [{ type: 'text', text: texts[i]! }], source: { kind: 'user' } } })
    } else {
      void recorder.handle(session, {
        type: 'assistant/message',
        seq: seq + 1,
        time: Date.now(),
        data: { turn: (i - 1) / 2, step: 0, message: { id: `a${i}`, role: 'assistant', content: [{ type: 'text', text: texts[i]! }] } },
      })
    }
  }
  await recorder.whenIdle()
  const elapsed = performance.now() - started
  if (recorder.stats.errors > 0 || recorder.stats.captured !== events + 1) {
    throw new Error(`capture stored ${recorder.stats.captured - 1} of ${events} events (${recorder.stats.errors} errors)`)
  }
  return round(elapsed / events, 4)
}

/**
 * Build each store, measure, close and delete it. Sizes run in the given order; the store of
 * one size is gone before the next is built, so memory figures are per size.
 */
export async function runScaleBench(options: ScaleBenchOptions): Promise<ScaleReport> {
  const runs = options.runs ?? 40
  const captureEvents = options.captureEvents ?? 2_000
  const batch = options.batch ?? 50_000
  const log = options.log ?? (() => {})
  const ownDir = options.workDir === undefined
  const workDir = options.workDir ?? mkdtempSync(join(tmpdir(), 'dshm-bench-scale-'))
  const backend = options.backend ?? { kind: 'sqlite' }
  const report = {
    backend: backend.kind,
    recall_ms: {} as Record<string, LatencyStats>,
    injection_ms: {} as Record<string, LatencyStats>,
    store_search_ms: {} as Record<string, LatencyStats>,
    recall_cold_ms: {} as Record<string, number>,
    recall_considered: {} as Record<string, number>,
    capture_ms_per_event: 0,
    capture_ms_per_event_by_store: {} as Record<string, number>,
    capture_rounds_ms_per_event: {} as Record<string, number[]>,
    insert_ms: {} as Record<string, number>,
    insert_rows_per_s: {} as Record<string, number>,
    append_rows_per_s: {} as Record<string, number>,
    index_build_ms: {} as Record<string, number>,
    db_bytes: {} as Record<string, number | null>,
    memory: {} as Record<string, MemoryUse>,
    targets: {} as ScaleReport['targets'],
    errors: {} as Record<string, string>,
    skipped: {} as Record<string, string>,
    not_measured: backend.kind === 'sqlite' ? {} : { ...POSTGRES_NOT_MEASURED },
    machine: { node: process.version, cpus: cpus().length, cpu_model: cpus()[0]?.model ?? 'unknown' },
  }
  const base = Date.UTC(2026, 0, 1)
  let largestMessages = -1
  try {
    for (const [index, size] of options.sizes.entries()) {
      const key = `${size.kind}_${size.count}`
      const dir = join(workDir, `${index}-${key}`)
      const random = seededRandom((options.seed ?? 20261130) + index)
      let bench: BenchStore
      try {
        bench = await openBenchStore(backend, dir, `${index}_${key}`, () => base)
      } catch (error) {
        report.errors[`${key}:open`] = describe(error)
        log(`${key}: cannot open a ${backend.kind} store: ${describe(error)}`)
        continue
      }
      const store = bench.store
      // A phase the backend cannot run yet (code `unsupported`) is skipped and reported; the next phase runs.
      const phase = async (name: string, run: () => Promise<void>): Promise<void> => {
        try {
          await run()
        } catch (error) {
          if (!isUnsupported(error)) throw error
          report.skipped[`${key}:${name}`] = error.message
          log(`${key}: ${name} skipped on ${backend.kind}: ${error.message}`)
        }
      }
      log(`${key}: ${backend.kind} store at ${bench.location}`)
      try {
        log(`${key}: writing ${size.count} ${size.kind} through the store API`)
        const insertStarted = performance.now()
        if (size.kind === 'memories') await buildMemories(store, size.count, random, batch, base)
        else {
          await buildMessages(store, size.count, random, batch, base)
          await buildMemories(store, MESSAGE_STORE_MEMORIES, random, batch, base)
        }
        const insertMs = performance.now() - insertStarted
        report.insert_ms[key] = Math.round(insertMs)
        report.insert_rows_per_s[key] = Math.round(size.count / (insertMs / 1000))
        report.append_rows_per_s[key] = await measureAppendRate(store, 2_000, random)

        log(`${key}: building the search index`)
        const buildStarted = performance.now()
        let indexBuilt = true
        try {
          await store.search.rebuild()
        } catch (error) {
          // Reported, not fatal: the index the import wrote stays usable; later phases still run.
          indexBuilt = false
          report.errors[`${key}:index`] = describe(error)
          log(`${key}: index build failed: ${describe(error)}`)
        }
        report.index_build_ms[key] = Math.round(performance.now() - buildStarted)

        await phase('recall', async () => {
          const recallOptions = resolveRecallOptions({ recall: { timeoutMs: 0 }, embedding: { enabled: false } })
          const engine = new RecallEngine(store, recallOptions, { now: () => base })
          const injector = new RecallInjector(engine, { now: () => base })
          const scope = { sessionId: BENCH_SESSION, workspace: BENCH_WORKSPACE }
          const policyProbe = await engine.recallForTurn(BENCH_QUERIES[0]!, scope, modePolicy(recallOptions.defaultMode), new Set())
          report.recall_considered[key] = policyProbe.considered

          log(`${key}: timing recall (${runs} runs)`)
          const coldStarted = performance.now()
          await injector.prepare(scope, userStep(BENCH_QUERIES[1]!), [])
          report.recall_cold_ms[key] = round(performance.now() - coldStarted)
          const injection: number[] = []
          const l0: number[] = []
          const searched: number[] = []
          for (let run = -3; run < runs; run++) {
            const query = BENCH_QUERIES[(run + 3) % BENCH_QUERIES.length]!
            let started = performance.now()
            const result = await injector.prepare(scope, userStep(query), [])
            const injectionMs = performance.now() - started
            if (result.plan === undefined && result.skipped?.startsWith('recall failed')) throw new Error(`recall failed: ${result.skipped}`)
            started = performance.now()
            if (size.kind === 'messages') await engine.searchConversations(query, scope, { includeCurrentSession: true })
            const l0Ms = performance.now() - started
            started = performance.now()
            if (indexBuilt && size.kind === 'messages') await store.search.messages(query, { workspace: BENCH_WORKSPACE, limit: 8 })
            else if (indexBuilt) await store.search.memories(query, { workspace: BENCH_WORKSPACE, limit: 10 })
            const searchMs = performance.now() - started
            if (run < 0) continue
            injection.push(injectionMs)
            l0.push(l0Ms)
            searched.push(searchMs)
          }
          if (size.kind === 'memories') report.recall_ms[key] = latencyStats(injection)
          else {
            report.recall_ms[key] = latencyStats(l0)
            report.injection_ms[key] = latencyStats(injection)
          }
          if (indexBuilt) report.store_search_ms[key] = latencyStats(searched)
        })

        await phase('capture', async () => {
          log(`${key}: timing capture (${CAPTURE_ROUNDS} rounds of ${captureEvents} events)`)
          const rounds: number[] = []
          for (let round = 0; round < CAPTURE_ROUNDS; round++) rounds.push(await measureCapture(store, captureEvents, random, `${key}-${round}`))
          report.capture_rounds_ms_per_event[key] = rounds
          report.capture_ms_per_event_by_store[key] = [...rounds].sort((a, b) => a - b)[Math.floor(rounds.length / 2)]!
          if (size.kind === 'messages' && size.count > largestMessages) {
            largestMessages = size.count
            report.capture_ms_per_event = report.capture_ms_per_event_by_store[key]!
          }
        })
        report.memory[key] = memoryUse()
      } catch (error) {
        report.errors[key] = describe(error)
        log(`${key}: failed: ${describe(error)}`)
      } finally {
        try {
          await store.close()
        } catch (error) {
          report.errors[`${key}:close`] = describe(error)
          log(`${key}: close failed: ${describe(error)}`)
        }
      }
      log(`${key}: ${JSON.stringify({ recall_ms: report.recall_ms[key], injection_ms: report.injection_ms[key], store_search_ms: report.store_search_ms[key], capture: report.capture_ms_per_event_by_store[key], insert_ms: report.insert_ms[key], index_build_ms: report.index_build_ms[key], memory: report.memory[key], considered: report.recall_considered[key] })}`)
      report.db_bytes[key] = bench.bytes()
      options.progress?.tick(key)
      try {
        await bench.remove()
      } catch (error) {
        report.errors[`${key}:remove`] = describe(error)
        log(`${key}: cannot remove ${bench.location}: ${describe(error)}`)
      }
      if (backend.kind === 'postgres' && backend.keep) log(`${key}: kept ${bench.location}`)
    }
  } finally {
    if (ownDir) rmSync(workDir, { recursive: true, force: true })
  }
  if (largestMessages < 0) {
    const values = Object.values(report.capture_ms_per_event_by_store)
    report.capture_ms_per_event = values.length ? round(values.reduce((a, b) => a + b, 0) / values.length, 4) : 0
  }
  const target = (name: string, limit: number, measured: number | undefined) => {
    if (measured !== undefined) report.targets[name] = { target_ms: limit, measured_ms: measured, met: measured <= limit }
  }
  target('recall_p95_memories_100000', SCALE_TARGETS.recallP95MemoriesMs, report.recall_ms.memories_100000?.p95)
  target('recall_p95_messages_1000000', SCALE_TARGETS.recallP95MessagesMs, report.recall_ms.messages_1000000?.p95)
  target('injection_p95_messages_1000000', SCALE_TARGETS.recallP95MessagesMs, report.injection_ms.messages_1000000?.p95)
  target('capture_ms_per_event', SCALE_TARGETS.captureMsPerEvent, report.capture_ms_per_event)
  return report
}

/** A human-readable table of a report. */
export function formatScaleReport(report: ScaleReport): string {
  const lines: string[] = []
  const keys = Object.keys(report.insert_ms)
  lines.push(`node ${report.machine.node}, ${report.machine.cpus} cpus (${report.machine.cpu_model})`)
  lines.push('store                    insert   rows/s  index build  recall p50/p95 (ms)   injection p50/p95   store search p50/p95   capture ms/event   db MiB   rss MiB')
  for (const key of keys) {
    const pair = (stats: LatencyStats | undefined) => (stats ? `${stats.p50.toFixed(2)} / ${stats.p95.toFixed(2)}` : '-')
    const injection = key.startsWith('memories') ? report.recall_ms[key] : report.injection_ms[key]
    lines.push(
      [
        key.padEnd(22),
        `${((report.insert_ms[key] ?? 0) / 1000).toFixed(1)} s`.padStart(8),
        String(report.insert_rows_per_s[key]).padStart(8),
        `${((report.index_build_ms[key] ?? 0) / 1000).toFixed(2)} s`.padStart(12),
        pair(report.recall_ms[key]).padStart(20),
        pair(injection).padStart(19),
        pair(report.store_search_ms[key]).padStart(22),
        String(report.capture_ms_per_event_by_store[key]).padStart(18),
        mib(report.db_bytes[key]).padStart(8),
        String(report.memory[key]?.rss_mb ?? '-').padStart(9),
      ].join(' '),
    )
  }
  for (const key of keys) {
    const rounds = report.capture_rounds_ms_per_event[key]
    if (rounds?.length) lines.push(`capture rounds on ${key} (ms/event, median shown above): ${rounds.join(', ')}`)
  }
  lines.push('recall: memories_N = full injection path (RecallInjector.prepare); messages_N = L0 conversation search (RecallEngine.searchConversations)')
  for (const [key, considered] of Object.entries(report.recall_considered)) lines.push(`rows ranked per turn on ${key}: ${considered}`)
  for (const [name, target] of Object.entries(report.targets)) lines.push(`target ${name}: ${target.measured_ms} ms (≤ ${target.target_ms} ms) ${target.met ? 'met' : 'MISSED'}`)
  lines.push(...notes(report))
  return lines.join('\n')
}

const mib = (bytes: number | null | undefined) => (bytes === null || bytes === undefined ? '-' : (bytes / 2 ** 20).toFixed(1))

/** The lines under a table: figures not measured on a backend, skipped phases, failures. */
function notes(report: ScaleReport, prefix = ''): string[] {
  return [
    ...Object.entries(report.not_measured).map(([figure, why]) => `${prefix}${figure} not measured: ${why}`),
    ...Object.entries(report.skipped).map(([phase, why]) => `${prefix}SKIPPED ${phase}: ${why}`),
    ...Object.entries(report.errors).map(([phase, error]) => `${prefix}FAILED ${phase}: ${error}`),
  ]
}

/**
 * Reports of several backends side by side: per store, one row per figure and one column per
 * backend (the `--database-url` output of `bench scale`).
 */
export function formatScaleComparison(reports: Readonly<Record<string, ScaleReport>>): string {
  const backends = Object.keys(reports)
  const all = Object.values(reports)
  const first = all[0]
  if (!first) return ''
  const lines = [`node ${first.machine.node}, ${first.machine.cpus} cpus (${first.machine.cpu_model})`]
  const keys = [...new Set(all.flatMap((report) => Object.keys(report.insert_ms)))]
  const pair = (stats: LatencyStats | undefined) => (stats ? `${stats.p50.toFixed(2)} / ${stats.p95.toFixed(2)}` : '-')
  const rows: [string, (report: ScaleReport, key: string) => string][] = [
    ['insert (s)', (r, k) => (r.insert_ms[k] === undefined ? '-' : (r.insert_ms[k] / 1000).toFixed(1))],
    ['insert rows/s', (r, k) => String(r.insert_rows_per_s[k] ?? '-')],
    ['append rows/s', (r, k) => String(r.append_rows_per_s[k] ?? '-')],
    ['index build (s)', (r, k) => (r.index_build_ms[k] === undefined ? '-' : (r.index_build_ms[k] / 1000).toFixed(2))],
    ['recall p50/p95 (ms)', (r, k) => pair(r.recall_ms[k])],
    ['injection p50/p95 (ms)', (r, k) => pair(k.startsWith('memories') ? r.recall_ms[k] : r.injection_ms[k])],
    ['store search p50/p95', (r, k) => pair(r.store_search_ms[k])],
    ['recall cold (ms)', (r, k) => String(r.recall_cold_ms[k] ?? '-')],
    ['rows ranked per turn', (r, k) => String(r.recall_considered[k] ?? '-')],
    ['capture ms/event', (r, k) => String(r.capture_ms_per_event_by_store[k] ?? '-')],
    ['capture rounds', (r, k) => r.capture_rounds_ms_per_event[k]?.join(', ') ?? '-'],
    ['db MiB', (r, k) => mib(r.db_bytes[k])],
    ['rss MiB', (r, k) => String(r.memory[k]?.rss_mb ?? '-')],
  ]
  for (const key of keys) {
    // Each column as wide as its longest cell (the capture rounds), plus a gap.
    const width = Math.max(...backends.map((name) => name.length), ...rows.flatMap(([, cell]) => all.map((report) => cell(report, key).length))) + 3
    lines.push('', `${key.padEnd(24)}${backends.map((name) => name.padStart(width)).join('')}`)
    for (const [label, cell] of rows) lines.push(`  ${label.padEnd(22)}${all.map((report) => cell(report, key).padStart(width)).join('')}`)
  }
  lines.push('', 'recall: memories_N = full injection path (RecallInjector.prepare); messages_N = L0 conversation search (RecallEngine.searchConversations)')
  for (const [backend, report] of Object.entries(reports)) {
    for (const [name, target] of Object.entries(report.targets)) lines.push(`${backend}: target ${name}: ${target.measured_ms} ms (≤ ${target.target_ms} ms) ${target.met ? 'met' : 'MISSED'}`)
    lines.push(...notes(report, `${backend}: `))
  }
  return lines.join('\n')
}
