/**
 * The drizzle schema of recall's own tables (`recall_*`, migrations in
 * `migrations/recall/`): session modes, the explicit-layer injection ledger and the lifecycle
 * schedules. Declared through the store's extension seam, so every query runs on the store's
 * session. Ids, states, counters and times only: never memory text.
 */
import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/** A session's mode and injection switch (no row: the defaults). */
export const sessionSettings = sqliteTable('recall_session_settings', {
  sessionId: text('session_id').primaryKey(),
  mode: text('mode', { enum: ['auto', 'chat', 'work', 'off'] }).notNull(),
  inject: text('inject', { enum: ['follow', 'on', 'off'] }).notNull(),
  updatedAt: integer('updated_at').notNull(),
})

/** Which explicit layers a session enabled (no row: none). */
export const layerSessions = sqliteTable('recall_layer_sessions', {
  sessionId: text('session_id').primaryKey(),
  globalEnabled: integer('global_enabled', { mode: 'boolean' }).notNull(),
  workspaceEnabled: integer('workspace_enabled', { mode: 'boolean' }).notNull(),
  updatedAt: integer('updated_at').notNull(),
  /** Bumped by every write of the session's layer state (compare-and-set across processes). */
  version: integer('version').notNull().default(0),
})

/** One layer snapshot of a session: the injection ledger's records. */
export const injections = sqliteTable('recall_injections', {
  id: text('id').primaryKey(),
  sessionId: text('session_id').notNull(),
  /** Oldest first within the session. */
  position: integer('position').notNull(),
  layer: text('layer', { enum: ['global', 'workspace'] }).notNull(),
  layerKey: text('layer_key').notNull(),
  revision: integer('revision').notNull(),
  generation: integer('generation').notNull(),
  state: text('state', { enum: ['desired', 'queued', 'committed', 'superseded', 'cancelled'] }).notNull(),
  desiredAt: integer('desired_at').notNull(),
  queuedAt: integer('queued_at'),
  committedAt: integer('committed_at'),
  seq: integer('seq'),
  entries: integer('entries').notNull(),
  tokens: integer('tokens').notNull(),
})

/** The lifecycle's shared counters: one row, id 1. */
export const lifecycleCounters = sqliteTable('recall_lifecycle', {
  id: integer('id').primaryKey(),
  turnsSinceReview: integer('turns_since_review').notNull(),
  turnsTotal: integer('turns_total').notNull(),
  lastTurnAt: integer('last_turn_at').notNull(),
  lastReviewAt: integer('last_review_at').notNull(),
  /** `null` until the first lifecycle pass starts the retention clock. */
  lastSweepAt: integer('last_sweep_at'),
})

/** The consolidation schedule of one memory layer. */
export const layerSchedules = sqliteTable('recall_layer_schedules', {
  layerKey: text('layer_key').primaryKey(),
  consolidatedRevision: integer('consolidated_revision').notNull(),
  lastRunAt: integer('last_run_at').notNull(),
  dueAt: integer('due_at'),
})

/** Every recall table, for `store.tables({ migrations, schema })`. */
export const recallSchema = { sessionSettings, layerSessions, injections, lifecycleCounters, layerSchedules }

/** The type of {@link recallSchema}. */
export type RecallSchema = typeof recallSchema

/** The id of the lifecycle's one counter row. */
export const LIFECYCLE_ROW = 1
