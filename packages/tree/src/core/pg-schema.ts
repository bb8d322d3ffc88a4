/**
 * The tree's tables on PostgreSQL as drizzle pg-core code: the same tables, keys and TS field
 * names as `schema.ts` (SQLite), so the repository's portable queries run on either backend
 * (`PackageTables.t` hands out the backend's tables typed as the SQLite ones). The SQL that
 * creates them ships in `migrations-postgres/tree/*.sql`; `test/schema.test.ts` compares both.
 * Differences of dialect only: times are `bigint` epoch ms read as JS numbers (int4 would
 * overflow), autoincrement ids are identity columns, and text compares in code-point order
 * (`COLLATE "C"` in the SQL, like SQLite's BINARY), so listings sort alike on both.
 */
import { type AnyPgColumn, bigint, index, integer, pgTable, text } from 'drizzle-orm/pg-core'
import type { BranchEventKind, BranchStatus, ChatEntry, ItemKind, ItemStatus } from './types.js'

/** Epoch milliseconds as `bigint`, read as a JS number (values stay below 2^53). */
const epochMs = (name: string) => bigint(name, { mode: 'number' })
/** An identity key (SQLite's INTEGER PRIMARY KEY AUTOINCREMENT), read as a JS number. */
const serialId = () => bigint('id', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity()

export const projects = pgTable('tree_projects', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  nameKey: text('name_key').notNull().unique(),
  stage: integer('stage').notNull().default(1),
  baselineCheckpointId: text('baseline_checkpoint_id'),
  currentBranchId: text('current_branch_id'),
  revision: integer('revision').notNull().default(1),
  createdAt: epochMs('created_at').notNull(),
  updatedAt: epochMs('updated_at').notNull(),
})

const projectRef = () =>
  text('project_id')
    .notNull()
    .references((): AnyPgColumn => projects.id, { onDelete: 'cascade' })

export const bindings = pgTable(
  'tree_bindings',
  {
    workspace: text('workspace').primaryKey(),
    projectId: projectRef(),
    updatedAt: epochMs('updated_at').notNull(),
  },
  (t) => [index('tree_bindings_project').on(t.projectId)],
)

export const items = pgTable(
  'tree_items',
  {
    id: text('id').primaryKey(),
    projectId: projectRef(),
    seq: integer('seq').notNull(),
    kind: text('kind').$type<ItemKind>().notNull(),
    text: text('text').notNull(),
    textKey: text('text_key').notNull(),
    source: text('source').notNull(),
    status: text('status').$type<ItemStatus>().notNull().default('active'),
    stage: integer('stage').notNull(),
    branchId: text('branch_id'),
    createdAt: epochMs('created_at').notNull(),
    updatedAt: epochMs('updated_at').notNull(),
  },
  (t) => [index('tree_items_project').on(t.projectId, t.status, t.seq), index('tree_items_key').on(t.projectId, t.textKey)],
)

export const turns = pgTable(
  'tree_turns',
  {
    id: serialId(),
    projectId: projectRef(),
    sessionId: text('session_id').notNull().default(''),
    role: text('role').$type<'user' | 'assistant'>().notNull(),
    text: text('text').notNull(),
    stage: integer('stage').notNull(),
    checkpointId: text('checkpoint_id'),
    createdAt: epochMs('created_at').notNull(),
  },
  (t) => [index('tree_turns_project').on(t.projectId, t.checkpointId, t.id)],
)

export const branches = pgTable(
  'tree_branches',
  {
    id: text('id').primaryKey(),
    projectId: projectRef(),
    title: text('title').notNull(),
    status: text('status').$type<BranchStatus>().notNull(),
    stage: integer('stage').notNull(),
    conclusion: text('conclusion'),
    checkpointId: text('checkpoint_id'),
    revision: integer('revision').notNull().default(1),
    createdAt: epochMs('created_at').notNull(),
    updatedAt: epochMs('updated_at').notNull(),
    closedAt: epochMs('closed_at'),
  },
  (t) => [index('tree_branches_project').on(t.projectId, t.status, t.createdAt)],
)

export const branchEvents = pgTable(
  'tree_branch_events',
  {
    id: serialId(),
    branchId: text('branch_id')
      .notNull()
      .references((): AnyPgColumn => branches.id, { onDelete: 'cascade' }),
    kind: text('kind').$type<BranchEventKind>().notNull(),
    text: text('text').notNull(),
    sessionId: text('session_id').notNull().default(''),
    createdAt: epochMs('created_at').notNull(),
  },
  (t) => [index('tree_branch_events_branch').on(t.branchId, t.id)],
)

export const checkpoints = pgTable(
  'tree_checkpoints',
  {
    id: text('id').primaryKey(),
    projectId: projectRef(),
    stage: integer('stage').notNull(),
    title: text('title').notNull(),
    review: text('review').notNull(),
    document: text('document').notNull(),
    /** Versioned JSON text, as on SQLite (parsed and checked by the repository, not by drizzle). */
    state: text('state').notNull(),
    revision: integer('revision').notNull(),
    createdAt: epochMs('created_at').notNull(),
  },
  (t) => [index('tree_checkpoints_project').on(t.projectId, t.createdAt)],
)

export const chat = pgTable(
  'tree_chat',
  {
    id: serialId(),
    workspace: text('workspace').notNull().default(''),
    sessionId: text('session_id').notNull().default(''),
    kind: text('kind').$type<ChatEntry['kind']>().notNull(),
    role: text('role').$type<ChatEntry['role']>().notNull(),
    text: text('text').notNull(),
    count: integer('count').notNull().default(1),
    firstAt: epochMs('first_at').notNull(),
    createdAt: epochMs('created_at').notNull(),
  },
  (t) => [index('tree_chat_workspace').on(t.workspace, t.kind, t.id)],
)

export const settings = pgTable('tree_settings', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
  updatedAt: epochMs('updated_at').notNull(),
})

/** Every tree table on PostgreSQL: the same keys as `treeSchema`. */
export const treePgSchema = { projects, bindings, items, turns, branches, branchEvents, checkpoints, chat, settings }
