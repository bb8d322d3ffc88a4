/**
 * Every query of the cue bank lives in this module.
 *
 * The tables are declared through the store's extension seam (`store.tables({ migrations,
 * schema })`, owner `cue-bank`, migrations run by the store's runner) in the shared
 * `memory.db`, and every query is a typed drizzle query on the store's own connection: no
 * second connection, no driver of our own, no SQL text. The
 * repository is synchronous on purpose (the seam's synchronous path): the host's
 * runtime-context provider is synchronous, and a wake must read the freshest cues (other DSH
 * processes may write) without waiting.
 *
 * A write that finds the database locked (another process, or another caller's open store
 * transaction) fails fast with `busy`; the caller retries later instead of blocking the
 * event loop.
 */
import { and, asc, desc, eq, inArray, isNull, lt, or, type SQL, sql } from 'drizzle-orm'
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core'
import { isMemoryStoreError, type MemoryStore, type PackageDatabase, type PackageTables, type PackageTablesHost } from '@dsh-memory/store'
import { cueBankMigrations } from '../migrations.js'
import { CueBankError } from './errors.js'
import type { IdiomCandidate, UserTurnTerms } from './idioms.js'
import type { Keyword } from './keywords.js'
import type { Cue, CueDimensions, Idiom } from './model.js'
import { type CueBankSchema, cueBankSchema, idioms, topics, userTurns } from './schema.js'

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
  const tables = await store.tables({ migrations: cueBankMigrations(), schema: cueBankSchema })
  return new StoreCueRepository(store.path, tables)
}

type Db = PackageDatabase<CueBankSchema>
type TopicRow = typeof topics.$inferSelect

/** Most recently touched first, ties by id: the order every cue list is read in. */
const recentFirst = [desc(topics.lastTouchedAt), asc(topics.id)] as const
/** Newest first: the order of the idiom window (and of what its pruning keeps). */
const newestTurnFirst = [desc(userTurns.createdAt), asc(userTurns.sessionId), desc(userTurns.turn)] as const

/** The filter of a list call: every partition when `partitions` is undefined (callers return early on an empty list). */
function inPartitions(column: SQLiteColumn, partitions: readonly string[] | undefined): SQL | undefined {
  return partitions === undefined ? undefined : inArray(column, [...partitions])
}

class StoreCueRepository implements CueRepository {
  readonly path: string
  readonly #tables: PackageTables<CueBankSchema>
  #closed = false

  constructor(path: string, tables: PackageTables<CueBankSchema>) {
    this.path = path
    this.#tables = tables
  }

  listCues(partitions: readonly string[] | undefined): Cue[] {
    if (partitions?.length === 0) return []
    return this.#read((db) => db.select().from(topics).where(inPartitions(topics.partition, partitions)).orderBy(...recentFirst).all()).map(toCue)
  }

  getCue(id: string): Cue | undefined {
    return this.#oneCue((db) => db.select().from(topics).where(eq(topics.id, id)).get())
  }

  taskCue(partition: string, sessionId: string): Cue | undefined {
    return this.#oneCue((db) =>
      db
        .select()
        .from(topics)
        .where(and(eq(topics.partition, partition), eq(topics.sessionId, sessionId), eq(topics.level, 'task')))
        .get(),
    )
  }

  latestConversationCue(sessionId: string): Cue | undefined {
    return this.#oneCue((db) =>
      db
        .select()
        .from(topics)
        .where(and(eq(topics.sessionId, sessionId), eq(topics.level, 'conversation')))
        .orderBy(desc(topics.turn), desc(topics.createdAt))
        .limit(1)
        .get(),
    )
  }

  insertCue(cue: Cue): boolean {
    // DO NOTHING on any unique constraint: the id, or the partial (partition, session, turn/level) indexes.
    return this.#write((db) => db.insert(topics).values(toRow(cue)).onConflictDoNothing().run()).changes > 0
  }

  updateCue(cue: Cue): void {
    // Identity (id, partition, level, session) and creation time never change.
    const { id, partition: _partition, level: _level, sessionId: _session, createdAt: _created, ...mutable } = toRow(cue)
    this.#write((db) => db.update(topics).set(mutable).where(eq(topics.id, id)).run())
  }

  touchCues(ids: readonly string[], at: number): number {
    if (ids.length === 0) return 0
    return this.#write((db) =>
      db
        .update(topics)
        .set({ hitCount: sql`${topics.hitCount} + 1`, lastTouchedAt: sql`MAX(${topics.lastTouchedAt}, ${at})` })
        .where(inArray(topics.id, [...ids]))
        .run(),
    ).changes
  }

  setEmbedding(id: string, embedding: Float32Array, model: string): void {
    this.#write((db) => db.update(topics).set({ embedding: toBlob(embedding), embeddingModel: model }).where(eq(topics.id, id)).run())
  }

  cuesWithoutEmbedding(partitions: readonly string[], model: string, limit: number): Cue[] {
    if (partitions.length === 0 || limit <= 0) return []
    return this.#read((db) =>
      db
        .select()
        .from(topics)
        .where(and(inArray(topics.partition, [...partitions]), or(isNull(topics.embedding), sql`${topics.embeddingModel} IS NOT ${model}`)))
        .orderBy(...recentFirst)
        .limit(limit)
        .all(),
    ).map(toCue)
  }

  deleteUntouchedSince(partition: string, before: number): string[] {
    return this.#deleteCues((db) =>
      db
        .select({ id: topics.id })
        .from(topics)
        .where(and(eq(topics.partition, partition), lt(topics.lastTouchedAt, before)))
        .all(),
    )
  }

  evictCues(partition: string, keep: number): string[] {
    return this.#deleteCues((db) =>
      db
        .select({ id: topics.id })
        .from(topics)
        .where(eq(topics.partition, partition))
        .orderBy(desc(topics.lastTouchedAt), desc(topics.createdAt), desc(topics.id))
        .all()
        .slice(keep),
    )
  }

  listIdioms(partitions: readonly string[] | undefined): Idiom[] {
    if (partitions?.length === 0) return []
    return this.#read((db) =>
      db.select().from(idioms).where(inPartitions(idioms.partition, partitions)).orderBy(desc(idioms.score), desc(idioms.lastSeen), asc(idioms.word)).all(),
    )
  }

  upsertIdioms(partition: string, list: readonly IdiomCandidate[]): void {
    // One unit for the whole batch: all idioms or none.
    this.transaction(() => {
      for (const idiom of list) {
        this.#write((db) =>
          db
            .insert(idioms)
            .values({ partition, word: idiom.word, score: idiom.score, turns: idiom.turns, firstSeen: idiom.lastUsed, lastSeen: idiom.lastUsed })
            .onConflictDoUpdate({
              target: [idioms.partition, idioms.word],
              set: { score: sql`excluded.score`, turns: sql`excluded.turns`, lastSeen: sql`MAX(${idioms.lastSeen}, excluded.last_seen)` },
            })
            .run(),
        )
      }
    })
  }

  insertIdiom(idiom: Idiom): boolean {
    return this.#write((db) => db.insert(idioms).values(idiom).onConflictDoNothing().run()).changes > 0
  }

  evictIdioms(partition: string, keep: number): number {
    return this.#write((db) => {
      // The partition's idioms are capped (maxIdioms), so reading their keys is cheap.
      const beyond = db
        .select({ word: idioms.word })
        .from(idioms)
        .where(eq(idioms.partition, partition))
        .orderBy(desc(idioms.lastSeen), desc(idioms.score), asc(idioms.word))
        .all()
        .slice(keep)
        .map((row) => row.word)
      return beyond.length === 0 ? 0 : db.delete(idioms).where(and(eq(idioms.partition, partition), inArray(idioms.word, beyond))).run().changes
    })
  }

  addUserTurn(partition: string, sessionId: string, turn: number, segment: string, terms: readonly string[], at: number): boolean {
    return (
      this.#write((db) =>
        db
          .insert(userTurns)
          .values({ partition, sessionId, turn, segment, terms: JSON.stringify(terms), createdAt: at })
          .onConflictDoNothing()
          .run(),
      ).changes > 0
    )
  }

  recentUserTurns(partition: string, limit: number): UserTurnTerms[] {
    return this.#read((db) =>
      db
        .select({ segment: userTurns.segment, terms: userTurns.terms, at: userTurns.createdAt })
        .from(userTurns)
        .where(eq(userTurns.partition, partition))
        .orderBy(...newestTurnFirst)
        .limit(limit)
        .all(),
    ).map((row) => ({ ...row, terms: parseArray(row.terms) }))
  }

  pruneUserTurns(partition: string, keep: number): number {
    return this.#write((db) => {
      // The window is pruned on every write, so at most a few rows lie beyond `keep`.
      const rowid = sql<number>`rowid`
      const beyond = db
        .select({ rowid })
        .from(userTurns)
        .where(eq(userTurns.partition, partition))
        .orderBy(...newestTurnFirst)
        .all()
        .slice(keep)
        .map((row) => row.rowid)
      return beyond.length === 0 ? 0 : db.delete(userTurns).where(inArray(rowid, beyond)).run().changes
    })
  }

  transaction<T>(fn: () => T): T {
    return this.#write(() => fn())
  }

  /** The connection is the store's: closing only stops this repository. */
  close(): void {
    this.#closed = true
  }

  #oneCue(op: (db: Db) => TopicRow | undefined): Cue | undefined {
    const row = this.#read(op)
    return row ? toCue(row) : undefined
  }

  /** Delete the cues `select` finds, in one unit. @returns their ids */
  #deleteCues(select: (db: Db) => { id: string }[]): string[] {
    return this.#write((db) => {
      const ids = select(db).map((row) => row.id)
      if (ids.length > 0) db.delete(topics).where(inArray(topics.id, ids)).run()
      return ids
    })
  }

  #read<T>(op: (db: Db) => T): T {
    return this.#unit(() => this.#tables.readSync(op))
  }

  #write<T>(op: (db: Db) => T): T {
    return this.#unit(() => this.#tables.writeSync(op))
  }

  #unit<T>(op: () => T): T {
    if (this.#closed) throw new CueBankError('closed', 'the cue repository is closed')
    try {
      return op()
    } catch (error) {
      throw translate(error, 'cue-bank query')
    }
  }
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

/** The row of a cue: JSON columns serialised, a vector only with its model. */
function toRow(cue: Cue): typeof topics.$inferInsert {
  return {
    id: cue.id,
    partition: cue.partition,
    level: cue.level,
    sessionId: cue.sessionId,
    turn: cue.turn,
    summary: cue.summary,
    detail: cue.detail,
    keywords: JSON.stringify(cue.keywords),
    dimensions: JSON.stringify(cue.dimensions),
    refSessions: JSON.stringify(cue.refSessions),
    sourceMessageIds: JSON.stringify(cue.sourceMessageIds),
    embedding: cue.embedding ? toBlob(cue.embedding) : null,
    embeddingModel: cue.embedding ? cue.embeddingModel : null,
    createdAt: cue.createdAt,
    lastMentionedAt: cue.lastMentionedAt,
    lastTouchedAt: cue.lastTouchedAt,
    hitCount: cue.hitCount,
  }
}

function toCue(row: TopicRow): Cue {
  const keywords = parseJson<unknown>(row.keywords, [])
  return {
    ...row,
    keywords: Array.isArray(keywords)
      ? keywords.filter((k): k is Keyword => typeof k?.word === 'string' && typeof k?.score === 'number')
      : [],
    dimensions: parseJson<CueDimensions>(row.dimensions, { trigger: 'keywords', perspective: row.level }),
    refSessions: parseArray(row.refSessions),
    sourceMessageIds: parseArray(row.sourceMessageIds),
    embedding: fromBlob(row.embedding),
    embeddingModel: row.embedding ? row.embeddingModel : null,
  }
}
