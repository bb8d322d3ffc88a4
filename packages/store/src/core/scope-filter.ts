import type { Scope } from './types-common.ts'
import type { MemoryScopeFilter } from './types-memories.ts'

/** The fields of a memory (or scene) that scope filtering looks at. */
export interface ScopedFields {
  scope: Scope
  workspace: string | null
  sessionId: string | null
  kind?: string
  createdAt: number
  superseded?: boolean
  /** The row's author (`''`: unattributed). */
  createdBy: string
}

/**
 * Whether `viewer` may see a row at all: global rows are private to their writer (and
 * unattributed ones, from before user identities, are everyone's); workspace and session rows
 * are the team's. Reads by id and every write by id go through this (another user's global
 * memory is "not found").
 */
export function visibleTo(row: { scope: string; createdBy: string }, viewer: string): boolean {
  return row.scope !== 'global' || row.createdBy === '' || row.createdBy === viewer
}

/** The row when the session user may see it ({@link visibleTo}), else `undefined`: another user's global row is "not found". */
export function visibleRow<Row extends { scope: string; createdBy: string }>(s: { options: { user: string } }, row: Row | undefined): Row | undefined {
  return row && visibleTo(row, s.options.user) ? row : undefined
}

/**
 * The one definition of memory visibility to the session user `viewer`, mirrored in SQL by
 * `scopeCondition` (which list, count and search use; a test checks they agree):
 * - global memories pass unless `includeGlobal === false`, and only the viewer's own and
 *   unattributed ones ({@link visibleTo});
 * - with `workspace`, non-global memories must belong to that workspace (a session memory
 *   with no recorded workspace is treated as foreign, never leaked);
 * - with `sessionId`, session memories must belong to that session;
 * - `scope`, `kind`, `since`/`until` (creation time) narrow further;
 * - superseded memories pass only with `includeSuperseded`.
 */
export function matchesScope(fields: ScopedFields, filter: MemoryScopeFilter, viewer: string): boolean {
  if (fields.superseded && !filter.includeSuperseded) return false
  if (filter.scope !== undefined && !asArray(filter.scope).includes(fields.scope)) return false
  if (filter.kind !== undefined && fields.kind !== undefined && !asArray(filter.kind).includes(fields.kind)) return false
  if (filter.since !== undefined && fields.createdAt < filter.since) return false
  if (filter.until !== undefined && fields.createdAt > filter.until) return false
  if (fields.scope === 'global') return filter.includeGlobal !== false && visibleTo(fields, viewer)
  if (filter.workspace !== undefined && fields.workspace !== filter.workspace) return false
  if (fields.scope === 'session' && filter.sessionId !== undefined && fields.sessionId !== filter.sessionId) return false
  return true
}

/** `value` as an array (a single value becomes a one-element array). */
export function asArray<T>(value: T | readonly T[]): readonly T[] {
  return Array.isArray(value) ? (value as readonly T[]) : [value as T]
}
