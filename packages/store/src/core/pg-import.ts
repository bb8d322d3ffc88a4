/**
 * The batched half of `importJsonl` on PostgreSQL: conversations, messages and memories are
 * written a run at a time (`importRuns` in `transfer.ts`: up to {@link IMPORT_RUN} consecutive
 * records of one type), each run in a handful of statements instead of four or five round
 * trips per record: one "which exist?" query, one multi-row INSERT, one statement for all the
 * audit and change-log rows, one per touched layer. Record by record, the round trips made a
 * 100 000-memory import take 20 minutes on a loaded 2-core machine (82 rows/s).
 *
 * Multi-row INSERTs (`unnest` of one array parameter per column, {@link insertRows}), not COPY:
 * the rows must be checked ("exists?", orphans) and written inside the store's own transaction
 * and connection with the audit rows, which COPY FROM STDIN (a separate protocol mode and a
 * stream library) would not make faster at these run sizes; the server's per-row cost (the GIN
 * index of the search terms, the vocabulary trigger) dominates once round trips are gone.
 *
 * Same results as record by record: a record whose id (or message key) exists, in the database
 * or earlier in the file, is skipped; a message whose conversation is neither is refused with
 * its line; every inserted record gets its own audit and change rows and its own layer bump.
 */
import { layerKeyOfRow } from './layers.ts'
import * as pg from './pg-schema.ts'
import { searchVectorOf } from './pg-search-terms.ts'
import type { PgSession, PgTx } from './pg-session.ts'
import type { ChangeSpec } from './change-spec.ts'
import { atLine, importStamp, importedConversation, importedMemory, importedMessage, lineError, type NumberedRecord, orphanMessageError } from './transfer.ts'
import type { ImportOptions } from './types-store.ts'
import type { Conversation, Message } from './types-conversations.ts'
import type { Memory } from './types-memories.ts'

/** Records per run: statements of a few hundred KiB, and a run's rows held in memory once. */
export const IMPORT_RUN = 1_000

/** Imported memories whose successor may come later in the file: linked once every record is in. */
export type PendingLinks = Map<string, string>

/** Whether each entry is new: not in `existing` and not an earlier entry of the run with the same key. */
function newInRun<T>(entries: readonly T[], keysOf: (entry: T) => readonly string[], existing: ReadonlySet<string>): boolean[] {
  const seen = new Set(existing)
  return entries.map((entry) => {
    const keys = keysOf(entry)
    if (keys.some((key) => seen.has(key))) return false
    for (const key of keys) seen.add(key)
    return true
  })
}

/** One column of {@link insertRows}: its name, its SQL type and the value of each row. */
type Column = readonly [name: string, type: string, values: readonly unknown[]]

/**
 * One multi-row INSERT of `columns` into `table`: each column one text array parameter, cast
 * per row (`unnest`), in row order. Built by hand, not drizzle's `values([...])`: building
 * that statement took ~0.5 ms of JS per row (one parameter and type lookup per value).
 */
async function insertRows(tx: PgTx, table: string, columns: readonly Column[]): Promise<void> {
  const names = columns.map(([name]) => name).join(', ')
  const casts = columns.map(([, type], i) => `c${i}::${type}`).join(', ')
  const arrays = columns.map((_, i) => `$${i + 1}::text[]`).join(', ')
  const aliases = columns.map((_, i) => `c${i}`).join(', ')
  await tx.query(
    `INSERT INTO ${table} (${names}) SELECT ${casts} FROM unnest(${arrays}) WITH ORDINALITY AS r(${aliases}, n) ORDER BY n`,
    columns.map(([, , values]) => values.map((value) => (value === null || value === undefined ? null : String(value)))),
  )
}

/** The ids of `rows` already in `table`. */
async function existingIds(tx: PgTx, table: 'store_conversations' | 'store_memories', rows: readonly { id: string }[]): Promise<Set<string>> {
  const found = await tx.query<{ id: string }>(`SELECT id FROM ${table} WHERE id = ANY($1::text[])`, [rows.map((row) => row.id)])
  return new Set(found.map((row) => row.id))
}

/** JSON columns as text for {@link insertRows}. */
const json = (values: readonly unknown[]) => values.map((value) => JSON.stringify(value))

/** A run of conversations: one lookup, one INSERT, one audit/change statement. */
export async function importConversationRun(s: PgSession, tx: PgTx, run: readonly NumberedRecord[], options: ImportOptions | undefined): Promise<boolean[]> {
  const stamp = importStamp(options)
  const rows = run.map((entry) => atLine(entry.line, () => importedConversation(s.options.limits, entry.record.data as Conversation, stamp)))
  const added = newInRun(rows, (row) => [row.id], await existingIds(tx, 'store_conversations', rows))
  const fresh = rows.filter((_, i) => added[i])
  if (fresh.length > 0) {
    await insertRows(tx, 'store_conversations', [
      ['id', 'text', fresh.map((row) => row.id)],
      ['workspace', 'text', fresh.map((row) => row.workspace)],
      ['title', 'text', fresh.map((row) => row.title)],
      ['started_at', 'bigint', fresh.map((row) => row.startedAt)],
      ['ended_at', 'bigint', fresh.map((row) => row.endedAt)],
      ['updated_at', 'bigint', fresh.map((row) => row.updatedAt)],
      ['flags', 'jsonb', json(fresh.map((row) => row.flags))],
      ['created_by', 'text', fresh.map((row) => row.createdBy)],
    ])
    await s.recordMany(tx, fresh.map((row): ChangeSpec => ({ entity: 'conversation', entityId: row.id, change: 'insert', audit: 'conversation.import' })), options, s.now())
  }
  return added
}

/** Message keys as one string each (ids and `conversation\0host id` cannot collide: ids hold no NUL). */
const hostKey = (conversationId: string, hostMessageId: string) => `${conversationId}\u0000${hostMessageId}`

/**
 * A run of messages: one lookup of existing ids, host keys and conversations, one INSERT of
 * every column and the search terms, one audit/change statement.
 */
export async function importMessageRun(s: PgSession, tx: PgTx, run: readonly NumberedRecord[], options: ImportOptions | undefined): Promise<boolean[]> {
  const stamp = importStamp(options)
  const rows = run.map((entry) => atLine(entry.line, () => importedMessage(s.options.limits, entry.record.data as Message, stamp)))
  const [state] = await tx.query<{ ids: string[] | null; hosts: [string, string][] | null; conversations: string[] | null }>(
    `WITH host AS (
       SELECT m.conversation_id, m.host_message_id FROM store_messages m
       JOIN unnest($2::text[], $3::text[]) AS k(conversation_id, host_message_id) USING (conversation_id, host_message_id)
     )
     SELECT
       (SELECT array_agg(id) FROM store_messages WHERE id = ANY($1::text[])) AS ids,
       (SELECT json_agg(json_build_array(conversation_id, host_message_id)) FROM host) AS hosts,
       (SELECT array_agg(id) FROM store_conversations WHERE id = ANY($2::text[])) AS conversations`,
    [rows.map((row) => row.id), rows.map((row) => row.conversationId), rows.map((row) => row.hostMessageId)],
  )
  const existing = new Set([...(state?.ids ?? []), ...(state?.hosts ?? []).map(([conversation, host]) => hostKey(conversation, host))])
  const added = newInRun(rows, (row) => [row.id, hostKey(row.conversationId, row.hostMessageId)], existing)
  const conversations = new Set(state?.conversations ?? [])
  for (const [i, row] of rows.entries()) {
    if (added[i] && !conversations.has(row.conversationId)) throw lineError(orphanMessageError(row.id, row.conversationId), run[i]!.line)
  }
  const fresh = rows.filter((_, i) => added[i])
  if (fresh.length === 0) return added
  const column = <K extends keyof (typeof fresh)[number]>(key: K) => fresh.map((row) => row[key])
  await insertRows(tx, 'store_messages', [
    ['id', 'text', column('id')],
    ['conversation_id', 'text', column('conversationId')],
    ['host_message_id', 'text', column('hostMessageId')],
    ['role', 'text', column('role')],
    ['text', 'text', column('text')],
    ['turn', 'int', column('turn')],
    ['seq', 'int', column('seq')],
    ['source_ids', 'jsonb', json(column('sourceIds'))],
    ['tokens_estimate', 'int', column('tokensEstimate')],
    ['created_at', 'bigint', column('createdAt')],
    ['flags', 'jsonb', json(column('flags'))],
    ['search_terms', 'tsvector', fresh.map((row) => searchVectorOf(row.text))],
    ['created_by', 'text', column('createdBy')],
  ])
  await s.recordMany(tx, fresh.map((row): ChangeSpec => ({ entity: 'message', entityId: row.id, change: 'insert', audit: 'message.import' })), options, s.now())
  return added
}

/**
 * A run of memories: one lookup, one INSERT with the search terms, one audit/change statement
 * and one bump per layer (as many bumps as memories, as record by record). Successor links wait in `links`.
 */
export async function importMemoryRun(s: PgSession, tx: PgTx, run: readonly NumberedRecord[], options: ImportOptions | undefined, links: PendingLinks): Promise<boolean[]> {
  const stamp = importStamp(options)
  const rows = run.map((entry) => atLine(entry.line, () => importedMemory(s.options.limits, entry.record.data as Memory, stamp)))
  const added = newInRun(rows, (row) => [row.id], await existingIds(tx, 'store_memories', rows))
  const fresh = rows.filter((_, i) => added[i])
  if (fresh.length === 0) return added
  const column = <K extends keyof (typeof fresh)[number]>(key: K) => fresh.map((row) => row[key])
  // Successors are linked at the end (`links`): the row may come later in the file.
  await insertRows(tx, 'store_memories', [
    ['id', 'text', column('id')],
    ['kind', 'text', column('kind')],
    ['text', 'text', column('text')],
    ['scope', 'text', column('scope')],
    ['workspace', 'text', column('workspace')],
    ['session_id', 'text', column('sessionId')],
    ['source_message_ids', 'jsonb', json(column('sourceMessageIds'))],
    ['priority', 'float8', column('priority')],
    ['revision', 'int', column('revision')],
    ['created_at', 'bigint', column('createdAt')],
    ['updated_at', 'bigint', column('updatedAt')],
    ['last_recalled_at', 'bigint', column('lastRecalledAt')],
    ['embedding', 'real[]', fresh.map((row) => (row.embedding === null ? null : pg.memories.embedding.mapToDriverValue(row.embedding)))],
    ['embedding_dims', 'int', column('embeddingDims')],
    ['embedding_model', 'text', column('embeddingModel')],
    ['flags', 'jsonb', json(column('flags'))],
    ['search_terms', 'tsvector', fresh.map((row) => searchVectorOf(row.text))],
    ['created_by', 'text', column('createdBy')],
  ])
  const now = s.now()
  const layers = new Map<string, number>()
  for (const row of fresh) {
    if (row.supersededBy !== null) links.set(row.id, row.supersededBy)
    const key = layerKeyOfRow(row.scope, row.workspace, row.createdBy)
    if (key !== undefined) layers.set(key, (layers.get(key) ?? 0) + 1)
  }
  await s.recordMany(tx, fresh.map((row): ChangeSpec => ({ entity: 'memory', entityId: row.id, change: 'insert', audit: 'memory.import', revision: row.revision })), options, now)
  await s.bumpLayersBy(tx, layers, options, now)
  return added
}
