/**
 * Row mapping of the distill tables, shared by the repository and the upgrade. Every function
 * runs inside one unit of the store's seam and takes the unit's `db` and `t` (the backend's
 * tables): the portable query style, so the same code runs on SQLite and PostgreSQL.
 */
import { asc, eq } from 'drizzle-orm'
import { type ConversationState, initialConversationState, type LayerState, STATE_VERSION } from './state-types.js'
import type { conversations, DistillDb, DistillSchema, layers } from './tables.js'

/** `distill_marks` name of the last start-up scan. */
export const SCAN_MARK = 'scan'

type ConversationRow = typeof conversations.$inferSelect

export function toLayer(row: typeof layers.$inferSelect): LayerState {
  return { sinceL2: row.sinceL2, sinceL3: row.sinceL3, lastL2At: row.lastL2At, lastL3At: row.lastL3At, attempts: row.attempts, notBefore: row.notBefore, lastError: row.lastError }
}

/** Read one conversation's state (fresh when never seen) inside a table unit. */
export async function readConversation(db: DistillDb, t: DistillSchema, conversationId: string): Promise<ConversationState> {
  const [row] = await db.select().from(t.conversations).where(eq(t.conversations.conversationId, conversationId)).limit(1)
  if (!row) return initialConversationState(conversationId)
  const ranges = await db
    .select({ fromSeq: t.skipped.fromSeq, toSeq: t.skipped.toSeq, at: t.skipped.at, reason: t.skipped.reason })
    .from(t.skipped)
    .where(eq(t.skipped.conversationId, conversationId))
    .orderBy(asc(t.skipped.id))
  return toConversation(row, ranges)
}

export function toConversation(row: ConversationRow, ranges: ConversationState['skipped']): ConversationState {
  return {
    v: STATE_VERSION,
    conversationId: row.conversationId,
    cursorSeq: row.cursorSeq,
    stage: row.stage,
    attempts: row.attempts,
    notBefore: row.notBefore,
    lastError: row.lastError,
    lastRunAt: row.lastRunAt,
    gaveUpAt: row.gaveUpAt,
    skipped: ranges,
    lease: row.leaseOwner !== null && row.leaseUntil !== null ? { owner: row.leaseOwner, until: row.leaseUntil } : null,
  }
}

/** The columns of a conversation row but its id and pending flag. */
function columnsOf(state: Omit<ConversationState, 'skipped' | 'v'>) {
  return {
    cursorSeq: state.cursorSeq,
    stage: state.stage,
    attempts: state.attempts,
    notBefore: state.notBefore,
    lastError: state.lastError,
    lastRunAt: state.lastRunAt,
    gaveUpAt: state.gaveUpAt,
    leaseOwner: state.lease?.owner ?? null,
    leaseUntil: state.lease?.until ?? null,
  }
}

/** Upsert a conversation row (the pending flag is left as it is unless given; a new row is not pending). */
export async function writeConversation(db: DistillDb, t: DistillSchema, state: Omit<ConversationState, 'skipped' | 'v'>, pending?: boolean): Promise<void> {
  const values = columnsOf(state)
  await db
    .insert(t.conversations)
    .values({ conversationId: state.conversationId, ...values, pending: pending ?? false })
    .onConflictDoUpdate({ target: t.conversations.conversationId, set: pending === undefined ? values : { ...values, pending } })
}

/** Upsert one layer row. */
export async function writeLayer(db: DistillDb, t: DistillSchema, scopeKey: string, state: LayerState): Promise<void> {
  await db
    .insert(t.layers)
    .values({ scopeKey, ...state })
    .onConflictDoUpdate({ target: t.layers.scopeKey, set: { ...state } })
}

/** Mark a conversation pending (a row with a fresh state when it has none). */
export async function markPending(db: DistillDb, t: DistillSchema, conversationId: string): Promise<void> {
  await db
    .insert(t.conversations)
    .values({ conversationId, ...columnsOf(initialConversationState(conversationId)), pending: true })
    .onConflictDoUpdate({ target: t.conversations.conversationId, set: { pending: true } })
}
