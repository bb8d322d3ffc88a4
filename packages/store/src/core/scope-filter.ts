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
}

/**
 * The one definition of memory visibility, used by search (in memory) and mirrored in SQL
 * by `list` (a test checks they agree):
 * - global memories pass unless `includeGlobal === false`;
 * - with `workspace`, non-global memories must belong to that workspace (a session memory
 *   with no recorded workspace is treated as foreign, never leaked);
 * - with `sessionId`, session memories must belong to that session;
 * - `scope`, `kind`, `since`/`until` (creation time) narrow further;
 * - superseded memories pass only with `includeSuperseded`.
 */
export function matchesScope(fields: ScopedFields, filter: MemoryScopeFilter): boolean {
  if (fields.superseded && !filter.includeSuperseded) return false
  if (filter.scope !== undefined && !asArray(filter.scope).includes(fields.scope)) return false
  if (filter.kind !== undefined && fields.kind !== undefined && !asArray(filter.kind).includes(fields.kind)) return false
  if (filter.since !== undefined && fields.createdAt < filter.since) return false
  if (filter.until !== undefined && fields.createdAt > filter.until) return false
  if (fields.scope === 'global') return filter.includeGlobal !== false
  if (filter.workspace !== undefined && fields.workspace !== filter.workspace) return false
  if (fields.scope === 'session' && filter.sessionId !== undefined && fields.sessionId !== filter.sessionId) return false
  return true
}

/** `value` as an array (a single value becomes a one-element array). */
export function asArray<T>(value: T | readonly T[]): readonly T[] {
  return Array.isArray(value) ? (value as readonly T[]) : [value as T]
}
