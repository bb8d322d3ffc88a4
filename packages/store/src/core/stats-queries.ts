/**
 * The counts behind `MemoryStore.stats`, backend-neutral: grouped `COUNT(*)` queries in the
 * SQL both SQLite and PostgreSQL speak, and the assembly of their rows into the public shapes.
 * A backend runs every query of a plan in one snapshot (`sqlite-stats.ts`, `pg-stats.ts`),
 * so an overview never loads rows and all its numbers agree with each other.
 */
import type { DayCounts, StoreCounts, WorkspaceCounts } from './types-stats.ts'

const DAY_MS = 86_400_000

/** A query result: rows of named columns (numbers may arrive as strings or bigints). */
export type StatsRows = Record<string, unknown>[]

/** Named queries a backend runs together in one snapshot. */
export type StatsPlan<K extends string> = Readonly<Record<K, string>>

const dayOf = (column: string) => `CAST(${column} / ${DAY_MS} AS INTEGER)`

/**
 * The session user in a plan's SQL: a named parameter each backend binds (SQLite binds
 * `:viewer` itself; PostgreSQL's runner rewrites it to `$1`). Counts of global rows are the
 * viewer's own and unattributed ones only, as every other read of the session.
 */
export const VIEWER_PARAM = ':viewer'
const VISIBLE = `(scope <> 'global' OR created_by IN ('', ${VIEWER_PARAM}))`
/** The persona a viewer sees: every workspace's, and one global one (their own, else the unattributed one). */
const VISIBLE_PERSONA = `(scope <> 'global' OR owner = ${VIEWER_PARAM} OR (owner = '' AND NOT EXISTS (SELECT 1 FROM store_persona o WHERE o.scope = 'global' AND o.workspace = store_persona.workspace AND o.owner = ${VIEWER_PARAM})))`

/** Every query of {@link StoreCounts}. */
export const COUNTS_PLAN = {
  conversations: 'SELECT COUNT(*) AS n FROM store_conversations',
  messages: 'SELECT COUNT(*) AS n FROM store_messages',
  userMessages: "SELECT COUNT(*) AS n FROM store_messages WHERE role = 'user'",
  assistantMessages: "SELECT COUNT(*) AS n FROM store_messages WHERE role = 'assistant'",
  // Messages, not vectors: a message may hold one vector of each model (the key's index answers).
  messageVectors: 'SELECT COUNT(DISTINCT message_id) AS n FROM store_message_vectors',
  currentMemories: `SELECT COUNT(*) AS n FROM store_memories WHERE superseded_by IS NULL AND ${VISIBLE}`,
  supersededMemories: `SELECT COUNT(*) AS n FROM store_memories WHERE superseded_by IS NOT NULL AND ${VISIBLE}`,
  memoriesByScope: `SELECT scope AS k, COUNT(*) AS n FROM store_memories WHERE superseded_by IS NULL AND ${VISIBLE} GROUP BY scope ORDER BY scope`,
  memoriesByKind: `SELECT kind AS k, COUNT(*) AS n FROM store_memories WHERE superseded_by IS NULL AND ${VISIBLE} GROUP BY kind ORDER BY kind`,
  scenes: `SELECT COUNT(*) AS n FROM store_scenes WHERE ${VISIBLE}`,
  scenesByScope: `SELECT scope AS k, COUNT(*) AS n FROM store_scenes WHERE ${VISIBLE} GROUP BY scope ORDER BY scope`,
  persona: `SELECT COUNT(*) AS n FROM store_persona WHERE ${VISIBLE_PERSONA}`,
  personaByScope: `SELECT scope AS k, COUNT(*) AS n FROM store_persona WHERE ${VISIBLE_PERSONA} GROUP BY scope ORDER BY scope`,
  workspaceConversations:
    'SELECT c.workspace AS w, COUNT(DISTINCT c.id) AS c, COUNT(m.id) AS m FROM store_conversations c LEFT JOIN store_messages m ON m.conversation_id = c.id GROUP BY c.workspace',
  workspaceMemories: 'SELECT workspace AS w, COUNT(*) AS n FROM store_memories WHERE superseded_by IS NULL AND workspace IS NOT NULL GROUP BY workspace',
  auditEntries: 'SELECT COUNT(*) AS n FROM store_audit',
} as const satisfies StatsPlan<string>

/** Every query of {@link DayCounts}: one grouped scan of the `created_at` columns per table. */
export const DAILY_PLAN = {
  memories: `SELECT ${dayOf('created_at')} AS d, scope AS s, COUNT(*) AS n FROM store_memories WHERE superseded_by IS NULL AND ${VISIBLE} GROUP BY ${dayOf('created_at')}, scope`,
  scenes: `SELECT ${dayOf('created_at')} AS d, COUNT(*) AS n FROM store_scenes WHERE ${VISIBLE} GROUP BY ${dayOf('created_at')}`,
  messages: `SELECT ${dayOf('created_at')} AS d, COUNT(*) AS n FROM store_messages GROUP BY ${dayOf('created_at')}`,
} as const satisfies StatsPlan<string>

/** The kinds of current memories, most used first (ties by name). */
export const KINDS_SQL = `SELECT kind AS k FROM store_memories WHERE superseded_by IS NULL AND ${VISIBLE} GROUP BY kind ORDER BY COUNT(*) DESC, kind`

/** Run every query of `plan` with `all` (inside the caller's snapshot). */
export function runPlan<K extends string>(plan: StatsPlan<K>, all: (sql: string) => StatsRows): Record<K, StatsRows> {
  return Object.fromEntries(Object.entries<string>(plan).map(([name, sql]) => [name, all(sql)])) as Record<K, StatsRows>
}

/** {@link runPlan} for a driver whose queries are asynchronous (one after another, on one connection). */
export async function runPlanAsync<K extends string>(plan: StatsPlan<K>, all: (sql: string) => Promise<StatsRows>): Promise<Record<K, StatsRows>> {
  const results: Partial<Record<K, StatsRows>> = {}
  for (const [name, sql] of Object.entries<string>(plan)) results[name as K] = await all(sql)
  return results as Record<K, StatsRows>
}

const count = (rows: StatsRows): number => Number(rows[0]?.n ?? 0)
const grouped = (rows: StatsRows): Record<string, number> => Object.fromEntries(rows.map((row) => [String(row.k), Number(row.n)]))

/** The {@link StoreCounts} of one run of {@link COUNTS_PLAN}. */
export function countsOf(r: Record<keyof typeof COUNTS_PLAN, StatsRows>): StoreCounts {
  return {
    conversations: count(r.conversations),
    messages: { total: count(r.messages), user: count(r.userMessages), assistant: count(r.assistantMessages), withVectors: count(r.messageVectors) },
    memories: {
      current: count(r.currentMemories),
      superseded: count(r.supersededMemories),
      byScope: grouped(r.memoriesByScope),
      byKind: grouped(r.memoriesByKind),
    },
    scenes: { total: count(r.scenes), byScope: grouped(r.scenesByScope) },
    persona: { total: count(r.persona), byScope: grouped(r.personaByScope) },
    workspaces: workspaceCountsOf(r.workspaceConversations, r.workspaceMemories),
    auditEntries: count(r.auditEntries),
  }
}

/** Per workspace: conversations, their messages and current memories; busiest first. */
function workspaceCountsOf(conversations: StatsRows, memories: StatsRows): WorkspaceCounts[] {
  const workspaces = new Map<string, { workspace: string; conversations: number; messages: number; memories: number }>()
  const entry = (workspace: string) => {
    let value = workspaces.get(workspace)
    if (!value) workspaces.set(workspace, (value = { workspace, conversations: 0, messages: 0, memories: 0 }))
    return value
  }
  for (const row of conversations) {
    const value = entry(String(row.w))
    value.conversations = Number(row.c)
    value.messages = Number(row.m)
  }
  for (const row of memories) entry(String(row.w)).memories = Number(row.n)
  return [...workspaces.values()].sort((a, b) => b.messages + b.memories - (a.messages + a.memories) || a.workspace.localeCompare(b.workspace))
}

/** Writes per UTC day, oldest first, from one run of {@link DAILY_PLAN}. */
export function dailyOf(r: Record<keyof typeof DAILY_PLAN, StatsRows>): DayCounts[] {
  const days = new Map<number, { day: number; memories: Record<string, number>; scenes: number; messages: number }>()
  const at = (day: number) => {
    let value = days.get(day)
    if (!value) days.set(day, (value = { day, memories: {}, scenes: 0, messages: 0 }))
    return value
  }
  for (const row of r.memories) at(Number(row.d)).memories[String(row.s)] = Number(row.n)
  for (const row of r.scenes) at(Number(row.d)).scenes = Number(row.n)
  for (const row of r.messages) at(Number(row.d)).messages = Number(row.n)
  return [...days.values()].sort((a, b) => a.day - b.day)
}

/** The kind names of one run of {@link KINDS_SQL}. */
export function kindsOf(rows: StatsRows): string[] {
  return rows.map((row) => String(row.k))
}
