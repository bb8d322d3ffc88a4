/**
 * The distiller's own tables (drizzle schema of `migrations/distill/`), declared through the
 * store's package-table seam so every query runs on the store's session: a cursor advance
 * commits in the same transaction as the memories distilled from it. On PostgreSQL the same
 * tables come from `pg-tables.ts` and `migrations-postgres/distill/`; queries take their tables
 * from the unit's `t`, so one code path serves both backends.
 */
import { type MigrationSet, type PackageDatabase, packageDeclaration, packageMigrations, type PackageTables, type PackageTablesDeclaration } from '@dsh-memory/store'
import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { DistillError } from './errors.js'
import { DISTILL_LAYERS } from './options.js'
import { distillPgSchema } from './pg-tables.js'

/** Migration owner of this package: its tables are named `distill_…`. */
export const DISTILL_MIGRATION_OWNER = 'distill'

/**
 * The retry bookkeeping every distill job row carries (a conversation's L1 cursor, a scope's
 * L2/L3 layer): failed attempts in a row, the earliest next try (epoch ms) and the last
 * failure's text. A function, so each table gets its own column builders.
 */
function retryColumns() {
  return {
    attempts: integer('attempts').notNull(),
    notBefore: integer('not_before').notNull(),
    lastError: text('last_error'),
  }
}

export const conversations = sqliteTable('distill_conversations', {
  conversationId: text('conversation_id').primaryKey(),
  cursorSeq: integer('cursor_seq').notNull(),
  stage: integer('stage').notNull(),
  ...retryColumns(),
  lastRunAt: integer('last_run_at'),
  gaveUpAt: integer('gave_up_at'),
  leaseOwner: text('lease_owner'),
  leaseUntil: integer('lease_until'),
  pending: integer('pending', { mode: 'boolean' }).notNull(),
})

export const skipped = sqliteTable('distill_skipped', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  conversationId: text('conversation_id').notNull(),
  fromSeq: integer('from_seq').notNull(),
  toSeq: integer('to_seq').notNull(),
  at: integer('at').notNull(),
  reason: text('reason').notNull(),
})

export const layers = sqliteTable('distill_layers', {
  scopeKey: text('scope_key').primaryKey(),
  sinceL2: integer('since_l2').notNull(),
  sinceL3: integer('since_l3').notNull(),
  lastL2At: integer('last_l2_at').notNull(),
  lastL3At: integer('last_l3_at').notNull(),
  ...retryColumns(),
})

export const marks = sqliteTable('distill_marks', {
  name: text('name').primaryKey(),
  at: integer('at').notNull(),
})

export const calls = sqliteTable('distill_calls', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  at: integer('at').notNull(),
  day: text('day').notNull(),
  layer: text('layer', { enum: DISTILL_LAYERS }).notNull(),
  provider: text('provider').notNull(),
  model: text('model').notNull(),
  outcome: text('outcome', { enum: ['ok', 'failed'] }).notNull(),
  inputTokens: integer('input_tokens').notNull(),
  outputTokens: integer('output_tokens').notNull(),
  cacheReadTokens: integer('cache_read_tokens').notNull(),
  estimated: integer('estimated', { mode: 'boolean' }).notNull(),
  durationMs: integer('duration_ms'),
  conversationId: text('conversation_id'),
})

export const carriedDays = sqliteTable('distill_carried_days', {
  day: text('day').notNull(),
  provider: text('provider').notNull(),
  model: text('model').notNull(),
  layer: text('layer', { enum: DISTILL_LAYERS }).notNull(),
  calls: integer('calls').notNull(),
  failures: integer('failures').notNull(),
  inputTokens: integer('input_tokens').notNull(),
  outputTokens: integer('output_tokens').notNull(),
  cacheReadTokens: integer('cache_read_tokens').notNull(),
  estimatedCalls: integer('estimated_calls').notNull(),
})

/** The drizzle schema handed to `store.tables(...)`. */
export const distillSchema = { conversations, skipped, layers, marks, calls, carriedDays }
export type DistillSchema = typeof distillSchema
export type DistillDb = PackageDatabase<DistillSchema>
export type DistillTables = PackageTables<DistillSchema>

/**
 * The package's versioned SQL migrations (`<root>/distill/NNNN_name.sql`).
 * @throws DistillError `unsupported-state` when the package was installed without its migrations folder.
 */
export function distillMigrations(root: 'migrations' | 'migrations-postgres' = 'migrations'): MigrationSet {
  return packageMigrations(import.meta.url, DISTILL_MIGRATION_OWNER, root, missing)
}

/** What `store.tables(...)` gets: the SQLite tables and, for a PostgreSQL store, their pg-core twins. */
export function distillDeclaration(): PackageTablesDeclaration<DistillSchema> {
  return packageDeclaration(import.meta.url, DISTILL_MIGRATION_OWNER, { schema: distillSchema, pgSchema: distillPgSchema, missing })
}

function missing(message: string): DistillError {
  return new DistillError('unsupported-state', message)
}
