/**
 * Export and import of the SQLite store: versioned JSONL (`transfer.ts` holds the neutral
 * half: order, paging, counts, record checks). Export reads one consistent snapshot on a
 * second read-only connection; import is one transaction that checks every record as a live
 * write would.
 */
import Database from 'better-sqlite3'
import { and, asc, eq, gt } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/better-sqlite3'
import { layerKeyOfRow } from './layers.ts'
import { readAppliedMigrations } from './migrations.ts'
import { messageVectorPageQueryOf } from './record-conditions.ts'
import { personaEntityId } from './record-values.ts'
import { toConversation, toMemory, toMessage, toPersona, toScene } from './rows.ts'
import * as schema from './schema.ts'
import { INSERT_MESSAGE_SQL } from './sqlite-conversations.ts'
import type { Db, SqliteSession } from './sqlite-session.ts'
import {
  danglingImportError,
  type ExportedRecords,
  exportLines,
  importedConversation,
  importedMemory,
  importedMessage,
  importedMessageKeys,
  importedPersona,
  importedPersonaKey,
  importedScene,
  type ImportedRecord,
  importLines,
  importSourceOf,
  orphanMessageError,
  importStamp,
  copiedAuditEntries,
  PRESENCE_TABLES,
  presenceKeys,
  MESSAGE_VECTOR_COUNT_SQL,
  TRANSFER_COUNTS_SQL,
} from './transfer.ts'
import type { ImportOptions, ImportResult, RecordCounts, TransferService } from './types-store.ts'
import { bufferToEmbedding, requireId } from './validate.ts'

/** One page of each record type in export order, on either connection. */
const EXPORT_PAGES: { [K in keyof ExportedRecords]: (db: Db, offset: number, limit: number) => ExportedRecords[K][] } = {
  conversation: (db, offset, limit) => {
    const c = schema.conversations
    return db.select().from(c).orderBy(asc(c.startedAt), asc(c.id)).limit(limit).offset(offset).all().map(toConversation)
  },
  message: (db, offset, limit) => {
    const m = schema.messages
    return db.select().from(m).orderBy(asc(m.conversationId), asc(m.seq), asc(m.id)).limit(limit).offset(offset).all().map(toMessage)
  },
  memory: (db, offset, limit) => {
    const m = schema.memories
    return db.select().from(m).orderBy(asc(m.createdAt), asc(m.id)).limit(limit).offset(offset).all().map(toMemory)
  },
  scene: (db, offset, limit) => {
    const sc = schema.scenes
    return db.select().from(sc).orderBy(asc(sc.createdAt), asc(sc.id)).limit(limit).offset(offset).all().map(toScene)
  },
  persona: (db, offset, limit) => {
    const p = schema.persona
    return db.select().from(p).orderBy(asc(p.scope), asc(p.workspace), asc(p.owner)).limit(limit).offset(offset).all().map(toPersona)
  },
}

/** The store as versioned JSONL lines (see `MemoryStore.exportJsonl`). */
export function exportJsonl(s: SqliteSession): AsyncIterable<string> {
  s.assertOpen()
  return exportRecords(s)
}

async function* exportRecords(s: SqliteSession): AsyncGenerator<string> {
  s.assertOpen()
  const inMemory = s.path === ':memory:'
  // A second read-only connection in a read transaction sees one consistent WAL snapshot
  // and never blocks (or is blocked by) this store's own writes.
  const snapshot = inMemory ? undefined : new Database(s.path, { readonly: true, fileMustExist: true, timeout: s.options.busyTimeoutMs })
  if (snapshot) s.snapshots.add(snapshot)
  try {
    if (snapshot) snapshot.exec('BEGIN')
    const snapshotDb = snapshot ? drizzle({ client: snapshot }) : undefined
    yield* exportLines({
      now: () => s.now(),
      schemaVersion: async () => {
        const migrations = snapshot ? readAppliedMigrations(snapshot) : await s.read(() => readAppliedMigrations(s.sqlite))
        return migrations.filter((m) => m.owner === 'store').reduce((max, m) => Math.max(max, m.version), 0)
      },
      // Pages rather than one open iterator: the in-memory case shares the store's
      // connection, which must stay usable (and go through the gate) between yields.
      page: (type, offset, limit) => {
        const query = EXPORT_PAGES[type]
        if (!snapshotDb) return s.read(() => query(s.db, offset, limit))
        s.assertOpen()
        return query(snapshotDb, offset, limit)
      },
    })
    if (snapshot) snapshot.exec('COMMIT')
  } finally {
    if (snapshot) {
      s.snapshots.delete(snapshot)
      snapshot.close()
    }
  }
}

export async function importJsonl(s: SqliteSession, lines: string | Iterable<string> | AsyncIterable<string>, options?: ImportOptions): Promise<ImportResult> {
  s.assertOpen()
  s.assertWritable()
  const source = importSourceOf(lines)
  return s.transaction(async () => {
    // Memories may name a successor that appears later in the file.
    s.sqlite.pragma('defer_foreign_keys = ON')
    const result = await importLines(source, (record) => importRecord(s, record, options))
    const dangling = s.sqlite.pragma('foreign_key_check') as unknown[]
    if (dangling.length > 0) throw danglingImportError(dangling.length)
    return result
  })
}

/** Insert one imported record unless its id (or key) exists. @returns true when inserted. */
function importRecord(s: SqliteSession, record: ImportedRecord, options: ImportOptions | undefined): boolean {
  const limits = s.options.limits
  const now = s.now()
  // Checked once per record: cheap, and an import with a bad option fails on its first line.
  const stamp = importStamp(options)
  switch (record.type) {
    case 'conversation': {
      const id = requireId(record.data.id, 'id')
      if (s.db.select({ id: schema.conversations.id }).from(schema.conversations).where(eq(schema.conversations.id, id)).get()) return false
      s.db.insert(schema.conversations).values(importedConversation(limits, record.data, stamp)).run()
      s.record({ entity: 'conversation', entityId: id, change: 'insert', audit: 'conversation.import' }, options, now)
      return true
    }
    case 'message': {
      const { id, conversationId, hostMessageId } = importedMessageKeys(record.data)
      // Prepared once: imports of large logs run this per line.
      const exists =
        s.stmt('SELECT 1 FROM store_messages WHERE id = ?').pluck().get(id) !== undefined ||
        s.stmt('SELECT 1 FROM store_messages WHERE conversation_id = ? AND host_message_id = ?').pluck().get(conversationId, hostMessageId) !== undefined
      if (exists) return false
      if (s.stmt('SELECT 1 FROM store_conversations WHERE id = ?').pluck().get(conversationId) === undefined) throw orphanMessageError(id, conversationId)
      const m = importedMessage(limits, record.data, stamp)
      s.stmt(INSERT_MESSAGE_SQL).run(id, conversationId, hostMessageId, m.role, m.text, m.turn, m.seq, JSON.stringify(m.sourceIds), m.tokensEstimate, m.createdAt, JSON.stringify(m.flags), m.createdBy)
      s.fts.addMessage({ id, conversationId, role: m.role, createdAt: m.createdAt, text: m.text })
      s.record({ entity: 'message', entityId: id, change: 'insert', audit: 'message.import' }, options, now)
      return true
    }
    case 'memory': {
      const id = requireId(record.data.id, 'id')
      if (s.db.select({ id: schema.memories.id }).from(schema.memories).where(eq(schema.memories.id, id)).get()) return false
      const values = importedMemory(limits, record.data, stamp)
      s.db.insert(schema.memories).values(values).run()
      s.fts.addMemory(id, values.text)
      s.record({ entity: 'memory', entityId: id, change: 'insert', audit: 'memory.import', revision: values.revision }, options, now)
      s.bumpLayers([layerKeyOfRow(values.scope, values.workspace, values.createdBy)], options, now)
      return true
    }
    case 'scene': {
      const id = requireId(record.data.id, 'id')
      if (s.db.select({ id: schema.scenes.id }).from(schema.scenes).where(eq(schema.scenes.id, id)).get()) return false
      const values = importedScene(limits, record.data, stamp)
      s.db.insert(schema.scenes).values(values).run()
      s.record({ entity: 'scene', entityId: id, change: 'insert', audit: 'scene.import', revision: values.revision }, options, now)
      s.bumpLayers([layerKeyOfRow(values.scope, values.workspace, values.createdBy)], options, now)
      return true
    }
    case 'persona': {
      const key = importedPersonaKey(limits, record.data, stamp)
      const t = schema.persona
      if (s.db.select({ v: t.version }).from(t).where(and(eq(t.scope, key.scope), eq(t.workspace, key.workspace), eq(t.owner, key.owner))).get()) return false
      const values = importedPersona(limits, record.data, stamp)
      s.db.insert(t).values(values).run()
      s.record({ entity: 'persona', entityId: personaEntityId(key), change: 'insert', audit: 'persona.import', revision: values.version }, options, now)
      s.bumpLayers([layerKeyOfRow(key.scope, key.workspace, key.owner)], options, now)
      return true
    }
  }
}

/** Ids per `IN (…)` lookup of `present` (well under SQLite's bound-parameter limit). */
const PRESENCE_CHUNK = 500

/** Every user's rows for `dsh-memory migrate` (see {@link TransferService}). */
export function transferService(s: SqliteSession): TransferService {
  return {
    counts: () =>
      s.read(() => Object.fromEntries(Object.entries(TRANSFER_COUNTS_SQL).map(([type, query]) => [type, Number((s.stmt(query).get() as { n: number }).n)])) as unknown as RecordCounts),
    present: async (lines, options) => {
      const keys = presenceKeys(s.options.limits, lines, options)
      return s.read(() => {
        const found = new Set<string>()
        for (const [type, table] of Object.entries(PRESENCE_TABLES)) {
          const ids = [...new Set(keys.flatMap((key) => (key.type !== 'persona' && key.type === type ? [key.id] : [])))]
          for (let start = 0; start < ids.length; start += PRESENCE_CHUNK) {
            const chunk = ids.slice(start, start + PRESENCE_CHUNK)
            const rows = s.sqlite.prepare(`SELECT id FROM ${table} WHERE id IN (${chunk.map(() => '?').join(', ')})`).pluck().all(...chunk) as string[]
            for (const id of rows) found.add(`${type}\u0000${id}`)
          }
        }
        const persona = s.stmt('SELECT 1 FROM store_persona WHERE scope = ? AND workspace = ? AND owner = ?').pluck()
        return keys.map((key) => (key.type === 'persona' ? persona.get(key.key.scope, key.key.workspace, key.key.owner) !== undefined : found.has(`${key.type}\u0000${key.id}`)))
      })
    },
    appendAudit: async (entries, options) => {
      const rows = copiedAuditEntries(entries)
      return s.write(() => {
        const insert = s.stmt('INSERT INTO store_audit (at, op, entity, entity_id, actor, revision, created_by) VALUES (?, ?, ?, ?, ?, ?, ?)')
        for (const row of rows) insert.run(row.at, row.op, row.entity, row.entityId, row.actor, row.revision, row.createdBy)
        return rows.length
      }, options)
    },
    messageVectors: async (page) => {
      const v = schema.messageVectors
      const q = messageVectorPageQueryOf(page, { ...v, table: v })
      return s.read(() =>
        s.db
          .select({ messageId: v.messageId, embedding: v.embedding, embeddingModel: v.embeddingModel })
          .from(v)
          .where(q.where)
          .orderBy(...q.orderBy)
          .limit(q.limit)
          .all()
          .map((row) => ({ ...row, embedding: bufferToEmbedding(row.embedding) })),
      )
    },
    messageVectorCount: () => s.read(() => Number(s.stmt(MESSAGE_VECTOR_COUNT_SQL).pluck().get())),
  }
}
