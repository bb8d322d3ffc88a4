/**
 * L0 of the PostgreSQL store: conversations (host sessions) and their messages, the same
 * contract as `sqlite-conversations.ts`. A message's search terms are written by the very
 * statement that inserts it: capture appends one message per host event, so `append` is one
 * INSERT (with the conversation's `updated_at` bump in the same statement) plus the audit and
 * change-log rows.
 */
import { and, type Column, eq, getTableColumns, inArray, sql } from 'drizzle-orm'
import { MemoryStoreError } from './errors.ts'
import { newId } from './ids.ts'
import * as pg from './pg-schema.ts'
import { realArrayLiteral } from './pg-schema.ts'
import type { PgSession, PgTx } from './pg-session.ts'
import { searchVectorOf } from './pg-search-terms.ts'
import { firstRow, pgReadById, rowOf } from './pg-values.ts'
import { conversationListOf, deleteEmbeddingsWhereOf, messageConditions, type MessageColumns, messageListOf, missingEmbeddingsListOf } from './record-conditions.ts'
import { aroundArgsOf, conversationInputOf, conversationPatchOf, embeddingIdsOf, messageEmbeddingsOf, messageInputOf } from './record-values.ts'
import { toConversation, toMessage } from './rows.ts'
import type { AppendMessageResult, ConversationFilter, ConversationRepository, Message, MessageFilter, MessageRepository } from './types-conversations.ts'
import { bufferToEmbedding, optionalTime, requireId } from './validate.ts'

/** The declared columns of a message row, as `select()` returns them. */
const MESSAGE_ROW_COLUMNS = getTableColumns(pg.messages) as Record<string, Column>

/** The message columns of the shared filters (list, count, search). */
export const MESSAGE_COLUMNS: MessageColumns = {
  ...pg.messages,
  conversations: { table: pg.conversations, id: pg.conversations.id, workspace: pg.conversations.workspace },
  // Undeclared in pg-schema.ts (only filters read it; see pg-search-terms.ts).
  workspace: sql.raw('"store_messages"."workspace"'),
}

const getConversation = (tx: PgTx, id: string) => firstRow(tx.db.select().from(pg.conversations).where(eq(pg.conversations.id, id)))
const getMessage = (tx: PgTx, id: string) => firstRow(tx.db.select().from(pg.messages).where(eq(pg.messages.id, id)))

export function pgConversationRepository(s: PgSession): ConversationRepository {
  const t = pg.conversations
  return {
    ensure: async (input, options) => {
      const { id, workspace, title, startedAt } = conversationInputOf(s.options.limits, input)
      // Capture calls this before every message: when nothing would change, a snapshot read
      // answers without the writer lock (the write below re-checks under it).
      const current = await s.read((tx) => getConversation(tx, id))
      if (current && Object.keys(conversationPatchOf({ workspace, title }, current)).length === 0) return { created: false, conversation: toConversation(current) }
      return s.write(async (tx) => {
        const now = s.now()
        const [created] = await tx.db
          .insert(t)
          .values({ id, workspace, title: title || null, startedAt: startedAt ?? now, updatedAt: now, flags: {}, createdBy: s.options.user })
          .onConflictDoNothing({ target: t.id })
          .returning()
        if (created) {
          await s.record(tx, { entity: 'conversation', entityId: id, change: 'insert', audit: 'conversation.create' }, options, now)
          return { created: true, conversation: toConversation(created) }
        }
        const existing = (await getConversation(tx, id))!
        const patch = conversationPatchOf({ workspace, title }, existing)
        if (Object.keys(patch).length === 0) return { created: false, conversation: toConversation(existing) }
        const [updated] = await tx.db
          .update(t)
          .set({ ...patch, updatedAt: Math.max(now, existing.updatedAt) })
          .where(eq(t.id, id))
          .returning()
        await s.record(tx, { entity: 'conversation', entityId: id, change: 'update', audit: 'conversation.update' }, options, now)
        return { created: false, conversation: toConversation(updated!) }
      }, options)
    },
    get: pgReadById(s, getConversation, toConversation),
    list: async (filter: ConversationFilter = {}) => {
      const q = conversationListOf(filter, t)
      return s.readEach(async (tx) => (await tx.db.select().from(t).where(q.where).orderBy(...q.orderBy).limit(q.limit).offset(q.offset)).map(toConversation))
    },
    end: async (id, at, options) => {
      requireId(id, 'id')
      return s.write(async (tx) => {
        const now = s.now()
        const endedAt = optionalTime(at, 'at', now)
        const existing = await getConversation(tx, id)
        if (!existing) throw new MemoryStoreError('not-found', `conversation ${id} does not exist`)
        const [updated] = await tx.db
          .update(t)
          .set({ endedAt, updatedAt: Math.max(now, existing.updatedAt) })
          .where(eq(t.id, id))
          .returning()
        await s.record(tx, { entity: 'conversation', entityId: id, change: 'update', audit: 'conversation.end' }, options, now)
        return toConversation(updated!)
      }, options)
    },
    delete: async (id, options) => {
      requireId(id, 'id')
      return s.write(async (tx) => {
        const now = s.now()
        // The cascade removes the messages (and their search terms with them); derived views
        // learn about each from the change log, written first while the rows still exist.
        await tx.query("INSERT INTO store_changes (entity, entity_id, op, at) SELECT 'message', id, 'delete', $2 FROM store_messages WHERE conversation_id = $1", [id, now])
        const deleted = await tx.query('DELETE FROM store_conversations WHERE id = $1 RETURNING id', [id])
        if (deleted.length === 0) return false
        await s.record(tx, { entity: 'conversation', entityId: id, change: 'delete', audit: 'conversation.delete' }, options, now)
        return true
      }, options)
    },
  }
}

/**
 * The append statement: insert unless `(conversation_id, host_message_id)` exists, with the
 * next seq when none is given and the text's search terms, and move the conversation's
 * `updated_at` forward; answers the new seq (null when the message existed) and whether the
 * conversation exists.
 */
const APPEND_SQL = `WITH conv AS (SELECT id FROM store_conversations WHERE id = $2::text),
  ins AS (
    INSERT INTO store_messages (id, conversation_id, host_message_id, role, text, turn, seq, source_ids, tokens_estimate, created_at, flags, search_terms, created_by)
    SELECT $1::text, conv.id, $3::text, $4::text, $5::text, $6::integer,
      coalesce($7::integer, (SELECT coalesce(max(m.seq), 0) + 1 FROM store_messages m WHERE m.conversation_id = $2::text)),
      $8::jsonb, $9::integer, $10::bigint, $11::jsonb, $12::tsvector, $13::text
    FROM conv
    ON CONFLICT (conversation_id, host_message_id) DO NOTHING
    RETURNING seq),
  touch AS (UPDATE store_conversations SET updated_at = $10::bigint WHERE id = $2::text AND updated_at < $10::bigint AND EXISTS (SELECT 1 FROM ins))
  SELECT (SELECT seq FROM ins) AS seq, EXISTS (SELECT 1 FROM conv) AS conversation`

/**
 * Attach vectors to the messages that exist (the join skips the others), each replacing the
 * one its message had of the same model (another model's stays); answers one row per vector
 * written. The vectors come as array literals
 * (`realArrayLiteral`), one text per message.
 */
const UPSERT_MESSAGE_VECTORS_SQL = `INSERT INTO store_message_vectors (message_id, embedding_model, embedding_dims, embedding)
  SELECT v.id, v.model, v.dims, v.embedding::real[] FROM unnest($1::text[], $2::text[], $3::integer[], $4::text[]) AS v(id, model, dims, embedding)
  JOIN store_messages m ON m.id = v.id
  ON CONFLICT (message_id, embedding_model) DO UPDATE SET embedding_dims = excluded.embedding_dims, embedding = excluded.embedding
  RETURNING 1`

export function pgMessageRepository(s: PgSession): MessageRepository {
  const t = pg.messages
  const byHostId = (tx: PgTx, conversationId: string, hostMessageId: string) =>
    firstRow(
      tx.db
        .select()
        .from(t)
        .where(and(eq(t.conversationId, conversationId), eq(t.hostMessageId, hostMessageId))),
    )
  return {
    append: async (input, options): Promise<AppendMessageResult> => {
      const m = messageInputOf(s.options.limits, input)
      const terms = searchVectorOf(m.text)
      return s.write(async (tx) => {
        const now = s.now()
        const at = m.createdAt ?? now
        const id = newId(at)
        const params = [id, m.conversationId, m.hostMessageId, m.role, m.text, m.turn, m.seq ?? null, JSON.stringify(m.sourceIds), m.tokensEstimate, at, JSON.stringify(m.flags), terms, s.options.user]
        const [result] = await tx.query<{ seq: number | null; conversation: boolean }>(APPEND_SQL, params)
        if (!result?.conversation) {
          throw new MemoryStoreError('not-found', `conversation ${m.conversationId} does not exist; call conversations.ensure() first`)
        }
        if (result.seq === null) return { inserted: false, message: toMessage((await byHostId(tx, m.conversationId, m.hostMessageId))!), redactions: 0 }
        await s.record(tx, { entity: 'message', entityId: id, change: 'insert', audit: 'message.append' }, options, now)
        // The row as written (the same values a re-read would return).
        const message: Message = {
          id,
          conversationId: m.conversationId,
          hostMessageId: m.hostMessageId,
          role: m.role,
          text: m.text,
          turn: m.turn,
          seq: Number(result.seq),
          sourceIds: [...m.sourceIds],
          tokensEstimate: m.tokensEstimate,
          createdAt: at,
          flags: m.flags,
          createdBy: s.options.user,
        }
        return { inserted: true, message, redactions: m.redactions }
      }, options)
    },
    get: pgReadById(s, getMessage, toMessage),
    getByHostId: async (conversationId, hostMessageId) => {
      requireId(conversationId, 'conversationId')
      requireId(hostMessageId, 'hostMessageId')
      return s.read(async (tx) => {
        const row = await byHostId(tx, conversationId, hostMessageId)
        return row ? toMessage(row) : undefined
      })
    },
    list: async (filter: MessageFilter = {}) => {
      const q = messageListOf(filter, MESSAGE_COLUMNS)
      return s.readEach(async (tx) => (await tx.db.select().from(t).where(q.where).orderBy(...q.orderBy).limit(q.limit).offset(q.offset)).map(toMessage))
    },
    around: async (ids, span) => {
      const list = aroundArgsOf(ids, span)
      if (list.length === 0) return []
      // One query: per hit, the hit and the `span` messages before and after it in the
      // conversation's order (seq, then id), each side a LATERAL LIMIT walk of the
      // (conversation_id, seq) index that returns the rows themselves (not ids looked up
      // again). Host seqs have gaps (they number every host event), so `seq ± span` would miss
      // them. Neighbours of two hits come twice: sorted by position, the repeat is dropped.
      const names = (alias: string) => sql.raw(Object.values(MESSAGE_ROW_COLUMNS).map((column) => `${alias}."${column.name}"`).join(', '))
      const side = (before: boolean) => {
        const [cmp, dir] = before ? [sql.raw('<'), sql.raw('DESC')] : [sql.raw('>'), sql.raw('ASC')]
        return sql`(SELECT ${names('n')} FROM store_messages n WHERE n.conversation_id = h.conversation_id AND n.seq ${cmp}= h.seq AND (n.seq ${cmp} h.seq OR n.id ${cmp} h.id)
          ORDER BY n.seq ${dir}, n.id ${dir} LIMIT ${span}::integer)`
      }
      const query = sql`SELECT w.* FROM store_messages h CROSS JOIN LATERAL (SELECT ${names('h')} UNION ALL ${side(true)} UNION ALL ${side(false)}) AS w
        WHERE h.id = ANY(${sql.param(list)}::text[]) ORDER BY w.conversation_id, w.seq, w.id`
      return s.readEach(async (tx) => {
        const rows = (await tx.db.execute(query)).rows as Record<string, unknown>[]
        return rows.filter((row, i) => i === 0 || row.id !== rows[i - 1]!.id).map((row) => toMessage(rowOf<typeof t.$inferSelect>(MESSAGE_ROW_COLUMNS, row)))
      })
    },
    count: async (filter = {}) => {
      const conditions = messageConditions(filter, MESSAGE_COLUMNS)
      return s.readEach(async (tx) => Number((await firstRow(tx.db.select({ n: sql<number>`count(*)` }).from(t).where(and(...conditions))))?.n ?? 0))
    },
    delete: async (id, options) => {
      requireId(id, 'id')
      return s.write(async (tx) => {
        const deleted = await tx.query('DELETE FROM store_messages WHERE id = $1 RETURNING id', [id])
        if (deleted.length === 0) return false
        await s.record(tx, { entity: 'message', entityId: id, change: 'delete', audit: 'message.delete' }, options)
        return true
      }, options)
    },
    embeddings: async (ids, model) => {
      const args = embeddingIdsOf(ids, model)
      if (args.ids.length === 0) return new Map<string, Float32Array>()
      const v = pg.messageVectors
      return s.readEach(async (tx) => {
        const rows = await tx.db
          .select({ id: v.messageId, embedding: v.embedding })
          .from(v)
          .where(and(eq(v.embeddingModel, args.model), inArray(v.messageId, args.ids)))
        return new Map(rows.map((row) => [row.id, bufferToEmbedding(row.embedding)]))
      })
    },
    setEmbeddings: async (entries) => {
      const list = messageEmbeddingsOf(entries)
      if (list.length === 0) return 0
      const params = [list.map((e) => e.messageId), list.map((e) => e.embeddingModel), list.map((e) => e.embeddingDims), list.map((e) => realArrayLiteral(e.embedding))]
      // Derived data: no revision, audit row or change-log entry (nothing an index follows).
      return s.write(async (tx) => (await tx.query(UPSERT_MESSAGE_VECTORS_SQL, params)).length)
    },
    missingEmbeddings: async (filter) => {
      const q = missingEmbeddingsListOf(filter, MESSAGE_COLUMNS, { ...pg.messageVectors, table: pg.messageVectors })
      return s.readEach(async (tx) => (await tx.db.select().from(t).where(q.where).orderBy(...q.orderBy).limit(q.limit)).map(toMessage))
    },
    deleteEmbeddings: async (filter) => {
      const v = pg.messageVectors
      const where = deleteEmbeddingsWhereOf(filter, { table: t, columns: MESSAGE_COLUMNS }, { ...v, table: v })
      // Derived data, as setEmbeddings: no audit row or change-log entry.
      return s.write(async (tx) => (await tx.db.delete(v).where(where)).rowCount ?? 0)
    },
  }
}
