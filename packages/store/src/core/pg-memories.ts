/**
 * L1 of the PostgreSQL store: atomic memories with their version history (supersede, merge),
 * their search terms and their layer revisions; the same contract as `sqlite-memories.ts`.
 */
import { and, asc, eq, inArray, sql } from 'drizzle-orm'
import { newId } from './ids.ts'
import { layerKeyOfRow } from './layers.ts'
import * as pg from './pg-schema.ts'
import type { PgSession, PgTx } from './pg-session.ts'
import { firstRow, pgReadById, pgWriteVersionedUpdate, writeMemoryTerms } from './pg-values.ts'
import { memoryListOf } from './record-conditions.ts'
import {
  assertNewest,
  mergeArgsOf,
  mergedSourceIds,
  memoryPatchChangesLayer,
  memoryPatchOf,
  memoryValuesOf,
  type MemoryValues,
  supersedeArgsOf,
  supersedingInputOf,
} from './record-values.ts'
import { toMemory } from './rows.ts'
import { visibleRow } from './scope-filter.ts'
import { scopeCondition } from './scope-sql.ts'
import type { WriteOptions } from './types-common.ts'
import type { MemoryFilter, MemoryRepository, MemoryScopeFilter } from './types-memories.ts'
import { idList, optionalTime, requireId, requireTime } from './validate.ts'

const t = pg.memories

export function pgMemoryRepository(s: PgSession): MemoryRepository {
  // Another user's global memory is not there for this session: get, update, supersede,
  // merge and delete all answer as for a missing id.
  const getRow = async (tx: PgTx, id: string) => visibleRow(s, await firstRow(tx.db.select().from(t).where(eq(t.id, id))))
  /** A new row by `createdBy`: the session user, or the old version's author (a new version keeps it). */
  const insertMemory = async (tx: PgTx, values: MemoryValues, createdAtInput: number | undefined, options: WriteOptions | undefined, createdBy: string) => {
    const now = s.now()
    const createdAt = createdAtInput ?? now
    const id = newId(createdAt)
    const [row] = await tx.db
      .insert(t)
      .values({ id, ...values, revision: 1, createdAt, updatedAt: createdAt, createdBy })
      .returning()
    await writeMemoryTerms(tx, id, values.text)
    await s.record(tx, { entity: 'memory', entityId: id, change: 'insert', audit: 'memory.add', revision: 1 }, options, now)
    return row!
  }

  return {
    add: async (input, options) => {
      // Validate before waiting for the connection, so bad input fails fast.
      const values = memoryValuesOf(s.options.limits, input)
      const createdAt = input.createdAt === undefined ? undefined : requireTime(input.createdAt, 'createdAt')
      return s.write(async (tx) => {
        const memory = toMemory(await insertMemory(tx, values, createdAt, options, s.options.user))
        await s.bumpLayers(tx, [layerKeyOfRow(memory.scope, memory.workspace, memory.createdBy)], options)
        return memory
      }, options)
    },
    get: pgReadById(s, getRow, toMemory),
    update: async (id, patch, options) => {
      const set = memoryPatchOf(s.options.limits, id, patch)
      return pgWriteVersionedUpdate(
        s,
        {
          table: t,
          entity: 'memory',
          getRow,
          map: toMemory,
          afterWrite: async (tx, existing) => {
            if (set.text !== undefined && set.text !== existing.text) await writeMemoryTerms(tx, id, set.text)
          },
          // An embedding is derived data: attaching one does not change what the layer holds.
          changesLayer: () => memoryPatchChangesLayer(set),
        },
        id,
        set,
        options,
      )
    },
    supersede: async (oldId, input, options) => {
      supersedeArgsOf(oldId, input)
      return s.write(async (tx) => {
        const old = await getRow(tx, oldId)
        assertNewest(old, oldId, 'supersede')
        const merged = supersedingInputOf(old, input)
        const createdAt = merged.createdAt === undefined ? undefined : requireTime(merged.createdAt, 'createdAt')
        const created = toMemory(await insertMemory(tx, memoryValuesOf(s.options.limits, merged), createdAt, options, old.createdBy))
        const now = s.now()
        const revision = old.revision + 1
        await tx.db
          .update(t)
          .set({ supersededBy: created.id, revision, updatedAt: Math.max(now, old.updatedAt) })
          .where(eq(t.id, oldId))
        await s.record(tx, { entity: 'memory', entityId: oldId, change: 'update', audit: 'memory.supersede', revision }, options, now)
        await s.bumpLayers(tx, [layerKeyOfRow(old.scope, old.workspace, old.createdBy), layerKeyOfRow(created.scope, created.workspace, created.createdBy)], options, now)
        return created
      }, options)
    },
    history: async (id) => {
      requireId(id, 'id')
      return s.read(async (tx) => {
        if (!(await getRow(tx, id))) return []
        const ids = await memoryChain(tx, id, 'both')
        if (ids.length === 0) return []
        return (await tx.db.select().from(t).where(inArray(t.id, ids)).orderBy(asc(t.createdAt), asc(t.id))).map(toMemory)
      })
    },
    delete: async (id, options) => {
      requireId(id, 'id')
      return s.write(async (tx) => {
        if (!(await getRow(tx, id))) return 0
        const ids = await memoryChain(tx, id, 'older')
        const now = s.now()
        // The search terms live in the rows: deleting them unindexes them.
        const placements = await tx.db.delete(t).where(inArray(t.id, ids)).returning({ scope: t.scope, workspace: t.workspace, createdBy: t.createdBy })
        for (const deleted of ids) await s.record(tx, { entity: 'memory', entityId: deleted, change: 'delete', audit: 'memory.delete' }, options, now)
        const sceneLayers = await pruneSceneReferences(s, tx, ids, options, now)
        await s.bumpLayers(tx, [...placements.map((row) => layerKeyOfRow(row.scope, row.workspace, row.createdBy)), ...sceneLayers], options, now)
        return ids.length
      }, options)
    },
    list: async (filter: MemoryFilter = {}) => {
      const q = memoryListOf(filter, t, s.options.user)
      return s.readEach(async (tx) => (await tx.db.select().from(t).where(q.where).orderBy(...q.orderBy).limit(q.limit).offset(q.offset)).map(toMemory))
    },
    count: async (filter: MemoryScopeFilter = {}) => {
      const where = scopeCondition(filter, t, s.options.user)
      return s.readEach(async (tx) => Number((await firstRow(tx.db.select({ n: sql<number>`count(*)` }).from(t).where(where)))?.n ?? 0))
    },
    touchRecalled: async (ids, at, options) => {
      const list = [...new Set(idList(ids, 'ids'))]
      if (list.length === 0) return 0
      return s.write(async (tx) => {
        const now = s.now()
        const recalledAt = optionalTime(at, 'at', now)
        const visible = scopeCondition({ includeSuperseded: true }, t, s.options.user)
        const touched = await tx.db.update(t).set({ lastRecalledAt: recalledAt }).where(and(inArray(t.id, list), visible)).returning({ id: t.id })
        for (const row of touched) await s.record(tx, { entity: 'memory', entityId: row.id, change: 'update', audit: 'memory.recall' }, options, now)
        return touched.length
      }, options)
    },
    mergeInto: async (targetId, sourceIds, options) => {
      const sources = mergeArgsOf(targetId, sourceIds)
      return s.write(async (tx) => {
        const target = await getRow(tx, targetId)
        assertNewest(target, targetId, 'target')
        if (sources.length === 0) return toMemory(target)
        const rows = []
        for (const sourceId of sources) {
          const row = await getRow(tx, sourceId)
          assertNewest(row, sourceId, 'source')
          rows.push(row)
        }
        const now = s.now()
        for (const row of rows) {
          const revision = row.revision + 1
          await tx.db
            .update(t)
            .set({ supersededBy: targetId, revision, updatedAt: Math.max(now, row.updatedAt) })
            .where(eq(t.id, row.id))
          await s.record(tx, { entity: 'memory', entityId: row.id, change: 'update', audit: 'memory.merge', revision }, options, now)
        }
        const revision = target.revision + 1
        const [merged] = await tx.db
          .update(t)
          .set({ sourceMessageIds: mergedSourceIds(target, rows), revision, updatedAt: Math.max(now, target.updatedAt) })
          .where(eq(t.id, targetId))
          .returning()
        await s.record(tx, { entity: 'memory', entityId: targetId, change: 'update', audit: 'memory.merge', revision }, options, now)
        await s.bumpLayers(tx, [target, ...rows].map((row) => layerKeyOfRow(row.scope, row.workspace, row.createdBy)), options, now)
        return toMemory(merged!)
      }, options)
    },
  }
}

/** Ids linked to `id` through `superseded_by`: the older versions, or the whole chain. */
async function memoryChain(tx: PgTx, id: string, direction: 'older' | 'both'): Promise<string[]> {
  let start = id
  if (direction === 'both') {
    // Walk to the newest version, then collect everything older than it.
    const [newest] = await tx.query<{ id: string }>(
      `WITH RECURSIVE newer(id, depth) AS (
        SELECT id, 0 FROM store_memories WHERE id = $1
        UNION SELECT m.superseded_by, n.depth + 1 FROM store_memories m JOIN newer n ON m.id = n.id WHERE m.superseded_by IS NOT NULL)
      SELECT id FROM newer ORDER BY depth DESC LIMIT 1`,
      [id],
    )
    if (!newest) return []
    start = newest.id
  }
  const rows = await tx.query<{ id: string }>(
    `WITH RECURSIVE older(id) AS (
      SELECT id FROM store_memories WHERE id = $1
      UNION SELECT m.id FROM store_memories m JOIN older o ON m.superseded_by = o.id)
    SELECT id FROM older`,
    [start],
  )
  return rows.map((row) => row.id)
}

/**
 * Remove deleted memory ids from scenes that list them (a deletion must not leave pointers behind).
 * @returns the layer keys of the scenes changed (the caller bumps them with its own).
 */
async function pruneSceneReferences(s: PgSession, tx: PgTx, deleted: string[], options: WriteOptions | undefined, now: number): Promise<(string | undefined)[]> {
  const gone = new Set(deleted)
  const sc = pg.scenes
  const scenes = await tx.db
    .select()
    .from(sc)
    .where(sql`${sc.memoryIds} ?| ${sql.param(deleted)}::text[]`)
  const layers: (string | undefined)[] = []
  for (const scene of scenes) {
    const revision = scene.revision + 1
    await tx.db
      .update(sc)
      .set({ memoryIds: scene.memoryIds.filter((memoryId) => !gone.has(memoryId)), revision, updatedAt: Math.max(now, scene.updatedAt) })
      .where(eq(sc.id, scene.id))
    await s.record(tx, { entity: 'scene', entityId: scene.id, change: 'update', audit: 'scene.update', revision }, options, now)
    layers.push(layerKeyOfRow(scene.scope, scene.workspace, scene.createdBy))
  }
  return layers
}
