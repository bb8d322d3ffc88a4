/**
 * The PostgreSQL side of what several repositories of the PostgreSQL store share (the twin of
 * `sqlite-values.ts`): `get(id)`, the versioned-update write of memories and scenes, and the
 * search terms of a memory's text. Input checks live in `record-values.ts`.
 */
import { type Column, eq } from 'drizzle-orm'
import { MemoryStoreError } from './errors.ts'
import { layerKeyOfRow } from './layers.ts'
import * as pg from './pg-schema.ts'
import { searchVectorOf } from './pg-search-terms.ts'
import type { PgSession, PgTx } from './pg-session.ts'
import type { WriteOptions } from './types-common.ts'
import { requireId } from './validate.ts'

/**
 * Write the search terms of a memory's (new) text inside the caller's write: the index is a
 * column of the row itself (`search_terms`, see `pg-search-terms.ts`), so it commits with it.
 */
export async function writeMemoryTerms(tx: PgTx, id: string, text: string): Promise<void> {
  await tx.query('UPDATE store_memories SET search_terms = $2::tsvector WHERE id = $1', [id, searchVectorOf(text)])
}

/** A repository's `get(id)`: check the id, read the row, map it (`undefined` when absent). */
export function pgReadById<Row, R>(s: PgSession, getRow: (tx: PgTx, id: string) => Promise<Row | undefined>, map: (row: Row) => R): (id: string) => Promise<R | undefined> {
  return async (id: string) => {
    requireId(id, 'id')
    // One statement: its own snapshot, no BEGIN/COMMIT round trips (see PgSession.readEach).
    return s.readEach(async (tx) => {
      const row = await getRow(tx, id)
      return row ? map(row) : undefined
    })
  }
}

/** The first row of a query, or `undefined`. */
export async function firstRow<Row>(rows: Promise<Row[]>): Promise<Row | undefined> {
  return (await rows)[0]
}

/** How a repository's `update(id, patch)` of a versioned row differs between memories and scenes. */
export interface PgVersionedUpdate<Row, R> {
  readonly table: typeof pg.memories | typeof pg.scenes
  readonly entity: 'memory' | 'scene'
  readonly getRow: (tx: PgTx, id: string) => Promise<Row | undefined>
  readonly map: (row: Row) => R
  /** Runs right after the row is written, before the change is recorded (the memory's search terms). */
  readonly afterWrite?: (tx: PgTx, existing: Row) => Promise<void>
  /** Whether the change alters what the row's layer holds; default always. */
  readonly changesLayer?: () => boolean
}

/**
 * The write of `update(id, patch)` on a memory or a scene, once `set` holds the checked
 * columns (the twin of `writeVersionedUpdate` in `sqlite-values.ts`): `not-found` for a
 * missing row; an empty `set` returns it unchanged; otherwise the next revision, `updatedAt`
 * never going backwards, the change recorded and the row's layer bumped, in one write.
 */
export function pgWriteVersionedUpdate<Row extends { id: string; revision: number; updatedAt: number; scope: string; workspace: string | null; createdBy: string }, R>(
  s: PgSession,
  spec: PgVersionedUpdate<Row, R>,
  id: string,
  set: Record<string, unknown>,
  options: WriteOptions | undefined,
): Promise<R> {
  return s.write(async (tx) => {
    const existing = await spec.getRow(tx, id)
    if (!existing) throw new MemoryStoreError('not-found', `${spec.entity} ${id} does not exist`)
    if (Object.keys(set).length === 0) return spec.map(existing)
    const now = s.now()
    const revision = existing.revision + 1
    // The two tables share these columns; drizzle cannot type an update over a union of tables.
    const t = spec.table as typeof pg.memories
    await tx.db
      .update(t)
      .set({ ...set, revision, updatedAt: Math.max(now, existing.updatedAt) })
      .where(eq(t.id, existing.id))
    await spec.afterWrite?.(tx, existing)
    await s.record(tx, { entity: spec.entity, entityId: id, change: 'update', audit: `${spec.entity}.update`, revision }, options, now)
    if (spec.changesLayer?.() ?? true) await s.bumpLayers(tx, [layerKeyOfRow(existing.scope, existing.workspace, existing.createdBy)], options, now)
    return spec.map((await spec.getRow(tx, id))!)
  }, options)
}

/** A raw result row as drizzle's `select()` maps it (each column's driver mapping, e.g. epoch ms, the embedding). */
export function rowOf<Row>(columns: Record<string, Column>, raw: Record<string, unknown>): Row {
  const row: Record<string, unknown> = {}
  for (const [key, column] of Object.entries(columns)) {
    const value = raw[column.name]
    row[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value)
  }
  return row as Row
}
