/**
 * Rows of recall's own tables in and out: the one place that maps the state recall keeps
 * (session settings, layer state, lifecycle counters and schedules) to its `recall_*` rows.
 * Every function runs inside one unit of the store's seam (`tables.read` / `tables.write`)
 * and awaits only its own queries, so a read-modify-write is one unit under the writer lock.
 * They take the unit's `db` and `t` (the backend's tables) and use only the query forms both
 * backends share, so the same code runs on SQLite and PostgreSQL.
 */
import { createHash } from 'node:crypto'
import { asc, eq, sql } from 'drizzle-orm'
import type { PackageDatabase } from '@dsh-memory/store'
import { emptyLayerState, type InjectionRecord, type SessionLayerState } from './injection-ledger.ts'
import type { SessionMemorySettings } from './session-modes.ts'
import { LIFECYCLE_ROW, type RecallSchema } from './state-schema.ts'

/** The database handle of recall's tables inside one seam unit. */
export type RecallDatabase = PackageDatabase<RecallSchema>

/** The audit entity id of a session (the store caps ids; a very long session id is digested). */
export function sessionAuditId(sessionId: string): string {
  return sessionId.length <= 200 ? sessionId : `sha256:${createHash('sha256').update(sessionId).digest('hex')}`
}

/** A session's stored settings (`undefined`: it never chose). */
export async function readSettings(db: RecallDatabase, { sessionSettings }: RecallSchema, sessionId: string): Promise<SessionMemorySettings | undefined> {
  const [row] = await db.select().from(sessionSettings).where(eq(sessionSettings.sessionId, sessionId)).limit(1)
  return row ? { mode: row.mode, inject: row.inject, updatedAt: row.updatedAt } : undefined
}

/** Store a session's settings. */
export async function writeSettings(db: RecallDatabase, { sessionSettings }: RecallSchema, sessionId: string, settings: SessionMemorySettings & { updatedAt: number }): Promise<void> {
  const values = { mode: settings.mode, inject: settings.inject, updatedAt: settings.updatedAt }
  await db
    .insert(sessionSettings)
    .values({ sessionId, ...values })
    .onConflictDoUpdate({ target: sessionSettings.sessionId, set: values })
}

/** A session's layer state (empty when it never enabled a layer). */
export async function readLayerState(db: RecallDatabase, { layerSessions, injections }: RecallSchema, sessionId: string): Promise<SessionLayerState> {
  const [session] = await db.select().from(layerSessions).where(eq(layerSessions.sessionId, sessionId)).limit(1)
  if (!session) return emptyLayerState(sessionId)
  const records = await db.select().from(injections).where(eq(injections.sessionId, sessionId)).orderBy(asc(injections.position))
  return {
    ...emptyLayerState(sessionId, session.updatedAt),
    enabled: { global: session.globalEnabled, workspace: session.workspaceEnabled },
    injections: records.map(({ sessionId: _session, position: _position, ...record }): InjectionRecord => record),
  }
}

/** The write counter of a session's layer state (0 before its first write). */
export async function readLayerVersion(db: RecallDatabase, { layerSessions }: RecallSchema, sessionId: string): Promise<number> {
  const [row] = await db.select({ version: layerSessions.version }).from(layerSessions).where(eq(layerSessions.sessionId, sessionId)).limit(1)
  return row?.version ?? 0
}

/**
 * Replace a session's layer state: its enabled layers and exactly the records it holds.
 * @returns the state's new write counter.
 */
export async function writeLayerState(db: RecallDatabase, { layerSessions, injections }: RecallSchema, state: SessionLayerState): Promise<number> {
  const values = { globalEnabled: state.enabled.global, workspaceEnabled: state.enabled.workspace, updatedAt: state.updatedAt }
  const [written] = await db
    .insert(layerSessions)
    .values({ sessionId: state.sessionId, ...values, version: 1 })
    .onConflictDoUpdate({ target: layerSessions.sessionId, set: { ...values, version: sql`${layerSessions.version} + 1` } })
    .returning({ version: layerSessions.version })
  // The records are few (at most MAX_RECORDS): rewriting them keeps positions and the
  // one-live-snapshot index exact without diffing.
  await db.delete(injections).where(eq(injections.sessionId, state.sessionId))
  if (state.injections.length > 0) {
    await db.insert(injections).values(state.injections.map((record, position) => ({ ...record, sessionId: state.sessionId, position })))
  }
  return written!.version
}

/** Every session that has layer state, in session id order (at most `limit`). */
export async function listLayerSessions(db: RecallDatabase, { layerSessions }: RecallSchema, limit: number): Promise<string[]> {
  const rows = await db.select({ sessionId: layerSessions.sessionId }).from(layerSessions).orderBy(asc(layerSessions.sessionId)).limit(limit)
  return rows.map((row) => row.sessionId)
}

/** The lifecycle's turn counter. */
export interface TurnState {
  /** Completed user turns since the last review. */
  readonly sinceReview: number
  readonly total: number
  readonly lastTurnAt: number
  readonly lastReviewAt: number
}

/** The consolidation schedule of one layer. */
export interface LayerSchedule {
  readonly layerKey: string
  /** The layer revision right after the last consolidation (0 = never). */
  readonly consolidatedRevision: number
  readonly lastRunAt: number
  /** When the pending consolidation is due; null when the layer is clean. */
  readonly dueAt: number | null
}

/** The retention clock. */
export interface RetentionState {
  readonly lastSweepAt: number
}

const NO_TURNS: TurnState = Object.freeze({ sinceReview: 0, total: 0, lastTurnAt: 0, lastReviewAt: 0 })

/** The turn counter (zeros before the first counted turn). */
export async function readTurns(db: RecallDatabase, { lifecycleCounters }: RecallSchema): Promise<TurnState> {
  const [row] = await db.select().from(lifecycleCounters).where(eq(lifecycleCounters.id, LIFECYCLE_ROW)).limit(1)
  return row ? { sinceReview: row.turnsSinceReview, total: row.turnsTotal, lastTurnAt: row.lastTurnAt, lastReviewAt: row.lastReviewAt } : NO_TURNS
}

/** Store the turn counter (the retention clock is left as it is). */
export async function writeTurns(db: RecallDatabase, { lifecycleCounters }: RecallSchema, turns: TurnState): Promise<void> {
  const values = { turnsSinceReview: turns.sinceReview, turnsTotal: turns.total, lastTurnAt: turns.lastTurnAt, lastReviewAt: turns.lastReviewAt }
  await db
    .insert(lifecycleCounters)
    .values({ id: LIFECYCLE_ROW, ...values })
    .onConflictDoUpdate({ target: lifecycleCounters.id, set: values })
}

/** The retention clock; `undefined` until the first lifecycle pass started it. */
export async function readRetention(db: RecallDatabase, { lifecycleCounters }: RecallSchema): Promise<RetentionState | undefined> {
  const [row] = await db.select({ lastSweepAt: lifecycleCounters.lastSweepAt }).from(lifecycleCounters).where(eq(lifecycleCounters.id, LIFECYCLE_ROW)).limit(1)
  return row?.lastSweepAt == null ? undefined : { lastSweepAt: row.lastSweepAt }
}

/** Store the retention clock (the turn counter is left as it is). */
export async function writeRetention(db: RecallDatabase, { lifecycleCounters }: RecallSchema, retention: RetentionState): Promise<void> {
  await db
    .insert(lifecycleCounters)
    .values({ id: LIFECYCLE_ROW, turnsSinceReview: 0, turnsTotal: 0, lastTurnAt: 0, lastReviewAt: 0, lastSweepAt: retention.lastSweepAt })
    .onConflictDoUpdate({ target: lifecycleCounters.id, set: { lastSweepAt: retention.lastSweepAt } })
}

/** A layer's consolidation schedule (a clean, never consolidated layer when there is no row). */
export async function readSchedule(db: RecallDatabase, { layerSchedules }: RecallSchema, layerKey: string): Promise<LayerSchedule> {
  const [row] = await db.select().from(layerSchedules).where(eq(layerSchedules.layerKey, layerKey)).limit(1)
  return row ?? { layerKey, consolidatedRevision: 0, lastRunAt: 0, dueAt: null }
}

/** True when a layer has a stored schedule. */
export async function hasSchedule(db: RecallDatabase, { layerSchedules }: RecallSchema, layerKey: string): Promise<boolean> {
  return (await db.select({ layerKey: layerSchedules.layerKey }).from(layerSchedules).where(eq(layerSchedules.layerKey, layerKey)).limit(1)).length > 0
}

/** Store a layer's consolidation schedule. */
export async function writeSchedule(db: RecallDatabase, { layerSchedules }: RecallSchema, schedule: LayerSchedule): Promise<void> {
  const values = { consolidatedRevision: schedule.consolidatedRevision, lastRunAt: schedule.lastRunAt, dueAt: schedule.dueAt }
  await db
    .insert(layerSchedules)
    .values({ layerKey: schedule.layerKey, ...values })
    .onConflictDoUpdate({ target: layerSchedules.layerKey, set: values })
}
