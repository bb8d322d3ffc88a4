/**
 * Export and import of the SQLite store: versioned JSONL (`export-format.ts` encodes and
 * checks the records). Export reads one consistent snapshot on a second read-only connection;
 * import is one transaction that checks every record as a live write would.
 */
import Database from 'better-sqlite3'
import { and, asc, eq } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/better-sqlite3'
import { isMemoryStoreError, MemoryStoreError } from './errors.ts'
import { encodeExportRecord, EXPORT_FORMAT, EXPORT_VERSION, type ExportRecord, parseImportLine } from './export-format.ts'
import { layerKeyOfRow } from './layers.ts'
import { readAppliedMigrations } from './migrations.ts'
import { toConversation, toMemory, toMessage, toPersona, toScene } from './rows.ts'
import * as schema from './schema.ts'
import { INSERT_MESSAGE_SQL } from './sqlite-conversations.ts'
import type { Db, SqliteSession } from './sqlite-session.ts'
import { memoryValuesOf, personaEntityId, personaKeyOf, placementOf } from './sqlite-values.ts'
import { estimateTokens, prepareLabel, prepareText } from './text.ts'
import type { WriteOptions } from './types-common.ts'
import type { ImportResult, RecordCounts } from './types-store.ts'
import { flagsObject, idList, requireCount, requireId, requireRole, requireScope, requireTime } from './validate.ts'

const COUNTER_OF = {
  conversation: 'conversations',
  message: 'messages',
  memory: 'memories',
  scene: 'scenes',
  persona: 'persona',
} as const satisfies Record<Exclude<ExportRecord['type'], 'header'>, keyof RecordCounts>

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
    const migrations = snapshot ? readAppliedMigrations(snapshot) : await s.read(() => readAppliedMigrations(s.sqlite))
    yield encodeExportRecord({
      type: 'header',
      format: EXPORT_FORMAT,
      version: EXPORT_VERSION,
      exportedAt: s.now(),
      schema: migrations.filter((m) => m.owner === 'store').reduce((max, m) => Math.max(max, m.version), 0),
    })
    const snapshotDb = snapshot ? drizzle({ client: snapshot }) : undefined
    // Pages rather than one open iterator: the in-memory case shares the store's
    // connection, which must stay usable (and go through the gate) between yields.
    const page = <R>(query: (db: Db, offset: number) => R[], offset: number): R[] | Promise<R[]> => {
      if (!snapshotDb) return s.read(() => query(s.db, offset))
      s.assertOpen()
      return query(snapshotDb, offset)
    }
    const PAGE = 1_000
    async function* pages<R, T>(type: string, query: (db: Db, offset: number) => R[], map: (row: R) => T): AsyncGenerator<string> {
      for (let offset = 0; ; offset += PAGE) {
        const rows = await page(query, offset)
        for (const row of rows) yield encodeExportRecord({ type, data: map(row) } as ExportRecord)
        if (rows.length < PAGE) return
      }
    }
    const c = schema.conversations
    const m = schema.messages
    const mem = schema.memories
    const sc = schema.scenes
    const p = schema.persona
    yield* pages('conversation', (db, offset) => db.select().from(c).orderBy(asc(c.startedAt), asc(c.id)).limit(PAGE).offset(offset).all(), toConversation)
    yield* pages('message', (db, offset) => db.select().from(m).orderBy(asc(m.conversationId), asc(m.seq), asc(m.id)).limit(PAGE).offset(offset).all(), toMessage)
    yield* pages('memory', (db, offset) => db.select().from(mem).orderBy(asc(mem.createdAt), asc(mem.id)).limit(PAGE).offset(offset).all(), toMemory)
    yield* pages('scene', (db, offset) => db.select().from(sc).orderBy(asc(sc.createdAt), asc(sc.id)).limit(PAGE).offset(offset).all(), toScene)
    yield* pages('persona', (db, offset) => db.select().from(p).orderBy(asc(p.scope), asc(p.workspace)).limit(PAGE).offset(offset).all(), toPersona)
    if (snapshot) snapshot.exec('COMMIT')
  } finally {
    if (snapshot) {
      s.snapshots.delete(snapshot)
      snapshot.close()
    }
  }
}

export async function importJsonl(s: SqliteSession, lines: string | Iterable<string> | AsyncIterable<string>, options?: WriteOptions): Promise<ImportResult> {
  s.assertOpen()
  s.assertWritable()
  const source: Iterable<string> | AsyncIterable<string> = typeof lines === 'string' ? lines.split('\n') : lines
  if (!source || (typeof (source as Iterable<string>)[Symbol.iterator] !== 'function' && typeof (source as AsyncIterable<string>)[Symbol.asyncIterator] !== 'function')) {
    throw new MemoryStoreError('invalid-argument', 'importJsonl needs a string or an iterable of lines')
  }
  const inserted: RecordCounts = { conversations: 0, messages: 0, memories: 0, scenes: 0, persona: 0 }
  const skipped: RecordCounts = { conversations: 0, messages: 0, memories: 0, scenes: 0, persona: 0 }
  return s.transaction(async () => {
    // Memories may name a successor that appears later in the file.
    s.sqlite.pragma('defer_foreign_keys = ON')
    let lineNumber = 0
    let sawHeader = false
    for await (const raw of source) {
      lineNumber++
      for (const line of String(raw).split('\n')) {
        if (line.trim().length === 0) continue
        const record = parseImportLine(line, lineNumber, sawHeader)
        if (record.type === 'header') {
          sawHeader = true
          continue
        }
        const counter = COUNTER_OF[record.type]
        const added = importRecord(s, record, lineNumber, options)
        if (added) inserted[counter]++
        else skipped[counter]++
      }
    }
    if (!sawHeader) throw new MemoryStoreError('unsupported-format', `not a ${EXPORT_FORMAT} stream: no header line`)
    const dangling = s.sqlite.pragma('foreign_key_check') as unknown[]
    if (dangling.length > 0) {
      throw new MemoryStoreError('invalid-argument', `import refers to ${dangling.length} missing row(s) (e.g. a superseding memory not in the file); nothing was imported`)
    }
    return { inserted, skipped }
  })
}

/** Insert one imported record unless its id (or key) exists. @returns true when inserted. */
function importRecord(s: SqliteSession, record: Exclude<ExportRecord, { type: 'header' }>, line: number, options: WriteOptions | undefined): boolean {
  const limits = s.options.limits
  const now = s.now()
  const where = `line ${line}`
  const withLine = <T>(fn: () => T): T => {
    try {
      return fn()
    } catch (error) {
      if (isMemoryStoreError(error, 'invalid-argument')) throw new MemoryStoreError('invalid-argument', `${where}: ${error.message}`)
      throw error
    }
  }
  return withLine(() => {
    switch (record.type) {
      case 'conversation': {
        const d = record.data
        const id = requireId(d.id, 'id')
        if (s.db.select({ id: schema.conversations.id }).from(schema.conversations).where(eq(schema.conversations.id, id)).get()) return false
        s.db
          .insert(schema.conversations)
          .values({
            id,
            workspace: prepareLabel(d.workspace ?? '', 'workspace', limits.label, true),
            title: d.title === null || d.title === undefined ? null : prepareLabel(d.title, 'title', limits.label, true) || null,
            startedAt: requireTime(d.startedAt, 'startedAt'),
            endedAt: d.endedAt === null || d.endedAt === undefined ? null : requireTime(d.endedAt, 'endedAt'),
            updatedAt: requireTime(d.updatedAt, 'updatedAt'),
            flags: flagsObject(d.flags ?? {}),
          })
          .run()
        s.record({ entity: 'conversation', entityId: id, change: 'insert', audit: 'conversation.import' }, options, now)
        return true
      }
      case 'message': {
        const d = record.data
        const id = requireId(d.id, 'id')
        const conversationId = requireId(d.conversationId, 'conversationId')
        const hostMessageId = requireId(d.hostMessageId, 'hostMessageId')
        const m = schema.messages
        // Prepared once: imports of large logs run this per line.
        const exists =
          s.stmt('SELECT 1 FROM store_messages WHERE id = ?').pluck().get(id) !== undefined ||
          s.stmt('SELECT 1 FROM store_messages WHERE conversation_id = ? AND host_message_id = ?').pluck().get(conversationId, hostMessageId) !== undefined
        if (exists) return false
        if (s.stmt('SELECT 1 FROM store_conversations WHERE id = ?').pluck().get(conversationId) === undefined) {
          throw new MemoryStoreError('invalid-argument', `message ${id} belongs to conversation ${conversationId}, which is not in the database or earlier in the file`)
        }
        const text = prepareText(d.text, 'text', limits.message).text
        const role = requireRole(d.role)
        const createdAt = requireTime(d.createdAt, 'createdAt')
        s.stmt(INSERT_MESSAGE_SQL).run(
          id,
          conversationId,
          hostMessageId,
          role,
          text,
          requireCount(d.turn ?? 0, 'turn'),
          requireCount(d.seq, 'seq'),
          JSON.stringify(idList(d.sourceIds, 'sourceIds')),
          d.tokensEstimate === undefined ? estimateTokens(text) : requireCount(d.tokensEstimate, 'tokensEstimate'),
          createdAt,
          JSON.stringify(flagsObject(d.flags ?? {})),
        )
        s.fts.addMessage({ id, conversationId, role, createdAt, text })
        s.record({ entity: 'message', entityId: id, change: 'insert', audit: 'message.import' }, options, now)
        return true
      }
      case 'memory': {
        const d = record.data
        const id = requireId(d.id, 'id')
        if (s.db.select({ id: schema.memories.id }).from(schema.memories).where(eq(schema.memories.id, id)).get()) return false
        const values = memoryValuesOf(s.options.limits, {
          kind: d.kind,
          text: d.text,
          scope: d.scope,
          workspace: d.workspace,
          sessionId: d.sessionId,
          sourceMessageIds: d.sourceMessageIds,
          priority: d.priority,
          flags: d.flags ?? {},
          embedding: d.embedding ?? null,
          embeddingModel: d.embeddingModel ?? null,
        })
        const revision = d.revision === undefined ? 1 : Math.max(1, requireCount(d.revision, 'revision'))
        s.db
          .insert(schema.memories)
          .values({
            id,
            ...values,
            revision,
            createdAt: requireTime(d.createdAt, 'createdAt'),
            updatedAt: requireTime(d.updatedAt, 'updatedAt'),
            lastRecalledAt: d.lastRecalledAt === null || d.lastRecalledAt === undefined ? null : requireTime(d.lastRecalledAt, 'lastRecalledAt'),
            supersededBy: d.supersededBy === null || d.supersededBy === undefined ? null : requireId(d.supersededBy, 'supersededBy'),
          })
          .run()
        s.fts.addMemory(id, values.text)
        s.record({ entity: 'memory', entityId: id, change: 'insert', audit: 'memory.import', revision }, options, now)
        s.bumpLayers([layerKeyOfRow(values.scope, values.workspace)], options, now)
        return true
      }
      case 'scene': {
        const d = record.data
        const id = requireId(d.id, 'id')
        if (s.db.select({ id: schema.scenes.id }).from(schema.scenes).where(eq(schema.scenes.id, id)).get()) return false
        const scope = requireScope(d.scope)
        const placement = placementOf(s.options.limits, scope, d.workspace, d.sessionId)
        const revision = d.revision === undefined ? 1 : Math.max(1, requireCount(d.revision, 'revision'))
        s.db
          .insert(schema.scenes)
          .values({
            id,
            title: prepareLabel(d.title, 'title', limits.label),
            summary: prepareText(d.summary, 'summary', limits.scene).text,
            scope,
            ...placement,
            memoryIds: idList(d.memoryIds, 'memoryIds'),
            revision,
            createdAt: requireTime(d.createdAt, 'createdAt'),
            updatedAt: requireTime(d.updatedAt, 'updatedAt'),
            flags: flagsObject(d.flags ?? {}),
          })
          .run()
        s.record({ entity: 'scene', entityId: id, change: 'insert', audit: 'scene.import', revision }, options, now)
        s.bumpLayers([layerKeyOfRow(scope, placement.workspace)], options, now)
        return true
      }
      case 'persona': {
        const d = record.data
        const key = personaKeyOf(s.options.limits, { scope: d.scope, workspace: d.workspace })
        const t = schema.persona
        if (s.db.select({ v: t.version }).from(t).where(and(eq(t.scope, key.scope), eq(t.workspace, key.workspace))).get()) return false
        const version = Math.max(1, requireCount(d.version, 'version'))
        s.db
          .insert(t)
          .values({ ...key, text: prepareText(d.text, 'text', limits.persona).text, version, updatedAt: requireTime(d.updatedAt, 'updatedAt') })
          .run()
        const entityId = personaEntityId(key)
        s.record({ entity: 'persona', entityId, change: 'insert', audit: 'persona.import', revision: version }, options, now)
        s.bumpLayers([layerKeyOfRow(key.scope, key.workspace)], options, now)
        return true
      }
    }
  })
}
