/**
 * Search in the PostgreSQL store: the same contract as `sqlite-search.ts` over a `tsvector`
 * column of the store tokenizer's terms (migration 0002, `pg-search-terms.ts`), GIN-indexed and
 * written by the repositories in the row's own statement.
 *
 * Queries are planned by the backend-neutral `search-plan.ts` exactly as on SQLite (distinct
 * terms, very common terms dropped, prefixes, typo variants from the vocabulary table), so a
 * query keeps the same terms on both backends; the plan becomes a `tsquery` (`'a' | 'b':*`).
 *
 * Ranking: a BM25-like score in SQL, `sum over forms of idf × ts_rank(form)` divided by BM25's
 * length normalisation. idf is FTS5's (`ln((N - n + 0.5) / (n + 0.5))`, floored at 1e-6); per
 * form, `ts_rank` with equal weights is a saturating function of the term's frequency (its
 * positions are occurrence numbers), like BM25's `tf·(k1+1)/(tf+k1)`; the length normalisation is
 * `(1 - b) + b · dl / avgdl` (b = 0.75) with `dl` the document's distinct terms (`length()`, read
 * from the tsvector's header). Not `ts_rank_cd` alone: it has no inverse document frequency (a
 * rare term would count no more than a common one) and rewards proximity, which the
 * tokenizer's overlapping bigrams make meaningless. Not an exact BM25 either: term frequencies
 * and lengths from `unnest(tsvector)` took ~120 ms to score 1 000 candidates of a 100 000-message
 * table on this machine, this ~7 ms. Scores are not FTS5's numbers; like
 * them they compare only within one query. As on SQLite, only the newest {@link RANK_CAP}
 * matches in the filter are ranked (newest by `created_at`, then id; read window by window, see
 * {@link rank}); `n` is the planner's count, capped just past "very common"
 * (a term that common is only ever kept alone, where idf does not change the order); `avgdl`
 * is over the ranked matches (a table-wide average needs a scan, or a counter row every writer
 * contends on); `N` is counted below 100 000 rows and PostgreSQL's row estimate above.
 */
import { type Column, getTableColumns, sql, type SQL } from 'drizzle-orm'
import { MESSAGE_COLUMNS } from './pg-conversations.ts'
import { messageConditions } from './record-conditions.ts'
import { toMemory, toMessage } from './rows.ts'
import { pgSchema } from './pg-schema.ts'
import type { PgSession, PgTx } from './pg-session.ts'
import { formsQuery, indexableTerm, searchVectorOf, termQuery } from './pg-search-terms.ts'
import { rowOf } from './pg-values.ts'
import {
  COMMON_MIN_DOCS,
  COMMON_SHARE,
  commonThreshold,
  type CountedTerm,
  currentManifest,
  FUZZY_VOCAB_SCAN,
  headUpperBound,
  indexBuilt,
  type IndexState,
  isTypoOf,
  memorySearchOptions,
  messageSearchOptions,
  needsPrefixCheck,
  parseIndexState,
  planQuery,
  type QueryPlan,
  queryTerms,
  queryText,
  RANK_CAP,
  sameManifest,
  vocabularyHeads,
  type VocabularyEntry,
} from './search-plan.ts'
import { scopeCondition } from './scope-sql.ts'
import type { IndexBuildReason, MemoryHit, MemorySearchOptions, MessageHit, MessageSearchOptions, SearchIndexStatus, SearchService } from './types-search.ts'

/** Meta key recording the tokenizer `search_terms` was written with and rewrite progress. */
export const PG_SEARCH_META_KEY = 'store.search-pg'
/** Version of how terms are written into `search_terms` (encoding, positions). */
export const PG_SEARCH_FORMAT = 1
/** Rows rewritten per transaction: short transactions, so other writers are never held up for long. */
const REWRITE_BATCH = 2_000
/** Below this many rows the document total is counted; above, PostgreSQL's estimate is close enough for idf. */
const EXACT_TOTAL_BELOW = 100_000
/** How long a term counted very common is taken as such without a count ({@link CommonTerms}). */
const COMMON_TERM_TTL_MS = 5 * 60_000
/** Very common terms remembered per store at most. */
const COMMON_TERM_LIMIT = 10_000
/** How long PostgreSQL's statistics of a table ({@link TableStats}) are used before they are read again. */
const STATS_TTL_MS = 60_000
/**
 * A term whose share of the rows in PostgreSQL's statistics puts it above this many times the
 * "very common" threshold is taken as very common without a count. The statistics come from a
 * sample (30 000 rows at the default statistics target), whose error near the threshold is a
 * small fraction of this margin; a term nearer the threshold is counted as on SQLite.
 */
const STATS_COMMON_MARGIN = 1.5
/** Rows of the newest window the newest matches are looked for in ({@link windowBounds}). */
const WINDOW_ROWS = 32 * RANK_CAP
/** Each older window holds this many times the rows of the one before. */
const WINDOW_GROWTH = 4
/**
 * How many times more a row read in time order costs than one id of the GIN index's match list
 * (measured on a 1M-message table of `bench scale`: ~1.3 µs a row walked with its tsvector
 * tested, ~0.22 µs an id of a posting list). See {@link walksNewestWindow}.
 */
const WALK_COST_RATIO = 6
/** Every position weighs the same (the store writes no weights): ts_rank then depends on the term's frequency only. */
const TF_WEIGHTS = sql.raw(`'{1,1,1,1}'::float4[]`)
/** BM25's length normalisation, `(1 - b) + b · …` with FTS5's b = 0.75. */
const LENGTH_NORM = sql.raw('0.25::float8 + 0.75::float8')
/** FTS5's floor of a non-positive idf (a term in more than half of the documents). */
const IDF_FLOOR = 1e-6

/** The declared columns each search returns with its hits (never `search_terms`). */
const MEMORY_COLUMNS = getTableColumns(pgSchema.memories) as Record<string, Column>
const MESSAGE_TABLE_COLUMNS = getTableColumns(pgSchema.messages) as Record<string, Column>

/** One indexed table. */
interface SearchTable {
  /** The table (unqualified: the session's search_path is the store's schema; drizzle's column references name it so too). */
  name: 'store_messages' | 'store_memories'
  /** Its rows' kind in store_search_vocabulary. */
  kind: 'messages' | 'memories'
  cursor: 'messagesAfter' | 'memoriesAfter'
}

const MESSAGES: SearchTable = { name: 'store_messages', kind: 'messages', cursor: 'messagesAfter' }
const MEMORIES: SearchTable = { name: 'store_memories', kind: 'memories', cursor: 'memoriesAfter' }

async function readState(tx: PgTx): Promise<IndexState | undefined> {
  const rows = await tx.query<{ value: string }>('SELECT value FROM store_meta WHERE key = $1', [PG_SEARCH_META_KEY])
  return parseIndexState(rows[0]?.value)
}

/** Record the index state (internal bookkeeping: no audit or change-log row, as on SQLite). */
async function writeState(tx: PgTx, state: IndexState, now: number): Promise<void> {
  await tx.query('INSERT INTO store_meta (key, value, updated_at) VALUES ($1, $2, $3) ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at', [
    PG_SEARCH_META_KEY,
    JSON.stringify(state),
    now,
  ])
}

/**
 * Bring `search_terms` up to date at open: when it was written by another tokenizer (or never),
 * rewrite every row's terms in short transactions that each advance a cursor in store_meta, so
 * a crash or a second process resumes instead of starting over.
 */
async function syncIndex(s: PgSession, force?: IndexBuildReason): Promise<IndexBuildReason | null> {
  const manifest = currentManifest(PG_SEARCH_FORMAT)
  // The common case takes no lock: the index is current.
  if (!force && indexBuilt(await s.read(readState), manifest)) return null
  let reason: IndexBuildReason | null = null
  await s.write(async (tx) => {
    const state = await readState(tx)
    if (!force && state && sameManifest(state, manifest)) {
      if (state.messagesAfter !== null || state.memoriesAfter !== null) reason = 'resumed'
      return
    }
    reason = force ?? (state ? 'tokenizer-changed' : 'backfill')
    // Terms of the old tokenizer may be gone; the rewrite notes the current ones again.
    await tx.query('DELETE FROM store_search_vocabulary')
    await writeState(tx, { ...manifest, messagesAfter: '', memoriesAfter: '' }, s.now())
  })
  let rewritten = false
  for (let rows = await s.write((tx) => rewriteBatch(s, tx)); rows !== null; rows = await s.write((tx) => rewriteBatch(s, tx))) rewritten ||= rows > 0
  if (rewritten) await tidyAfterRewrite(s)
  return reason
}

/**
 * After a rewrite of the terms, VACUUM (ANALYZE) both tables, as autovacuum would some time
 * later: every rewritten row left a dead version that the GIN index still points to and its
 * new terms sit in the index's pending list, both of which every search reads through until
 * a vacuum; and the planner's statistics still describe the old terms. Measured at 100 000
 * memories right after a rebuild, searches ran while autovacuum did this work on the same two
 * cores. Best effort: a store that does not own its tables (PostgreSQL skips them with a
 * warning) or a failed vacuum leaves it to autovacuum.
 */
async function tidyAfterRewrite(s: PgSession): Promise<void> {
  try {
    await s.readEach((tx) => tx.query(`VACUUM (ANALYZE) ${MESSAGES.name}, ${MEMORIES.name}`))
  } catch {
    // Autovacuum does the same later.
  }
}

/** Rewrite the terms of the next batch of rows. @returns the rows rewritten, `null` when the rewrite is complete. */
async function rewriteBatch(s: PgSession, tx: PgTx): Promise<number | null> {
  const state = await readState(tx)
  if (!state) return null
  for (const table of [MESSAGES, MEMORIES]) {
    const after = state[table.cursor]
    if (after === null) continue
    const rows = await tx.query<{ id: string; text: string }>(`SELECT id, text FROM ${table.name} WHERE id > $1 ORDER BY id LIMIT $2`, [after, REWRITE_BATCH])
    if (rows.length > 0) {
      await tx.query(`UPDATE ${table.name} AS t SET search_terms = v.terms::tsvector FROM unnest($1::text[], $2::text[]) AS v(id, terms) WHERE t.id = v.id`, [
        rows.map((row) => row.id),
        rows.map((row) => searchVectorOf(row.text)),
      ])
    }
    await writeState(tx, { ...state, [table.cursor]: rows.length < REWRITE_BATCH ? null : rows[rows.length - 1]!.id }, s.now())
    return rows.length
  }
  return null
}

async function searchStatus(tx: PgTx, reason: IndexBuildReason | null): Promise<SearchIndexStatus> {
  const state = await readState(tx)
  const manifest = currentManifest(PG_SEARCH_FORMAT)
  const [counts] = await tx.query<{ messages: number; memories: number }>(
    `SELECT (SELECT count(*) FROM store_messages WHERE search_terms IS NOT NULL)::int AS messages,
            (SELECT count(*) FROM store_memories WHERE search_terms IS NOT NULL)::int AS memories`,
  )
  return {
    built: indexBuilt(state, manifest),
    reason,
    documents: { messages: counts?.messages ?? 0, memories: counts?.memories ?? 0 },
    tokenizerVersion: manifest.tokenizer,
    icu: manifest.icu,
  }
}

/** The document total of a table and the time range of its rows (what the windows of {@link rank} are cut from). */
interface TableExtent {
  total: number
  /** `created_at` of the newest and the oldest row (0 when the table is empty). */
  newest: number
  oldest: number
}

/**
 * The documents in `table` (counted while few, PostgreSQL's estimate, kept by autovacuum, once
 * many), the newest and oldest `created_at` (two reads of its btree), and how many documents
 * match each tsquery, each counted up to just past "very common" ({@link commonThreshold} of
 * that total, computed in SQL by the same formula), in one statement: planning's first round
 * trip. One scalar subquery per tsquery, as in {@link cappedCounts}.
 */
async function termCounts(tx: PgTx, table: SearchTable, queries: readonly string[]): Promise<TableExtent & { docs: number[] }> {
  const columns = queries.map((_, i) => `, (SELECT count(*) FROM (SELECT 1 FROM ${table.name} WHERE search_terms @@ $${i + 3}::tsquery LIMIT (SELECT cap FROM cap)) AS m)::int AS c${i}`)
  const [row] = await tx.query<Record<string, number>>(
    `WITH n AS (
       SELECT CASE WHEN reltuples >= ${EXACT_TOTAL_BELOW} THEN reltuples
         ELSE greatest(reltuples, (SELECT count(*) FROM (SELECT 1 FROM ${table.name} LIMIT ${EXACT_TOTAL_BELOW}) AS t)) END AS total
       FROM pg_class WHERE oid = '${table.name}'::regclass
     ), cap AS (SELECT total, ceil(greatest($1::float8, total * $2::float8))::int + 1 AS cap FROM n)
     SELECT total::float8 AS total, (SELECT max(created_at) FROM ${table.name}) AS newest, (SELECT min(created_at) FROM ${table.name}) AS oldest${columns.join('')} FROM cap`,
    [COMMON_MIN_DOCS, COMMON_SHARE, ...queries],
  )
  return {
    total: Number(row?.total ?? 0),
    newest: Number(row?.newest ?? 0),
    oldest: Number(row?.oldest ?? 0),
    docs: queries.map((_, i) => Number(row?.[`c${i}`] ?? 0)),
  }
}

/**
 * Documents matching each tsquery, each counted up to `cap` (the cost of asking stays bounded
 * however common a term is). One scalar subquery per tsquery, each its own parameter: planned
 * with the value known, PostgreSQL reads the GIN index several times faster than when the
 * queries come from an unnested array.
 */
async function cappedCounts(tx: PgTx, table: SearchTable, queries: readonly string[], cap: number): Promise<number[]> {
  if (queries.length === 0) return []
  const columns = queries.map((_, i) => `(SELECT count(*) FROM (SELECT 1 FROM ${table.name} WHERE search_terms @@ $${i + 2}::tsquery LIMIT $1) AS m)::int AS c${i}`)
  const [row] = await tx.query<Record<string, number>>(`SELECT ${columns.join(', ')}`, [cap, ...queries])
  return queries.map((_, i) => Number(row?.[`c${i}`] ?? 0))
}

/** A plan with the extent of the table its counts were made against. */
interface CountedPlan extends QueryPlan, TableExtent {
  common: number
}

/**
 * Terms of one store's tables that were counted "very common" lately (process-local). Counting
 * such a term is the costly part of planning: its capped count reads just past
 * {@link commonThreshold} rows from the heap (5 000 at a million rows), for every query that
 * holds it, and everyday words ("the", "deploy") are in most queries. Within
 * {@link COMMON_TERM_TTL_MS} of a count that found a term very common it is taken as very
 * common again without counting, which is the answer the count would give unless a large share
 * of the table was deleted meanwhile; the plan is then the same, so no result changes. Rare
 * terms are always counted (cheap: their few rows) so a term that just appeared is never missed.
 */
class CommonTerms {
  readonly #counted = new Map<string, number>()

  /** True when `term` of `kind` was counted very common within the TTL. */
  known(kind: SearchTable['kind'], term: string): boolean {
    const key = `${kind}:${term}`
    const at = this.#counted.get(key)
    if (at === undefined) return false
    if (performance.now() - at <= COMMON_TERM_TTL_MS) return true
    this.#counted.delete(key)
    return false
  }

  note(kind: SearchTable['kind'], term: string): void {
    // Bounded: a process that sees many distinct common terms starts over rather than grow.
    if (this.#counted.size >= COMMON_TERM_LIMIT) this.#counted.clear()
    this.#counted.set(`${kind}:${term}`, performance.now())
  }
}

/**
 * What PostgreSQL's statistics of a table say (gathered by ANALYZE, which autovacuum runs as
 * the table changes; the store runs it after a rewrite of the terms): its row estimate, the
 * `created_at` histogram (bounds of buckets holding equal numbers of rows, oldest first; empty
 * before the first ANALYZE) and the most common search terms with their share of the rows.
 * Only ever a shortcut: the histogram places the windows of {@link rank} (any bounds give the
 * same result), and a term is taken as very common from its share only in a table of
 * {@link EXACT_TOTAL_BELOW} rows or more and well above the threshold
 * ({@link STATS_COMMON_MARGIN}). For messages also the share of the rows each common workspace
 * holds (`workspaces`, from the `workspace` column's most common values; `otherWorkspace`: at
 * most what any other workspace holds), which sizes the windows of a workspace's search.
 */
interface TableStats {
  rows: number
  histogram: number[]
  shares: Map<string, number>
  /** The terms {@link statsCommon} finds very common, for the prefix check of {@link plan}. */
  common: string[]
  workspaces: Map<string, number>
  otherWorkspace: number
}

/** The statistics of each table of one store, read at most once per {@link STATS_TTL_MS}. */
class StatsCache {
  readonly #read = new Map<SearchTable['kind'], { stats: TableStats; at: number }>()

  async get(tx: PgTx, table: SearchTable): Promise<TableStats> {
    const cached = this.#read.get(table.kind)
    if (cached && performance.now() - cached.at <= STATS_TTL_MS) return cached.stats
    const stats = await readTableStats(tx, table)
    this.#read.set(table.kind, { stats, at: performance.now() })
    return stats
  }
}

/** Read {@link TableStats} (three rows of `pg_stats`, which shows only tables the session may read). */
async function readTableStats(tx: PgTx, table: SearchTable): Promise<TableStats> {
  const stat = (column: string, expression: string) =>
    `(SELECT ${expression} FROM pg_stats WHERE schemaname = current_schema() AND tablename = '${table.name}' AND attname = '${column}')`
  const workspaces = table.kind === 'messages'
  const [row] = await tx.query<{ rows: number; histogram: string | null; elems: string | null; freqs: string | null; vals: string | null; valfreqs: string | null; distinct: number | null }>(
    `SELECT reltuples::float8 AS rows,
       ${stat('created_at', 'array_to_json(histogram_bounds::text::bigint[])::text')} AS histogram,
       ${stat('search_terms', 'array_to_json(most_common_elems::text::text[])::text')} AS elems,
       ${stat('search_terms', 'array_to_json(most_common_elem_freqs)::text')} AS freqs,
       ${workspaces ? stat('workspace', 'array_to_json(most_common_vals::text::text[])::text') : 'NULL'} AS vals,
       ${workspaces ? stat('workspace', 'array_to_json(most_common_freqs)::text') : 'NULL'} AS valfreqs,
       ${workspaces ? stat('workspace', 'n_distinct::float8') : 'NULL'} AS distinct
     FROM pg_class WHERE oid = '${table.name}'::regclass`,
  )
  const histogram = row?.histogram ? (JSON.parse(row.histogram) as unknown[]).map(Number).filter(Number.isFinite) : []
  const elems = row?.elems ? (JSON.parse(row.elems) as unknown[]) : []
  const freqs = row?.freqs ? (JSON.parse(row.freqs) as unknown[]).map(Number) : []
  // most_common_elem_freqs ends with three summary numbers after one share per element.
  const shares = new Map<string, number>()
  elems.forEach((elem, i) => {
    if (typeof elem === 'string' && Number.isFinite(freqs[i])) shares.set(elem, freqs[i]!)
  })
  const stats = { rows: Math.max(0, Number(row?.rows ?? 0)), histogram, shares }
  const vals = row?.vals ? (JSON.parse(row.vals) as unknown[]) : []
  const valFreqs = row?.valfreqs ? (JSON.parse(row.valfreqs) as unknown[]).map(Number) : []
  const workspaceShares = new Map<string, number>()
  vals.forEach((value, i) => {
    if (typeof value === 'string' && Number.isFinite(valFreqs[i])) workspaceShares.set(value, valFreqs[i]!)
  })
  return {
    ...stats,
    common: [...shares.keys()].filter((term) => statsCommon(stats, term)),
    workspaces: workspaceShares,
    otherWorkspace: otherShare(workspaceShares, Number(row?.distinct ?? 0), stats.rows),
  }
}

/**
 * At most the share of the rows a value not among the most common values holds: no more than
 * the least common of those, nor than an even split of the rest among the other distinct
 * values (`distinct`: PostgreSQL's `n_distinct`, negative for a fraction of the rows); 1 when
 * nothing is known (no ANALYZE yet).
 */
function otherShare(common: ReadonlyMap<string, number>, distinct: number, rows: number): number {
  const values = distinct < 0 ? -distinct * rows : distinct
  const rest = 1 - [...common.values()].reduce((sum, share) => sum + share, 0)
  const others = values - common.size
  const even = others >= 1 ? rest / others : common.size > 0 ? rest : 1
  return Math.max(0, Math.min(1, common.size > 0 ? Math.min(...common.values()) : 1, even))
}

/** True when the statistics show `term` well above the "very common" threshold of a large table. */
function statsCommon(stats: Pick<TableStats, 'rows' | 'shares'>, term: string): boolean {
  if (stats.rows < EXACT_TOTAL_BELOW) return false
  const share = stats.shares.get(term)
  return share !== undefined && share * stats.rows > STATS_COMMON_MARGIN * commonThreshold(stats.rows)
}

/**
 * Plan `query` over `table` (see {@link planQuery}): the extent and the counts of the terms
 * not known to be very common in one statement; the vocabulary (two more) only for a long
 * term no document holds. The idf of each form is weighed in the ranking statement
 * ({@link rank}).
 */
async function plan(tx: PgTx, table: SearchTable, query: string, commonTerms: CommonTerms, stats: TableStats): Promise<CountedPlan> {
  const terms = queryTerms(query).filter((term) => indexableTerm(term.encoded))
  if (terms.length === 0) return { forms: [], kept: [], dropped: [], total: 0, newest: 0, oldest: 0, common: 0 }
  const known = terms.map((term) => commonTerms.known(table.kind, term.encoded) || statsCommon(stats, term.encoded))
  const extent = await termCounts(tx, table, terms.filter((_, i) => !known[i]).map((term) => termQuery(term.encoded)))
  const common = commonThreshold(extent.total)
  let counts = 0
  // A known very common term gets what its capped count would return: one past the threshold.
  const counted: CountedTerm[] = terms.map((term, i) => ({ ...term, docs: known[i] ? common + 1 : extent.docs[counts++]! }))
  for (const entry of counted) {
    if (entry.docs > common) commonTerms.note(table.kind, entry.encoded)
    // From the statistics' very common terms: no count of a prefix's matches (that count is the
    // merge of every term with the prefix this check avoids).
    else if (needsPrefixCheck(entry, common, extent.total)) entry.prefixCommon = stats.common.some((term) => term !== entry.encoded && term.startsWith(entry.encoded))
  }
  const vocabulary = new Map<string, VocabularyEntry[]>()
  for (const head of vocabularyHeads(counted)) {
    const rows = await tx.query<{ term: string }>('SELECT term FROM store_search_vocabulary WHERE kind = $1 AND term >= $2 AND term < $3 ORDER BY term LIMIT $4', [
      table.kind,
      head,
      headUpperBound(head),
      FUZZY_VOCAB_SCAN,
    ])
    // Only candidates within the distance of some query term are counted (the vocabulary holds
    // no counts), and not those known very common ("prefers" for "prefer": a capped count reads
    // just past the threshold's rows, by a sequential scan where PostgreSQL expects many).
    const candidates = rows.map((row) => row.term).filter((term) => counted.some((entry) => isTypoOf(entry.term, term)))
    const knownCommon = candidates.map((term) => commonTerms.known(table.kind, term) || statsCommon(stats, term))
    const found = await cappedCounts(tx, table, candidates.filter((_, i) => !knownCommon[i]).map(termQuery), common + 1)
    let next = 0
    const entries = candidates.map((term, i) => ({ term, docs: knownCommon[i] ? common + 1 : found[next++]! }))
    for (const entry of entries) if (entry.docs > common) commonTerms.note(table.kind, entry.term)
    vocabulary.set(head, entries)
  }
  return { ...planQuery(counted, common, vocabulary), total: extent.total, newest: extent.newest, oldest: extent.oldest, common }
}

/**
 * The lower `created_at` bounds of the windows the newest matches are looked for in, newest
 * window first: the rows of the table that hold the newest {@link WINDOW_ROWS} rows the filter
 * keeps (`kept`: their share of the table, 1 without a filter), then four times as many, and
 * so on; none when a few windows would hold every row. Placed by the `created_at` histogram of
 * PostgreSQL's statistics (`histogram`, oldest bound first: each bucket holds the same number of
 * rows), else by the spread of the rows over time, which puts rows clustered in time (a
 * history imported at once, then today's messages) in windows of very uneven size. Rows written
 * after the last ANALYZE land in the newest window. Any bounds give the same result.
 */
export function windowBounds(extent: TableExtent, histogram: readonly number[] = [], kept = 1): number[] {
  const span = extent.newest - extent.oldest
  // A window holds WINDOW_ROWS of the rows the filter keeps (`kept`: their share of the table).
  const first = WINDOW_ROWS / Math.max(kept, WINDOW_ROWS / extent.total)
  if (extent.total <= 2 * first || span <= 0) return []
  const buckets = histogram.length - 1
  const bounds: number[] = []
  for (let rows = first; rows < extent.total; rows *= WINDOW_GROWTH) {
    // The bucket bound with at least this share of the rows after it.
    const bound = buckets >= 2 ? histogram[Math.floor(buckets * (1 - rows / extent.total))]! : extent.newest - Math.ceil((span * rows) / extent.total)
    // Ties in the histogram (many rows of one time) would make an empty window: skipped.
    if (bounds.length === 0 || bound < bounds.at(-1)!) bounds.push(bound)
  }
  return bounds
}

/**
 * The share of a table's rows a search's filter keeps (it sizes the windows), and whether the
 * newest window may be walked in time order ({@link walksNewestWindow}): only where the walk
 * reads the filter's own rows and PostgreSQL's statistics tell how many there are. A walk's
 * cost is `RANK_CAP / share of matches among the rows it reads`, so a filter it tests row by row
 * (the scope of a memory search: the workspace, global, the user) or a share it cannot know
 * would make the estimate arbitrarily wrong.
 */
interface KeptRows {
  share: number
  walk: boolean
}

/** Memories: the whole table for the windows, never walked (their scope filter is tested row by row). */
const MEMORY_ROWS: KeptRows = { share: 1, walk: false }

/**
 * The rows a message search in `workspace` keeps: all of them without a workspace; a
 * workspace's share from the statistics (read through the `(workspace, created_at)` index, a
 * walk reads only its rows); one the statistics do not know yet (new since the last ANALYZE,
 * and it may have grown), at most what a listed one holds, and not walked.
 */
function keptBy(stats: Pick<TableStats, 'workspaces' | 'otherWorkspace'>, filter: { workspace?: string; conversationId?: string }): KeptRows {
  // One conversation's messages are read through its own index: a walk in time order would test
  // every row of the window for them.
  const walk = filter.conversationId === undefined
  if (filter.workspace === undefined) return { share: 1, walk }
  const share = stats.workspaces.get(filter.workspace)
  return share === undefined ? { share: stats.otherWorkspace, walk: false } : { share, walk }
}

/**
 * The share of a table's rows a plan's query matches at most, as far as the planner's counts
 * and PostgreSQL's statistics (`shares`, from `most_common_elems`) tell: a form counted very
 * common (capped at `common + 1`) takes its share from the statistics.
 */
export function matchShare(planned: Pick<CountedPlan, 'forms' | 'total'>, shares: ReadonlyMap<string, number>): number {
  if (planned.total <= 0) return 0
  const share = planned.forms.reduce((sum, form) => sum + Math.max(form.docs / planned.total, shares.get(form.term) ?? 0), 0)
  return Math.min(1, share)
}

/**
 * Whether the newest window is better walked in time order (the `created_at` index, newest
 * first, each row's terms tested, stopping at the {@link RANK_CAP}th match) than found through
 * the GIN index, whose bitmap holds every match of the whole table. Walking reads about
 * `RANK_CAP / share` rows but never more than the newest window holds of the rows the filter
 * keeps (`windowRows`), the bitmap `share × total` ids at a sixth of the cost each. Without a
 * filter the walk wins from a 7.7 % share at a million rows (one common word of a query), 24 %
 * at 100 000; in a small workspace sooner. A share overestimated (the matches are in other
 * workspaces) costs one window's read, not the table's.
 */
export function walksNewestWindow(share: number, total: number, windowRows: number): boolean {
  const walked = Math.min(RANK_CAP / share, windowRows)
  return WALK_COST_RATIO * walked <= share * total
}

/**
 * The newest {@link RANK_CAP} rows of `table` matching the plan and `filter`, ranked (see the
 * module comment), best `limit` first (ties to the newest), each with every declared column:
 * one statement. It weighs the forms first: idf from the planner's counts, and for a prefix
 * form (which matches more documents than its exact count) from a capped count of its own.
 *
 * The newest matches are found window by window ({@link windowBounds}): one `UNION ALL` branch
 * per `created_at` range, each its newest matches in order, under one LIMIT. PostgreSQL runs
 * the branches one after another and stops once the LIMIT is filled, so a query whose terms
 * match a tenth of a million rows reads the matches of the newest windows (the GIN bitmap
 * ANDed with the `created_at` btree's range) instead of every match; the result is the same
 * rows as one sort of all matches by `created_at DESC, id DESC`.
 */
async function rank<Row>(
  tx: PgTx,
  table: SearchTable,
  columns: Record<string, Column>,
  planned: CountedPlan,
  filter: SQL | undefined,
  limit: number,
  stats: Pick<TableStats, 'histogram' | 'shares'>,
  kept: KeptRows,
): Promise<{ row: Row; score: number }[]> {
  const forms = planned.forms
  // Each form's weight, idf × its saturating term frequency: the idf is a constant of the
  // statement (PostgreSQL computes a subquery without outer references once), so scoring a
  // candidate is one expression, not a subquery run per candidate.
  const weights = forms.map((form) => {
    const query = formsQuery([form])
    const n = form.prefix
      ? sql`(SELECT count(*) FROM (SELECT 1 FROM ${sql.raw(table.name)} WHERE search_terms @@ ${query}::tsquery LIMIT ${planned.common + 1}) AS m)::float8`
      : sql`${form.docs}::float8`
    // FTS5's idf, ln((N - n + 0.5) / (n + 0.5)), floored where it is not positive.
    // OFFSET 0 keeps each subquery a subquery: pulled up, `n` would be computed once for each
    // of its four uses, which for a prefix form is four index reads of every match.
    const idf = sql`(SELECT CASE WHEN r > 1 THEN ln(r) ELSE ${IDF_FLOOR}::float8 END FROM (SELECT (${planned.total}::float8 - n + 0.5) / (n + 0.5) AS r FROM (SELECT ${n} AS n OFFSET 0) AS counted OFFSET 0) AS ratio)`
    return sql`${idf} * ts_rank(${TF_WEIGHTS}, c.dshm_terms, ${query}::tsquery)`
  })
  // The candidates carry every declared column: the heap scan that matched them read the rows
  // already, so the best need no second lookup by id.
  const names = sql.raw(Object.values(columns).map((column) => `"${column.name}"`).join(', '))
  const matches = formsQuery(forms)
  const branch = (range: SQL | undefined) => sql`(
      SELECT ${names}, search_terms AS dshm_terms FROM ${sql.raw(table.name)}
      WHERE search_terms @@ ${matches}::tsquery ${filter ? sql`AND ${filter}` : sql``} ${range ? sql`AND ${range}` : sql``}
      ORDER BY created_at + 0 DESC, id DESC LIMIT ${RANK_CAP})`
  // The newest window walked in time order: `ts_match_vq` is `@@` in a form no index serves,
  // so PostgreSQL reads the window through the `created_at` (or `(workspace, created_at)`)
  // index, newest first, and stops at the cap.
  const walk = (range: SQL | undefined) => sql`(
      SELECT ${names}, search_terms AS dshm_terms FROM ${sql.raw(table.name)}
      WHERE ts_match_vq(search_terms, ${matches}::tsquery) ${filter ? sql`AND ${filter}` : sql``} ${range ? sql`AND ${range}` : sql``}
      ORDER BY created_at DESC, id DESC LIMIT ${RANK_CAP})`
  const bounds = windowBounds(planned, stats.histogram, kept.share)
  // A walk reads at most the newest window's rows of the filter.
  const keptRows = kept.share * planned.total
  const walks = kept.walk && walksNewestWindow(matchShare(planned, stats.shares), planned.total, bounds.length === 0 ? keptRows : Math.min(WINDOW_ROWS, keptRows))
  const newest = walks ? walk : branch
  const branches =
    bounds.length === 0
      ? [newest(undefined)]
      : [
          ...bounds.map((bound, i) => (i === 0 ? newest(sql`created_at >= ${bound}`) : branch(sql`created_at < ${bounds[i - 1]!} AND created_at >= ${bound}`))),
          branch(sql`created_at < ${bounds.at(-1)!}`),
        ]
  const query = sql`
    WITH candidate AS (
      SELECT * FROM (${sql.join(branches, sql` UNION ALL `)}) AS w LIMIT ${RANK_CAP}
    ), scored AS (
      SELECT c.*, (${sql.join(weights, sql` + `)})
        / (${LENGTH_NORM} * length(c.dshm_terms) / greatest(avg(length(c.dshm_terms)) OVER (), 1)) AS dshm_score
      FROM candidate AS c
    )
    SELECT dshm_score::float8 AS dshm_score, ${names} FROM scored ORDER BY dshm_score DESC, id DESC LIMIT ${limit}`
  const result = await tx.db.execute(query)
  return (result.rows as Record<string, unknown>[]).map((raw) => ({ row: rowOf<Row>(columns, raw), score: Number(raw.dshm_score) }))
}

/** What {@link openPgSearchIndex} did to each session's index, for `status().reason`. */
const builds = new WeakMap<PgSession, IndexBuildReason>()

async function sync(s: PgSession, force?: IndexBuildReason): Promise<void> {
  const did = await syncIndex(s, force)
  if (did) builds.set(s, did)
}

/**
 * Bring the index of a writable store up to date (call once at open, before the store is
 * used; a read-only store only reports). See {@link syncIndex}.
 */
export async function openPgSearchIndex(s: PgSession): Promise<void> {
  if (!s.readonly) await sync(s)
}

/** The search service of a PostgreSQL store; `status().reason` reports what this process did to the index. */
export function pgSearchService(s: PgSession): SearchService {
  const status = (tx: PgTx) => searchStatus(tx, builds.get(s) ?? null)
  const commonTerms = new CommonTerms()
  const statistics = new StatsCache()
  return {
    memories: async (text: string, options: MemorySearchOptions = {}): Promise<MemoryHit[]> => {
      const q = queryText(text)
      const { limit, filter } = memorySearchOptions(options)
      return s.readEach(async (tx) => {
        if (q.trim().length === 0) return []
        const stats = await statistics.get(tx, MEMORIES)
        const planned = await plan(tx, MEMORIES, q, commonTerms, stats)
        if (planned.forms.length === 0) return []
        const t = pgSchema.memories
        const hits = await rank<typeof t.$inferSelect>(tx, MEMORIES, MEMORY_COLUMNS, planned, scopeCondition(filter, t, s.options.user), limit, stats, MEMORY_ROWS)
        return hits.map((hit) => ({ memory: toMemory(hit.row), score: hit.score }))
      })
    },
    messages: async (text: string, options: MessageSearchOptions = {}): Promise<MessageHit[]> => {
      const q = queryText(text)
      const { limit, ...filter } = messageSearchOptions(options)
      return s.readEach(async (tx) => {
        if (q.trim().length === 0) return []
        const stats = await statistics.get(tx, MESSAGES)
        const planned = await plan(tx, MESSAGES, q, commonTerms, stats)
        if (planned.forms.length === 0) return []
        // `workspace` is the message's own copy (MESSAGE_COLUMNS): the GIN bitmap is ANDed with
        // the (workspace, created_at) index before any row is read.
        const conditions = messageConditions(filter, MESSAGE_COLUMNS)
        const hits = await rank<typeof pgSchema.messages.$inferSelect>(
          tx,
          MESSAGES,
          MESSAGE_TABLE_COLUMNS,
          planned,
          conditions.length === 0 ? undefined : sql.join(conditions, sql` AND `),
          limit,
          stats,
          keptBy(stats, filter),
        )
        return hits.map((hit) => ({ message: toMessage(hit.row), score: hit.score }))
      })
    },
    warm: async (): Promise<SearchIndexStatus> => {
      if (!s.readonly) await sync(s)
      return s.read(status)
    },
    rebuild: async (): Promise<SearchIndexStatus> => {
      s.assertWritable()
      await sync(s, 'manual')
      return s.read(status)
    },
    status: async (): Promise<SearchIndexStatus> => s.read(status),
  }
}
