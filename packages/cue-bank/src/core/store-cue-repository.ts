/**
 * Every SQL statement of the cue bank lives in this module.
 *
 * The tables are declared through the store's extension seam (`store.tables(...)`, owner
 * `cue-bank`, migrations run by the store's runner) in the shared `memory.db`, and every query
 * runs on the store's own connection: no second connection, no driver of our own. The
 * repository is synchronous on purpose (the seam's synchronous path): the host's
 * runtime-context provider is synchronous, and a wake must read the freshest cues (other DSH
 * processes may write) without waiting.
 *
 * A write that finds the database locked (another process, or another caller's open store
 * transaction) fails fast with `busy`; the caller retries later instead of blocking the
 * event loop.
 */
import {
  isMemoryStoreError,
  type MemoryStore,
  type PackageTables,
  type PackageTablesHost,
  type StatementResult,
  textStatements,
  type TextStatements,
} from '@dsh-memory/store'
import { cueBankMigrations } from '../migrations.js'
import { CueBankError } from './errors.js'
import type { IdiomCandidate, UserTurnTerms } from './idioms.js'
import type { Keyword } from './keywords.js'
import type { Cue, CueDimensions, CueLevel, Idiom } from './model.js'

/** Synchronous persistence of cues, idioms and the idiom window. */
export interface CueRepository {
  /** The database file. */
  readonly path: string
  /** Cues of the given partitions (every partition when undefined), most recently touched first. */
  listCues(partitions: readonly string[] | undefined): Cue[]
  getCue(id: string): Cue | undefined
  /** The task cue of one session in one partition. */
  taskCue(partition: string, sessionId: string): Cue | undefined
  /** The newest conversation cue of a session (any partition), e.g. to resume topic tracking. */
  latestConversationCue(sessionId: string): Cue | undefined
  /** Insert a cue; false (and nothing written) when its id or its (partition, session, turn/level) slot exists. */
  insertCue(cue: Cue): boolean
  /** Replace the mutable fields of an existing cue (the task cue's merge). */
  updateCue(cue: Cue): void
  /** Mark cues woken: hit count +1, last touched = `at`. @returns how many existed. */
  touchCues(ids: readonly string[], at: number): number
  setEmbedding(id: string, embedding: Float32Array, model: string): void
  /** Cues of the partitions lacking a vector of `model`, most recently touched first. */
  cuesWithoutEmbedding(partitions: readonly string[], model: string, limit: number): Cue[]
  /** Delete cues untouched since before `before`. @returns the deleted ids. */
  deleteUntouchedSince(partition: string, before: number): string[]
  /** Keep the `keep` most recently touched cues of a partition. @returns the deleted ids. */
  evictCues(partition: string, keep: number): string[]
  /** Idioms of the given partitions (every partition when undefined), best first. */
  listIdioms(partitions: readonly string[] | undefined): Idiom[]
  /** Insert or refresh idioms; first seen is set once, last seen is the idiom's last use. */
  upsertIdioms(partition: string, idioms: readonly IdiomCandidate[]): void
  /** Insert one idiom unless (partition, word) exists. @returns false when it existed. */
  insertIdiom(idiom: Idiom): boolean
  /** Keep the `keep` most recently seen idioms of a partition. @returns how many were deleted. */
  evictIdioms(partition: string, keep: number): number
  /** Record a user turn of the idiom window; false when that turn is already recorded. */
  addUserTurn(partition: string, sessionId: string, turn: number, segment: string, terms: readonly string[], at: number): boolean
  /** The newest `limit` user turns of a partition. */
  recentUserTurns(partition: string, limit: number): UserTurnTerms[]
  /** Keep the newest `keep` user turns of a partition. */
  pruneUserTurns(partition: string, keep: number): number
  /** Run `fn` in one IMMEDIATE transaction (nested calls become savepoints). */
  transaction<T>(fn: () => T): T
  /** Close the connection. Idempotent. */
  close(): void
}

/**
 * Declare the cue tables on the store (its migration runner brings them up to date) and
 * open the repository on the store's session.
 * @throws CueBankError `unsupported-store` for a read-only store
 */
export async function openCueRepository(store: Pick<MemoryStore, 'path' | 'readonly'> & PackageTablesHost): Promise<CueRepository> {
  if (store.readonly) throw new CueBankError('unsupported-store', 'the cue bank needs a writable memory store')
  const tables = await store.tables({ migrations: cueBankMigrations() })
  // The handle is the store's connection; it is only used inside units of `tables`.
  const db = textStatements(await tables.read((handle) => handle))
  return new StoreCueRepository(store.path, tables, db)
}

interface CueRow {
  id: string
  partition: string
  level: CueLevel
  session_id: string
  turn: number
  summary: string
  detail: string
  keywords: string
  dimensions: string
  ref_sessions: string
  source_message_ids: string
  embedding: Buffer | null
  embedding_model: string | null
  created_at: number
  last_mentioned_at: number
  last_touched_at: number
  hit_count: number
}

interface IdiomRow {
  partition: string
  word: string
  score: number
  turns: number
  first_seen: number
  last_seen: number
}

const CUE_COLUMNS =
  'id, partition, level, session_id, turn, summary, detail, keywords, dimensions, ref_sessions, source_message_ids, embedding, embedding_model, created_at, last_mentioned_at, last_touched_at, hit_count'

class StoreCueRepository implements CueRepository {
  readonly path: string
  readonly #tables: PackageTables
  readonly #db: TextStatements
  #closed = false

  constructor(path: string, tables: PackageTables, db: TextStatements) {
    this.path = path
    this.#tables = tables
    this.#db = db
  }

  listCues(partitions: readonly string[] | undefined): Cue[] {
    if (partitions === undefined) return this.#all<CueRow>(`SELECT ${CUE_COLUMNS} FROM cue_bank_topics ORDER BY last_touched_at DESC, id`).map(toCue)
    if (partitions.length === 0) return []
    return this.#all<CueRow>(
      `SELECT ${CUE_COLUMNS} FROM cue_bank_topics WHERE partition IN (${marks(partitions)}) ORDER BY last_touched_at DESC, id`,
      ...partitions,
    ).map(toCue)
  }

  getCue(id: string): Cue | undefined {
    const row = this.#get<CueRow>(`SELECT ${CUE_COLUMNS} FROM cue_bank_topics WHERE id = ?`, id)
    return row ? toCue(row) : undefined
  }

  taskCue(partition: string, sessionId: string): Cue | undefined {
    const row = this.#get<CueRow>(
      `SELECT ${CUE_COLUMNS} FROM cue_bank_topics WHERE partition = ? AND session_id = ? AND level = 'task'`,
      partition,
      sessionId,
    )
    return row ? toCue(row) : undefined
  }

  latestConversationCue(sessionId: string): Cue | undefined {
    const row = this.#get<CueRow>(
      `SELECT ${CUE_COLUMNS} FROM cue_bank_topics WHERE session_id = ? AND level = 'conversation' ORDER BY turn DESC, created_at DESC LIMIT 1`,
      sessionId,
    )
    return row ? toCue(row) : undefined
  }

  insertCue(cue: Cue): boolean {
    const result = this.#run(
      `INSERT OR IGNORE INTO cue_bank_topics (${CUE_COLUMNS}) VALUES (${marks(17)})`,
      cue.id,
      cue.partition,
      cue.level,
      cue.sessionId,
      cue.turn,
      cue.summary,
      cue.detail,
      JSON.stringify(cue.keywords),
      JSON.stringify(cue.dimensions),
      JSON.stringify(cue.refSessions),
      JSON.stringify(cue.sourceMessageIds),
      cue.embedding ? toBlob(cue.embedding) : null,
      cue.embedding ? cue.embeddingModel : null,
      cue.createdAt,
      cue.lastMentionedAt,
      cue.lastTouchedAt,
      cue.hitCount,
    )
    return result.changes > 0
  }

  updateCue(cue: Cue): void {
    this.#run(
      `UPDATE cue_bank_topics SET turn = ?, summary = ?, detail = ?, keywords = ?, dimensions = ?, ref_sessions = ?,
         source_message_ids = ?, embedding = ?, embedding_model = ?, last_mentioned_at = ?, last_touched_at = ?, hit_count = ?
       WHERE id = ?`,
      cue.turn,
      cue.summary,
      cue.detail,
      JSON.stringify(cue.keywords),
      JSON.stringify(cue.dimensions),
      JSON.stringify(cue.refSessions),
      JSON.stringify(cue.sourceMessageIds),
      cue.embedding ? toBlob(cue.embedding) : null,
      cue.embedding ? cue.embeddingModel : null,
      cue.lastMentionedAt,
      cue.lastTouchedAt,
      cue.hitCount,
      cue.id,
    )
  }

  touchCues(ids: readonly string[], at: number): number {
    if (ids.length === 0) return 0
    return this.#run(
      `UPDATE cue_bank_topics SET hit_count = hit_count + 1, last_touched_at = MAX(last_touched_at, ?) WHERE id IN (${marks(ids)})`,
      at,
      ...ids,
    ).changes
  }

  setEmbedding(id: string, embedding: Float32Array, model: string): void {
    this.#run('UPDATE cue_bank_topics SET embedding = ?, embedding_model = ? WHERE id = ?', toBlob(embedding), model, id)
  }

  cuesWithoutEmbedding(partitions: readonly string[], model: string, limit: number): Cue[] {
    if (partitions.length === 0 || limit <= 0) return []
    return this.#all<CueRow>(
      `SELECT ${CUE_COLUMNS} FROM cue_bank_topics
       WHERE partition IN (${marks(partitions)}) AND (embedding IS NULL OR embedding_model IS NOT ?)
       ORDER BY last_touched_at DESC, id LIMIT ?`,
      ...partitions,
      model,
      limit,
    ).map(toCue)
  }

  deleteUntouchedSince(partition: string, before: number): string[] {
    const ids = this.#all<{ id: string }>('SELECT id FROM cue_bank_topics WHERE partition = ? AND last_touched_at < ?', partition, before).map(
      (row) => row.id,
    )
    if (ids.length > 0) this.#run(`DELETE FROM cue_bank_topics WHERE id IN (${marks(ids)})`, ...ids)
    return ids
  }

  evictCues(partition: string, keep: number): string[] {
    const ids = this.#all<{ id: string }>(
      'SELECT id FROM cue_bank_topics WHERE partition = ? ORDER BY last_touched_at DESC, created_at DESC, id DESC LIMIT -1 OFFSET ?',
      partition,
      keep,
    ).map((row) => row.id)
    if (ids.length > 0) this.#run(`DELETE FROM cue_bank_topics WHERE id IN (${marks(ids)})`, ...ids)
    return ids
  }

  listIdioms(partitions: readonly string[] | undefined): Idiom[] {
    if (partitions !== undefined && partitions.length === 0) return []
    const where = partitions === undefined ? '' : `WHERE partition IN (${marks(partitions)})`
    return this.#all<IdiomRow>(
      `SELECT partition, word, score, turns, first_seen, last_seen FROM cue_bank_idioms ${where} ORDER BY score DESC, last_seen DESC, word`,
      ...(partitions ?? []),
    ).map((row) => ({
      partition: row.partition,
      word: row.word,
      score: row.score,
      turns: row.turns,
      firstSeen: row.first_seen,
      lastSeen: row.last_seen,
    }))
  }

  upsertIdioms(partition: string, idioms: readonly IdiomCandidate[]): void {
    // One unit for the whole batch: all idioms or none.
    this.transaction(() => {
      for (const idiom of idioms) {
        this.#run(
          `INSERT INTO cue_bank_idioms (partition, word, score, turns, first_seen, last_seen) VALUES (?, ?, ?, ?, ?, ?)
           ON CONFLICT (partition, word) DO UPDATE SET score = excluded.score, turns = excluded.turns,
             last_seen = MAX(last_seen, excluded.last_seen)`,
          partition,
          idiom.word,
          idiom.score,
          idiom.turns,
          idiom.lastUsed,
          idiom.lastUsed,
        )
      }
    })
  }

  insertIdiom(idiom: Idiom): boolean {
    return (
      this.#run(
        'INSERT OR IGNORE INTO cue_bank_idioms (partition, word, score, turns, first_seen, last_seen) VALUES (?, ?, ?, ?, ?, ?)',
        idiom.partition,
        idiom.word,
        idiom.score,
        idiom.turns,
        idiom.firstSeen,
        idiom.lastSeen,
      ).changes > 0
    )
  }

  evictIdioms(partition: string, keep: number): number {
    return this.#run(
      `DELETE FROM cue_bank_idioms WHERE partition = ? AND word IN (
         SELECT word FROM cue_bank_idioms WHERE partition = ? ORDER BY last_seen DESC, score DESC, word LIMIT -1 OFFSET ?)`,
      partition,
      partition,
      keep,
    ).changes
  }

  addUserTurn(partition: string, sessionId: string, turn: number, segment: string, terms: readonly string[], at: number): boolean {
    return (
      this.#run(
        'INSERT OR IGNORE INTO cue_bank_user_turns (partition, session_id, turn, segment, terms, created_at) VALUES (?, ?, ?, ?, ?, ?)',
        partition,
        sessionId,
        turn,
        segment,
        JSON.stringify(terms),
        at,
      ).changes > 0
    )
  }

  recentUserTurns(partition: string, limit: number): UserTurnTerms[] {
    return this.#all<{ segment: string; terms: string; created_at: number }>(
      'SELECT segment, terms, created_at FROM cue_bank_user_turns WHERE partition = ? ORDER BY created_at DESC, session_id, turn DESC LIMIT ?',
      partition,
      limit,
    ).map((row) => ({ segment: row.segment, terms: parseArray(row.terms), at: row.created_at }))
  }

  pruneUserTurns(partition: string, keep: number): number {
    return this.#run(
      `DELETE FROM cue_bank_user_turns WHERE partition = ? AND rowid IN (
         SELECT rowid FROM cue_bank_user_turns WHERE partition = ? ORDER BY created_at DESC, session_id, turn DESC LIMIT -1 OFFSET ?)`,
      partition,
      partition,
      keep,
    ).changes
  }

  transaction<T>(fn: () => T): T {
    this.#assertOpen()
    return this.#exec(() => this.#tables.writeSync(fn))
  }

  /** The connection is the store's: closing only stops this repository. */
  close(): void {
    this.#closed = true
  }

  #assertOpen(): void {
    if (this.#closed) throw new CueBankError('closed', 'the cue repository is closed')
  }

  #exec<T>(op: () => T): T {
    try {
      return op()
    } catch (error) {
      throw translate(error, 'cue-bank query')
    }
  }

  #all<T>(sql: string, ...params: unknown[]): T[] {
    this.#assertOpen()
    return this.#exec(() => this.#tables.readSync(() => this.#db.prepare(sql).all<T>(...params)))
  }

  #get<T>(sql: string, ...params: unknown[]): T | undefined {
    this.#assertOpen()
    return this.#exec(() => this.#tables.readSync(() => this.#db.prepare(sql).get<T>(...params)))
  }

  #run(sql: string, ...params: unknown[]): StatementResult {
    this.#assertOpen()
    return this.#exec(() => this.#tables.writeSync(() => this.#db.prepare(sql).run(...params)))
  }
}

function marks(values: readonly unknown[] | number): string {
  const count = typeof values === 'number' ? values : values.length
  return new Array(count).fill('?').join(', ')
}

/** The store's `busy` and `closed` become the cue bank's own codes, which its callers switch on. */
function translate(error: unknown, context: string): unknown {
  if (error instanceof CueBankError) return error
  if (isMemoryStoreError(error) && (error.code === 'busy' || error.code === 'closed')) {
    return new CueBankError(error.code, `${context}: ${error.message}`, { cause: error })
  }
  return error
}

function toBlob(vector: Float32Array): Buffer {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength)
}

function fromBlob(blob: Buffer | null): Float32Array | null {
  if (!blob || blob.byteLength === 0 || blob.byteLength % 4 !== 0) return null
  // Copy: the driver's buffer need not be 4-byte aligned.
  const copy = new Uint8Array(blob.byteLength)
  copy.set(blob)
  return new Float32Array(copy.buffer)
}

function parseJson<T>(text: string, fallback: T): T {
  try {
    return JSON.parse(text) as T
  } catch {
    return fallback
  }
}

function parseArray(text: string): string[] {
  const value = parseJson<unknown>(text, [])
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : []
}

function toCue(row: CueRow): Cue {
  const keywords = parseJson<unknown>(row.keywords, [])
  return {
    id: row.id,
    partition: row.partition,
    level: row.level,
    sessionId: row.session_id,
    turn: row.turn,
    summary: row.summary,
    detail: row.detail,
    keywords: Array.isArray(keywords)
      ? keywords.filter((k): k is Keyword => typeof k?.word === 'string' && typeof k?.score === 'number')
      : [],
    dimensions: parseJson<CueDimensions>(row.dimensions, { trigger: 'keywords', perspective: row.level }),
    refSessions: parseArray(row.ref_sessions),
    sourceMessageIds: parseArray(row.source_message_ids),
    embedding: fromBlob(row.embedding),
    embeddingModel: row.embedding ? row.embedding_model : null,
    createdAt: row.created_at,
    lastMentionedAt: row.last_mentioned_at,
    lastTouchedAt: row.last_touched_at,
    hitCount: row.hit_count,
  }
}
