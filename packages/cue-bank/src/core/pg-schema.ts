/**
 * The cue bank's tables on PostgreSQL: the same keys and column property names as the SQLite
 * schema in `schema.ts`, so one set of portable queries (`cue-queries.ts`) runs on both. The
 * SQL ships in `migrations-postgres/cue-bank/*.sql`; `test/repository.test.ts` checks that both
 * describe the same columns and indexes. Epoch-ms times are `bigint` (int4 overflows); JSON
 * columns stay text (the repository reads them leniently, as on SQLite); vectors are `bytea`.
 */
import { sql } from 'drizzle-orm'
import { bigint, customType, doublePrecision, index, integer, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core'
import type { CueLevel } from './model.js'

const epochMs = (name: string) => bigint(name, { mode: 'number' })

/** Little-endian float32 bytes, the same Buffer the SQLite blob column gives. */
const bytea = customType<{ data: Buffer; driverData: Buffer }>({ dataType: () => 'bytea' })

/** Topic cues: one `conversation` cue per turn, one `task` cue per session. */
export const pgTopics = pgTable(
  'cue_bank_topics',
  {
    id: text('id').primaryKey(),
    partition: text('partition').notNull(),
    level: text('level').$type<CueLevel>().notNull(),
    sessionId: text('session_id').notNull(),
    turn: integer('turn').notNull(),
    summary: text('summary').notNull(),
    detail: text('detail').notNull(),
    keywords: text('keywords').notNull(),
    dimensions: text('dimensions').notNull(),
    refSessions: text('ref_sessions').notNull(),
    sourceMessageIds: text('source_message_ids').notNull(),
    embedding: bytea('embedding'),
    embeddingModel: text('embedding_model'),
    createdAt: epochMs('created_at').notNull(),
    lastMentionedAt: epochMs('last_mentioned_at').notNull(),
    lastTouchedAt: epochMs('last_touched_at').notNull(),
    hitCount: integer('hit_count').notNull().default(0),
  },
  (t) => [
    uniqueIndex('cue_bank_topics_conversation').on(t.partition, t.sessionId, t.turn).where(sql`level = 'conversation'`),
    uniqueIndex('cue_bank_topics_task').on(t.partition, t.sessionId).where(sql`level = 'task'`),
    index('cue_bank_topics_lru').on(t.partition, t.lastTouchedAt),
    index('cue_bank_topics_session').on(t.sessionId, t.turn),
  ],
)

/** User idioms: personal expressions recurring across topics. */
export const pgIdioms = pgTable(
  'cue_bank_idioms',
  {
    partition: text('partition').notNull(),
    word: text('word').notNull(),
    score: doublePrecision('score').notNull(),
    turns: integer('turns').notNull(),
    firstSeen: epochMs('first_seen').notNull(),
    lastSeen: epochMs('last_seen').notNull(),
  },
  (t) => [primaryKey({ columns: [t.partition, t.word] }), index('cue_bank_idioms_lru').on(t.partition, t.lastSeen)],
)

/** The idiom window: the distinct terms of each recent user turn and its topic segment. */
export const pgUserTurns = pgTable(
  'cue_bank_user_turns',
  {
    partition: text('partition').notNull(),
    sessionId: text('session_id').notNull(),
    turn: integer('turn').notNull(),
    segment: text('segment').notNull(),
    terms: text('terms').notNull(),
    createdAt: epochMs('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.partition, t.sessionId, t.turn] }), index('cue_bank_user_turns_recent').on(t.partition, t.createdAt)],
)

/** Every cue-bank table on PostgreSQL, for `declaration.postgres.schema` (same keys as `cueBankSchema`). */
export const cueBankPgSchema = { topics: pgTopics, idioms: pgIdioms, userTurns: pgUserTurns }
