/**
 * L0 of the SQLite store: conversations (host sessions) and their messages. Every write
 * indexes (or unindexes) the messages for search in its own transaction.
 */
import { and, asc, eq, inArray, sql } from 'drizzle-orm'
import { MemoryStoreError } from './errors.ts'
import { newId } from './ids.ts'
import { conversationListOf, deleteEmbeddingsWhereOf, messageConditions, type MessageColumns, messageListOf, missingEmbeddingsListOf } from './record-conditions.ts'
import { aroundArgsOf, conversationInputOf, conversationPatchOf, embeddingIdsOf, messageEmbeddingsOf, messageInputOf } from './record-values.ts'
import { toConversation, toMessage } from './rows.ts'
import * as schema from './schema.ts'
import type { SqliteSession } from './sqlite-session.ts'
import { readById } from './sqlite-values.ts'
import type { WriteOptions } from './types-common.ts'
import type {
  AppendMessageInput,
  AppendMessageResult,
  ConversationFilter,
  ConversationRepository,
  EnsureConversationInput,
  Message,
  MessageFilter,
  MessageRepository,
} from './types-conversations.ts'
import { bufferToEmbedding, embeddingToBuffer, optionalTime, requireId } from './validate.ts'

/** The prepared INSERT of one message (live appends and imports share it). */
export const INSERT_MESSAGE_SQL =
  'INSERT INTO store_messages (id, conversation_id, host_message_id, role, text, turn, seq, source_ids, tokens_estimate, created_at, flags, created_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)'

/**
 * Attach one vector to a message that exists (one that does not is skipped: it changes 0 rows),
 * replacing the one it had of the same model (another model's stays).
 */
const UPSERT_MESSAGE_VECTOR_SQL = `INSERT INTO store_message_vectors (message_id, embedding_model, embedding_dims, embedding)
  SELECT @id, @model, @dims, @embedding WHERE EXISTS (SELECT 1 FROM store_messages WHERE id = @id)
  ON CONFLICT (message_id, embedding_model) DO UPDATE SET embedding_dims = excluded.embedding_dims, embedding = excluded.embedding`

const MESSAGE_COLUMNS: MessageColumns = {
  ...schema.messages,
  conversations: { table: schema.conversations, id: schema.conversations.id, workspace: schema.conversations.workspace },
}

export function conversationRepository(s: SqliteSession): ConversationRepository {
  const t = schema.conversations
  const getRow = (id: string) => s.db.select().from(t).where(eq(t.id, id)).get()
  return {
    ensure: async (input: EnsureConversationInput, options?: WriteOptions) => {
      const { id, workspace, title, startedAt } = conversationInputOf(s.options.limits, input)
      const unchanged = (existing: typeof t.$inferSelect | undefined): boolean =>
        existing !== undefined && Object.keys(conversationPatchOf({ workspace, title }, existing)).length === 0
      // Capture calls this before every message: when nothing would change, a read answers
      // without taking the write lock (the write path below re-checks under the lock).
      const current = await s.read(() => getRow(id))
      if (unchanged(current)) return { created: false, conversation: toConversation(current!) }
      return s.write(() => {
        const now = s.now()
        const existing = getRow(id)
        if (!existing) {
          s.db
            .insert(t)
            .values({ id, workspace, title: title || null, startedAt: startedAt ?? now, updatedAt: now, flags: {}, createdBy: s.options.user })
            .run()
          s.record({ entity: 'conversation', entityId: id, change: 'insert', audit: 'conversation.create' }, options, now)
          return { created: true, conversation: toConversation(getRow(id)!) }
        }
        const patch = conversationPatchOf({ workspace, title }, existing)
        if (Object.keys(patch).length === 0) return { created: false, conversation: toConversation(existing) }
        s.db.update(t).set({ ...patch, updatedAt: Math.max(now, existing.updatedAt) }).where(eq(t.id, id)).run()
        s.record({ entity: 'conversation', entityId: id, change: 'update', audit: 'conversation.update' }, options, now)
        return { created: false, conversation: toConversation(getRow(id)!) }
      }, options)
    },
    get: readById(s, getRow, toConversation),
    list: async (filter: ConversationFilter = {}) => {
      const q = conversationListOf(filter, t)
      return s.read(() => s.db.select().from(t).where(q.where).orderBy(...q.orderBy).limit(q.limit).offset(q.offset).all().map(toConversation))
    },
    end: async (id: string, at?: number, options?: WriteOptions) => {
      requireId(id, 'id')
      return s.write(() => {
        const now = s.now()
        const endedAt = optionalTime(at, 'at', now)
        const existing = getRow(id)
        if (!existing) throw new MemoryStoreError('not-found', `conversation ${id} does not exist`)
        s.db.update(t).set({ endedAt, updatedAt: Math.max(now, existing.updatedAt) }).where(eq(t.id, id)).run()
        s.record({ entity: 'conversation', entityId: id, change: 'update', audit: 'conversation.end' }, options, now)
        return toConversation(getRow(id)!)
      }, options)
    },
    delete: async (id: string, options?: WriteOptions) => {
      requireId(id, 'id')
      return s.write(() => {
        if (!getRow(id)) return false
        const now = s.now()
        const messageIds = s.db.select({ id: schema.messages.id }).from(schema.messages).where(eq(schema.messages.conversationId, id)).all()
        s.db.delete(t).where(eq(t.id, id)).run()
        // The cascade removed the messages; the index learns about each from the change log.
        for (const { id: messageId } of messageIds) {
          s.fts.messages.remove(messageId)
          s.db.insert(schema.changes).values({ entity: 'message', entityId: messageId, op: 'delete', at: now }).run()
        }
        s.record({ entity: 'conversation', entityId: id, change: 'delete', audit: 'conversation.delete' }, options, now)
        return true
      }, options)
    },
  }
}

export function messageRepository(s: SqliteSession): MessageRepository {
  const t = schema.messages
  const getRow = (id: string) => s.db.select().from(t).where(eq(t.id, id)).get()
  const byHostId = (conversationId: string, hostMessageId: string) =>
    s.db
      .select()
      .from(t)
      .where(and(eq(t.conversationId, conversationId), eq(t.hostMessageId, hostMessageId)))
      .get()
  return {
    append: async (input: AppendMessageInput, options?: WriteOptions): Promise<AppendMessageResult> => {
      const { conversationId, hostMessageId, role, text, redactions, turn, seq, sourceIds, tokensEstimate, flags, createdAt } = messageInputOf(s.options.limits, input)
      return s.write(() => {
        const existingId = s.stmt('SELECT id FROM store_messages WHERE conversation_id = ? AND host_message_id = ?').pluck().get(conversationId, hostMessageId) as string | undefined
        if (existingId !== undefined) return { inserted: false, message: toMessage(getRow(existingId)!), redactions: 0 }
        const conversationUpdatedAt = s.stmt('SELECT updated_at FROM store_conversations WHERE id = ?').pluck().get(conversationId) as number | undefined
        if (conversationUpdatedAt === undefined) {
          throw new MemoryStoreError('not-found', `conversation ${conversationId} does not exist; call conversations.ensure() first`)
        }
        const now = s.now()
        const at = createdAt ?? now
        const nextSeq = seq ?? ((s.stmt('SELECT max(seq) FROM store_messages WHERE conversation_id = ?').pluck().get(conversationId) as number | null) ?? 0) + 1
        const id = newId(at)
        s.stmt(INSERT_MESSAGE_SQL).run(id, conversationId, hostMessageId, role, text, turn, nextSeq, JSON.stringify(sourceIds), tokensEstimate, at, JSON.stringify(flags), s.options.user)
        s.fts.addMessage({ id, conversationId, role, createdAt: at, text })
        // Keeps "recent conversations" ordering right; not a change the index cares about.
        if (at > conversationUpdatedAt) s.stmt('UPDATE store_conversations SET updated_at = ? WHERE id = ?').run(at, conversationId)
        s.record({ entity: 'message', entityId: id, change: 'insert', audit: 'message.append' }, options, now)
        // The row as written (the same values a re-read would return).
        const message: Message = { id, conversationId, hostMessageId, role, text, turn, seq: nextSeq, sourceIds: [...sourceIds], tokensEstimate, createdAt: at, flags, createdBy: s.options.user }
        return { inserted: true, message, redactions }
      }, options)
    },
    get: readById(s, getRow, toMessage),
    getByHostId: async (conversationId: string, hostMessageId: string) => {
      requireId(conversationId, 'conversationId')
      requireId(hostMessageId, 'hostMessageId')
      return s.read(() => {
        const row = byHostId(conversationId, hostMessageId)
        return row ? toMessage(row) : undefined
      })
    },
    list: async (filter: MessageFilter = {}) => {
      const q = messageListOf(filter, MESSAGE_COLUMNS)
      return s.read(() => s.db.select().from(t).where(q.where).orderBy(...q.orderBy).limit(q.limit).offset(q.offset).all().map(toMessage))
    },
    around: async (ids: readonly string[], span: number) => {
      const list = aroundArgsOf(ids, span)
      if (list.length === 0) return []
      // One query: per hit, the hit and the `span` messages before and after it in the
      // conversation's order (seq, then id), each side a LIMIT walk of the (conversation_id, seq)
      // index. Host seqs have gaps (they number every host event), so `seq ± span` would miss
      // them. A json_each over a correlated subquery is SQLite's LATERAL.
      const side = (before: boolean) => {
        const [cmp, dir] = before ? [sql.raw('<'), sql.raw('DESC')] : [sql.raw('>'), sql.raw('ASC')]
        return sql`SELECT w.value FROM hits h, json_each((SELECT json_group_array(r) FROM (SELECT rowid AS r FROM store_messages
          WHERE conversation_id = h.cid AND seq ${cmp}= h.s AND (seq ${cmp} h.s OR id ${cmp} h.hid) ORDER BY seq ${dir}, id ${dir} LIMIT ${span}))) w`
      }
      const window = sql`rowid IN (WITH hits(cid, s, hid, r) AS (SELECT m.conversation_id, m.seq, m.id, m.rowid FROM json_each(${JSON.stringify(list)}) j JOIN store_messages m ON m.id = j.value)
        SELECT r FROM hits UNION ALL ${side(true)} UNION ALL ${side(false)})`
      return s.read(() => s.db.select().from(t).where(window).orderBy(asc(t.conversationId), asc(t.seq), asc(t.id)).all().map(toMessage))
    },
    count: async (filter: Pick<MessageFilter, 'workspace' | 'conversationId' | 'role' | 'since' | 'until'> = {}) => {
      const conditions = messageConditions(filter, MESSAGE_COLUMNS)
      return s.read(() => s.db.select({ n: sql<number>`count(*)` }).from(t).where(and(...conditions)).get()?.n ?? 0)
    },
    delete: async (id: string, options?: WriteOptions) => {
      requireId(id, 'id')
      return s.write(() => {
        if (!getRow(id)) return false
        s.db.delete(t).where(eq(t.id, id)).run()
        s.fts.messages.remove(id)
        s.record({ entity: 'message', entityId: id, change: 'delete', audit: 'message.delete' }, options)
        return true
      }, options)
    },
    embeddings: async (ids: readonly string[], model: string) => {
      const args = embeddingIdsOf(ids, model)
      if (args.ids.length === 0) return new Map<string, Float32Array>()
      const v = schema.messageVectors
      return s.read(() => {
        const rows = s.db
          .select({ id: v.messageId, embedding: v.embedding })
          .from(v)
          .where(and(eq(v.embeddingModel, args.model), inArray(v.messageId, args.ids)))
          .all()
        return new Map(rows.map((row) => [row.id, bufferToEmbedding(row.embedding)]))
      })
    },
    setEmbeddings: async (entries) => {
      const list = messageEmbeddingsOf(entries)
      if (list.length === 0) return 0
      // Derived data: no revision, audit row or change-log entry (nothing an index follows).
      return s.write(() => {
        const upsert = s.stmt(UPSERT_MESSAGE_VECTOR_SQL)
        let written = 0
        for (const e of list) written += upsert.run({ id: e.messageId, model: e.embeddingModel, dims: e.embeddingDims, embedding: embeddingToBuffer(e.embedding) }).changes
        return written
      })
    },
    missingEmbeddings: async (filter) => {
      const q = missingEmbeddingsListOf(filter, MESSAGE_COLUMNS, { ...schema.messageVectors, table: schema.messageVectors })
      return s.read(() => s.db.select().from(t).where(q.where).orderBy(...q.orderBy).limit(q.limit).all().map(toMessage))
    },
    deleteEmbeddings: async (filter) => {
      const v = schema.messageVectors
      const where = deleteEmbeddingsWhereOf(filter, { table: t, columns: MESSAGE_COLUMNS }, { ...v, table: v })
      // Derived data, as setEmbeddings: no audit row or change-log entry.
      return s.write(() => s.db.delete(v).where(where).run().changes)
    },
  }
}
