/**
 * Mapping between drizzle rows and the public records. Records are fresh objects on every
 * read, so callers may mutate them without affecting the store.
 */
import type { conversations, memories, messages, persona, scenes } from './schema.ts'
import type { Conversation, Message } from './types-conversations.ts'
import type { Memory } from './types-memories.ts'
import type { Persona } from './types-persona.ts'
import type { Scene } from './types-scenes.ts'
import { bufferToEmbedding } from './validate.ts'

type Row<T extends { $inferSelect: unknown }> = T['$inferSelect']

/** The row's columns are exactly the record's fields. */
export function toConversation(row: Row<typeof conversations>): Conversation {
  return { ...row, flags: row.flags ?? {} }
}

/** The row's columns are exactly the record's fields. */
export function toMessage(row: Row<typeof messages>): Message {
  return { ...row, sourceIds: row.sourceIds ?? [], flags: row.flags ?? {} }
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
    createdBy: row.createdBy,
  }
}

/** The row's columns are exactly the record's fields. */
export function toScene(row: Row<typeof scenes>): Scene {
  return { ...row, memoryIds: row.memoryIds ?? [], flags: row.flags ?? {} }
}

/** `owner` is part of the key only (the global persona of `createdBy`): the record leaves it out. */
export function toPersona(row: Row<typeof persona>): Persona {
  return {
    scope: row.scope,
    workspace: row.workspace === '' ? null : row.workspace,
    text: row.text,
    version: row.version,
    updatedAt: row.updatedAt,
    createdBy: row.createdBy,
  }
}
