/**
 * Drizzle schema of the palace's own tables (migrations/palace/, owner `palace`): the archive
 * search index, on the store's session through `memoryStore.tables(...)`. Mirrors the SQL of
 * `migrations/palace/0001_archive_index.sql` (a test compares the two).
 */
import { integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

/** How far each memory (namespace) of a workspace is indexed. */
export const palaceNamespaces = sqliteTable(
  'palace_namespaces',
  {
    workspace: text('workspace').notNull(),
    namespace: text('namespace').notNull(),
    /** The session owning the folder (`.state.json`): another owner means another folder. */
    sessionId: text('session_id').notNull(),
    /** `index.jsonl` entries indexed. */
    turns: integer('turns').notNull(),
    version: integer('version').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (table) => [primaryKey({ columns: [table.workspace, table.namespace] })],
)

/** One row per archived turn: its unique terms, space-joined (the text stays on disk). */
export const palaceTurns = sqliteTable(
  'palace_turns',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    workspace: text('workspace').notNull(),
    namespace: text('namespace').notNull(),
    turn: integer('turn').notNull(),
    category: text('category').notNull(),
    speaker: text('speaker').notNull(),
    archivedAt: integer('archived_at').notNull(),
    /** Id of the archive operation that wrote the turn (`index.jsonl` `archive`). */
    archiveId: text('archive_id').notNull(),
    terms: text('terms').notNull(),
  },
  (table) => [uniqueIndex('palace_turns_turn').on(table.workspace, table.namespace, table.turn)],
)

/** The schema handed to the store's seam. */
export const palaceSchema = { palaceNamespaces, palaceTurns }
export type PalaceSchema = typeof palaceSchema
