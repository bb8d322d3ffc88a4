import { findUnknownOption, optionKeysOf, strictOptionsSchema } from '@dsh-memory/store/kit'
import { DistillError } from './errors.js'

/** One provider route: the provider id the host registered and a model id of that provider. */
export interface ModelRoute {
  readonly provider: string
  readonly model: string
}

/** The layers that call the model; `dedup` rides the `l1` route chain. */
export type DistillLayer = 'l1' | 'dedup' | 'l2' | 'l3'

/** L1 extraction triggers and batching (the reference's `extract` block, plus two bounds of ours). */
export interface ExtractOptions {
  /** Master switch of L1 extraction (and with it of everything downstream of new memories). */
  readonly enabled: boolean
  /** Steady-state threshold N: new messages a session accumulates before one extraction. The ramp is 1→2→4→…→N. */
  readonly minMessages: number
  /** Idle fallback: a session silent this long has its pending slice extracted anyway. 0 disables. */
  readonly idleSeconds: number
  /** Preceding messages sent along as context (marked so, never extracted from). */
  readonly backgroundMessages: number
  /** Similar existing memories (same scope) each new memory is compared with for dedup. */
  readonly candidatePool: number
  /** Most new messages one extraction call reads; a longer backlog is split into several slices. */
  readonly maxBatchMessages: number
  /** How long a session flush (headless exit) may wait for that session's due work. 0 = never wait. */
  readonly flushWaitMs: number
  /**
   * Consecutive failed extractions of one conversation before it is given up on (the backoff
   * doubles from 30 s to 1 h between them). A new message in that conversation, or
   * `runPending`, gives it one more try.
   */
  readonly maxAttempts: number
}

/** L2 scene consolidation. */
export interface L2Options {
  readonly enabled: boolean
  /** New L1 memories in a scope since the last L2 pass that trigger the next one. */
  readonly minNewMemories: number
  /** Most scenes per scope; creations beyond it are refused. */
  readonly maxScenes: number
  /** Most related scenes whose full summary goes into the L2 prompt (others appear by title only). */
  readonly sceneContextLimit: number
}

/** L3 persona distillation. */
export interface L3Options {
  readonly enabled: boolean
  /** New L1 memories in a scope since the last persona that trigger a rewrite. */
  readonly interval: number
}

/** Per-layer route chains; an empty chain means "the default chain". */
export interface LayerRoutes {
  readonly l1: readonly ModelRoute[]
  readonly l2: readonly ModelRoute[]
  readonly l3: readonly ModelRoute[]
}

/** Model routing and call limits. */
export interface LlmOptions {
  /** Static route; empty (with `model` empty) = the agent's current/default route. */
  readonly provider: string
  readonly model: string
  /** Tried in order when the primary route fails. */
  readonly fallbacks: readonly ModelRoute[]
  /** A complete chain per layer, replacing primary + fallbacks for that layer. */
  readonly layerRoutes: LayerRoutes
  /** Output cap of one call, in tokens. */
  readonly maxTokens: number
  /** Adapter reasoning effort; `''` leaves the provider default. */
  readonly reasoningEffort: string
  readonly temperature: number
  /** Input budget of one call, in characters (prompt + system). */
  readonly maxInputChars: number
  /** Timeout of one call on one route, in milliseconds. */
  readonly timeoutMs: number
}

/** Token-cost ledger. */
export interface TokenCostOptions {
  /** Days of ledger kept; 0 = forever. */
  readonly retentionDays: number
}

/** Every option of the distiller, after defaults. */
export interface DistillOptions {
  readonly extract: ExtractOptions
  readonly l2: L2Options
  readonly l3: L3Options
  readonly llm: LlmOptions
  readonly tokenCost: TokenCostOptions
}

/** Input of {@link resolveDistillOptions}: any subset, nested blocks partial too. */
export type DistillOptionsInput = {
  readonly [K in keyof DistillOptions]?: K extends 'llm'
    ? Partial<Omit<LlmOptions, 'layerRoutes'>> & { readonly layerRoutes?: Partial<LayerRoutes> }
    : Partial<DistillOptions[K]>
}

/** The defaults: the reference's values, except where a lower value keeps cost bounded (see README). */
export const DEFAULT_DISTILL_OPTIONS: DistillOptions = deepFreeze({
  extract: {
    enabled: true,
    minMessages: 6,
    idleSeconds: 300,
    backgroundMessages: 10,
    candidatePool: 5,
    maxBatchMessages: 40,
    flushWaitMs: 5_000,
    maxAttempts: 10,
  },
  l2: { enabled: true, minNewMemories: 5, maxScenes: 12, sceneContextLimit: 3 },
  l3: { enabled: true, interval: 20 },
  llm: {
    provider: '',
    model: '',
    fallbacks: [],
    layerRoutes: { l1: [], l2: [], l3: [] },
    maxTokens: 8_192,
    reasoningEffort: 'off',
    temperature: 0.3,
    maxInputChars: 700_000,
    timeoutMs: 120_000,
  },
  tokenCost: { retentionDays: 365 },
})

/** The option keys; any other key is refused. */
const OPTION_KEYS = strictOptionsSchema(optionKeysOf(DEFAULT_DISTILL_OPTIONS))

/** setTimeout's limit; larger delays fire at once. */
const MAX_TIMER_MS = 2_147_483_647

/**
 * Fill defaults and check every field, including the cross-field rules the schema cannot
 * express (provider and model together, routes complete, bounds).
 * @returns a deep-frozen options object.
 * @throws DistillError `invalid-config` naming the field path, e.g. `extract.minMessages`.
 */
export function resolveDistillOptions(input: DistillOptionsInput = {}): DistillOptions {
  if (!input || typeof input !== 'object') fail('', 'options must be an object')
  const unknown = findUnknownOption(input, OPTION_KEYS)
  if (unknown) fail(unknown.path, unknown.message)
  const d = DEFAULT_DISTILL_OPTIONS
  const extractIn = block(input, 'extract')
  const l2In = block(input, 'l2')
  const l3In = block(input, 'l3')
  const llmIn = block(input, 'llm')
  const costIn = block(input, 'tokenCost')

  const extract: ExtractOptions = {
    enabled: bool('extract.enabled', extractIn.enabled ?? d.extract.enabled),
    minMessages: int('extract.minMessages', extractIn.minMessages ?? d.extract.minMessages, 1, 10_000),
    idleSeconds: int('extract.idleSeconds', extractIn.idleSeconds ?? d.extract.idleSeconds, 0, Math.floor(MAX_TIMER_MS / 1000)),
    backgroundMessages: int('extract.backgroundMessages', extractIn.backgroundMessages ?? d.extract.backgroundMessages, 0, 200),
    candidatePool: int('extract.candidatePool', extractIn.candidatePool ?? d.extract.candidatePool, 0, 50),
    maxBatchMessages: int('extract.maxBatchMessages', extractIn.maxBatchMessages ?? d.extract.maxBatchMessages, 1, 1_000),
    flushWaitMs: int('extract.flushWaitMs', extractIn.flushWaitMs ?? d.extract.flushWaitMs, 0, 600_000),
    maxAttempts: int('extract.maxAttempts', extractIn.maxAttempts ?? d.extract.maxAttempts, 1, 1_000),
  }
  if (extract.maxBatchMessages < extract.minMessages) {
    fail('extract.maxBatchMessages', `must be at least extract.minMessages (${extract.minMessages}), got ${extract.maxBatchMessages}`)
  }
  const l2: L2Options = {
    enabled: bool('l2.enabled', l2In.enabled ?? d.l2.enabled),
    minNewMemories: int('l2.minNewMemories', l2In.minNewMemories ?? d.l2.minNewMemories, 1, 10_000),
    maxScenes: int('l2.maxScenes', l2In.maxScenes ?? d.l2.maxScenes, 1, 200),
    sceneContextLimit: int('l2.sceneContextLimit', l2In.sceneContextLimit ?? d.l2.sceneContextLimit, 0, 200),
  }
  const l3: L3Options = {
    enabled: bool('l3.enabled', l3In.enabled ?? d.l3.enabled),
    interval: int('l3.interval', l3In.interval ?? d.l3.interval, 1, 100_000),
  }
  const provider = str('llm.provider', llmIn.provider ?? d.llm.provider).trim()
  const model = str('llm.model', llmIn.model ?? d.llm.model).trim()
  if ((provider === '') !== (model === '')) {
    fail(provider ? 'llm.model' : 'llm.provider', 'llm.provider and llm.model must be set together (or both left empty for the agent default)')
  }
  const layerIn = (llmIn.layerRoutes ?? {}) as Partial<Record<string, unknown>>
  if (!layerIn || typeof layerIn !== 'object' || Array.isArray(layerIn)) fail('llm.layerRoutes', 'must be an object with l1, l2, l3 route lists')
  for (const key of Object.keys(layerIn)) {
    if (key !== 'l1' && key !== 'l2' && key !== 'l3') fail(`llm.layerRoutes.${key}`, 'unknown layer (expected l1, l2 or l3)')
  }
  const llm: LlmOptions = {
    provider,
    model,
    fallbacks: routes('llm.fallbacks', llmIn.fallbacks ?? d.llm.fallbacks),
    layerRoutes: {
      l1: routes('llm.layerRoutes.l1', layerIn.l1 ?? []),
      l2: routes('llm.layerRoutes.l2', layerIn.l2 ?? []),
      l3: routes('llm.layerRoutes.l3', layerIn.l3 ?? []),
    },
    maxTokens: int('llm.maxTokens', llmIn.maxTokens ?? d.llm.maxTokens, 256, 1_000_000),
    reasoningEffort: str('llm.reasoningEffort', llmIn.reasoningEffort ?? d.llm.reasoningEffort).trim(),
    temperature: num('llm.temperature', llmIn.temperature ?? d.llm.temperature, 0, 2),
    maxInputChars: int('llm.maxInputChars', llmIn.maxInputChars ?? d.llm.maxInputChars, 2_000, 100_000_000),
    timeoutMs: int('llm.timeoutMs', llmIn.timeoutMs ?? d.llm.timeoutMs, 1_000, MAX_TIMER_MS),
  }
  const tokenCost: TokenCostOptions = {
    retentionDays: int('tokenCost.retentionDays', costIn.retentionDays ?? d.tokenCost.retentionDays, 0, 36_500),
  }
  return deepFreeze({ extract, l2, l3, llm, tokenCost })
}

function block(input: DistillOptionsInput, key: keyof DistillOptions): Record<string, any> {
  const value = (input as Record<string, unknown>)[key]
  if (value === undefined || value === null) return {}
  if (typeof value !== 'object' || Array.isArray(value)) fail(key, 'must be an object')
  return value as Record<string, any>
}

function fail(path: string, message: string): never {
  throw new DistillError('invalid-config', `memory-distill: ${path ? `${path}: ` : ''}${message}`, path ? { path } : {})
}

function bool(path: string, value: unknown): boolean {
  if (typeof value !== 'boolean') fail(path, `must be a boolean, got ${JSON.stringify(value)}`)
  return value
}

function str(path: string, value: unknown): string {
  if (typeof value !== 'string') fail(path, `must be a string, got ${JSON.stringify(value)}`)
  return value
}

function num(path: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) fail(path, `must be a number, got ${JSON.stringify(value)}`)
  if (value < min || value > max) fail(path, `must be between ${min} and ${max}, got ${value}`)
  return value
}

function int(path: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) fail(path, `must be an integer, got ${JSON.stringify(value)}`)
  return num(path, value, min, max)
}

function routes(path: string, value: unknown): ModelRoute[] {
  if (!Array.isArray(value)) fail(path, 'must be a list of {provider, model}')
  return value.map((entry, index) => {
    if (!entry || typeof entry !== 'object') fail(`${path}[${index}]`, 'must be an object {provider, model}')
    const { provider, model } = entry as Record<string, unknown>
    if (typeof provider !== 'string' || provider.trim() === '') fail(`${path}[${index}].provider`, 'must be a non-empty string')
    if (typeof model !== 'string' || model.trim() === '') fail(`${path}[${index}].model`, 'must be a non-empty string')
    return { provider: provider.trim(), model: model.trim() }
  })
}

/** Freeze an object graph (options are shared between jobs and must not be mutated). */
export function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const child of Object.values(value as Record<string, unknown>)) deepFreeze(child)
  }
  return value
}
