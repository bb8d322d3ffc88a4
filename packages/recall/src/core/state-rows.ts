/**
 * Rows of recall's own tables in and out: the one place that maps the state recall keeps
 * (session settings, layer state, lifecycle counters and schedules) to its `recall_*` rows.
 * Every function is synchronous and runs inside one unit of the store's seam
 * (`tables.read` / `tables.write`), so a read-modify-write never spans an await.
 */
import { createHash } from 'node:crypto'
import { asc, eq } from 'drizzle-orm'
import type { PackageDatabase } from '@dsh-memory/store'
import { emptyLayerState, type InjectionRecord, type SessionLayerState } from './injection-ledger.ts'
import type { SessionMemorySettings } from './session-modes.ts'
import { injections, layerSchedules, layerSessions, LIFECYCLE_ROW, lifecycleCounters, type RecallSchema, sessionSettings } from './state-schema.ts'

/** The database handle of recall's tables inside one seam unit. */
export type RecallDatabase = PackageDatabase<RecallSchema>

/** The audit entity id of a session (the store caps ids; a very long session id is digested). */
export function sessionAuditId(sessionId: string): string {
  return sessionId.length <= 200 ? sessionId : `sha256:${createHash('sha256').update(sessionId).digest('hex')}`
}

/** A session's stored settings (`undefined`: it never chose). */
export function readSettings(db: RecallDatabase, sessionId: string): SessionMemorySettings | undefined {
  const row = db.select().from(sessionSettings).where(eq(sessionSettings.sessionId, sessionId)).get()
  return row ? { mode: row.mode, inject: row.inject, updatedAt: row.updatedAt } : undefined
}

/** Store a session's settings. */
export function writeSettings(db: RecallDatabase, sessionId: string, settings: SessionMemorySettings & { updatedAt: number }): void {
  const values = { mode: settings.mode, inject: settings.inject, updatedAt: settings.updatedAt }
  db.insert(sessionSettings)
    .values({ sessionId, ...values })
    .onConflictDoUpdate({ target: sessionSettings.sessionId, set: values })
    .run()
}

/** A session's layer state (empty when it never enabled a layer). */
export function readLayerState(db: RecallDatabase, sessionId: string): SessionLayerState {
  const session = db.select().from(layerSessions).where(eq(layerSessions.sessionId, sessionId)).get()
  if (!session) return emptyLayerState(sessionId)
  const records = db.select().from(injections).where(eq(injections.sessionId, sessionId)).orderBy(asc(injections.position)).all()
  return {
    ...emptyLayerState(sessionId, session.updatedAt),
    enabled: { global: session.globalEnabled, workspace: session.workspaceEnabled },
    injections: records.map(({ sessionId: _session, position: _position, ...record }): InjectionRecord => record),
  }
}

/** Replace a session's layer state: its enabled layers and exactly the records it holds. */
export function writeLayerState(db: RecallDatabase, state: SessionLayerState): void {
  const values = { globalEnabled: state.enabled.global, workspaceEnabled: state.enabled.workspace, updatedAt: state.updatedAt }
  db.insert(layerSessions)
    .values({ sessionId: state.sessionId, ...values })
    .onConflictDoUpdate({ target: layerSessions.sessionId, set: values })
    .run()
  // The records are few (at most MAX_RECORDS): rewriting them keeps positions and the
  // one-live-snapshot index exact without diffing.
  db.delete(injections).where(eq(injections.sessionId, state.sessionId)).run()
  state.injections.forEach((record, position) => {
    db.insert(injections)
      .values({ ...record, sessionId: state.sessionId, position })
      .run()
  })
}

/** Every session that has layer state, in session id order (at most `limit`). */
export function listLayerSessions(db: RecallDatabase, limit: number): string[] {
  return db.select({ sessionId: layerSessions.sessionId }).from(layerSessions).orderBy(asc(layerSessions.sessionId)).limit(limit).all().map((row) => row.sessionId)
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
export function readTurns(db: RecallDatabase): TurnState {
  const row = db.select().from(lifecycleCounters).where(eq(lifecycleCounters.id, LIFECYCLE_ROW)).get()
  return row ? { sinceReview: row.turnsSinceReview, total: row.turnsTotal, lastTurnAt: row.lastTurnAt, lastReviewAt: row.lastReviewAt } : NO_TURNS
}

/** Store the turn counter (the retention clock is left as it is). */
export function writeTurns(db: RecallDatabase, turns: TurnState): void {
  const values = { turnsSinceReview: turns.sinceReview, turnsTotal: turns.total, lastTurnAt: turns.lastTurnAt, lastReviewAt: turns.lastReviewAt }
  db.insert(lifecycleCounters)
    .values({ id: LIFECYCLE_ROW, ...values })
    .onConflictDoUpdate({ target: lifecycleCounters.id, set: values })
    .run()
}

/** The retention clock; `undefined` until the first lifecycle pass started it. */
export function readRetention(db: RecallDatabase): RetentionState | undefined {
  const row = db.select({ lastSweepAt: lifecycleCounters.lastSweepAt }).from(lifecycleCounters).where(eq(lifecycleCounters.id, LIFECYCLE_ROW)).get()
  return row?.lastSweepAt == null ? undefined : { lastSweepAt: row.lastSweepAt }
}

/** Store the retention clock (the turn counter is left as it is). */
export function writeRetention(db: RecallDatabase, retention: RetentionState): void {
  db.insert(lifecycleCounters)
    .values({ id: LIFECYCLE_ROW, turnsSinceReview: 0, turnsTotal: 0, lastTurnAt: 0, lastReviewAt: 0, lastSweepAt: retention.lastSweepAt })
    .onConflictDoUpdate({ target: lifecycleCounters.id, set: { lastSweepAt: retention.lastSweepAt } })
    .run()
}

/** A layer's consolidation schedule (a clean, never consolidated layer when there is no row). */
export function readSchedule(db: RecallDatabase, layerKey: string): LayerSchedule {
  const row = db.select().from(layerSchedules).where(eq(layerSchedules.layerKey, layerKey)).get()
  return row ?? { layerKey, consolidatedRevision: 0, lastRunAt: 0, dueAt: null }
}

/** True when a layer has a stored schedule. */
export function hasSchedule(db: RecallDatabase, layerKey: string): boolean {
  return db.select({ layerKey: layerSchedules.layerKey }).from(layerSchedules).where(eq(layerSchedules.layerKey, layerKey)).get() !== undefined
}

/** Store a layer's consolidation schedule. */
export function writeSchedule(db: RecallDatabase, schedule: LayerSchedule): void {
  const values = { consolidatedRevision: schedule.consolidatedRevision, lastRunAt: schedule.lastRunAt, dueAt: schedule.dueAt }
  db.insert(layerSchedules)
    .values({ layerKey: schedule.layerKey, ...values })
    .onConflictDoUpdate({ target: layerSchedules.layerKey, set: values })
    .run()
}
