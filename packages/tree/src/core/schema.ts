/**
 * The tree's tables as drizzle schema code, for typed queries on the store's session. The SQL
 * that creates them ships in `migrations/tree/*.sql` (applied by the store's runner);
 * `test/schema.test.ts` checks both describe the same columns and indexes, so neither can drift
 * silently. The TS field names are the domain names of `types.ts`, so a selected row is the
 * domain object.
 */
import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import type { BranchEventKind, BranchStatus, ChatEntry, ItemKind, ItemStatus } from './types.js'

export const projects = sqliteTable('tree_projects', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  /** `textKey(name)`: the case- and width-insensitive unique key. */
  nameKey: text('name_key').notNull().unique(),
  stage: integer('stage').notNull().default(1),
  baselineCheckpointId: text('baseline_checkpoint_id'),
  currentBranchId: text('current_branch_id'),
  revision: integer('revision').notNull().default(1),
  createdAt: integer('created_at').notNull(),
  updatedAt: integer('updated_at').notNull(),
})

/** `project_id`: a row of a project, deleted with it. */
const projectRef = () =>
  text('project_id')
    .notNull()
    .references(() => projects.id, { onDelete: 'cascade' })

export const bindings = sqliteTable(
  'tree_bindings',
  {
    workspace: text('workspace').primaryKey(),
    projectId: projectRef(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [index('tree_bindings_project').on(t.projectId)],
)

export const items = sqliteTable(
  'tree_items',
  {
    id: text('id').primaryKey(),
    projectId: projectRef(),
    seq: integer('seq').notNull(),
    kind: text('kind').$type<ItemKind>().notNull(),
    text: text('text').notNull(),
    /** `textKey(text)`: an active item with the same key is a repeat. */
    textKey: text('text_key').notNull(),
    source: text('source').notNull(),
    status: text('status').$type<ItemStatus>().notNull().default('active'),
    stage: integer('stage').notNull(),
    branchId: text('branch_id'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [index('tree_items_project').on(t.projectId, t.status, t.seq), index('tree_items_key').on(t.projectId, t.textKey)],
)

export const turns = sqliteTable(
  'tree_turns',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    projectId: projectRef(),
    sessionId: text('session_id').notNull().default(''),
    role: text('role').$type<'user' | 'assistant'>().notNull(),
    text: text('text').notNull(),
    stage: integer('stage').notNull(),
    /** The checkpoint that cleared the turn; null while it feeds injection. */
    checkpointId: text('checkpoint_id'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('tree_turns_project').on(t.projectId, t.checkpointId, t.id)],
)

export const branches = sqliteTable(
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
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
    closedAt: integer('closed_at'),
  },
  (t) => [index('tree_branches_project').on(t.projectId, t.status, t.createdAt)],
)

export const branchEvents = sqliteTable(
  'tree_branch_events',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    branchId: text('branch_id')
      .notNull()
      .references(() => branches.id, { onDelete: 'cascade' }),
    kind: text('kind').$type<BranchEventKind>().notNull(),
    text: text('text').notNull(),
    sessionId: text('session_id').notNull().default(''),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('tree_branch_events_branch').on(t.branchId, t.id)],
)

export const checkpoints = sqliteTable(
  'tree_checkpoints',
  {
    id: text('id').primaryKey(),
    projectId: projectRef(),
    stage: integer('stage').notNull(),
    title: text('title').notNull(),
    review: text('review').notNull(),
    document: text('document').notNull(),
    /** Versioned JSON (`CheckpointState`); parsed and checked on read, not by drizzle. */
    state: text('state').notNull(),
    revision: integer('revision').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('tree_checkpoints_project').on(t.projectId, t.createdAt)],
)

export const chat = sqliteTable(
  'tree_chat',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    workspace: text('workspace').notNull().default(''),
    sessionId: text('session_id').notNull().default(''),
    kind: text('kind').$type<ChatEntry['kind']>().notNull(),
    role: text('role').$type<ChatEntry['role']>().notNull(),
    text: text('text').notNull(),
    count: integer('count').notNull().default(1),
    firstAt: integer('first_at').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('tree_chat_workspace').on(t.workspace, t.kind, t.id)],
)

export const settings = sqliteTable('tree_settings', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
  updatedAt: integer('updated_at').notNull(),
})

/** Every tree table, for `store.tables({ migrations, schema })`. */
export const treeSchema = { projects, bindings, items, turns, branches, branchEvents, checkpoints, chat, settings }
export type TreeSchema = typeof treeSchema
