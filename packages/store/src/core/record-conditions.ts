/**
 * The WHERE and ORDER BY terms of conversation, message and memory reads, built with
 * drizzle's dialect-neutral operators over whichever backend's columns are passed in, so
 * SQLite and PostgreSQL filter by one definition (validated as they are built). The scope
 * filter of memories and scenes is `scope-sql.ts`.
 */
import { desc, eq, gte, lte, sql, type Column, type SQL } from 'drizzle-orm'
import { messageFilterOf } from './record-values.ts'
import type { ConversationFilter, MessageFilter } from './types-conversations.ts'
import type { MemoryFilter } from './types-memories.ts'
import { requireTime } from './validate.ts'

/** The columns message list and count filter on, and the conversation table's for `workspace`. */
export interface MessageColumns {
  conversationId: Column
  role: Column
  createdAt: Column
  conversations: { table: unknown; id: Column; workspace: Column }
}

/** The WHERE terms of message list and count (validated as they are built). */
export function messageConditions(filter: Pick<MessageFilter, 'workspace' | 'conversationId' | 'role' | 'since' | 'until'>, t: MessageColumns): SQL[] {
  const checked = messageFilterOf(filter)
  const conditions: SQL[] = []
  if (checked.conversationId !== undefined) conditions.push(eq(t.conversationId, checked.conversationId))
  if (checked.role !== undefined) conditions.push(eq(t.role, checked.role))
  if (checked.since !== undefined) conditions.push(gte(t.createdAt, checked.since))
  if (checked.until !== undefined) conditions.push(lte(t.createdAt, checked.until))
  if (checked.workspace !== undefined) {
    const c = t.conversations
    conditions.push(sql`${t.conversationId} IN (SELECT ${c.id} FROM ${c.table} WHERE ${c.workspace} = ${checked.workspace})`)
  }
  return conditions
}

/** The WHERE terms of conversation list: workspace, and `since`/`until` on the last update. */
export function conversationConditions(filter: ConversationFilter, t: { workspace: Column; updatedAt: Column }): SQL[] {
  const conditions: SQL[] = []
  if (filter.workspace !== undefined) conditions.push(eq(t.workspace, filter.workspace))
  if (filter.since !== undefined) conditions.push(gte(t.updatedAt, requireTime(filter.since, 'since')))
  if (filter.until !== undefined) conditions.push(lte(t.updatedAt, requireTime(filter.until, 'until')))
  return conditions
}

/** The ORDER BY of memory list: newest first, or by last update, or by priority; ties by id. */
export function memoryOrder(orderBy: MemoryFilter['orderBy'], t: { createdAt: Column; updatedAt: Column; priority: Column; id: Column }): SQL[] {
  if (orderBy === 'updated') return [desc(t.updatedAt), desc(t.id)]
  if (orderBy === 'priority') return [desc(t.priority), desc(t.createdAt), desc(t.id)]
  return [desc(t.createdAt), desc(t.id)]
}
