/**
 * The SQLite store's bookkeeping repositories: the audit log (read side), meta rows,
 * applied migrations and diagnostics.
 */
import { asc, eq, sql } from 'drizzle-orm'
import { auditQuery, metaKey, metaListArgs, metaValue } from './meta-rules.ts'
import { readAppliedMigrations } from './migrations.ts'
import * as schema from './schema.ts'
import type { SqliteSession } from './sqlite-session.ts'
import type { EntityName, WriteOptions } from './types-common.ts'
import type { AuditEntry, AuditFilter, AuditLog, MetaEntry, MetaRepository, StoreDiagnostics } from './types-meta.ts'

/** The audit log's read side (every write path of the store appends to it through the session). */
export function auditLog(s: SqliteSession): AuditLog {
  return { list: (filter) => s.read(() => listAudit(s, filter ?? {})) }
}

function listAudit(s: SqliteSession, filter: AuditFilter): AuditEntry[] {
  const t = schema.audit
  const { where, limit } = auditQuery(t, filter)
  return s.db
    .select()
    .from(t)
    .where(where)
    .orderBy(asc(t.id))
    .limit(limit)
    .all()
    .map((row) => ({ ...row, op: row.op as AuditEntry['op'], entity: row.entity as EntityName }))
}

export function metaRepository(s: SqliteSession): MetaRepository {
  const t = schema.meta
  return {
    get: async (key: string) => {
      metaKey(key, false)
      return s.read(() => s.db.select().from(t).where(eq(t.key, key)).get()?.value)
    },
    list: async (prefixInput: string, options?: { limit?: number }): Promise<MetaEntry[]> => {
      const { prefix, limit } = metaListArgs(prefixInput, options)
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
      metaKey(key, true)
      metaValue(value)
      return s.write(() => setMetaRow(s, key, value, options), options)
    },
    delete: async (key: string, options?: WriteOptions) => {
      metaKey(key, true)
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
