/**
 * The SQL form of memory visibility ({@link matchesScope}), for any backend: drizzle's operators
 * render the same condition in SQLite and PostgreSQL, given the columns (table columns, or
 * `sql` references to an aliased query's columns).
 */
import { and, eq, gte, inArray, isNull, lte, ne, or, type SQL, type SQLWrapper } from 'drizzle-orm'
import { asArray } from './scope-filter.ts'
import type { MemoryScopeFilter } from './types-memories.ts'
import { requireScope, requireTime } from './validate.ts'

/** The columns a scope filter reads; `kind` and `supersededBy` only where the table has them (memories). */
export interface ScopeColumns {
  scope: SQLWrapper
  workspace: SQLWrapper
  sessionId: SQLWrapper
  createdAt: SQLWrapper
  createdBy: SQLWrapper
  kind?: SQLWrapper
  supersededBy?: SQLWrapper
}

/** The WHERE condition of `filter` over `c` as `viewer` sees it; the SQL twin of {@link matchesScope}: keep the two in step. */
export function scopeCondition(filter: MemoryScopeFilter, c: ScopeColumns, viewer: string): SQL | undefined {
  const conditions: (SQL | undefined)[] = []
  if (c.supersededBy && !filter.includeSuperseded) conditions.push(isNull(c.supersededBy))
  if (filter.scope !== undefined) conditions.push(inArray(c.scope, asArray(filter.scope).map((s) => requireScope(s))))
  if (c.kind && filter.kind !== undefined) conditions.push(inArray(c.kind, [...asArray(filter.kind)]))
  if (filter.since !== undefined) conditions.push(gte(c.createdAt, requireTime(filter.since, 'since')))
  if (filter.until !== undefined) conditions.push(lte(c.createdAt, requireTime(filter.until, 'until')))
  const local: (SQL | undefined)[] = [ne(c.scope, 'global')]
  if (filter.workspace !== undefined) local.push(eq(c.workspace, filter.workspace))
  if (filter.sessionId !== undefined) local.push(or(ne(c.scope, 'session'), eq(c.sessionId, filter.sessionId)))
  // Another user's global rows are private to them; unattributed ones ('') are everyone's.
  const global = and(eq(c.scope, 'global'), inArray(c.createdBy, viewer === '' ? [''] : ['', viewer]))
  conditions.push(filter.includeGlobal === false ? and(...local) : or(global, and(...local)))
  return and(...conditions)
}
