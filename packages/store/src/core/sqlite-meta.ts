/**
 * The SQLite store's bookkeeping repositories: the audit log (read side), meta rows,
 * applied migrations and diagnostics.
 */
import { and, asc, eq, gt, gte, lte, sql, type SQL } from 'drizzle-orm'
import { auditEntityId } from './audit-id.ts'
import { MemoryStoreError } from './errors.ts'
import { readAppliedMigrations } from './migrations.ts'
import * as schema from './schema.ts'
import { DEFAULT_PAGE, MAX_PAGE, type SqliteSession } from './sqlite-session.ts'
import type { EntityName, WriteOptions } from './types-common.ts'
import type { AuditEntry, AuditFilter, AuditLog, MetaEntry, MetaRepository, StoreDiagnostics } from './types-meta.ts'
import { pageSize, requireCount, requireTime } from './validate.ts'

const RESERVED_META_PREFIX = 'store.'
const MAX_META_KEY = 200
const MAX_META_VALUE = 64 * 1024

/** The audit log's read side (every write path of the store appends to it through the session). */
export function auditLog(s: SqliteSession): AuditLog {
  return { list: (filter) => s.read(() => listAudit(s, filter ?? {})) }
}

function listAudit(s: SqliteSession, filter: AuditFilter): AuditEntry[] {
  const t = schema.audit
  const limit = pageSize(filter.limit, DEFAULT_PAGE, MAX_PAGE)
  const conditions: SQL[] = []
  if (filter.entity !== undefined) conditions.push(eq(t.entity, filter.entity))
  // Keys are recorded opaquely (audit-id.ts): a caller asks with the key it knows.
  if (filter.entityId !== undefined) conditions.push(eq(t.entityId, auditEntityId(filter.entity ?? '', filter.entityId)))
  if (filter.op !== undefined) conditions.push(eq(t.op, filter.op))
  if (filter.actor !== undefined) conditions.push(eq(t.actor, filter.actor))
  if (filter.since !== undefined) conditions.push(gte(t.at, requireTime(filter.since, 'since')))
  if (filter.until !== undefined) conditions.push(lte(t.at, requireTime(filter.until, 'until')))
  if (filter.afterId !== undefined) conditions.push(gt(t.id, requireCount(filter.afterId, 'afterId')))
  return s.db
    .select()
    .from(t)
    .where(and(...conditions))
    .orderBy(asc(t.id))
    .limit(limit)
    .all()
    .map((row) => ({ ...row, op: row.op as AuditEntry['op'], entity: row.entity as EntityName }))
}

export function metaRepository(s: SqliteSession): MetaRepository {
  const t = schema.meta
  const checkKey = (key: unknown, write: boolean): string => {
    if (typeof key !== 'string' || key.length === 0 || key.length > MAX_META_KEY) {
      throw new MemoryStoreError('invalid-argument', `meta key must be a string of 1..${MAX_META_KEY} characters`)
    }
    if (write && key.startsWith(RESERVED_META_PREFIX)) throw new MemoryStoreError('invalid-argument', `meta keys under '${RESERVED_META_PREFIX}' are reserved`)
    return key
  }
  return {
    get: async (key: string) => {
      checkKey(key, false)
      return s.read(() => s.db.select().from(t).where(eq(t.key, key)).get()?.value)
    },
    list: async (prefix: string, options: { limit?: number } = {}): Promise<MetaEntry[]> => {
      if (typeof prefix !== 'string' || prefix.length > MAX_META_KEY) throw new MemoryStoreError('invalid-argument', `meta prefix must be a string of at most ${MAX_META_KEY} characters`)
      const limit = pageSize(options?.limit, 1_000, MAX_PAGE)
      return s.read(() =>
        s.db
          .select()
          .from(t)
          // substr/length count characters on both sides, so any prefix (CJK included) matches exactly.
          .where(sql`substr(${t.key}, 1, length(${prefix})) = ${prefix}`)
          .orderBy(asc(t.key))
          .limit(limit)
          .all()
          .map((row) => ({ key: row.key, value: row.value, updatedAt: row.updatedAt })),
      )
    },
    set: async (key: string, value: string, options?: WriteOptions) => {
      checkKey(key, true)
      if (typeof value !== 'string' || value.length > MAX_META_VALUE) {
        throw new MemoryStoreError('invalid-argument', `meta value must be a string of at most ${MAX_META_VALUE} characters`)
      }
      return s.write(() => setMetaRow(s, key, value, options), options)
    },
    delete: async (key: string, options?: WriteOptions) => {
      checkKey(key, true)
      return s.write(() => {
        const result = s.db.delete(t).where(eq(t.key, key)).run()
        if (result.changes === 0) return false
        s.record({ entity: 'meta', entityId: key, change: 'delete', audit: 'meta.delete' }, options)
        return true
      }, options)
    },
    migrations: async () => s.read(() => readAppliedMigrations(s.sqlite)),
    diagnostics: async (): Promise<StoreDiagnostics> =>
      s.read(() => {
        const pragma = (name: string) => s.sqlite.pragma(name, { simple: true }) as string | number
        const synchronous = ['OFF', 'NORMAL', 'FULL', 'EXTRA'][Number(pragma('synchronous'))] ?? String(pragma('synchronous'))
        return {
          backend: 'sqlite',
          location: s.path,
          details: {
            sqliteVersion: (s.sqlite.prepare('SELECT sqlite_version() AS v').get() as { v: string }).v,
            journalMode: String(pragma('journal_mode')),
            synchronous,
            foreignKeys: Number(pragma('foreign_keys')) === 1,
            busyTimeoutMs: s.options.busyTimeoutMs,
            // Read back from SQLite (negative = KiB), so the report shows what is applied.
            cacheMiB: -Number(pragma('cache_size')) / 1024,
            readonly: s.readonly,
            sizeBytes: Number(pragma('page_count')) * Number(pragma('page_size')),
            changeLogSeq: (s.sqlite.prepare('SELECT max(seq) AS seq FROM store_changes').get() as { seq: number | null }).seq ?? 0,
          },
        }
      }),
  }
}

function setMetaRow(s: SqliteSession, key: string, value: string, options?: WriteOptions): void {
  const now = s.now()
  const existed = s.db.select({ key: schema.meta.key }).from(schema.meta).where(eq(schema.meta.key, key)).get()
  s.db
    .insert(schema.meta)
    .values({ key, value, updatedAt: now })
    .onConflictDoUpdate({ target: schema.meta.key, set: { value, updatedAt: now } })
    .run()
  s.record({ entity: 'meta', entityId: key, change: existed ? 'update' : 'insert', audit: 'meta.set' }, options, now)
}
