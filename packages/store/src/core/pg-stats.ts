/**
 * Counts of the PostgreSQL store (`MemoryStore.stats`): the same grouped `COUNT(*)` plans as
 * SQLite (`stats-queries.ts`), each method one snapshot read (REPEATABLE READ), so every
 * number of an overview comes from the same moment.
 */
import type { PgSession, PgTx } from './pg-session.ts'
import { COUNTS_PLAN, countsOf, DAILY_PLAN, dailyOf, KINDS_SQL, kindsOf, runPlanAsync, type StatsRows, VIEWER_PARAM } from './stats-queries.ts'
import type { StatsService } from './types-stats.ts'

/**
 * The search index's size: the GIN indexes of the `search_terms` columns and the vocabulary
 * table with its key, in the store's schema (the analogue of SQLite's FTS5 tables).
 */
const SEARCH_BYTES_SQL = String.raw`SELECT coalesce(sum(pg_relation_size(c.oid)), 0) AS n FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = current_schema() AND (c.relname LIKE 'store\_%\_search' OR c.relname LIKE 'store\_search\_%')`

/** The stats service of one PostgreSQL store. */
export function pgStatsService(s: PgSession): StatsService {
  const all = (tx: PgTx) => (source: string) =>
    (source.includes(VIEWER_PARAM) ? tx.query(source.replaceAll(VIEWER_PARAM, '$1'), [s.options.user]) : tx.query(source)) as Promise<StatsRows>
  return {
    counts: () => s.read(async (tx) => countsOf(await runPlanAsync(COUNTS_PLAN, all(tx)))),
    daily: () => s.read(async (tx) => dailyOf(await runPlanAsync(DAILY_PLAN, all(tx)))),
    kinds: () => s.read(async (tx) => kindsOf(await all(tx)(KINDS_SQL))),
    searchIndexBytes: () => s.read(async (tx) => Number((await tx.query(SEARCH_BYTES_SQL))[0]?.n ?? 0)),
  }
}
