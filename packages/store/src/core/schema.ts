/**
 * The store's tables as drizzle schema code. The SQL that creates them ships in
 * `migrations/store/*.sql`; `test/schema.test.ts` checks both describe the same columns, so
 * neither can drift silently. Everything here is prefixed `store_` (other packages bring
 * their own prefix).
 */
import { type AnySQLiteColumn, blob, index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import type { Flags } from './types-common.ts'

/** Key/value settings; keys under `store.` are the store's own (instance id, search manifest). */
export const meta = sqliteTable('store_meta', {
  key: text('key').primaryKey().notNull(),
  value: text('value').notNull(),
  updatedAt: integer('updated_at').notNull(),
})

/** L0 containers: one row per host session. */
export const conversations = sqliteTable(
  'store_conversations',
  {
    id: text('id').primaryKey().notNull(),
    workspace: text('workspace').notNull().default(''),
    title: text('title'),
    startedAt: integer('started_at').notNull(),
    endedAt: integer('ended_at'),
    updatedAt: integer('updated_at').notNull(),
    flags: text('flags', { mode: 'json' }).$type<Flags>().notNull().default({}),
    /** The user who wrote the row; `''` before user identities (migration 0006). */
    createdBy: text('created_by').notNull().default(''),
  },
  (t) => [
    index('store_conversations_workspace_updated').on(t.workspace, t.updatedAt),
    index('store_conversations_updated').on(t.updatedAt),
  ],
)

/** L0 messages; `(conversation_id, host_message_id)` is the idempotency key of append. */
export const messages = sqliteTable(
  'store_messages',
  {
    id: text('id').primaryKey().notNull(),
    conversationId: text('conversation_id')
      .notNull()
      .references(() => conversations.id, { onDelete: 'cascade' }),
    hostMessageId: text('host_message_id').notNull(),
    role: text('role', { enum: ['user', 'assistant'] }).notNull(),
    text: text('text').notNull(),
    turn: integer('turn').notNull().default(0),
    seq: integer('seq').notNull(),
    sourceIds: text('source_ids', { mode: 'json' }).$type<string[]>().notNull().default([]),
    tokensEstimate: integer('tokens_estimate').notNull().default(0),
    createdAt: integer('created_at').notNull(),
    flags: text('flags', { mode: 'json' }).$type<Flags>().notNull().default({}),
    createdBy: text('created_by').notNull().default(''),
  },
  (t) => [
    uniqueIndex('store_messages_host_id').on(t.conversationId, t.hostMessageId),
    index('store_messages_conversation_seq').on(t.conversationId, t.seq),
    index('store_messages_created').on(t.createdAt),
  ],
)

/** Vectors of L0 messages, one per (message, model) (derived data; migrations 0007 and 0008). */
export const messageVectors = sqliteTable(
  'store_message_vectors',
  {
    messageId: text('message_id')
      .notNull()
      .references(() => messages.id, { onDelete: 'cascade' }),
    /** Recall's `model@dimensions`. */
    embeddingModel: text('embedding_model').notNull(),
    embeddingDims: integer('embedding_dims').notNull(),
    /** float32 bytes, as `store_memories.embedding`. */
    embedding: blob('embedding', { mode: 'buffer' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.messageId, t.embeddingModel] }), uniqueIndex('store_message_vectors_model').on(t.embeddingModel, t.messageId)],
)

/** L1 atomic memories; a superseded row points at its replacement. */
export const memories = sqliteTable(
  'store_memories',
  {
    id: text('id').primaryKey().notNull(),
    kind: text('kind').notNull(),
    text: text('text').notNull(),
    scope: text('scope', { enum: ['global', 'workspace', 'session'] }).notNull(),
    workspace: text('workspace'),
    sessionId: text('session_id'),
    sourceMessageIds: text('source_message_ids', { mode: 'json' }).$type<string[]>().notNull().default([]),
    priority: real('priority').notNull().default(0),
    revision: integer('revision').notNull().default(1),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
    lastRecalledAt: integer('last_recalled_at'),
    supersededBy: text('superseded_by').references((): AnySQLiteColumn => memories.id),
    embedding: blob('embedding', { mode: 'buffer' }),
    embeddingDims: integer('embedding_dims'),
    embeddingModel: text('embedding_model'),
    flags: text('flags', { mode: 'json' }).$type<Flags>().notNull().default({}),
    /** Global memories are private to this user (`''`: visible to everyone). Kept by updates and new versions. */
    createdBy: text('created_by').notNull().default(''),
  },
  (t) => [
    index('store_memories_scope').on(t.scope, t.workspace, t.sessionId),
    index('store_memories_created').on(t.createdAt),
    index('store_memories_superseded_by').on(t.supersededBy),
  ],
)

/** L2 scenes grouping memories. */
export const scenes = sqliteTable(
  'store_scenes',
  {
    id: text('id').primaryKey().notNull(),
    title: text('title').notNull(),
    summary: text('summary').notNull(),
    scope: text('scope', { enum: ['global', 'workspace', 'session'] }).notNull(),
    workspace: text('workspace'),
    sessionId: text('session_id'),
    memoryIds: text('memory_ids', { mode: 'json' }).$type<string[]>().notNull().default([]),
    revision: integer('revision').notNull().default(1),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
    flags: text('flags', { mode: 'json' }).$type<Flags>().notNull().default({}),
    createdBy: text('created_by').notNull().default(''),
  },
  (t) => [index('store_scenes_scope').on(t.scope, t.workspace, t.sessionId)],
)

/** L3 persona documents, one per (scope, workspace, owner): a workspace's, and each user's global one. */
export const persona = sqliteTable(
  'store_persona',
  {
    scope: text('scope', { enum: ['global', 'workspace'] }).notNull(),
    /** `''` for the global persona (NULLs would not collide in the primary key). */
    workspace: text('workspace').notNull().default(''),
    text: text('text').notNull(),
    version: integer('version').notNull(),
    updatedAt: integer('updated_at').notNull(),
    /** Whose global persona this is (`''`: unattributed, everyone's); always `''` for a workspace persona (the team's one). */
    owner: text('owner').notNull().default(''),
    createdBy: text('created_by').notNull().default(''),
  },
  (t) => [primaryKey({ columns: [t.scope, t.workspace, t.owner] })],
)

/** Who changed what and when; by design no column can hold content. */
export const audit = sqliteTable(
  'store_audit',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    at: integer('at').notNull(),
    op: text('op').notNull(),
    entity: text('entity').notNull(),
    entityId: text('entity_id').notNull(),
    actor: text('actor'),
    revision: integer('revision'),
    /** The user whose session made the change (`actor` is the plugin). */
    createdBy: text('created_by').notNull().default(''),
  },
  (t) => [index('store_audit_entity').on(t.entity, t.entityId), index('store_audit_at').on(t.at)],
)

/** Change log written with every write, read by derived indexes in any process. */
export const changes = sqliteTable('store_changes', {
  seq: integer('seq').primaryKey({ autoIncrement: true }),
  entity: text('entity').notNull(),
  entityId: text('entity_id').notNull(),
  op: text('op', { enum: ['insert', 'update', 'delete'] }).notNull(),
  at: integer('at').notNull(),
})

/** Revision per memory layer (`global`, `global:<user>` or `workspace:<path>`), bumped with every write to it. */
export const layerRevisions = sqliteTable('store_layer_revisions', {
  layerKey: text('layer_key').primaryKey().notNull(),
  revision: integer('revision').notNull(),
  updatedAt: integer('updated_at').notNull(),
})

/** Single-writer leases; `token` is the fencing token (never reused per name). */
export const leases = sqliteTable('store_leases', {
  name: text('name').primaryKey().notNull(),
  holder: text('holder').notNull(),
  token: integer('token').notNull(),
  acquiredAt: integer('acquired_at').notNull(),
  expiresAt: integer('expires_at').notNull(),
})

/** Every table of the store's own schema, for drizzle's typed queries. */
export const storeSchema = { meta, conversations, messages, messageVectors, memories, scenes, persona, audit, changes, layerRevisions, leases }
