/**
 * Search in the SQLite store: FTS5 tables in the database fed by the CJK-aware tokenizer
 * (`search-index.ts` plans the query and writes the terms), the backfill at open, and the
 * ranked memory and message queries. See the decision record in the README for why the index
 * lives in the database rather than in memory.
 */
import { and, asc, eq, gt, inArray, sql, type SQL } from 'drizzle-orm'
import { toMemory, toMessage } from './rows.ts'
import * as schema from './schema.ts'
import { FTS_FORMAT, FTS_META_KEY, type FtsState, MEMORY_TABLES, MESSAGE_TABLES } from './search-index.ts'
import { currentManifest, indexBuilt, inRankOrder, memorySearchOptions, messageSearchOptions, parseIndexState, queryText, RANK_CAP, sameManifest } from './search-plan.ts'
import type { SqliteSession } from './sqlite-session.ts'
import { memoryScopeCondition } from './sqlite-values.ts'
import type { IndexBuildReason, MemoryHit, MemorySearchOptions, MessageHit, MessageSearchOptions, SearchIndexStatus, SearchService } from './types-search.ts'

/** Meta key of the MiniSearch manifest written by versions before FTS5 (removed at open). */
const LEGACY_INDEX_META_KEY = 'store.search-index'
/** Rows indexed per backfill transaction: short write locks, so other processes keep writing. */
const BACKFILL_BATCH = 5_000
/** FTS5 pages merged per transaction after a backfill. */
const MERGE_PAGES = 2_000

function readFtsState(s: SqliteSession): FtsState | undefined {
  return parseIndexState(s.db.select().from(schema.meta).where(eq(schema.meta.key, FTS_META_KEY)).get()?.value)
}

/** Record the FTS state (internal bookkeeping: no audit or change-log row). */
function writeFtsState(s: SqliteSession, state: FtsState): void {
  const value = JSON.stringify(state)
  const now = s.now()
  s.db.insert(schema.meta).values({ key: FTS_META_KEY, value, updatedAt: now }).onConflictDoUpdate({ target: schema.meta.key, set: { value, updatedAt: now } }).run()
}

/**
 * Bring the FTS tables up to date at open: clear them when they were built with another
 * tokenizer (or never), then backfill rows not indexed yet, in short transactions that each
 * advance a cursor recorded in store_meta, so a crash or a second process resumes instead of
 * starting over and other processes' writes are never blocked for long.
 */
function syncSearchIndex(s: SqliteSession, force?: IndexBuildReason): IndexBuildReason | null {
  const manifest = currentManifest(FTS_FORMAT)
  const seen = readFtsState(s)
  // The common case takes no lock: the index is current.
  if (!force && indexBuilt(seen, manifest)) return null
  let reason: IndexBuildReason | null = null
  s.immediate(() => {
    const state = readFtsState(s)
    if (!force && state && sameManifest(state, manifest)) {
      if (state.messagesAfter !== null || state.memoriesAfter !== null) reason = 'resumed'
      return
    }
    reason = force ?? (state ? 'tokenizer-changed' : 'backfill')
    s.fts.messages.clear()
    s.fts.memories.clear()
    s.db.delete(schema.meta).where(eq(schema.meta.key, LEGACY_INDEX_META_KEY)).run()
    writeFtsState(s, { ...manifest, messagesAfter: '', memoriesAfter: '' })
  })
  for (;;) {
    const more = s.immediate(() => backfillBatch(s))
    if (!more) break
  }
  // Merge the backfill's segments now (part of the build), in bounded steps so other
  // writers get the lock between them.
  for (const kind of [s.fts.messages, s.fts.memories]) {
    // Bounded: a merge step always makes progress, but never loop forever on a surprise.
    for (let step = 0; step < 100_000 && s.immediate(() => kind.mergeStep(MERGE_PAGES)); step++);
  }
  return reason
}

/** Index the next batch of unindexed rows. @returns false when the backfill is complete. */
function backfillBatch(s: SqliteSession): boolean {
  const state = readFtsState(s)
  if (!state) return false
  const m = schema.messages
  const mem = schema.memories
  if (state.messagesAfter !== null) {
    const rows = s.db
      .select({ id: m.id, conversationId: m.conversationId, role: m.role, createdAt: m.createdAt, text: m.text })
      .from(m)
      .where(and(gt(m.id, state.messagesAfter), sql`NOT EXISTS (SELECT 1 FROM ${sql.raw(MESSAGE_TABLES.docs)} d WHERE d.message_id = ${m.id})`))
      .orderBy(asc(m.id))
      .limit(BACKFILL_BATCH)
      .all()
    for (const row of rows) s.fts.addMessage(row)
    writeFtsState(s, { ...state, messagesAfter: rows.length < BACKFILL_BATCH ? null : rows[rows.length - 1]!.id })
    return true
  }
  if (state.memoriesAfter !== null) {
    const rows = s.db
      .select({ id: mem.id, text: mem.text })
      .from(mem)
      .where(and(gt(mem.id, state.memoriesAfter), sql`NOT EXISTS (SELECT 1 FROM ${sql.raw(MEMORY_TABLES.docs)} d WHERE d.memory_id = ${mem.id})`))
      .orderBy(asc(mem.id))
      .limit(BACKFILL_BATCH)
      .all()
    for (const row of rows) s.fts.addMemory(row.id, row.text)
    writeFtsState(s, { ...state, memoriesAfter: rows.length < BACKFILL_BATCH ? null : rows[rows.length - 1]!.id })
    return true
  }
  return false
}

function searchStatus(s: SqliteSession, reason: IndexBuildReason | null): SearchIndexStatus {
  const state = readFtsState(s)
  const manifest = currentManifest(FTS_FORMAT)
  return {
    built: indexBuilt(state, manifest),
    reason,
    documents: { messages: s.fts.messages.count(), memories: s.fts.memories.count() },
    tokenizerVersion: manifest.tokenizer,
    icu: manifest.icu,
  }
}

/**
 * The search service of one store. Opening a writable store brings the index up to date first
 * (see {@link syncSearchIndex}); `status().reason` reports what this process did to it.
 */
export function searchService(s: SqliteSession): SearchService {
  let reason: IndexBuildReason | null = null
  const sync = (force?: IndexBuildReason): void => {
    const did = syncSearchIndex(s, force)
    if (did) reason = did
  }
  if (!s.readonly) sync()
  return {
    memories: async (text: string, options: MemorySearchOptions = {}): Promise<MemoryHit[]> => {
      const q = queryText(text)
      const { limit, filter } = memorySearchOptions(options)
      return s.read(() => {
        if (q.trim().length === 0) return []
        const planned = s.fts.memories.plan(q)
        if (planned.match === undefined) return []
        const fts = sql.raw(MEMORY_TABLES.fts)
        const where = memoryScopeCondition(s, filter)
        // The newest RANK_CAP matches in scope, then the best by bm25 among them.
        const hits = s.db.all<Hit>(sql`
          SELECT id, score FROM (
            SELECT d.memory_id AS id, bm25(${fts}) AS score
            FROM ${fts} JOIN ${sql.raw(MEMORY_TABLES.docs)} d ON d.doc = ${fts}.rowid
            JOIN ${schema.memories} ON ${schema.memories.id} = d.memory_id
            WHERE ${fts} MATCH ${planned.match} ${where ? sql`AND ${where}` : sql``}
            ORDER BY ${fts}.rowid DESC LIMIT ${RANK_CAP}
          ) ORDER BY score LIMIT ${limit}`)
        return rowsOfHits(s, schema.memories, hits, (row, score) => ({ memory: toMemory(row), score }))
      })
    },
    messages: async (text: string, options: MessageSearchOptions = {}): Promise<MessageHit[]> => {
      const q = queryText(text)
      const { limit, workspace, conversationId, role, since, until } = messageSearchOptions(options)
      return s.read(() => {
        if (q.trim().length === 0) return []
        const planned = s.fts.messages.plan(q)
        if (planned.match === undefined) return []
        const fts = sql.raw(MESSAGE_TABLES.fts)
        const conditions: SQL[] = [sql`${fts} MATCH ${planned.match}`]
        if (workspace !== undefined) conditions.push(sql`d.conversation_id IN (SELECT id FROM store_conversations WHERE workspace = ${workspace})`)
        if (conversationId !== undefined) conditions.push(sql`d.conversation_id = ${conversationId}`)
        if (role !== undefined) conditions.push(sql`d.role = ${role}`)
        if (since !== undefined) conditions.push(sql`d.created_at >= ${since}`)
        if (until !== undefined) conditions.push(sql`d.created_at <= ${until}`)
        const hits = s.db.all<Hit>(sql`
          SELECT id, score FROM (
            SELECT d.message_id AS id, bm25(${fts}) AS score
            FROM ${fts} JOIN ${sql.raw(MESSAGE_TABLES.docs)} d ON d.doc = ${fts}.rowid
            WHERE ${sql.join(conditions, sql` AND `)}
            ORDER BY ${fts}.rowid DESC LIMIT ${RANK_CAP}
          ) ORDER BY score LIMIT ${limit}`)
        return rowsOfHits(s, schema.messages, hits, (row, score) => ({ message: toMessage(row), score }))
      })
    },
    warm: async (): Promise<SearchIndexStatus> =>
      s.call(false, () => {
        if (!s.readonly) sync()
        return searchStatus(s, reason)
      }),
    rebuild: async (): Promise<SearchIndexStatus> =>
      s.call(true, () => {
        sync('manual')
        return searchStatus(s, reason)
      }),
    status: async (): Promise<SearchIndexStatus> => s.read(() => searchStatus(s, reason)),
  }
}

/** One ranked id; bm25 is lower-is-better. */
interface Hit {
  id: string
  score: number
}

/** Load the rows of `hits` in one query and map them in rank order (score as higher-is-better). */
function rowsOfHits<TTable extends typeof schema.memories | typeof schema.messages, R>(
  s: SqliteSession,
  table: TTable,
  hits: readonly Hit[],
  map: (row: TTable['$inferSelect'], score: number) => R,
): R[] {
  if (hits.length === 0) return []
  const rows = s.db.select().from(table as typeof schema.memories).where(inArray(table.id, hits.map((hit) => hit.id))).all() as TTable['$inferSelect'][]
  return inRankOrder(hits, rows, (row, score) => map(row, -score))
}
