/**
 * The WHERE and ORDER BY terms of conversation, message and memory reads, built with
 * drizzle's dialect-neutral operators over whichever backend's columns are passed in, so
 * SQLite and PostgreSQL filter by one definition (validated as they are built). The scope
 * filter of memories and scenes is `scope-sql.ts`.
 */
import { and, asc, desc, eq, gt, gte, lte, ne, sql, type Column, type SQL } from 'drizzle-orm'
import { deleteEmbeddingsOf, messageFilterOf, messageVectorPageOf, missingEmbeddingsOf, pageOf } from './record-values.ts'
import { scopeCondition, type ScopeColumns } from './scope-sql.ts'
import type { ConversationFilter, DeleteEmbeddingsFilter, MessageFilter, MessageVectorPage, MissingEmbeddingsFilter } from './types-conversations.ts'
import type { MemoryFilter } from './types-memories.ts'
import type { SceneFilter } from './types-scenes.ts'
import { requireCount, requireTime } from './validate.ts'

/** The columns message list, count and search filter on, and the conversation table's for `workspace`. */
export interface MessageFilterColumns {
  conversationId: Column
  role: Column
  createdAt: Column
  conversations: { table: unknown; id: Column; workspace: Column }
  /**
   * The message's own copy of its conversation's workspace, where the backend keeps one
   * (PostgreSQL, migration 4, kept by triggers): `workspace` is filtered on it directly, through
   * its `(workspace, created_at)` index, instead of through the conversations.
   */
  workspace?: SQL
}

/** The columns of `messages.list`: the filter's, and those it pages and orders by. */
export interface MessageColumns extends MessageFilterColumns {
  id: Column
  seq: Column
}

/** The WHERE terms of message list and count (validated as they are built). */
export function messageConditions(filter: Pick<MessageFilter, 'workspace' | 'conversationId' | 'role' | 'since' | 'until'>, t: MessageFilterColumns): SQL[] {
  const checked = messageFilterOf(filter)
  const conditions: SQL[] = []
  if (checked.conversationId !== undefined) conditions.push(eq(t.conversationId, checked.conversationId))
  if (checked.role !== undefined) conditions.push(eq(t.role, checked.role))
  if (checked.since !== undefined) conditions.push(gte(t.createdAt, checked.since))
  if (checked.until !== undefined) conditions.push(lte(t.createdAt, checked.until))
  if (checked.workspace !== undefined) {
    const c = t.conversations
    conditions.push(
      t.workspace
        ? sql`${t.workspace} = ${checked.workspace}`
        : sql`${t.conversationId} IN (SELECT ${c.id} FROM ${c.table} WHERE ${c.workspace} = ${checked.workspace})`,
    )
  }
  return conditions
}

/** The checked page, WHERE and ORDER BY of a list call. */
export interface ListQuery {
  where: SQL | undefined
  orderBy: SQL[]
  limit: number
  offset: number
}

/** `conversations.list`: workspace, `since`/`until` on the last update; most recently updated first. */
export function conversationListOf(filter: ConversationFilter, t: { id: Column; workspace: Column; updatedAt: Column }): ListQuery {
  const { limit, offset } = pageOf(filter)
  const conditions: SQL[] = []
  if (filter.workspace !== undefined) conditions.push(eq(t.workspace, filter.workspace))
  if (filter.since !== undefined) conditions.push(gte(t.updatedAt, requireTime(filter.since, 'since')))
  if (filter.until !== undefined) conditions.push(lte(t.updatedAt, requireTime(filter.until, 'until')))
  return { where: and(...conditions), orderBy: [desc(t.updatedAt), desc(t.id)], limit, offset }
}

/** `scenes.list`: the scope filter as `viewer` sees it; most recently updated first. */
export function sceneListOf(filter: SceneFilter, t: ScopeColumns & { id: Column; updatedAt: Column }, viewer: string): ListQuery {
  const { limit, offset } = pageOf(filter)
  return { where: scopeCondition(filter, t, viewer), orderBy: [desc(t.updatedAt), desc(t.id)], limit, offset }
}

/** `memories.list`: the scope filter as `viewer` sees it; newest first, or by last update, or by priority; ties by id. */
export function memoryListOf(filter: MemoryFilter, t: ScopeColumns & { id: Column; createdAt: Column; updatedAt: Column; priority: Column }, viewer: string): ListQuery {
  const { limit, offset } = pageOf(filter)
  const where = scopeCondition(filter, t, viewer)
  const orderBy =
    filter.orderBy === 'updated'
      ? [desc(t.updatedAt), desc(t.id)]
      : filter.orderBy === 'priority'
        ? [desc(t.priority), desc(t.createdAt), desc(t.id)]
        : [desc(t.createdAt), desc(t.id)]
  return { where, orderBy, limit, offset }
}

/** The checked page, WHERE and ORDER BY of `messages.list`: by time, then seq, then id, ascending unless `order: 'desc'`. */
export function messageListOf(filter: MessageFilter, t: MessageColumns): ListQuery {
  const { limit, offset } = pageOf(filter)
  const conditions = messageConditions(filter, t)
  if (filter.afterSeq !== undefined) conditions.push(gt(t.seq, requireCount(filter.afterSeq, 'afterSeq')))
  const direction = filter.order === 'desc' ? desc : asc
  return { where: and(...conditions), orderBy: [direction(t.createdAt), direction(t.seq), direction(t.id)], limit, offset }
}

/** The vector table's columns `missingEmbeddings` probes. */
export interface MessageVectorColumns {
  table: unknown
  messageId: Column
  embeddingModel: Column
}

/**
 * The checked WHERE, ORDER BY and LIMIT of `messages.missingEmbeddings`: `list`'s filters, and
 * no vector of the model (an anti-join on the vectors' unique `(embedding_model, message_id)`
 * index, which answers without reading a vector); newest first (createdAt, then id,
 * descending). SQLite walks the messages newest first and probes the index per message until
 * it has `limit`; PostgreSQL picks that walk for a narrow filter (a workspace, a conversation,
 * a store with little embedded) and a parallel hash anti-join for a wide one. A scalar
 * subquery, which forces the per-message probe, was 2.5× slower on PostgreSQL over a whole
 * 100k-message store and about as fast for one workspace (measured while choosing, not kept).
 */
export function missingEmbeddingsListOf(filter: MissingEmbeddingsFilter, t: MessageColumns, v: MessageVectorColumns): Omit<ListQuery, 'offset'> {
  const { model, limit, filter: rest } = missingEmbeddingsOf(filter)
  const conditions = messageConditions(rest, t)
  conditions.push(sql`NOT EXISTS (SELECT 1 FROM ${v.table} WHERE ${v.embeddingModel} = ${model} AND ${v.messageId} = ${t.id})`)
  return { where: and(...conditions), orderBy: [desc(t.createdAt), desc(t.id)], limit }
}

/**
 * The checked WHERE of `messages.deleteEmbeddings` on the vectors: one model's, or every model's
 * but one (both read the `(embedding_model, message_id)` index), and with a workspace only the
 * vectors of that workspace's messages (`list`'s workspace filter, in a subquery on `messages`).
 */
export function deleteEmbeddingsWhereOf(filter: DeleteEmbeddingsFilter, messages: { table: unknown; columns: MessageColumns }, v: MessageVectorColumns): SQL | undefined {
  const { model, except, workspace } = deleteEmbeddingsOf(filter)
  const conditions = [except ? ne(v.embeddingModel, model) : eq(v.embeddingModel, model)]
  if (workspace !== undefined) {
    const t = messages.columns
    conditions.push(sql`${v.messageId} IN (SELECT ${t.id} FROM ${messages.table} WHERE ${and(...messageConditions({ workspace }, t))})`)
  }
  return and(...conditions)
}

/** The checked WHERE, ORDER BY and LIMIT of `transfer.messageVectors`: (message id, model) order, the primary key's. */
export function messageVectorPageQueryOf(page: MessageVectorPage, v: MessageVectorColumns): Omit<ListQuery, 'offset'> {
  const { after, limit } = messageVectorPageOf(page)
  const where = after === undefined ? undefined : sql`(${v.messageId}, ${v.embeddingModel}) > (${after.messageId}, ${after.embeddingModel})`
  return { where, orderBy: [asc(v.messageId), asc(v.embeddingModel)], limit }
}
