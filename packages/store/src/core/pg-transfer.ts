/**
 * Export and import of the PostgreSQL store: the same versioned JSONL as SQLite (`transfer.ts`
 * holds the neutral half: order, paging, counts, record checks). Export reads one consistent
 * snapshot; import is one transaction that checks every record as a live write would.
 */
import { and, asc, eq, gt } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/node-postgres'
import { layerKeyOfRow } from './layers.ts'
import { readPgAppliedMigrations } from './pg-migrations.ts'
import * as pg from './pg-schema.ts'
import { connectPg, type PgDb, type PgSession, type PgTx, translatePgError } from './pg-session.ts'
import { firstRow } from './pg-values.ts'
import { messageVectorPageQueryOf } from './record-conditions.ts'
import { personaEntityId } from './record-values.ts'
import { toConversation, toMemory, toMessage, toPersona, toScene } from './rows.ts'
import { importConversationRun, importMemoryRun, importMessageRun, IMPORT_RUN, type PendingLinks } from './pg-import.ts'
import {
  danglingImportError,
  type ExportedRecords,
  exportLines,
  importedPersona,
  importedPersonaKey,
  importedScene,
  type ImportedRecord,
  importRuns,
  importSourceOf,
  lineError,
  type NumberedRecord,
  importStamp,
  copiedAuditEntries,
  PRESENCE_TABLES,
  presenceKeys,
  MESSAGE_VECTOR_COUNT_SQL,
  TRANSFER_COUNTS_SQL,
} from './transfer.ts'
import type { ImportOptions, ImportResult, RecordCounts, TransferService } from './types-store.ts'
import { bufferToEmbedding, requireId } from './validate.ts'

/** One page of each record type in export order. */
const EXPORT_PAGES: { [K in keyof ExportedRecords]: (db: PgDb, offset: number, limit: number) => Promise<ExportedRecords[K][]> } = {
  conversation: async (db, offset, limit) => {
    const c = pg.conversations
    return (await db.select().from(c).orderBy(asc(c.startedAt), asc(c.id)).limit(limit).offset(offset)).map(toConversation)
  },
  message: async (db, offset, limit) => {
    const m = pg.messages
    return (await db.select().from(m).orderBy(asc(m.conversationId), asc(m.seq), asc(m.id)).limit(limit).offset(offset)).map(toMessage)
  },
  memory: async (db, offset, limit) => {
    const m = pg.memories
    return (await db.select().from(m).orderBy(asc(m.createdAt), asc(m.id)).limit(limit).offset(offset)).map(toMemory)
  },
  scene: async (db, offset, limit) => {
    const sc = pg.scenes
    return (await db.select().from(sc).orderBy(asc(sc.createdAt), asc(sc.id)).limit(limit).offset(offset)).map(toScene)
  },
  persona: async (db, offset, limit) => {
    const p = pg.persona
    return (await db.select().from(p).orderBy(asc(p.scope), asc(p.workspace), asc(p.owner)).limit(limit).offset(offset)).map(toPersona)
  },
}

/** The store as versioned JSONL lines (see `MemoryStore.exportJsonl`). */
export function pgExportJsonl(s: PgSession): AsyncIterable<string> {
  s.assertOpen()
  return exportRecords(s)
}

async function* exportRecords(s: PgSession): AsyncGenerator<string> {
  s.assertOpen()
  // A second client in a REPEATABLE READ READ ONLY transaction sees one consistent snapshot
  // and never blocks (or waits for) this store's own calls between the pages it yields.
  const { client } = await connectPg(s.connection)
  s.snapshots.add(client)
  try {
    // The store may have closed while this client connected.
    s.assertOpen()
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
    const db = drizzle({ client, schema: pg.pgSchema })
    const tx: PgTx = { db, query: async (text, params) => (await client.query(text, params as unknown[])).rows }
    yield* exportLines({
      now: () => s.now(),
      schemaVersion: async () => (await readPgAppliedMigrations(tx)).filter((m) => m.owner === 'store').reduce((max, m) => Math.max(max, m.version), 0),
      page: (type, offset, limit) => {
        s.assertOpen()
        return EXPORT_PAGES[type](db, offset, limit)
      },
    })
    await client.query('COMMIT')
  } catch (error) {
    throw translatePgError(error, 'export failed', s.server)
  } finally {
    s.snapshots.delete(client)
    await client.end().catch(() => {})
  }
}

export async function pgImportJsonl(
  s: PgSession,
  lines: string | Iterable<string> | AsyncIterable<string>,
  options: ImportOptions | undefined,
): Promise<ImportResult> {
  s.assertOpen()
  s.assertWritable()
  const source = importSourceOf(lines)
  return s.transaction(async () =>
    s.write(async (tx) => {
      const links: PendingLinks = new Map()
      const result = await importRuns(source, IMPORT_RUN, (run) => importRun(s, tx, run, options, links))
      await linkSuccessors(tx, links)
      return result
    }, options),
  )
}

/** One run of records of one type (see `pg-import.ts`); scenes and persona, few per store, record by record. */
async function importRun(s: PgSession, tx: PgTx, run: NumberedRecord[], options: ImportOptions | undefined, links: PendingLinks): Promise<boolean[]> {
  switch (run[0]!.record.type) {
    case 'conversation':
      return importConversationRun(s, tx, run, options)
    case 'message':
      return importMessageRun(s, tx, run, options)
    case 'memory':
      return importMemoryRun(s, tx, run, options, links)
    default: {
      const added: boolean[] = []
      for (const entry of run) {
        try {
          added.push(await importRecord(s, tx, entry.record as Extract<ImportedRecord, { type: 'scene' | 'persona' }>, options))
        } catch (error) {
          throw lineError(error, entry.line)
        }
      }
      return added
    }
  }
}

/**
 * Point imported memories at their successors. The foreign key is checked per statement on
 * PostgreSQL (SQLite defers it to the commit), so the links wait until every row is in.
 */
async function linkSuccessors(tx: PgTx, links: PendingLinks): Promise<void> {
  if (links.size === 0) return
  const ids = [...links.keys()]
  const successors = [...links.values()]
  const [missing] = await tx.query<{ n: number }>(
    'SELECT count(*) AS n FROM unnest($1::text[]) AS l(successor) WHERE NOT EXISTS (SELECT 1 FROM store_memories m WHERE m.id = l.successor)',
    [successors],
  )
  if (Number(missing?.n ?? 0) > 0) throw danglingImportError(Number(missing!.n))
  await tx.query('UPDATE store_memories m SET superseded_by = l.successor FROM unnest($1::text[], $2::text[]) AS l(id, successor) WHERE m.id = l.id', [ids, successors])
}

/** Insert one imported scene or persona unless its id (or key) exists. @returns true when inserted. */
async function importRecord(s: PgSession, tx: PgTx, record: Extract<ImportedRecord, { type: 'scene' | 'persona' }>, options: ImportOptions | undefined): Promise<boolean> {
  const limits = s.options.limits
  const now = s.now()
  // Checked once per record: cheap, and an import with a bad option fails on its first line.
  const stamp = importStamp(options)
  switch (record.type) {
    case 'scene': {
      const id = requireId(record.data.id, 'id')
      const sc = pg.scenes
      if (await firstRow(tx.db.select({ id: sc.id }).from(sc).where(eq(sc.id, id)))) return false
      const values = importedScene(limits, record.data, stamp)
      await tx.db.insert(sc).values(values)
      await s.record(tx, { entity: 'scene', entityId: id, change: 'insert', audit: 'scene.import', revision: values.revision }, options, now)
      await s.bumpLayers(tx, [layerKeyOfRow(values.scope, values.workspace, values.createdBy)], options, now)
      return true
    }
    case 'persona': {
      const key = importedPersonaKey(limits, record.data, stamp)
      const p = pg.persona
      if (await firstRow(tx.db.select({ v: p.version }).from(p).where(and(eq(p.scope, key.scope), eq(p.workspace, key.workspace), eq(p.owner, key.owner))))) return false
      const values = importedPersona(limits, record.data, stamp)
      await tx.db.insert(p).values(values)
      await s.record(tx, { entity: 'persona', entityId: personaEntityId(key), change: 'insert', audit: 'persona.import', revision: values.version }, options, now)
      await s.bumpLayers(tx, [layerKeyOfRow(key.scope, key.workspace, key.owner)], options, now)
      return true
    }
  }
}

/** Every user's rows for `dsh-memory migrate` (see {@link TransferService}). */
export function pgTransferService(s: PgSession): TransferService {
  return {
    counts: () =>
      s.read(async (tx) => {
        const counts: Partial<RecordCounts> = {}
        for (const [type, query] of Object.entries(TRANSFER_COUNTS_SQL)) counts[type as keyof RecordCounts] = Number((await tx.query<{ n: number | string }>(query))[0]?.n ?? 0)
        return counts as RecordCounts
      }),
    present: async (lines, options) => {
      const keys = presenceKeys(s.options.limits, lines, options)
      return s.read(async (tx) => {
        const found = new Set<string>()
        for (const [type, table] of Object.entries(PRESENCE_TABLES)) {
          const ids = [...new Set(keys.flatMap((key) => (key.type !== 'persona' && key.type === type ? [key.id] : [])))]
          if (ids.length === 0) continue
          for (const row of await tx.query<{ id: string }>(`SELECT id FROM ${table} WHERE id = ANY($1::text[])`, [ids])) found.add(`${type}\u0000${row.id}`)
        }
        const persona = keys.flatMap((key) => (key.type === 'persona' ? [key.key] : []))
        if (persona.length > 0) {
          const rows = await tx.query<{ scope: string; workspace: string; owner: string }>(
            `SELECT p.scope, p.workspace, p.owner FROM store_persona p
             JOIN unnest($1::text[], $2::text[], $3::text[]) AS k(scope, workspace, owner) USING (scope, workspace, owner)`,
            [persona.map((key) => key.scope), persona.map((key) => key.workspace), persona.map((key) => key.owner)],
          )
          for (const row of rows) found.add(`persona\u0000${row.scope}\u0000${row.workspace}\u0000${row.owner}`)
        }
        return keys.map((key) => found.has(key.type === 'persona' ? `persona\u0000${key.key.scope}\u0000${key.key.workspace}\u0000${key.key.owner}` : `${key.type}\u0000${key.id}`))
      })
    },
    appendAudit: async (entries, options) => {
      const rows = copiedAuditEntries(entries)
      if (rows.length === 0) return 0
      return s.write(async (tx) => {
        // One statement, in order: the ids follow the entries' order (WITH ORDINALITY ... ORDER BY).
        await tx.query(
          `INSERT INTO store_audit (at, op, entity, entity_id, actor, revision, created_by)
           SELECT at, op, entity, entity_id, actor, revision, created_by
           FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::text[]) WITH ORDINALITY AS e(at, op, entity, entity_id, actor, revision, created_by, n)
           ORDER BY n`,
          [rows.map((row) => row.at), rows.map((row) => row.op), rows.map((row) => row.entity), rows.map((row) => row.entityId), rows.map((row) => row.actor), rows.map((row) => row.revision), rows.map((row) => row.createdBy)],
        )
        return rows.length
      }, options)
    },
    messageVectors: async (page) => {
      const v = pg.messageVectors
      const q = messageVectorPageQueryOf(page, { ...v, table: v })
      return s.readEach(async (tx) =>
        (
          await tx.db
            .select({ messageId: v.messageId, embedding: v.embedding, embeddingModel: v.embeddingModel })
            .from(v)
            .where(q.where)
            .orderBy(...q.orderBy)
            .limit(q.limit)
        ).map((row) => ({ ...row, embedding: bufferToEmbedding(row.embedding) })),
      )
    },
    messageVectorCount: () => s.readEach(async (tx) => Number((await tx.query<{ n: number | string }>(MESSAGE_VECTOR_COUNT_SQL))[0]?.n ?? 0)),
  }
}
