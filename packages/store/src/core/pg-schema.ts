/**
 * The store's tables on PostgreSQL as drizzle pg-core code: the same tables, columns and TS
 * field names as `schema.ts` (SQLite), so one row mapping (`rows.ts`) serves both backends.
 * The SQL that creates them ships in `migrations-postgres/store/*.sql`; a contract test
 * compares both. Differences of dialect only: times are `bigint` epoch ms (read as numbers,
 * values stay below 2^53), JSON is `jsonb`, the embedding is `real[]` (read back as the same
 * float32 bytes as SQLite's BLOB), ids and keys compare in code-point order (`COLLATE "C"`,
 * like SQLite's BINARY) whatever the server's locale.
 */
import { type AnyPgColumn, bigint, customType, doublePrecision, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex } from 'drizzle-orm/pg-core'
import type { Flags } from './types-common.ts'
import { bufferToEmbedding, embeddingToBuffer } from './validate.ts'

/** Epoch milliseconds as `bigint`, read as a JS number. */
const epochMs = (name: string) => bigint(name, { mode: 'number' })

/**
 * A vector as a `real[]` array literal. Sent as text, not a JS array: node-postgres writes -0
 * as "0", and the float32 bytes must come back exactly as SQLite's BLOB returns them.
 */
export function realArrayLiteral(vector: Float32Array): string {
  return `{${Array.from(vector, (x) => (Object.is(x, -0) ? '-0' : String(x))).join(',')}}`
}

/**
 * The embedding as `real[]` in SQL, as the float32 bytes of `schema.ts`'s BLOB in TS, so
 * `toMemory` reads both backends' rows alike. `real` is float32: values round-trip exactly.
 */
const embeddingColumn = customType<{ data: Buffer; driverData: string | number[] }>({
  dataType: () => 'real[]',
  toDriver: (value) => realArrayLiteral(bufferToEmbedding(value)),
  fromDriver: (value) => embeddingToBuffer(Float32Array.from(value as number[])),
})

/** Key/value settings; keys under `store.` are the store's own (instance id, search manifest). */
export const meta = pgTable('store_meta', {
  key: text('key').primaryKey().notNull(),
  value: text('value').notNull(),
  updatedAt: epochMs('updated_at').notNull(),
})

/** L0 containers: one row per host session. */
export const conversations = pgTable(
  'store_conversations',
  {
    id: text('id').primaryKey().notNull(),
    workspace: text('workspace').notNull().default(''),
    title: text('title'),
    startedAt: epochMs('started_at').notNull(),
    endedAt: epochMs('ended_at'),
    updatedAt: epochMs('updated_at').notNull(),
    flags: jsonb('flags').$type<Flags>().notNull().default({}),
    createdBy: text('created_by').notNull().default(''),
  },
  (t) => [
    index('store_conversations_workspace_updated').on(t.workspace, t.updatedAt),
    index('store_conversations_updated').on(t.updatedAt),
  ],
)

/** L0 messages; `(conversation_id, host_message_id)` is the idempotency key of append. */
export const messages = pgTable(
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
    sourceIds: jsonb('source_ids').$type<string[]>().notNull().default([]),
    tokensEstimate: integer('tokens_estimate').notNull().default(0),
    createdAt: epochMs('created_at').notNull(),
    flags: jsonb('flags').$type<Flags>().notNull().default({}),
    createdBy: text('created_by').notNull().default(''),
  },
  (t) => [
    uniqueIndex('store_messages_host_id').on(t.conversationId, t.hostMessageId),
    index('store_messages_conversation_seq').on(t.conversationId, t.seq),
    index('store_messages_created').on(t.createdAt),
  ],
)

/** Vectors of L0 messages, one per (message, model) (derived data; migrations 5 and 6). */
export const messageVectors = pgTable(
  'store_message_vectors',
  {
    messageId: text('message_id')
      .notNull()
      .references(() => messages.id, { onDelete: 'cascade' }),
    embeddingModel: text('embedding_model').notNull(),
    embeddingDims: integer('embedding_dims').notNull(),
    embedding: embeddingColumn('embedding').notNull(),
  },
  (t) => [primaryKey({ columns: [t.messageId, t.embeddingModel] }), uniqueIndex('store_message_vectors_model').on(t.embeddingModel, t.messageId)],
)

/** L1 atomic memories; a superseded row points at its replacement. */
export const memories = pgTable(
  'store_memories',
  {
    id: text('id').primaryKey().notNull(),
    kind: text('kind').notNull(),
    text: text('text').notNull(),
    scope: text('scope', { enum: ['global', 'workspace', 'session'] }).notNull(),
    workspace: text('workspace'),
    sessionId: text('session_id'),
    sourceMessageIds: jsonb('source_message_ids').$type<string[]>().notNull().default([]),
    priority: doublePrecision('priority').notNull().default(0),
    revision: integer('revision').notNull().default(1),
    createdAt: epochMs('created_at').notNull(),
    updatedAt: epochMs('updated_at').notNull(),
    lastRecalledAt: epochMs('last_recalled_at'),
    supersededBy: text('superseded_by').references((): AnyPgColumn => memories.id),
    embedding: embeddingColumn('embedding'),
    embeddingDims: integer('embedding_dims'),
    embeddingModel: text('embedding_model'),
    flags: jsonb('flags').$type<Flags>().notNull().default({}),
    createdBy: text('created_by').notNull().default(''),
  },
  (t) => [
    index('store_memories_scope').on(t.scope, t.workspace, t.sessionId),
    index('store_memories_created').on(t.createdAt),
    index('store_memories_superseded_by').on(t.supersededBy),
  ],
)

/** L2 scenes grouping memories. */
export const scenes = pgTable(
  'store_scenes',
  {
    id: text('id').primaryKey().notNull(),
    title: text('title').notNull(),
    summary: text('summary').notNull(),
    scope: text('scope', { enum: ['global', 'workspace', 'session'] }).notNull(),
    workspace: text('workspace'),
    sessionId: text('session_id'),
    memoryIds: jsonb('memory_ids').$type<string[]>().notNull().default([]),
    revision: integer('revision').notNull().default(1),
    createdAt: epochMs('created_at').notNull(),
    updatedAt: epochMs('updated_at').notNull(),
    flags: jsonb('flags').$type<Flags>().notNull().default({}),
    createdBy: text('created_by').notNull().default(''),
  },
  (t) => [index('store_scenes_scope').on(t.scope, t.workspace, t.sessionId)],
)

/** L3 persona documents, one per (scope, workspace, owner), as on SQLite. */
export const persona = pgTable(
  'store_persona',
  {
    scope: text('scope', { enum: ['global', 'workspace'] }).notNull(),
    /** `''` for the global persona, as on SQLite. */
    workspace: text('workspace').notNull().default(''),
    text: text('text').notNull(),
    version: integer('version').notNull(),
    updatedAt: epochMs('updated_at').notNull(),
    owner: text('owner').notNull().default(''),
    createdBy: text('created_by').notNull().default(''),
  },
  (t) => [primaryKey({ columns: [t.scope, t.workspace, t.owner] })],
)

/** Who changed what and when; by design no column can hold content. */
export const audit = pgTable(
  'store_audit',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(),
    at: epochMs('at').notNull(),
    op: text('op').notNull(),
    entity: text('entity').notNull(),
    entityId: text('entity_id').notNull(),
    actor: text('actor'),
    revision: integer('revision'),
    createdBy: text('created_by').notNull().default(''),
  },
  (t) => [index('store_audit_entity').on(t.entity, t.entityId), index('store_audit_at').on(t.at)],
)

/** Change log written with every write, read by derived indexes in any process. */
export const changes = pgTable('store_changes', {
  seq: bigint('seq', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(),
  entity: text('entity').notNull(),
  entityId: text('entity_id').notNull(),
  op: text('op', { enum: ['insert', 'update', 'delete'] }).notNull(),
  at: epochMs('at').notNull(),
})

/** Revision per memory layer (`global`, `global:<user>` or `workspace:<path>`), bumped with every write to it. */
export const layerRevisions = pgTable('store_layer_revisions', {
  layerKey: text('layer_key').primaryKey().notNull(),
  revision: integer('revision').notNull(),
  updatedAt: epochMs('updated_at').notNull(),
})

/** Single-writer leases; `token` is the fencing token (never reused per name). */
export const leases = pgTable('store_leases', {
  name: text('name').primaryKey().notNull(),
  holder: text('holder').notNull(),
  token: integer('token').notNull(),
  acquiredAt: epochMs('acquired_at').notNull(),
  expiresAt: epochMs('expires_at').notNull(),
})

/** Applied migrations of every owner (created by the runner, `pg-migrations.ts`, before any migration). */
export const schemaMigrations = pgTable(
  'store_schema',
  {
    owner: text('owner').notNull(),
    version: integer('version').notNull(),
    name: text('name').notNull(),
    checksum: text('checksum').notNull(),
    appliedAt: epochMs('applied_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.owner, t.version] })],
)

/** Every table of the store's own PostgreSQL schema, for drizzle's typed queries. */
export const pgSchema = { meta, conversations, messages, messageVectors, memories, scenes, persona, audit, changes, layerRevisions, leases, schemaMigrations }
