/**
 * Mapping between drizzle rows and the public records. Records are fresh objects on every
 * read, so callers may mutate them without affecting the store.
 */
import type { conversations, memories, messages, persona, scenes } from './schema.ts'
import type { Conversation, Memory, Message, Persona, Scene } from './types.ts'
import { bufferToEmbedding } from './validate.ts'

type Row<T extends { $inferSelect: unknown }> = T['$inferSelect']

export function toConversation(row: Row<typeof conversations>): Conversation {
  return {
    id: row.id,
    workspace: row.workspace,
    title: row.title,
    startedAt: row.startedAt,
    endedAt: row.endedAt,
    updatedAt: row.updatedAt,
    flags: row.flags ?? {},
  }
}

export function toMessage(row: Row<typeof messages>): Message {
  return {
    id: row.id,
    conversationId: row.conversationId,
    hostMessageId: row.hostMessageId,
    role: row.role,
    text: row.text,
    turn: row.turn,
    seq: row.seq,
    sourceIds: row.sourceIds ?? [],
    tokensEstimate: row.tokensEstimate,
    createdAt: row.createdAt,
    flags: row.flags ?? {},
  }
}

export function toMemory(row: Row<typeof memories>): Memory {
  return {
    id: row.id,
    kind: row.kind,
    text: row.text,
    scope: row.scope,
    workspace: row.workspace,
    sessionId: row.sessionId,
    sourceMessageIds: row.sourceMessageIds ?? [],
    priority: row.priority,
    revision: row.revision,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    lastRecalledAt: row.lastRecalledAt,
    supersededBy: row.supersededBy,
    embedding: row.embedding ? bufferToEmbedding(row.embedding) : null,
    embeddingModel: row.embeddingModel,
    flags: row.flags ?? {},
  }
}

export function toScene(row: Row<typeof scenes>): Scene {
  return {
    id: row.id,
    title: row.title,
    summary: row.summary,
    scope: row.scope,
    workspace: row.workspace,
    sessionId: row.sessionId,
    memoryIds: row.memoryIds ?? [],
    revision: row.revision,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    flags: row.flags ?? {},
  }
}

export function toPersona(row: Row<typeof persona>): Persona {
  return {
    scope: row.scope,
    workspace: row.workspace === '' ? null : row.workspace,
    text: row.text,
    version: row.version,
    updatedAt: row.updatedAt,
  }
}
