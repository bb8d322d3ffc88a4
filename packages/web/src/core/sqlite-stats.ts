/**
 * The one module of the memory browser (and of the `dsh-memory` CLI, which imports it) that
 * reads `memory.db` with SQL. Why it exists: the store's repository interface has no counts
 * and no grouping, and the overview must count 100 000 memories per scope and per day without
 * loading them. Everything here is read-only aggregation over the store's own tables; every
 * row-level read and every write goes through the store API.
 */
import Database from 'better-sqlite3'

/** A read-only connection (never creates the file, waits up to 5 s for a writer). */
export function openReadOnly(path: string): Database.Database {
  return new Database(path, { readonly: true, fileMustExist: true, timeout: 5_000 })
}

/** Row counts of the store's tables, per layer and scope. */
export interface StoreCounts {
  readonly conversations: number
  readonly messages: { readonly total: number; readonly user: number; readonly assistant: number }
  readonly memories: {
    readonly current: number
    readonly superseded: number
    readonly byScope: Record<string, number>
    readonly byKind: Record<string, number>
  }
  readonly scenes: { readonly total: number; readonly byScope: Record<string, number> }
  readonly persona: { readonly total: number; readonly byScope: Record<string, number> }
  /** Per workspace (`''` = unknown): conversations, messages, current memories. */
  readonly workspaces: { readonly workspace: string; readonly conversations: number; readonly messages: number; readonly memories: number }[]
  readonly auditEntries: number
}

const count = (db: Database.Database, sql: string, ...params: unknown[]): number => Number((db.prepare(sql).get(...params) as { n: number }).n)
const grouped = (db: Database.Database, sql: string): Record<string, number> =>
  Object.fromEntries((db.prepare(sql).all() as { k: string; n: number }[]).map((row) => [row.k, Number(row.n)]))

/** Count what the store holds. */
export function storeCounts(db: Database.Database): StoreCounts {
  const workspaces = new Map<string, { workspace: string; conversations: number; messages: number; memories: number }>()
  const entry = (workspace: string) => {
    let value = workspaces.get(workspace)
    if (!value) workspaces.set(workspace, (value = { workspace, conversations: 0, messages: 0, memories: 0 }))
    return value
  }
  for (const row of db.prepare('SELECT c.workspace AS w, COUNT(DISTINCT c.id) AS c, COUNT(m.id) AS m FROM store_conversations c LEFT JOIN store_messages m ON m.conversation_id = c.id GROUP BY c.workspace').all() as {
    w: string
    c: number
    m: number
  }[]) {
    const value = entry(row.w)
    value.conversations = Number(row.c)
    value.messages = Number(row.m)
  }
  for (const row of db.prepare('SELECT workspace AS w, COUNT(*) AS n FROM store_memories WHERE superseded_by IS NULL AND workspace IS NOT NULL GROUP BY workspace').all() as { w: string; n: number }[]) {
    entry(row.w).memories = Number(row.n)
  }
  return {
    conversations: count(db, 'SELECT COUNT(*) AS n FROM store_conversations'),
    messages: {
      total: count(db, 'SELECT COUNT(*) AS n FROM store_messages'),
      user: count(db, "SELECT COUNT(*) AS n FROM store_messages WHERE role = 'user'"),
      assistant: count(db, "SELECT COUNT(*) AS n FROM store_messages WHERE role = 'assistant'"),
    },
    memories: {
      current: count(db, 'SELECT COUNT(*) AS n FROM store_memories WHERE superseded_by IS NULL'),
      superseded: count(db, 'SELECT COUNT(*) AS n FROM store_memories WHERE superseded_by IS NOT NULL'),
      byScope: grouped(db, 'SELECT scope AS k, COUNT(*) AS n FROM store_memories WHERE superseded_by IS NULL GROUP BY scope ORDER BY scope'),
      byKind: grouped(db, 'SELECT kind AS k, COUNT(*) AS n FROM store_memories WHERE superseded_by IS NULL GROUP BY kind ORDER BY kind'),
    },
    scenes: {
      total: count(db, 'SELECT COUNT(*) AS n FROM store_scenes'),
      byScope: grouped(db, 'SELECT scope AS k, COUNT(*) AS n FROM store_scenes GROUP BY scope ORDER BY scope'),
    },
    persona: {
      total: count(db, 'SELECT COUNT(*) AS n FROM store_persona'),
      byScope: grouped(db, 'SELECT scope AS k, COUNT(*) AS n FROM store_persona GROUP BY scope ORDER BY scope'),
    },
    workspaces: [...workspaces.values()].sort((a, b) => b.messages + b.memories - (a.messages + a.memories) || a.workspace.localeCompare(b.workspace)),
    auditEntries: count(db, 'SELECT COUNT(*) AS n FROM store_audit'),
  }
}

/** What was written on one UTC day (epoch-day number = floor(ms / 86 400 000)). */
export interface DayCounts {
  readonly day: number
  /** Current (not superseded) memories created that day, per scope. */
  readonly memories: Readonly<Record<string, number>>
  /** Scenes created that day. */
  readonly scenes: number
  /** Conversation messages captured that day (palace index rows excluded). */
  readonly messages: number
}

/**
 * Writes per UTC day, oldest first, for the overview chart. One grouped query per table, so
 * the cost is a scan of the `created_at` columns, not of the rows' text.
 */
export function dailyCounts(db: Database.Database): DayCounts[] {
  const days = new Map<number, { day: number; memories: Record<string, number>; scenes: number; messages: number }>()
  const at = (day: number) => {
    let value = days.get(day)
    if (!value) days.set(day, (value = { day, memories: {}, scenes: 0, messages: 0 }))
    return value
  }
  for (const row of db.prepare('SELECT CAST(created_at / 86400000 AS INTEGER) AS d, scope AS s, COUNT(*) AS n FROM store_memories WHERE superseded_by IS NULL GROUP BY d, s').all() as { d: number; s: string; n: number }[]) {
    at(Number(row.d)).memories[row.s] = Number(row.n)
  }
  for (const row of db.prepare('SELECT CAST(created_at / 86400000 AS INTEGER) AS d, COUNT(*) AS n FROM store_scenes GROUP BY d').all() as { d: number; n: number }[]) {
    at(Number(row.d)).scenes = Number(row.n)
  }
  for (const row of db
    .prepare("SELECT CAST(created_at / 86400000 AS INTEGER) AS d, COUNT(*) AS n FROM store_messages GROUP BY d")
    .all() as { d: number; n: number }[]) {
    at(Number(row.d)).messages = Number(row.n)
  }
  return [...days.values()].sort((a, b) => a.day - b.day)
}

/** Kinds of current memories, most common first (for the memories page's filter). */
export function memoryKinds(db: Database.Database): string[] {
  return (db.prepare('SELECT kind FROM store_memories WHERE superseded_by IS NULL GROUP BY kind ORDER BY COUNT(*) DESC, kind').pluck().all() as string[]).map(String)
}
