/**
 * Counts of the SQLite store (`MemoryStore.stats`): the grouped `COUNT(*)` plans of
 * `stats-queries.ts`, each method one snapshot read on the store's own connection, so an
 * overview never loads rows and a read-only store (the CLI's `status` on a data dir DSH holds
 * open) answers as well as the owner's.
 */
import type { SqliteSession } from './sqlite-session.ts'
import { COUNTS_PLAN, countsOf, DAILY_PLAN, dailyOf, KINDS_SQL, kindsOf, runPlan, type StatsRows, VIEWER_PARAM } from './stats-queries.ts'
import type { StatsService } from './types-stats.ts'

/** The stats service of one store. */
export function statsService(s: SqliteSession): StatsService {
  // SQLite binds the named `:viewer` itself.
  const all = (source: string): StatsRows => (source.includes(VIEWER_PARAM) ? s.stmt(source).all({ viewer: s.options.user }) : s.stmt(source).all()) as StatsRows
  // One deferred transaction per call: every query of an overview sees the same snapshot.
  const snapshot = <T>(op: () => T): Promise<T> => s.read(() => s.deferred(op))
  return {
    counts: () => snapshot(() => countsOf(runPlan(COUNTS_PLAN, all))),
    daily: () => snapshot(() => dailyOf(runPlan(DAILY_PLAN, all))),
    kinds: () => snapshot(() => kindsOf(all(KINDS_SQL))),
    searchIndexBytes: () =>
      s.read(() => {
        try {
          // The FTS5 tables, their mapping tables and those tables' indexes, as dbstat sees them.
          return Number(
            s.sqlite
              .prepare("SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name LIKE 'store\\_search%' ESCAPE '\\' OR name LIKE 'sqlite\\_autoindex\\_store\\_search%' ESCAPE '\\'")
              .pluck()
              .get(),
          )
        } catch {
          // A SQLite built without dbstat cannot tell.
          return 0
        }
      }),
  }
}
