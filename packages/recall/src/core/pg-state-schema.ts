/**
 * Recall's tables on PostgreSQL (pg-core code of `migrations-postgres/recall/`): the same table
 * keys and column property names as `state-schema.ts`, so `state-rows.ts` runs unchanged on
 * both backends (each seam unit hands it the backend's tables as `t`). Differences of dialect
 * only: times are `bigint` read as JS numbers, switches are `boolean`.
 */
import { bigint, boolean, integer, pgTable, text } from 'drizzle-orm/pg-core'

/** Epoch milliseconds (and the all-time turn count) as `bigint`, read as a JS number. */
const big = (name: string) => bigint(name, { mode: 'number' })

const sessionSettings = pgTable('recall_session_settings', {
  sessionId: text('session_id').primaryKey(),
  mode: text('mode', { enum: ['auto', 'chat', 'work', 'off'] }).notNull(),
  inject: text('inject', { enum: ['follow', 'on', 'off'] }).notNull(),
  updatedAt: big('updated_at').notNull(),
})

const layerSessions = pgTable('recall_layer_sessions', {
  sessionId: text('session_id').primaryKey(),
  globalEnabled: boolean('global_enabled').notNull(),
  workspaceEnabled: boolean('workspace_enabled').notNull(),
  updatedAt: big('updated_at').notNull(),
  version: integer('version').notNull().default(0),
})

const injections = pgTable('recall_injections', {
  id: text('id').primaryKey(),
  sessionId: text('session_id').notNull(),
  position: integer('position').notNull(),
  layer: text('layer', { enum: ['global', 'workspace'] }).notNull(),
  layerKey: text('layer_key').notNull(),
  revision: integer('revision').notNull(),
  generation: integer('generation').notNull(),
  state: text('state', { enum: ['desired', 'queued', 'committed', 'superseded', 'cancelled'] }).notNull(),
  desiredAt: big('desired_at').notNull(),
  queuedAt: big('queued_at'),
  committedAt: big('committed_at'),
  seq: integer('seq'),
  entries: integer('entries').notNull(),
  tokens: integer('tokens').notNull(),
})

const lifecycleCounters = pgTable('recall_lifecycle', {
  id: integer('id').primaryKey(),
  turnsSinceReview: integer('turns_since_review').notNull(),
  turnsTotal: big('turns_total').notNull(),
  lastTurnAt: big('last_turn_at').notNull(),
  lastReviewAt: big('last_review_at').notNull(),
  lastSweepAt: big('last_sweep_at'),
})

const layerSchedules = pgTable('recall_layer_schedules', {
  layerKey: text('layer_key').primaryKey(),
  consolidatedRevision: integer('consolidated_revision').notNull(),
  lastRunAt: big('last_run_at').notNull(),
  dueAt: big('due_at'),
})

/** The pg-core schema handed to `store.tables(...)` as `postgres.schema` (same keys as `recallSchema`). */
export const recallPgSchema = { sessionSettings, layerSessions, injections, lifecycleCounters, layerSchedules }
