/**
 * The distiller's tables on PostgreSQL (pg-core code of `migrations-postgres/distill/`): the
 * same table keys and column property names as `tables.ts`, so every query in `state.ts`
 * runs unchanged on both backends (the store hands the backend's tables to each unit as `t`).
 * Differences of dialect only: times and token totals are `bigint` read as JS numbers, flags
 * are `boolean`, ids are identity columns.
 */
import { bigint, boolean, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core'
import { DISTILL_LAYERS } from './options.js'

/** Epoch milliseconds (and other values that may pass 2^31) as `bigint`, read as a JS number. */
const big = (name: string) => bigint(name, { mode: 'number' })

/** The retry bookkeeping of a job row (see `tables.ts`); a function, so each table gets its own builders. */
function retryColumns() {
  return {
    attempts: integer('attempts').notNull(),
    notBefore: big('not_before').notNull(),
    lastError: text('last_error'),
  }
}

const conversations = pgTable('distill_conversations', {
  conversationId: text('conversation_id').primaryKey(),
  cursorSeq: integer('cursor_seq').notNull(),
  stage: integer('stage').notNull(),
  ...retryColumns(),
  lastRunAt: big('last_run_at'),
  gaveUpAt: big('gave_up_at'),
  leaseOwner: text('lease_owner'),
  leaseUntil: big('lease_until'),
  pending: boolean('pending').notNull(),
})

const skipped = pgTable('distill_skipped', {
  id: big('id').primaryKey().generatedByDefaultAsIdentity(),
  conversationId: text('conversation_id').notNull(),
  fromSeq: integer('from_seq').notNull(),
  toSeq: integer('to_seq').notNull(),
  at: big('at').notNull(),
  reason: text('reason').notNull(),
})

const layers = pgTable('distill_layers', {
  scopeKey: text('scope_key').primaryKey(),
  sinceL2: integer('since_l2').notNull(),
  sinceL3: integer('since_l3').notNull(),
  lastL2At: big('last_l2_at').notNull(),
  lastL3At: big('last_l3_at').notNull(),
  ...retryColumns(),
})

const marks = pgTable('distill_marks', {
  name: text('name').primaryKey(),
  at: big('at').notNull(),
})

const calls = pgTable('distill_calls', {
  id: big('id').primaryKey().generatedByDefaultAsIdentity(),
  at: big('at').notNull(),
  day: text('day').notNull(),
  layer: text('layer', { enum: DISTILL_LAYERS }).notNull(),
  provider: text('provider').notNull(),
  model: text('model').notNull(),
  outcome: text('outcome', { enum: ['ok', 'failed'] }).notNull(),
  inputTokens: big('input_tokens').notNull(),
  outputTokens: big('output_tokens').notNull(),
  cacheReadTokens: big('cache_read_tokens').notNull(),
  estimated: boolean('estimated').notNull(),
  durationMs: big('duration_ms'),
  conversationId: text('conversation_id'),
})

const carriedDays = pgTable(
  'distill_carried_days',
  {
    day: text('day').notNull(),
    provider: text('provider').notNull(),
    model: text('model').notNull(),
    layer: text('layer', { enum: DISTILL_LAYERS }).notNull(),
    calls: big('calls').notNull(),
    failures: big('failures').notNull(),
    inputTokens: big('input_tokens').notNull(),
    outputTokens: big('output_tokens').notNull(),
    cacheReadTokens: big('cache_read_tokens').notNull(),
    estimatedCalls: big('estimated_calls').notNull(),
  },
  (t) => [primaryKey({ columns: [t.day, t.provider, t.model, t.layer] })],
)

/** The pg-core schema handed to `store.tables(...)` as `postgres.schema` (same keys as `distillSchema`). */
export const distillPgSchema = { conversations, skipped, layers, marks, calls, carriedDays }
