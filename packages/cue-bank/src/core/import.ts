/**
 * Import of a cue-bank file in the reference plugin's data model
 * (`$DSH_HOME/storages/cue-bank/users/<userId>.json`, `version: 1`) into the shared store.
 * The whole file is validated before anything is written, then written in one transaction:
 * a bad file names the offending field and loses nothing.
 */
import { redactSecrets, type MemoryStore, type PackageTablesHost } from '@dsh-memory/store'
import { CueBankError } from './errors.js'
import type { Keyword } from './keywords.js'
import type { Cue, CueLevel, Idiom } from './model.js'
import { openCueRepository } from './store-cue-repository.js'

/** The reference file's version this importer understands. */
export const REFERENCE_FORMAT_VERSION = 1

/** Options of {@link importCueBankJson}. */
export interface ImportCueBankOptions {
  /** Target partition (`global`, `workspace:<dir>` or `user:<id>`). Wins over `workspace`. */
  readonly partition?: string
  /** Import into this workspace's partition. Default: the `global` partition, which every session reads unless `includeGlobal` is off. */
  readonly workspace?: string
  /** The model that produced the file's embeddings. Without it the vectors are dropped (vectors of an unknown model cannot be compared). */
  readonly embeddingModel?: string
  /** The clock for missing timestamps. */
  readonly now?: () => number
}

/** Result of {@link importCueBankJson}. */
export interface ImportCueBankResult {
  readonly partition: string
  /** The file's `userId`. */
  readonly userId: string | null
  readonly inserted: { readonly topics: number; readonly idioms: number }
  /** Entries whose id (topics) or word (idioms) already existed in the partition; left untouched. */
  readonly skipped: { readonly topics: number; readonly idioms: number }
}

/**
 * Import a reference cue-bank file (JSON text or the parsed object) into the store's cue
 * tables. Idempotent: importing the same file twice inserts nothing the second time.
 * @throws CueBankError `invalid-import` (with `path`) for anything that is not the documented model; `unsupported-store`
 */
export async function importCueBankJson(
  store: Pick<MemoryStore, 'path' | 'readonly'> & PackageTablesHost,
  json: string | unknown,
  options: ImportCueBankOptions = {},
): Promise<ImportCueBankResult> {
  const now = options.now ?? Date.now
  const partition = targetPartition(options)
  const document = parseDocument(json)
  const userId = optionalString(document.userId, 'userId')
  const topics = array(document.topics ?? [], 'topics').map((topic, index) => toCue(topic, `topics[${index}]`, partition, options, now))
  const idioms = array(document.idiosyncrasies ?? [], 'idiosyncrasies').map((idiom, index) => toIdiom(idiom, `idiosyncrasies[${index}]`, partition, now))
  const duplicate = firstDuplicate(topics.map((topic) => topic.id))
  if (duplicate) throw invalid(`topics`, `topic id ${JSON.stringify(duplicate)} appears twice`)

  // The import never wakes cues: no poll of the PostgreSQL view, no following of other writers.
  const repository = await openCueRepository(store, { pollMs: 0, follow: false })
  try {
    return await repository.transaction(async (writer) => {
      let insertedTopics = 0
      let insertedIdioms = 0
      for (const topic of topics) if (await writer.insertCue(topic)) insertedTopics++
      for (const idiom of idioms) if (await writer.insertIdiom(idiom)) insertedIdioms++
      return {
        partition,
        userId,
        inserted: { topics: insertedTopics, idioms: insertedIdioms },
        skipped: { topics: topics.length - insertedTopics, idioms: idioms.length - insertedIdioms },
      }
    })
  } finally {
    repository.close()
  }
}

function targetPartition(options: ImportCueBankOptions): string {
  if (options.partition !== undefined) {
    if (typeof options.partition !== 'string' || !/^(global|workspace:.+|user:.+)$/.test(options.partition)) {
      throw new CueBankError('invalid-import', `partition must be 'global', 'workspace:<dir>' or 'user:<id>', got ${JSON.stringify(options.partition)}`, {
        path: 'options.partition',
      })
    }
    return options.partition
  }
  if (options.workspace !== undefined) {
    if (typeof options.workspace !== 'string' || options.workspace.trim() === '') {
      throw new CueBankError('invalid-import', 'workspace must be a non-empty path', { path: 'options.workspace' })
    }
    return `workspace:${options.workspace}`
  }
  return 'global'
}

function parseDocument(json: string | unknown): Record<string, unknown> {
  let value = json
  if (typeof json === 'string') {
    try {
      value = JSON.parse(json)
    } catch (error) {
      throw new CueBankError('invalid-import', `not JSON: ${(error as Error).message}`, { path: '', cause: error })
    }
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw invalid('', 'the file must hold a JSON object')
  const document = value as Record<string, unknown>
  if (document.version !== REFERENCE_FORMAT_VERSION) {
    throw invalid('version', `unsupported version ${JSON.stringify(document.version)} (expected ${REFERENCE_FORMAT_VERSION})`)
  }
  return document
}

function toCue(value: unknown, path: string, partition: string, options: ImportCueBankOptions, now: () => number): Cue {
  const topic = object(value, path)
  const id = string(topic.id, `${path}.id`)
  if (id.length > 200) throw invalid(`${path}.id`, 'is longer than 200 characters')
  const level = topic.level
  if (level !== 'task' && level !== 'conversation') throw invalid(`${path}.level`, `must be 'task' or 'conversation', got ${JSON.stringify(level)}`)
  const keywords: Keyword[] = array(topic.keywords, `${path}.keywords`).map((entry, index) => {
    const keyword = object(entry, `${path}.keywords[${index}]`)
    return { word: string(keyword.word, `${path}.keywords[${index}].word`).toLowerCase(), score: number(keyword.score, `${path}.keywords[${index}].score`, 0) }
  })
  const summary = redactSecrets(string(topic.summary, `${path}.summary`)).text
  const dimensions = topic.dimensions === undefined || topic.dimensions === null ? {} : object(topic.dimensions, `${path}.dimensions`)
  const refSessions = topic.refSessions === undefined ? [] : array(topic.refSessions, `${path}.refSessions`).map((entry, index) => string(entry, `${path}.refSessions[${index}]`))
  let embedding: Float32Array | null = null
  if (topic.embedding !== undefined && topic.embedding !== null) {
    const values = array(topic.embedding, `${path}.embedding`).map((entry, index) => number(entry, `${path}.embedding[${index}]`))
    if (options.embeddingModel && values.length > 0) embedding = Float32Array.from(values)
  }
  const createdAt = time(topic.createdAt, `${path}.createdAt`, now)
  const lastTouchedAt = time(topic.lastTouchedAt, `${path}.lastTouchedAt`, () => createdAt)
  const hitCount = topic.hitCount === undefined ? 0 : number(topic.hitCount, `${path}.hitCount`, 0)
  if (!Number.isInteger(hitCount)) throw invalid(`${path}.hitCount`, 'must be an integer')
  return {
    id,
    partition,
    level: level as CueLevel,
    sessionId: `import:${id}`,
    turn: 0,
    summary,
    detail: summary,
    keywords,
    dimensions: { ...dimensions, trigger: typeof dimensions.trigger === 'string' ? dimensions.trigger : 'keywords', perspective: level, imported: true },
    refSessions,
    sourceMessageIds: [],
    embedding,
    embeddingModel: embedding ? options.embeddingModel! : null,
    createdAt,
    lastMentionedAt: lastTouchedAt,
    lastTouchedAt,
    hitCount,
  }
}

function toIdiom(value: unknown, path: string, partition: string, now: () => number): Idiom {
  const idiom = object(value, path)
  const word = string(idiom.word, `${path}.word`)
  const score = number(idiom.score, `${path}.score`, 0)
  const firstSeen = time(idiom.firstSeen, `${path}.firstSeen`, now)
  const lastSeen = time(idiom.lastSeen, `${path}.lastSeen`, () => firstSeen)
  return { partition, word: word.toLowerCase(), score: Math.min(1, score), turns: 0, firstSeen, lastSeen }
}

function invalid(path: string, message: string): CueBankError {
  return new CueBankError('invalid-import', `cue-bank import: ${path ? `${path}: ` : ''}${message}`, { path })
}

function object(value: unknown, path: string): Record<string, unknown> {
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw invalid(path, 'must be an object')
  return value as Record<string, unknown>
}

function array(value: unknown, path: string): unknown[] {
  if (!Array.isArray(value)) throw invalid(path, 'must be an array')
  return value
}

function string(value: unknown, path: string): string {
  if (typeof value !== 'string' || value.trim().length === 0) throw invalid(path, 'must be a non-empty string')
  return value.trim()
}

function optionalString(value: unknown, path: string): string | null {
  return value === undefined || value === null ? null : string(value, path)
}

function number(value: unknown, path: string, min = -Infinity): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min) throw invalid(path, `must be a finite number${min > -Infinity ? ` ≥ ${min}` : ''}`)
  return value
}

/** ISO-8601 text or epoch milliseconds; absent means `fallback()`. */
function time(value: unknown, path: string, fallback: () => number): number {
  if (value === undefined || value === null) return fallback()
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return Math.round(value)
  if (typeof value === 'string') {
    const parsed = Date.parse(value)
    if (Number.isFinite(parsed)) return parsed
  }
  throw invalid(path, `must be an ISO date or epoch milliseconds, got ${JSON.stringify(value)}`)
}

function firstDuplicate(values: readonly string[]): string | undefined {
  const seen = new Set<string>()
  for (const value of values) {
    if (seen.has(value)) return value
    seen.add(value)
  }
  return undefined
}
