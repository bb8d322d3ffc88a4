/**
 * The cue bank's tables as drizzle schema code, for typed queries on the store's session. The
 * SQL that creates them ships in `migrations/cue-bank/*.sql` (applied by the store's runner);
 * `test/repository.test.ts` checks both describe the same columns and indexes. JSON columns
 * stay plain text here: a row written by a newer or broken writer is read leniently by the
 * repository (fallbacks), never thrown at a wake.
 */
import { sql } from 'drizzle-orm'
import { blob, index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import type { CueLevel } from './model.js'

/** Topic cues: one `conversation` cue per turn, one `task` cue per session. */
export const topics = sqliteTable(
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
    /** Little-endian float32. */
    embedding: blob('embedding', { mode: 'buffer' }),
    embeddingModel: text('embedding_model'),
    createdAt: integer('created_at').notNull(),
    lastMentionedAt: integer('last_mentioned_at').notNull(),
    lastTouchedAt: integer('last_touched_at').notNull(),
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
export const idioms = sqliteTable(
  'cue_bank_idioms',
  {
    partition: text('partition').notNull(),
    word: text('word').notNull(),
    score: real('score').notNull(),
    turns: integer('turns').notNull(),
    firstSeen: integer('first_seen').notNull(),
    lastSeen: integer('last_seen').notNull(),
  },
  (t) => [primaryKey({ columns: [t.partition, t.word] }), index('cue_bank_idioms_lru').on(t.partition, t.lastSeen)],
)

/** The idiom window: the distinct terms of each recent user turn and its topic segment. */
export const userTurns = sqliteTable(
  'cue_bank_user_turns',
  {
    partition: text('partition').notNull(),
    sessionId: text('session_id').notNull(),
    turn: integer('turn').notNull(),
    segment: text('segment').notNull(),
    terms: text('terms').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.partition, t.sessionId, t.turn] }), index('cue_bank_user_turns_recent').on(t.partition, t.createdAt)],
)

/** Every cue-bank table, for `store.tables({ migrations, schema })`. */
export const cueBankSchema = { topics, idioms, userTurns }
export type CueBankSchema = typeof cueBankSchema
