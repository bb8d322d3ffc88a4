/**
 * `dsh-memory bench …`: benchmarks that print numbers. `bench locomo` measures turn-level
 * retrieval with the recall ranking core.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Command, Option } from 'commander'
import { assertMiniLmInstalled, type EmbeddingOptions, isRecallError, MINILM_PACKAGES, resolveRecallOptions } from '@dsh-memory/recall'
import type { BenchBackend } from '../bench/backend.ts'
import { formatLocomoComparison, formatLocomoReport, LOCOMO_MODES, type LocomoMode, type LocomoReport, runLocomoBench } from '../bench/locomo.ts'
import { LocomoFormatError, parseLocomo, selectSamples } from '../bench/locomo-format.ts'
import { CliUsageError, type CliIO } from '../io.ts'
import { onInterrupt } from '../process-exit.ts'
import { createProgress } from '../progress.ts'
import { checkDatabaseUrl, takesDatabaseUrl } from '../data/database-url.ts'
import { FULL_SIZES, formatScaleComparison, formatScaleReport, parseSizes, QUICK_SIZES, runScaleBench, type ScaleReport } from '../bench/scale.ts'
import { formatTokenCostReport, runTokenCostBench } from '../bench/token-cost.ts'
import { registerPalaceBench } from '../bench/palace.ts'
import { registerSuggestBench } from '../bench/suggest.ts'
import { formatCjkReport, runCjkBench } from '../bench/cjk.ts'
import { parseCount } from './records.ts'
import { registerCueBench } from './bench-cues.ts'

/** Parse `--k 5,10` into sorted unique positive integers. */
export function parseKs(text: string): number[] {
  const parts = text.split(',').map((part) => part.trim())
  const ks = parts.map((part) => (/^\d+$/.test(part) ? Number(part) : Number.NaN))
  if (parts.length === 0 || ks.some((k) => !Number.isSafeInteger(k) || k < 1)) {
    throw new CliUsageError(`--k expects a comma-separated list of positive integers (like 5,10), got ${JSON.stringify(text)}`)
  }
  return [...new Set(ks)].sort((a, b) => a - b)
}

/** Parse `--mode`: one mode or `all`. */
export function parseModes(text: string): LocomoMode[] {
  if (text === 'all') return [...LOCOMO_MODES]
  if ((LOCOMO_MODES as readonly string[]).includes(text)) return [text as LocomoMode]
  throw new CliUsageError(`--mode expects ${LOCOMO_MODES.join(', ')} or all, got ${JSON.stringify(text)}`)
}

/** Parse `--threshold`: a number between 0 and 1. */
export function parseThreshold(text: string, flag = '--threshold', example = '0.3'): number {
  const value = /^\s*\d*\.?\d+\s*$/.test(text) ? Number(text) : Number.NaN
  if (!(value >= 0 && value <= 1)) throw new CliUsageError(`${flag} expects a number between 0 and 1 (like ${example}), got ${JSON.stringify(text)}`)
  return value
}

/** Options every bench that runs on both backends reads (`--database-url` is the program's, copied in by `program.ts`). */
interface BackendOptions {
  readonly databaseUrl?: string
  readonly keep?: boolean
}

/**
 * The backends a bench measures: SQLite alone, or with `--database-url` SQLite and then
 * PostgreSQL (a fresh schema of its own, dropped at the end unless `--keep`), side by side.
 * The environment's DSH_MEMORY_DATABASE_URL is not read: a bench names its server explicitly.
 */
export function benchBackends(options: BackendOptions): BenchBackend[] {
  if (options.databaseUrl === undefined) {
    if (options.keep) throw new CliUsageError('--keep keeps the PostgreSQL schema of --database-url; give --database-url too')
    return [{ kind: 'sqlite' }]
  }
  return [{ kind: 'sqlite' }, { kind: 'postgres', databaseUrl: checkDatabaseUrl(options.databaseUrl, '--database-url'), keep: options.keep === true }]
}

/** The embedder flags of `bench locomo` (recall's `embedding` options, as the plugin's config gives them). */
export interface BenchEmbeddingFlags {
  readonly minilm?: boolean
  readonly embeddingUrl?: string
  readonly embeddingModel?: string
  readonly embeddingDimensions?: string
  readonly embeddingApiKeyEnv?: string
}

/** The flag of each embedding option recall's validation may name. */
const EMBEDDING_FLAGS: Readonly<Record<string, string>> = { 'embedding.baseUrl': '--embedding-url', 'embedding.model': '--embedding-model', 'embedding.dimensions': '--embedding-dimensions' }

/**
 * `--minilm` or `--embedding-url …` → recall's `embedding` options (validated by recall, as the
 * plugin's config is), or undefined without either. The bench waits up to a minute for a vector.
 * @throws CliUsageError naming the flag
 */
export function benchEmbedding(flags: BenchEmbeddingFlags, env: Record<string, string | undefined> = process.env): EmbeddingOptions | undefined {
  const endpointFlags = (['embeddingModel', 'embeddingDimensions', 'embeddingApiKeyEnv'] as const).filter((name) => flags[name] !== undefined)
  if (flags.embeddingUrl === undefined) {
    if (endpointFlags.length > 0) throw new CliUsageError(`--${endpointFlags[0]!.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} needs --embedding-url (the local embedding server it describes)`)
    if (!flags.minilm) return undefined
    try {
      assertMiniLmInstalled()
    } catch (error) {
      if (!isRecallError(error)) throw error
      throw new CliUsageError(`--minilm needs the optional packages ${MINILM_PACKAGES.join(' and ')} next to dsh-memory: npm i ${MINILM_PACKAGES.join(' ')}`)
    }
    return resolveRecallOptions({ embedding: { enabled: true, provider: 'minilm', timeoutMs: 60_000 } }).embedding
  }
  if (flags.minilm) throw new CliUsageError('--minilm and --embedding-url are two embedders: give one')
  if (flags.embeddingModel === undefined) throw new CliUsageError("--embedding-model is required with --embedding-url (recall's embedding.model)")
  if (flags.embeddingDimensions === undefined) throw new CliUsageError("--embedding-dimensions is required with --embedding-url (recall's embedding.dimensions)")
  const dimensions = parseCount('--embedding-dimensions', flags.embeddingDimensions)
  const apiKey = flags.embeddingApiKeyEnv === undefined ? '' : (env[flags.embeddingApiKeyEnv] ?? '').trim()
  if (flags.embeddingApiKeyEnv !== undefined && !apiKey) throw new CliUsageError(`--embedding-api-key-env ${flags.embeddingApiKeyEnv}: the environment variable ${flags.embeddingApiKeyEnv} is not set`)
  try {
    return resolveRecallOptions({ embedding: { enabled: true, provider: 'endpoint', baseUrl: flags.embeddingUrl, model: flags.embeddingModel, dimensions, apiKey, timeoutMs: 60_000 } }).embedding
  } catch (error) {
    if (!isRecallError(error) || !error.path) throw error
    throw new CliUsageError(`${EMBEDDING_FLAGS[error.path] ?? error.path}: ${error.message.replace(`memory-recall: ${error.path}: `, '')}`)
  }
}

const KEEP_HELP = 'with --database-url: keep the PostgreSQL schema the bench built (its name is printed) instead of dropping it'

/** Register `bench` and its subcommands on the program. */
export function registerBench(program: Command, io: CliIO): void {
  const bench = program.command('bench').description('Benchmarks that print numbers (retrieval quality, latency at scale, token cost, cue matching).')
  const locomo = bench
    .command('locomo')
    .description(
      'Turn-level retrieval on a LoCoMo-format file: recall_any@k and recall_all@k, overall and per category. With the program\'s --database-url, on SQLite and on PostgreSQL side by side (--json: {sqlite, postgres}).',
    )
    .requiredOption('--data <file>', 'LoCoMo-format JSON file (see shared/bench/README.md)')
    .option('--k <list>', 'comma-separated cut-offs', '5,10')
    .addOption(new Option('--mode <mode>', 'which modes to run').choices([...LOCOMO_MODES, 'all']).default('all'))
    .option('--samples <ids>', 'comma-separated sample ids to run (a tune or held-out split of the file); default: every sample')
    .option('--threshold <x>', 'recall.scoreThreshold of the injection mode, to calibrate it (0..1); default: recall\'s default')
    .option('--hybrid-threshold <x>', 'with --minilm or --embedding-url: recall.hybridThreshold of the injection mode, to calibrate it (0..1); default: recall\'s default')
    .option('--json', 'print one JSON object {mode: {recall_any, recall_all, by_category}} (with --database-url {sqlite: …, postgres: …}) and nothing else on stdout')
    .option(
      '--minilm',
      "modes turns and injection: recall's in-process MiniLM (the optional packages " +
        MINILM_PACKAGES.join(' and ') +
        ') as the embedder, as with embedding.provider minilm and strategy hybrid: turns get vectors and conversation search fuses them; memories get vectors and the injection ranks them hybrid',
    )
    .addOption(new Option('--strategy <strategy>', "with --minilm or --embedding-url: recall.strategy of the injection mode (default hybrid, recall's default)").choices(['hybrid', 'embedding']))
    .option('--embedding-url <url>', "modes turns and injection: a local OpenAI-compatible embeddings server (recall's embedding.baseUrl; requests go to <url>/embeddings) as the embedder, as with embedding.provider endpoint and strategy hybrid; needs --embedding-model and --embedding-dimensions")
    .option('--embedding-model <name>', "with --embedding-url: recall's embedding.model")
    .option('--embedding-dimensions <n>', "with --embedding-url: recall's embedding.dimensions (answers of another size are refused)")
    .option('--embedding-api-key-env <name>', 'with --embedding-url: the environment variable holding a key to send (a local server needs none)')
    .option('--keep', KEEP_HELP)
    .option('--quiet', 'no progress output')
    .action(async (options: BackendOptions & BenchEmbeddingFlags & { data: string; k: string; mode: string; samples?: string; threshold?: string; hybridThreshold?: string; strategy?: 'hybrid' | 'embedding'; json?: boolean; quiet?: boolean }) => {
      const backends = benchBackends(options)
      const ks = parseKs(options.k)
      const modes = parseModes(options.mode)
      const embedding = benchEmbedding(options)
      const embedderFlag = options.minilm ? '--minilm' : '--embedding-url'
      if (embedding && !modes.includes('turns') && !modes.includes('injection')) throw new CliUsageError(`${embedderFlag} applies to modes turns and injection; it does nothing with --mode ${options.mode}`)
      const scoreThreshold = options.threshold === undefined ? undefined : parseThreshold(options.threshold)
      const hybridThreshold = options.hybridThreshold === undefined ? undefined : parseThreshold(options.hybridThreshold, '--hybrid-threshold', '0.85')
      if (hybridThreshold !== undefined && !(embedding && modes.includes('injection'))) throw new CliUsageError('--hybrid-threshold applies to mode injection with --minilm or --embedding-url (it gates memories by words and meaning)')
      if (options.strategy !== undefined && !(embedding && modes.includes('injection'))) throw new CliUsageError('--strategy applies to mode injection with --minilm or --embedding-url (without an embedder recall ranks by keywords)')
      let text: string
      try {
        text = await readFile(options.data, 'utf8')
      } catch (error) {
        throw new CliUsageError(`cannot read --data ${options.data}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`)
      }
      let json: unknown
      try {
        json = JSON.parse(text)
      } catch (error) {
        throw new CliUsageError(`--data ${options.data} is not valid JSON: ${(error as Error).message}`)
      }
      let samples
      try {
        samples = parseLocomo(json)
      } catch (error) {
        if (error instanceof LocomoFormatError) throw new CliUsageError(`--data ${options.data} is not LoCoMo-shaped: ${error.message}`)
        throw error
      }
      if (options.samples !== undefined) {
        const ids = options.samples.split(',').map((id) => id.trim()).filter(Boolean)
        if (ids.length === 0) throw new CliUsageError('--samples expects a comma-separated list of sample ids (like conv-26,conv-30)')
        try {
          samples = selectSamples(samples, ids)
        } catch (error) {
          if (error instanceof LocomoFormatError) throw new CliUsageError(`--samples: ${error.message.replace(/^\$: /, '')}`)
          throw error
        }
      }
      const reports: Record<string, LocomoReport> = {}
      // Both backends load the same texts: each is embedded once.
      const vectorCache = new Map<string, Float32Array>()
      for (const backend of backends) {
        reports[backend.kind] = await runLocomoBench(samples, { ks, modes, scoreThreshold, hybridThreshold, strategy: options.strategy, backend, embedding, vectorCache, progress: createProgress(io, options.quiet === true) })
      }
      if (backends.length === 1) {
        const report = reports.sqlite!
        io.stdout.write(options.json ? `${JSON.stringify(report)}\n` : `${formatLocomoReport(report, ks)}\n`)
      } else io.stdout.write(options.json ? `${JSON.stringify(reports)}\n` : `${formatLocomoComparison(reports, ks)}\n`)
    })
  takesDatabaseUrl(locomo)
  registerScaleBenches(bench, io)
  registerCueBench(bench, io)
  registerPalaceBench(bench, io)
  registerSuggestBench(bench, io)
}

/** `bench scale` and `bench token-cost` (src/bench/scale.ts, src/bench/token-cost.ts). */
function registerScaleBenches(bench: Command, io: CliIO): void {
  const scale = bench
    .command('scale')
    .description(
      'Recall latency (p50/p95), capture overhead, index build time, database size and memory use on stores of 10k/100k L1 memories and 10k/100k/1M L0 messages. With the program\'s --database-url, on SQLite and on PostgreSQL side by side (--json: {sqlite, postgres}).',
    )
    .option('--sizes <list>', 'comma-separated stores to build, like memories:10k,memories:100k,messages:1m (default: the full set)')
    .option('--quick', 'tiny stores (1k memories, 2k messages) for a smoke test; the figures are not meaningful')
    .option('--runs <n>', 'timed recall runs per store', '40')
    .option('--json', 'print one JSON object {backend, recall_ms, capture_ms_per_event, …} (with --database-url {sqlite: …, postgres: …}) and nothing else on stdout')
    .option('--keep', KEEP_HELP)
    .option('--quiet', 'no progress output')
    .action(async (options: BackendOptions & { sizes?: string; quick?: boolean; runs: string; json?: boolean; quiet?: boolean }) => {
      const backends = benchBackends(options)
      let sizes
      try {
        sizes = options.sizes ? parseSizes(options.sizes) : options.quick ? [...QUICK_SIZES] : [...FULL_SIZES]
      } catch (error) {
        throw new CliUsageError((error as Error).message)
      }
      const runs = parseCount('--runs', options.runs)
      const log = options.quiet ? undefined : (line: string) => io.stderr.write(`${line}\n`)
      // The scratch stores can take gigabytes: Ctrl-C removes them before the process ends.
      const workDir = mkdtempSync(join(tmpdir(), 'dshm-bench-scale-'))
      const removeWorkDir = () => rmSync(workDir, { recursive: true, force: true })
      const release = onInterrupt(removeWorkDir)
      const reports: Record<string, ScaleReport> = {}
      try {
        for (const backend of backends) {
          const backendLog = log && backends.length > 1 ? (line: string) => log(`[${backend.kind}] ${line}`) : log
          reports[backend.kind] = await runScaleBench({
            sizes,
            backend,
            workDir: join(workDir, backend.kind),
            runs: options.quick ? Math.min(runs, 10) : runs,
            ...(options.quick ? { captureEvents: 200 } : {}),
            ...(backendLog ? { log: backendLog } : {}),
          })
        }
      } finally {
        release()
        removeWorkDir()
      }
      if (backends.length === 1) {
        const report = reports.sqlite!
        io.stdout.write(options.json ? `${JSON.stringify(report)}\n` : `${formatScaleReport(report)}\n`)
      } else io.stdout.write(options.json ? `${JSON.stringify(reports)}\n` : `${formatScaleComparison(reports)}\n`)
    })
  takesDatabaseUrl(scale)
  bench
    .command('cjk')
    .description('Chinese/Japanese paraphrase retrieval: 106 hand-written query→memory pairs among 3000 distractor memories; recall@1/3/10 of the store search and the recall ranking, and what the automatic recall injects (hits and false matches).')
    .option('--distractors <n>', 'distractor memories', '3000')
    .option('--json', 'print one JSON object {overall, by_kind, unanswerable, distractors} and nothing else on stdout')
    .option('--embedding-url <url>', "a local OpenAI-compatible embeddings server (recall's embedding.baseUrl): every memory gets its vector, and the recall ranking and the injection run hybrid; needs --embedding-model and --embedding-dimensions")
    .option('--embedding-model <name>', "with --embedding-url: recall's embedding.model")
    .option('--embedding-dimensions <n>', "with --embedding-url: recall's embedding.dimensions")
    .option('--embedding-api-key-env <name>', 'with --embedding-url: the environment variable holding a key to send (a local server needs none)')
    .option('--hybrid-threshold <x>', "with --embedding-url: recall.hybridThreshold of the injection, to calibrate it for that model (0..1); default: recall's default")
    .action(async (options: BenchEmbeddingFlags & { distractors: string; json?: boolean; hybridThreshold?: string }) => {
      const embedding = benchEmbedding(options)
      const hybridThreshold = options.hybridThreshold === undefined ? undefined : parseThreshold(options.hybridThreshold, '--hybrid-threshold', '0.85')
      if (hybridThreshold !== undefined && !embedding) throw new CliUsageError('--hybrid-threshold applies with --embedding-url (it gates memories by words and meaning)')
      const report = await runCjkBench({ distractors: parseCount('--distractors', options.distractors), embedding, hybridThreshold })
      io.stdout.write(options.json ? `${JSON.stringify(report)}\n` : `${formatCjkReport(report)}\n`)
    })
  bench
    .command('token-cost')
    .description('Distillation input and output tokens per captured message over a scripted 72-message conversation (real capture and distiller, scripted model).')
    .option('--json', 'print one JSON object {input_tokens_per_message, output_tokens_per_message, by_layer, …} and nothing else on stdout')
    .action(async (options: { json?: boolean }) => {
      const report = await runTokenCostBench()
      io.stdout.write(options.json ? `${JSON.stringify(report)}\n` : `${formatTokenCostReport(report)}\n`)
    })
}
