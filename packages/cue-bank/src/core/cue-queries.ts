/**
 * The cue bank's queries inside one unit of the store's seam, written once in the portable
 * style so the same code runs on SQLite and PostgreSQL: every statement is awaited (no
 * `.all()`/`.get()`/`.run()`), tables come from the seam's `t`, counts come from `.returning`,
 * and the scalar `max`/`GREATEST` that differs between the dialects is the store's `sqlGreatest`.
 * Also the mapping between a row and a {@link Cue}, shared with the readers.
 */
import { and, asc, desc, eq, inArray, isNull, lt, ne, or, type SQL, sql } from 'drizzle-orm'
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core'
import { type PackageDatabase, type PackageDialect, sqlGreatest } from '@dsh-memory/store'
import type { IdiomCandidate, UserTurnTerms } from './idioms.js'
import type { Keyword } from './keywords.js'
import type { Cue, CueDimensions, Idiom } from './model.js'
import type { CueBankSchema, topics } from './schema.js'

/**
 * The cue bank's reads and writes inside one unit (one transaction). Every method awaits only
 * its own queries, so a unit never waits for the network beyond the database or a timer.
 */
export interface CueWriter {
  getCue(id: string): Promise<Cue | undefined>
  /** The task cue of one session in one partition. */
  taskCue(partition: string, sessionId: string): Promise<Cue | undefined>
  /** Insert a cue; false (and nothing written) when its id or its (partition, session, turn/level) slot exists. */
  insertCue(cue: Cue): Promise<boolean>
  /** Replace the mutable fields of an existing cue (the task cue's merge). */
  updateCue(cue: Cue): Promise<void>
  /** Mark cues woken: hit count +1, last touched = `at` (never earlier). @returns how many existed. */
  touchCues(ids: readonly string[], at: number): Promise<number>
  setEmbedding(id: string, embedding: Float32Array, model: string): Promise<void>
  /** Cues of the partitions lacking a vector of `model`, most recently touched first. */
  cuesWithoutEmbedding(partitions: readonly string[], model: string, limit: number): Promise<Cue[]>
  /** Delete cues untouched since before `before`. @returns the deleted ids. */
  deleteUntouchedSince(partition: string, before: number): Promise<string[]>
  /** Keep the `keep` most recently touched cues of a partition. @returns the deleted ids. */
  evictCues(partition: string, keep: number): Promise<string[]>
  /** Insert or refresh idioms; first seen is set once, last seen is the idiom's last use. */
  upsertIdioms(partition: string, idioms: readonly IdiomCandidate[]): Promise<void>
  /** Insert one idiom unless (partition, word) exists. @returns false when it existed. */
  insertIdiom(idiom: Idiom): Promise<boolean>
  /** Keep the `keep` most recently seen idioms of a partition. @returns how many were deleted. */
  evictIdioms(partition: string, keep: number): Promise<number>
  /** Record a user turn of the idiom window; false when that turn is already recorded. */
  addUserTurn(partition: string, sessionId: string, turn: number, segment: string, terms: readonly string[], at: number): Promise<boolean>
  /** The newest `limit` user turns of a partition. */
  recentUserTurns(partition: string, limit: number): Promise<UserTurnTerms[]>
  /** Keep the newest `keep` user turns of a partition. @returns how many were deleted. */
  pruneUserTurns(partition: string, keep: number): Promise<number>
}

type Db = PackageDatabase<CueBankSchema>
/** A cue row as both backends return it (same property names, numbers and a Buffer vector). */
export type TopicRow = typeof topics.$inferSelect

/** The filter of a list call: every partition when `partitions` is undefined (callers return early on an empty list). */
export function inPartitions(column: SQLiteColumn, partitions: readonly string[] | undefined): SQL | undefined {
  return partitions === undefined ? undefined : inArray(column, [...partitions])
}

/** {@link CueWriter} on one unit's `db` and tables `t`. */
export function cueWriter(db: Db, t: CueBankSchema, dialect: PackageDialect): CueWriter {
  const { topics, idioms, userTurns } = t
  /** Most recently touched first, ties by id: the order every cue list is read in. */
  const recentFirst = [desc(topics.lastTouchedAt), asc(topics.id)] as const
  /** Newest first: the order of the idiom window (and of what its pruning keeps). */
  const newestTurnFirst = [desc(userTurns.createdAt), asc(userTurns.sessionId), desc(userTurns.turn)] as const
  const one = async (where: SQL | undefined): Promise<Cue | undefined> => {
    const [row] = await db.select().from(topics).where(where).limit(1)
    return row ? toCue(row) : undefined
  }
  const deleteCues = async (ids: string[]): Promise<string[]> => {
    if (ids.length > 0) await db.delete(topics).where(inArray(topics.id, ids))
    return ids
  }

  return {
    getCue: (id) => one(eq(topics.id, id)),
    taskCue: (partition, sessionId) => one(and(eq(topics.partition, partition), eq(topics.sessionId, sessionId), eq(topics.level, 'task'))),

    // DO NOTHING on any unique constraint: the id, or the partial (partition, session, turn/level) indexes.
    insertCue: async (cue) => (await db.insert(topics).values(toRow(cue)).onConflictDoNothing().returning({ id: topics.id })).length > 0,

    updateCue: async (cue) => {
      // Identity (id, partition, level, session) and creation time never change.
      const { id, partition: _partition, level: _level, sessionId: _session, createdAt: _created, ...mutable } = toRow(cue)
      await db.update(topics).set(mutable).where(eq(topics.id, id))
    },

    touchCues: async (ids, at) => {
      if (ids.length === 0) return 0
      const touched = await db
        .update(topics)
        .set({ hitCount: sql`${topics.hitCount} + 1`, lastTouchedAt: sqlGreatest(dialect, topics.lastTouchedAt, at) })
        .where(inArray(topics.id, [...ids]))
        .returning({ id: topics.id })
      return touched.length
    },

    setEmbedding: async (id, embedding, model) => {
      await db.update(topics).set({ embedding: toBlob(embedding), embeddingModel: model }).where(eq(topics.id, id))
    },

    cuesWithoutEmbedding: async (partitions, model, limit) => {
      if (partitions.length === 0 || limit <= 0) return []
      const rows = await db
        .select()
        .from(topics)
        .where(and(inArray(topics.partition, [...partitions]), or(isNull(topics.embedding), isNull(topics.embeddingModel), ne(topics.embeddingModel, model))))
        .orderBy(...recentFirst)
        .limit(limit)
      return rows.map(toCue)
    },

    deleteUntouchedSince: async (partition, before) => {
      const rows = await db
        .select({ id: topics.id })
        .from(topics)
        // Times are whole ms (a bigint on PostgreSQL): x < 10.4 is x < 11 for integers.
        .where(and(eq(topics.partition, partition), lt(topics.lastTouchedAt, Math.ceil(before))))
      return deleteCues(rows.map((row) => row.id))
    },

    evictCues: async (partition, keep) => {
      // The partition is capped (maxTopics), so reading its keys is cheap.
      const rows = await db
        .select({ id: topics.id })
        .from(topics)
        .where(eq(topics.partition, partition))
        .orderBy(desc(topics.lastTouchedAt), desc(topics.createdAt), desc(topics.id))
      return deleteCues(rows.slice(keep).map((row) => row.id))
    },

    upsertIdioms: async (partition, list) => {
      for (const idiom of list) {
        await db
          .insert(idioms)
          .values({ partition, word: idiom.word, score: idiom.score, turns: idiom.turns, firstSeen: idiom.lastUsed, lastSeen: idiom.lastUsed })
          .onConflictDoUpdate({
            target: [idioms.partition, idioms.word],
            set: { score: sql`excluded.score`, turns: sql`excluded.turns`, lastSeen: sqlGreatest(dialect, idioms.lastSeen, sql`excluded.last_seen`) },
          })
      }
    },

    insertIdiom: async (idiom) => (await db.insert(idioms).values(idiom).onConflictDoNothing().returning({ word: idioms.word })).length > 0,

    evictIdioms: async (partition, keep) => {
      // The partition's idioms are capped (maxIdioms), so reading their keys is cheap.
      const rows = await db
        .select({ word: idioms.word })
        .from(idioms)
        .where(eq(idioms.partition, partition))
        .orderBy(desc(idioms.lastSeen), desc(idioms.score), asc(idioms.word))
      const beyond = rows.slice(keep).map((row) => row.word)
      if (beyond.length === 0) return 0
      const deleted = await db
        .delete(idioms)
        .where(and(eq(idioms.partition, partition), inArray(idioms.word, beyond)))
        .returning({ word: idioms.word })
      return deleted.length
    },

    addUserTurn: async (partition, sessionId, turn, segment, terms, at) => {
      const added = await db
        .insert(userTurns)
        .values({ partition, sessionId, turn, segment, terms: JSON.stringify(terms), createdAt: at })
        .onConflictDoNothing()
        .returning({ turn: userTurns.turn })
      return added.length > 0
    },

    recentUserTurns: async (partition, limit) => {
      const rows = await db
        .select({ segment: userTurns.segment, terms: userTurns.terms, at: userTurns.createdAt })
        .from(userTurns)
        .where(eq(userTurns.partition, partition))
        .orderBy(...newestTurnFirst)
        .limit(limit)
      return rows.map((row) => ({ ...row, terms: parseArray(row.terms) }))
    },

    pruneUserTurns: async (partition, keep) => {
      // The window is pruned on every write, so at most a few rows lie beyond `keep`.
      const rows = await db
        .select({ sessionId: userTurns.sessionId, turn: userTurns.turn })
        .from(userTurns)
        .where(eq(userTurns.partition, partition))
        .orderBy(...newestTurnFirst)
      const beyond = rows.slice(keep)
      if (beyond.length === 0) return 0
      const deleted = await db
        .delete(userTurns)
        .where(and(eq(userTurns.partition, partition), or(...beyond.map((row) => and(eq(userTurns.sessionId, row.sessionId), eq(userTurns.turn, row.turn))))))
        .returning({ turn: userTurns.turn })
      return deleted.length
    },
  }
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
export function toRow(cue: Cue): typeof topics.$inferInsert {
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

/** A cue from its row; JSON a newer or broken writer left is read leniently, never thrown at a wake. */
export function toCue(row: TopicRow): Cue {
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
