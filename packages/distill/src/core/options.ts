import { z } from 'zod'
import { DistillError } from './errors.js'

/** One provider route: the provider id the host registered and a model id of that provider. */
export interface ModelRoute {
  readonly provider: string
  readonly model: string
}

/** The layers that call the model; `dedup` rides the `l1` route chain. The cost ledger's `layer` column holds one of them. */
export const DISTILL_LAYERS = ['l1', 'dedup', 'l2', 'l3'] as const
/** One of {@link DISTILL_LAYERS}. */
export type DistillLayer = (typeof DISTILL_LAYERS)[number]

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

/** setTimeout's limit; larger delays fire at once. */
const MAX_TIMER_MS = 2_147_483_647

const shown = (value: unknown) => JSON.stringify(value) ?? String(value)
const bool = () => z.boolean({ error: (issue) => `must be a boolean, got ${shown(issue.input)}` })
const str = () => z.string({ error: (issue) => `must be a string, got ${shown(issue.input)}` })
/** A number (an integer when `integer`) within [min, max]; the messages name the bound and the value. */
const bounded = (min: number, max: number, integer = true) =>
  z
    .number({ error: (issue) => `must be ${integer ? 'an integer' : 'a number'}, got ${shown(issue.input)}` })
    .refine((value) => !integer || Number.isInteger(value), { error: (issue) => `must be an integer, got ${shown(issue.input)}` })
    .refine((value) => value >= min && value <= max, { error: (issue) => `must be between ${min} and ${max}, got ${shown(issue.input)}` })
const nonEmpty = () => str().trim().min(1, { error: 'must be a non-empty string' })
const route = z.strictObject({ provider: nonEmpty(), model: nonEmpty() }, { error: 'must be an object {provider, model}' })
const routes = () => z.array(route, { error: 'must be a list of {provider, model}' })
/** A block of options: any subset of its fields, unknown keys rejected; null counts as absent. */
const block = <T extends z.ZodRawShape>(shape: T) => z.strictObject(shape, { error: 'must be an object' }).partial().nullish()

/**
 * The one schema of distill's options (plugin config, live settings, library callers): every
 * field optional, unknown keys rejected at every level so a typo fails loudly.
 */
export const distillOptionsSchema = z.strictObject(
  {
    extract: block({
      enabled: bool(),
      minMessages: bounded(1, 10_000),
      idleSeconds: bounded(0, Math.floor(MAX_TIMER_MS / 1000)),
      backgroundMessages: bounded(0, 200),
      candidatePool: bounded(0, 50),
      maxBatchMessages: bounded(1, 1_000),
      flushWaitMs: bounded(0, 600_000),
      maxAttempts: bounded(1, 1_000),
    }),
    l2: block({ enabled: bool(), minNewMemories: bounded(1, 10_000), maxScenes: bounded(1, 200), sceneContextLimit: bounded(0, 200) }),
    l3: block({ enabled: bool(), interval: bounded(1, 100_000) }),
    llm: block({
      provider: str().trim(),
      model: str().trim(),
      fallbacks: routes(),
      layerRoutes: z
        .strictObject({ l1: routes(), l2: routes(), l3: routes() }, { error: 'must be an object with l1, l2, l3 route lists' })
        .partial()
        .nullish(),
      maxTokens: bounded(256, 1_000_000),
      reasoningEffort: str().trim(),
      temperature: bounded(0, 2, false),
      maxInputChars: bounded(2_000, 100_000_000),
      timeoutMs: bounded(1_000, MAX_TIMER_MS),
    }),
    tokenCost: block({ retentionDays: bounded(0, 36_500) }),
  },
  { error: 'options must be an object' },
)

/** `llm.fallbacks[0].model` from a zod issue path (an unknown key is named by its own path). */
function issuePath(issue: z.core.$ZodIssue): string {
  const path = issue.code === 'unrecognized_keys' ? [...issue.path, issue.keys[0]!] : issue.path
  return path.reduce<string>((out, part) => (typeof part === 'number' ? `${out}[${part}]` : out ? `${out}.${String(part)}` : String(part)), '')
}

/**
 * Fill defaults and check every field (one strict zod schema), then the cross-field rules the
 * schema cannot express (provider and model together, batch at least the threshold).
 * @returns a deep-frozen options object.
 * @throws DistillError `invalid-config` naming the field path, e.g. `extract.minMessages`.
 */
export function resolveDistillOptions(input: DistillOptionsInput = {}): DistillOptions {
  const parsed = distillOptionsSchema.safeParse(input)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!
    fail(issuePath(issue), issue.code === 'unrecognized_keys' ? 'unknown option (check the spelling)' : issue.message)
  }
  const given = parsed.data
  const d = DEFAULT_DISTILL_OPTIONS
  const extract: ExtractOptions = { ...d.extract, ...given.extract }
  if (extract.maxBatchMessages < extract.minMessages) {
    fail('extract.maxBatchMessages', `must be at least extract.minMessages (${extract.minMessages}), got ${extract.maxBatchMessages}`)
  }
  const { layerRoutes, ...llmGiven } = given.llm ?? {}
  const llm: LlmOptions = { ...d.llm, ...llmGiven, layerRoutes: { l1: [], l2: [], l3: [], ...layerRoutes } }
  if ((llm.provider === '') !== (llm.model === '')) {
    fail(llm.provider ? 'llm.model' : 'llm.provider', 'llm.provider and llm.model must be set together (or both left empty for the agent default)')
  }
  return deepFreeze({ extract, l2: { ...d.l2, ...given.l2 }, l3: { ...d.l3, ...given.l3 }, llm, tokenCost: { ...d.tokenCost, ...given.tokenCost } })
}

function fail(path: string, message: string): never {
  throw new DistillError('invalid-config', `memory-distill: ${path ? `${path}: ` : ''}${message}`, path ? { path } : {})
}

/** Freeze an object graph (options are shared between jobs and must not be mutated). */
export function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const child of Object.values(value as Record<string, unknown>)) deepFreeze(child)
  }
  return value
}
