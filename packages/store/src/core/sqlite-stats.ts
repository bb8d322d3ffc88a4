/**
 * Counts of the SQLite store (`MemoryStore.stats`): grouped `COUNT(*)` queries over the
 * store's tables, each method one snapshot read on the store's own connection, so an overview
 * never loads rows and a read-only store (the CLI's `status` on a data dir DSH holds open)
 * answers as well as the owner's.
 */
import type { SqliteSession } from './sqlite-session.ts'
import type { DayCounts, StatsService, StoreCounts, WorkspaceCounts } from './types-stats.ts'

const DAY_MS = 86_400_000

/** The stats service of one store. */
export function statsService(s: SqliteSession): StatsService {
  const count = (source: string): number => Number(s.stmt(source).pluck().get())
  const grouped = (source: string): Record<string, number> =>
    Object.fromEntries((s.stmt(source).all() as { k: string; n: number }[]).map((row) => [row.k, Number(row.n)]))
  // One deferred transaction per call: every query of an overview sees the same snapshot.
  const snapshot = <T>(op: () => T): Promise<T> => s.read(() => s.deferred(op))
  return {
    counts: () =>
      snapshot(
        (): StoreCounts => ({
          conversations: count('SELECT COUNT(*) FROM store_conversations'),
          messages: {
            total: count('SELECT COUNT(*) FROM store_messages'),
            user: count("SELECT COUNT(*) FROM store_messages WHERE role = 'user'"),
            assistant: count("SELECT COUNT(*) FROM store_messages WHERE role = 'assistant'"),
          },
          memories: {
            current: count('SELECT COUNT(*) FROM store_memories WHERE superseded_by IS NULL'),
            superseded: count('SELECT COUNT(*) FROM store_memories WHERE superseded_by IS NOT NULL'),
            byScope: grouped('SELECT scope AS k, COUNT(*) AS n FROM store_memories WHERE superseded_by IS NULL GROUP BY scope ORDER BY scope'),
            byKind: grouped('SELECT kind AS k, COUNT(*) AS n FROM store_memories WHERE superseded_by IS NULL GROUP BY kind ORDER BY kind'),
          },
          scenes: { total: count('SELECT COUNT(*) FROM store_scenes'), byScope: grouped('SELECT scope AS k, COUNT(*) AS n FROM store_scenes GROUP BY scope ORDER BY scope') },
          persona: { total: count('SELECT COUNT(*) FROM store_persona'), byScope: grouped('SELECT scope AS k, COUNT(*) AS n FROM store_persona GROUP BY scope ORDER BY scope') },
          workspaces: workspaceCounts(s),
          auditEntries: count('SELECT COUNT(*) FROM store_audit'),
        }),
      ),
    daily: () => snapshot(() => dailyCounts(s)),
    kinds: () =>
      snapshot(() => (s.stmt('SELECT kind FROM store_memories WHERE superseded_by IS NULL GROUP BY kind ORDER BY COUNT(*) DESC, kind').pluck().all() as unknown[]).map(String)),
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

/** Per workspace: conversations, their messages and current memories; busiest first. */
function workspaceCounts(s: SqliteSession): WorkspaceCounts[] {
  const workspaces = new Map<string, { workspace: string; conversations: number; messages: number; memories: number }>()
  const entry = (workspace: string) => {
    let value = workspaces.get(workspace)
    if (!value) workspaces.set(workspace, (value = { workspace, conversations: 0, messages: 0, memories: 0 }))
    return value
  }
  const conversations = s
    .stmt('SELECT c.workspace AS w, COUNT(DISTINCT c.id) AS c, COUNT(m.id) AS m FROM store_conversations c LEFT JOIN store_messages m ON m.conversation_id = c.id GROUP BY c.workspace')
    .all() as { w: string; c: number; m: number }[]
  for (const row of conversations) {
    const value = entry(row.w)
    value.conversations = Number(row.c)
    value.messages = Number(row.m)
  }
  const memories = s.stmt('SELECT workspace AS w, COUNT(*) AS n FROM store_memories WHERE superseded_by IS NULL AND workspace IS NOT NULL GROUP BY workspace').all() as { w: string; n: number }[]
  for (const row of memories) entry(row.w).memories = Number(row.n)
  return [...workspaces.values()].sort((a, b) => b.messages + b.memories - (a.messages + a.memories) || a.workspace.localeCompare(b.workspace))
}

/** Writes per UTC day, oldest first: one grouped scan of the `created_at` columns per table. */
function dailyCounts(s: SqliteSession): DayCounts[] {
  const days = new Map<number, { day: number; memories: Record<string, number>; scenes: number; messages: number }>()
  const at = (day: number) => {
    let value = days.get(day)
    if (!value) days.set(day, (value = { day, memories: {}, scenes: 0, messages: 0 }))
    return value
  }
  const byDay = (table: string) => s.stmt(`SELECT CAST(created_at / ${DAY_MS} AS INTEGER) AS d, COUNT(*) AS n FROM ${table} GROUP BY d`).all() as { d: number; n: number }[]
  const memories = s.stmt(`SELECT CAST(created_at / ${DAY_MS} AS INTEGER) AS d, scope AS s, COUNT(*) AS n FROM store_memories WHERE superseded_by IS NULL GROUP BY d, s`).all() as { d: number; s: string; n: number }[]
  for (const row of memories) at(Number(row.d)).memories[row.s] = Number(row.n)
  for (const row of byDay('store_scenes')) at(Number(row.d)).scenes = Number(row.n)
  for (const row of byDay('store_messages')) at(Number(row.d)).messages = Number(row.n)
  return [...days.values()].sort((a, b) => a.day - b.day)
}
