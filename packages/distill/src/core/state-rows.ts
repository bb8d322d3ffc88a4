/** Row mapping of the distill tables, shared by the repository and the upgrade (no queries of their own). */
import { asc, eq } from 'drizzle-orm'
import { type ConversationState, initialConversationState, type LayerState, STATE_VERSION } from './state-types.js'
import { conversations, type DistillDb, layers, skipped } from './tables.js'

/** `distill_marks` name of the last start-up scan. */
export const SCAN_MARK = 'scan'

type ConversationRow = typeof conversations.$inferSelect

export function toLayer(row: typeof layers.$inferSelect): LayerState {
  return { sinceL2: row.sinceL2, sinceL3: row.sinceL3, lastL2At: row.lastL2At, lastL3At: row.lastL3At, attempts: row.attempts, notBefore: row.notBefore, lastError: row.lastError }
}

/** Read one conversation's state (fresh when never seen) inside a table unit. */
export function readConversation(db: DistillDb, conversationId: string): ConversationState {
  const row = db.select().from(conversations).where(eq(conversations.conversationId, conversationId)).get()
  if (!row) return initialConversationState(conversationId)
  const ranges = db
    .select({ fromSeq: skipped.fromSeq, toSeq: skipped.toSeq, at: skipped.at, reason: skipped.reason })
    .from(skipped)
    .where(eq(skipped.conversationId, conversationId))
    .orderBy(asc(skipped.id))
    .all()
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
export function writeConversation(db: DistillDb, state: Omit<ConversationState, 'skipped' | 'v'>, pending?: boolean): void {
  const values = columnsOf(state)
  db.insert(conversations)
    .values({ conversationId: state.conversationId, ...values, pending: pending ?? false })
    .onConflictDoUpdate({ target: conversations.conversationId, set: pending === undefined ? values : { ...values, pending } })
    .run()
}

/** Upsert one layer row. */
export function writeLayer(db: DistillDb, scopeKey: string, state: LayerState): void {
  db.insert(layers).values({ scopeKey, ...state }).onConflictDoUpdate({ target: layers.scopeKey, set: { ...state } }).run()
}

/** Mark a conversation pending (a row with a fresh state when it has none). */
export function markPending(db: DistillDb, conversationId: string): void {
  db.insert(conversations)
    .values({ conversationId, ...columnsOf(initialConversationState(conversationId)), pending: true })
    .onConflictDoUpdate({ target: conversations.conversationId, set: { pending: true } })
    .run()
}
