import { findUnknownOption, optionKeysOf, strictOptionsSchema } from '@dsh-memory/store/kit'
import { CueBankError } from './errors.js'

/** How cues are partitioned (the reference partitions per user). */
export type PartitionMode = 'workspace' | 'user' | 'global'

/** How a new message is matched against stored cues. */
export type MatchMode = 'auto' | 'keyword' | 'vector'

/** The OpenAI-compatible `/embeddings` endpoint used by `vector` / `auto` matching. */
export interface EmbeddingOptions {
  /** Base URL; requests go to `{baseURL}/embeddings`. Empty disables vectors. */
  readonly baseURL: string
  /** API key; empty means read it from {@link EmbeddingOptions.apiKeyEnv}. */
  readonly apiKey: string
  /** Environment variable holding the API key. */
  readonly apiKeyEnv: string
  readonly model: string
  /** Expected vector length; answers of another length are rejected. 0 = accept any (and do not send `dimensions`). */
  readonly dimensions: number
  /** Abort one embedding request after this many ms. */
  readonly timeoutMs: number
  /** How long prompt assembly may wait for the query embedding before it falls back to keyword matching. */
  readonly waitMs: number
}

/** Topic-switch detection (the wake trigger). */
export interface TopicOptions {
  readonly switchDetection: boolean
  /** Keyword overlap with the previous turn below this value is a topic switch (0..1). */
  readonly switchThreshold: number
  /** Scan on every user message, not only on a switch. */
  readonly scanEveryTurn: boolean
  /** Keywords taken from a new user message for detection and matching. */
  readonly maxKeywords: number
}

/** What the wake side injects. */
export interface InjectOptions {
  readonly enabled: boolean
  readonly maxCues: number
  /** Longest detail excerpt per cue, in characters. */
  readonly maxDetailChars: number
  /** Lowest keyword match score (0..1, after decay) that may wake a cue. */
  readonly minScore: number
  /** Lowest cosine similarity (after decay) that may wake a cue in vector matching. */
  readonly minVectorScore: number
  /** Order of the runtime-context contribution among other plugins' contexts. */
  readonly order: number
  /**
   * `tagged`: our English `<memory-cues>` block with cue ids. `reference`: the cue-bank
   * reference's `<system-reminder>` block (📌 记忆唤醒, 触点命中 / 最近提及 / 细节).
   */
  readonly format: CueBlockFormat
}

/** Shape of the wake block (see {@link InjectOptions.format}). */
export type CueBlockFormat = 'tagged' | 'reference'

/** What the write side extracts at the end of each turn. */
export interface ExtractOptions {
  readonly enabled: boolean
  readonly maxKeywordsPerTurn: number
  /** Shortest keyword, in characters (code points). */
  readonly keywordMinLen: number
  /** User idioms are counted over this many recent user turns of the partition. */
  readonly userIdiomWindowTurns: number
  /** At most this many idioms are offered in the hint line. */
  readonly maxIdiomHints: number
}

/** Forgetting: untouched cues lose weight and finally leave the bank. */
export interface DecayOptions {
  /** A cue untouched for this many days counts half as much. 0 disables decay. */
  readonly halfLifeDays: number
  /** Cues whose decay factor falls below this are deleted at the next write. 0 never deletes. */
  readonly pruneBelow: number
}

/** Options of the cue bank as the core uses them. */
export interface CueBankOptions {
  readonly partition: PartitionMode
  /**
   * Whose bank `partition: 'user'` fills when the session id is not a chat-app id
   * (`<channel>:<user>`): empty means the operating-system account (`USER`, `USERNAME` or
   * `LOGNAME`), so one person has one bank in every workspace and profile.
   */
  readonly userId: string
  /** Also read (never write) the `global` partition, e.g. imported cues. */
  readonly includeGlobal: boolean
  readonly matchMode: MatchMode
  readonly embedding: EmbeddingOptions
  readonly topic: TopicOptions
  readonly inject: InjectOptions
  readonly extract: ExtractOptions
  readonly decay: DecayOptions
  /** Topic cues kept per partition; the least recently touched are evicted first. */
  readonly maxTopics: number
  /** Idioms kept per partition; the least recently seen are evicted first. */
  readonly maxIdioms: number
  /** Log each write and wake decision at info level. */
  readonly dbg: boolean
}

/** {@link CueBankOptions} after defaults and checks, plus derived facts; deeply frozen. */
export interface ResolvedCueBankOptions extends CueBankOptions {
  /** The key actually used for embeddings ('' when none). Never logged. */
  readonly embeddingKey: string
  /** True when vectors can be computed: a base URL and a key are configured. */
  readonly vectorAvailable: boolean
  /** The user of `partition: 'user'` for session ids that name none: `userId`, else the OS account, else `local`. */
  readonly localUser: string
}

/** A deep partial of {@link CueBankOptions}, the input of {@link resolveCueBankOptions}. */
export type CueBankOptionsInput = {
  [K in keyof CueBankOptions]?: CueBankOptions[K] extends object ? Partial<CueBankOptions[K]> : CueBankOptions[K]
}

/** The defaults, matching the reference's documented configuration where it has one. */
export const DEFAULT_CUE_BANK_OPTIONS: CueBankOptions = deepFreeze({
  partition: 'workspace',
  userId: '',
  includeGlobal: true,
  matchMode: 'auto',
  embedding: {
    baseURL: 'https://api.siliconflow.cn/v1',
    apiKey: '',
    apiKeyEnv: 'SILICONFLOW_API_KEY',
    model: 'BAAI/bge-m3',
    dimensions: 1024,
    timeoutMs: 5000,
    waitMs: 1500,
  },
  topic: { switchDetection: true, switchThreshold: 0.25, scanEveryTurn: false, maxKeywords: 10 },
  inject: { enabled: true, maxCues: 3, maxDetailChars: 400, minScore: 0.15, minVectorScore: 0.3, order: 400, format: 'tagged' },
  extract: { enabled: true, maxKeywordsPerTurn: 12, keywordMinLen: 2, userIdiomWindowTurns: 10, maxIdiomHints: 5 },
  decay: { halfLifeDays: 30, pruneBelow: 0.02 },
  maxTopics: 200,
  maxIdioms: 50,
  dbg: false,
})

/** The option keys; any other key is refused. */
const OPTION_KEYS = strictOptionsSchema(optionKeysOf(DEFAULT_CUE_BANK_OPTIONS))

/**
 * Fill defaults and check every field plus the cross-field rules the schema cannot express.
 * @param env - where `embedding.apiKeyEnv` is looked up (default `process.env`).
 * @returns a deeply frozen options object.
 * @throws CueBankError `invalid-config` whose `path` names the field.
 */
export function resolveCueBankOptions(
  input: CueBankOptionsInput = {},
  env: Readonly<Record<string, string | undefined>> = process.env,
): ResolvedCueBankOptions {
  if (input === null || typeof input !== 'object') throw invalid('', 'options must be an object')
  const unknown = findUnknownOption(input, OPTION_KEYS)
  if (unknown) throw invalid(unknown.path, unknown.message)
  const d = DEFAULT_CUE_BANK_OPTIONS
  const section = <K extends 'embedding' | 'topic' | 'inject' | 'extract' | 'decay'>(key: K): CueBankOptions[K] => {
    const value = input[key]
    if (value !== undefined && (value === null || typeof value !== 'object')) throw invalid(key, 'must be an object')
    return { ...d[key], ...(value ?? {}) } as CueBankOptions[K]
  }
  const options: CueBankOptions = {
    partition: input.partition ?? d.partition,
    userId: input.userId ?? d.userId,
    includeGlobal: input.includeGlobal ?? d.includeGlobal,
    matchMode: input.matchMode ?? d.matchMode,
    embedding: section('embedding'),
    topic: section('topic'),
    inject: section('inject'),
    extract: section('extract'),
    decay: section('decay'),
    maxTopics: input.maxTopics ?? d.maxTopics,
    maxIdioms: input.maxIdioms ?? d.maxIdioms,
    dbg: input.dbg ?? d.dbg,
  }

  oneOf('partition', options.partition, ['workspace', 'user', 'global'])
  str('userId', options.userId)
  if (options.userId.length > 200 || /[\u0000-\u001f]/.test(options.userId)) throw invalid('userId', 'must be at most 200 characters without control characters')
  bool('includeGlobal', options.includeGlobal)
  oneOf('matchMode', options.matchMode, ['auto', 'keyword', 'vector'])
  bool('dbg', options.dbg)
  integer('maxTopics', options.maxTopics, 1, 100_000)
  integer('maxIdioms', options.maxIdioms, 0, 10_000)

  const e = options.embedding
  str('embedding.baseURL', e.baseURL)
  if (e.baseURL !== '' && !/^https?:\/\/[^\s]+$/i.test(e.baseURL)) throw invalid('embedding.baseURL', `must be an http(s) URL, got ${JSON.stringify(e.baseURL)}`)
  str('embedding.apiKey', e.apiKey)
  str('embedding.apiKeyEnv', e.apiKeyEnv)
  str('embedding.model', e.model)
  integer('embedding.dimensions', e.dimensions, 0, 65_536)
  integer('embedding.timeoutMs', e.timeoutMs, 100, 600_000)
  integer('embedding.waitMs', e.waitMs, 0, 600_000)
  if (e.waitMs > e.timeoutMs) throw invalid('embedding.waitMs', `must not exceed embedding.timeoutMs (${e.timeoutMs})`)

  const t = options.topic
  bool('topic.switchDetection', t.switchDetection)
  fraction('topic.switchThreshold', t.switchThreshold)
  bool('topic.scanEveryTurn', t.scanEveryTurn)
  integer('topic.maxKeywords', t.maxKeywords, 1, 100)

  const i = options.inject
  bool('inject.enabled', i.enabled)
  integer('inject.maxCues', i.maxCues, 1, 20)
  integer('inject.maxDetailChars', i.maxDetailChars, 0, 10_000)
  fraction('inject.minScore', i.minScore)
  fraction('inject.minVectorScore', i.minVectorScore)
  if (typeof i.order !== 'number' || !Number.isFinite(i.order)) throw invalid('inject.order', `must be a finite number, got ${JSON.stringify(i.order)}`)
  oneOf('inject.format', i.format, ['tagged', 'reference'])

  const x = options.extract
  bool('extract.enabled', x.enabled)
  integer('extract.maxKeywordsPerTurn', x.maxKeywordsPerTurn, 1, 100)
  integer('extract.keywordMinLen', x.keywordMinLen, 1, 10)
  integer('extract.userIdiomWindowTurns', x.userIdiomWindowTurns, 2, 1000)
  integer('extract.maxIdiomHints', x.maxIdiomHints, 0, 50)

  const y = options.decay
  if (typeof y.halfLifeDays !== 'number' || !Number.isFinite(y.halfLifeDays) || y.halfLifeDays < 0) {
    throw invalid('decay.halfLifeDays', `must be a non-negative number, got ${JSON.stringify(y.halfLifeDays)}`)
  }
  fraction('decay.pruneBelow', y.pruneBelow)
  if (y.pruneBelow >= 1) throw invalid('decay.pruneBelow', 'must be below 1, or every untouched cue would be deleted at once')

  const embeddingKey = e.apiKey || (e.apiKeyEnv ? (env[e.apiKeyEnv] ?? '') : '')
  if (options.matchMode === 'vector' && e.baseURL === '') {
    throw invalid('embedding.baseURL', "matchMode 'vector' needs an embedding endpoint")
  }
  if (options.matchMode === 'vector' && embeddingKey === '') {
    // 'auto' quietly uses keywords without a key; an explicit 'vector' that can never work is a config error.
    throw invalid('embedding.apiKey', `matchMode 'vector' needs embedding.apiKey or the environment variable ${e.apiKeyEnv || '(embedding.apiKeyEnv is empty)'}`)
  }
  const vectorAvailable = options.matchMode !== 'keyword' && e.baseURL !== '' && embeddingKey !== ''
  const localUser = options.userId || env.USER || env.USERNAME || env.LOGNAME || 'local'
  return deepFreeze({ ...options, embeddingKey, vectorAvailable, localUser })
}

function invalid(path: string, message: string): CueBankError {
  return new CueBankError('invalid-config', `memory-cue-bank: ${path ? `${path}: ` : ''}${message}`, { path })
}

function bool(path: string, value: unknown): void {
  if (typeof value !== 'boolean') throw invalid(path, `must be a boolean, got ${JSON.stringify(value)}`)
}

function str(path: string, value: unknown): void {
  if (typeof value !== 'string') throw invalid(path, `must be a string, got ${JSON.stringify(value)}`)
}

function oneOf(path: string, value: unknown, allowed: readonly string[]): void {
  if (typeof value !== 'string' || !allowed.includes(value)) {
    throw invalid(path, `must be one of ${allowed.map((a) => `'${a}'`).join(', ')}, got ${JSON.stringify(value)}`)
  }
}

function integer(path: string, value: unknown, min: number, max: number): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalid(path, `must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`)
  }
}

function fraction(path: string, value: unknown): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1) {
    throw invalid(path, `must be a number from 0 to 1, got ${JSON.stringify(value)}`)
  }
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner)
    Object.freeze(value)
  }
  return value
}

/**
 * Refuse a live change of a field that applies only at start: the embedding client, the
 * partition and the block's place among the runtime contexts are fixed when the bank starts.
 * @throws CueBankError `invalid-config` naming the first such field that differs.
 */
export function assertLiveChange(current: ResolvedCueBankOptions, next: ResolvedCueBankOptions): void {
  const fixed = (options: ResolvedCueBankOptions): Record<string, unknown> => ({
    embedding: options.embedding,
    matchMode: options.matchMode,
    partition: options.partition,
    userId: options.userId,
    'inject.order': options.inject.order,
  })
  const now = fixed(current)
  for (const [field, value] of Object.entries(fixed(next))) {
    if (JSON.stringify(value) !== JSON.stringify(now[field])) {
      throw new CueBankError('invalid-config', `${field} applies at the next start, not live`, { path: field })
    }
  }
}
