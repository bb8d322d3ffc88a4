/**
 * The PostgreSQL store's bookkeeping repositories: the audit log (read side), meta rows,
 * applied migrations and diagnostics. The rules (key checks, the audit filter) are shared with
 * SQLite through `meta-rules.ts`; only the SQL is PostgreSQL's.
 */
import { asc, eq, sql } from 'drizzle-orm'
import { auditQuery, metaKey, metaListArgs, metaValue } from './meta-rules.ts'
import { readPgAppliedMigrations } from './pg-migrations.ts'
import * as schema from './pg-schema.ts'
import type { PgSession } from './pg-session.ts'
import type { EntityName, WriteOptions } from './types-common.ts'
import type { AuditEntry, AuditLog, MetaEntry, MetaRepository, StoreDiagnostics } from './types-meta.ts'

/** The audit log's read side (every write path of the store appends to it through the session). */
export function pgAuditLog(s: PgSession): AuditLog {
  const t = schema.audit
  return {
    list: async (filter) => {
      const { where, limit } = auditQuery(t, filter ?? {})
      const rows = await s.read((tx) => tx.db.select().from(t).where(where).orderBy(asc(t.id)).limit(limit))
      return rows.map((row) => ({ ...row, op: row.op as AuditEntry['op'], entity: row.entity as EntityName }))
    },
  }
}

export function pgMetaRepository(s: PgSession): MetaRepository {
  const t = schema.meta
  return {
    get: async (key: string) => {
      metaKey(key, false)
      return s.read(async (tx) => (await tx.db.select({ value: t.value }).from(t).where(eq(t.key, key)))[0]?.value)
    },
    list: async (prefixInput: string, options?: { limit?: number }): Promise<MetaEntry[]> => {
      const { prefix, limit } = metaListArgs(prefixInput, options)
      return s.read((tx) =>
        tx.db
          .select({ key: t.key, value: t.value, updatedAt: t.updatedAt })
          .from(t)
          // left/length count characters on both sides, so any prefix (CJK included) matches exactly.
          .where(sql`left(${t.key}, length(${prefix}::text)) = ${prefix}`)
          .orderBy(asc(t.key))
          .limit(limit),
      )
    },
    set: async (key: string, value: string, options?: WriteOptions) => {
      metaKey(key, true)
      metaValue(value)
      return s.write(async (tx) => {
        const now = s.now()
        // xmax = 0 only on a freshly inserted row: insert or update in one round trip.
        const [row] = await tx.query<{ inserted: boolean }>(
          `INSERT INTO store_meta (key, value, updated_at) VALUES ($1, $2, $3)
           ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
           RETURNING (xmax = 0) AS inserted`,
          [key, value, now],
        )
        await s.record(tx, { entity: 'meta', entityId: key, change: row?.inserted ? 'insert' : 'update', audit: 'meta.set' }, options, now)
      }, options)
    },
    delete: async (key: string, options?: WriteOptions) => {
      metaKey(key, true)
      return s.write(async (tx) => {
        const deleted = await tx.query('DELETE FROM store_meta WHERE key = $1 RETURNING key', [key])
        if (deleted.length === 0) return false
        await s.record(tx, { entity: 'meta', entityId: key, change: 'delete', audit: 'meta.delete' }, options)
        return true
      }, options)
    },
    migrations: async () => s.read((tx) => readPgAppliedMigrations(tx)),
    diagnostics: async (): Promise<StoreDiagnostics> =>
      s.read(async (tx) => {
        const [row] = await tx.query<{ version: string; size: number; seq: number | null; encoding: string }>(
          `SELECT current_setting('server_version') AS version,
                  current_setting('server_encoding') AS encoding,
                  (SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
                     JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r') AS size,
                  (SELECT max(seq) FROM store_changes) AS seq`,
          [s.schema],
        )
        return {
          backend: 'postgres',
          location: s.path,
          details: {
            serverVersion: row?.version ?? null,
            serverEncoding: row?.encoding ?? null,
            schema: s.schema,
            busyTimeoutMs: s.options.busyTimeoutMs,
            readonly: s.readonly,
            sizeBytes: row?.size ?? 0,
            changeLogSeq: row?.seq ?? 0,
          },
        }
      }),
  }
}
