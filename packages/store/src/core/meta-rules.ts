/**
 * The rules of the meta rows and the audit log's filter that do not depend on the database,
 * shared by the SQLite (`sqlite-meta.ts`) and PostgreSQL (`pg-meta.ts`) repositories.
 */
import { and, type Column, eq, gt, gte, lte, type SQL } from 'drizzle-orm'
import { auditEntityId } from './audit-id.ts'
import { MemoryStoreError } from './errors.ts'
import type { AuditFilter } from './types-meta.ts'
import { DEFAULT_PAGE, MAX_PAGE, pageSize, requireCount, requireTime } from './validate.ts'

const RESERVED_META_PREFIX = 'store.'
const MAX_META_KEY = 200
const MAX_META_VALUE = 64 * 1024

/** A meta key; `write` refuses the store's own `store.` keys. @throws MemoryStoreError `invalid-argument` */
export function metaKey(key: unknown, write: boolean): string {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_META_KEY) {
    throw new MemoryStoreError('invalid-argument', `meta key must be a string of 1..${MAX_META_KEY} characters`)
  }
  if (write && key.startsWith(RESERVED_META_PREFIX)) throw new MemoryStoreError('invalid-argument', `meta keys under '${RESERVED_META_PREFIX}' are reserved`)
  return key
}

/** @throws MemoryStoreError `invalid-argument` */
export function metaValue(value: unknown): string {
  if (typeof value !== 'string' || value.length > MAX_META_VALUE) {
    throw new MemoryStoreError('invalid-argument', `meta value must be a string of at most ${MAX_META_VALUE} characters`)
  }
  return value
}

/** The checked prefix and page size of `meta.list`. @throws MemoryStoreError `invalid-argument` */
export function metaListArgs(prefix: unknown, options: { limit?: number } | undefined): { prefix: string; limit: number } {
  if (typeof prefix !== 'string' || prefix.length > MAX_META_KEY) throw new MemoryStoreError('invalid-argument', `meta prefix must be a string of at most ${MAX_META_KEY} characters`)
  return { prefix, limit: pageSize(options?.limit, 1_000, MAX_PAGE) }
}

/** The audit table's columns a filter reads, in either dialect. */
export interface AuditColumns {
  id: Column
  at: Column
  op: Column
  entity: Column
  entityId: Column
  actor: Column
}

/**
 * The WHERE clause and page size of an audit query (drizzle's operators are the same in every
 * dialect). @throws MemoryStoreError `invalid-argument`
 */
export function auditQuery(t: AuditColumns, filter: AuditFilter): { where: SQL | undefined; limit: number } {
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
  return { where: and(...conditions), limit }
}
