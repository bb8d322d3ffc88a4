/**
 * The palace's tables on PostgreSQL as drizzle pg-core code: the same tables, keys and TS field
 * names as `index-schema.ts` (SQLite), so the archive index's portable queries run on either
 * backend (`PackageTables.t`). The SQL ships in `migrations-postgres/palace/*.sql`; a test
 * compares both. Dialect differences only: `archived_at` / `updated_at` are `bigint` epoch ms
 * read as JS numbers, the row id is an identity column, and text compares in code-point order
 * (`COLLATE "C"` in the SQL, like SQLite's BINARY).
 */
import { bigint, integer, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core'

export const palaceNamespaces = pgTable(
  'palace_namespaces',
  {
    workspace: text('workspace').notNull(),
    namespace: text('namespace').notNull(),
    sessionId: text('session_id').notNull(),
    turns: integer('turns').notNull(),
    version: integer('version').notNull(),
    updatedAt: bigint('updated_at', { mode: 'number' }).notNull(),
  },
  (table) => [primaryKey({ columns: [table.workspace, table.namespace] })],
)

export const palaceTurns = pgTable(
  'palace_turns',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(),
    workspace: text('workspace').notNull(),
    namespace: text('namespace').notNull(),
    turn: integer('turn').notNull(),
    category: text('category').notNull(),
    speaker: text('speaker').notNull(),
    archivedAt: bigint('archived_at', { mode: 'number' }).notNull(),
    archiveId: text('archive_id').notNull(),
    terms: text('terms').notNull(),
  },
  (table) => [uniqueIndex('palace_turns_turn').on(table.workspace, table.namespace, table.turn)],
)

/** The palace tables on PostgreSQL: the same keys as `palaceSchema`. */
export const palacePgSchema = { palaceNamespaces, palaceTurns }
