/**
 * The SQLite side of what several repositories of the SQLite store share: `get(id)`, the
 * versioned-update write of memories and scenes, and the SQL scope filter that memory and
 * scene reads and memory search share. Backend-neutral input checks live in
 * `record-values.ts`, other WHERE terms in `record-conditions.ts`.
 */
import { eq, type SQL } from 'drizzle-orm'
import { MemoryStoreError } from './errors.ts'
import { layerKeyOfRow } from './layers.ts'
import * as schema from './schema.ts'
import { scopeCondition } from './scope-sql.ts'
import type { SqliteSession } from './sqlite-session.ts'
import type { WriteOptions } from './types-common.ts'
import type { MemoryScopeFilter } from './types-memories.ts'
import { requireId } from './validate.ts'

/** The scope filter of memory reads and memory search as the session user sees it (see {@link scopeCondition}). */
export function memoryScopeCondition(s: SqliteSession, filter: MemoryScopeFilter): SQL | undefined {
  return scopeCondition(filter, schema.memories, s.options.user)
}

/** A repository's `get(id)`: check the id, read the row, map it (`undefined` when absent). */
export function readById<Row, R>(s: SqliteSession, getRow: (id: string) => Row | undefined, map: (row: Row) => R): (id: string) => Promise<R | undefined> {
  return async (id: string) => {
    requireId(id, 'id')
    return s.read(() => {
      const row = getRow(id)
      return row ? map(row) : undefined
    })
  }
}

/**
 * Write `set` to a versioned row (a memory or a scene) inside the caller's write: its revision
 * grows by one and `updatedAt` never goes backwards. @returns the new revision.
 */
export function updateVersioned(
  s: SqliteSession,
  table: typeof schema.memories | typeof schema.scenes,
  existing: { id: string; revision: number; updatedAt: number },
  set: Record<string, unknown>,
  now: number,
): number {
  const revision = existing.revision + 1
  // The two tables share these columns; drizzle cannot type an update over a union of tables.
  const t = table as typeof schema.memories
  s.db
    .update(t)
    .set({ ...set, revision, updatedAt: Math.max(now, existing.updatedAt) })
    .where(eq(t.id, existing.id))
    .run()
  return revision
}

/** How a repository's `update(id, patch)` of a versioned row differs between memories and scenes. */
export interface VersionedUpdate<Row, R> {
  readonly table: typeof schema.memories | typeof schema.scenes
  readonly entity: 'memory' | 'scene'
  readonly getRow: (id: string) => Row | undefined
  readonly map: (row: Row) => R
  /** Runs right after the row is written, before the change is recorded (the memory's search text). */
  readonly afterWrite?: (existing: Row) => void
  /** Whether the change alters what the row's layer holds; default always. */
  readonly changesLayer?: () => boolean
}

/**
 * The write of `update(id, patch)` on a memory or a scene, once `set` holds the checked
 * columns: the row must exist (`not-found`); an empty `set` returns it unchanged; otherwise
 * `set` becomes the next revision ({@link updateVersioned}), the change is recorded and the
 * row's layer bumped, all in one write.
 */
export function writeVersionedUpdate<Row extends { id: string; revision: number; updatedAt: number; scope: string; workspace: string | null; createdBy: string }, R>(
  s: SqliteSession,
  spec: VersionedUpdate<Row, R>,
  id: string,
  set: Record<string, unknown>,
  options: WriteOptions | undefined,
): Promise<R> {
  return s.write(() => {
    const existing = spec.getRow(id)
    if (!existing) throw new MemoryStoreError('not-found', `${spec.entity} ${id} does not exist`)
    if (Object.keys(set).length === 0) return spec.map(existing)
    const now = s.now()
    const revision = updateVersioned(s, spec.table, existing, set, now)
    spec.afterWrite?.(existing)
    s.record({ entity: spec.entity, entityId: id, change: 'update', audit: `${spec.entity}.update`, revision }, options, now)
    if (spec.changesLayer?.() ?? true) s.bumpLayers([layerKeyOfRow(existing.scope, existing.workspace, existing.createdBy)], options, now)
    return spec.map(spec.getRow(id)!)
  }, options)
}
