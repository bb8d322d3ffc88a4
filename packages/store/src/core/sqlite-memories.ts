/**
 * L1 of the SQLite store: atomic memories with their version history (supersede, merge),
 * their search index rows and their layer revisions.
 */
import { and, asc, eq, inArray, sql } from 'drizzle-orm'
import { newId } from './ids.ts'
import { layerKeyOfRow } from './layers.ts'
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
import * as schema from './schema.ts'
import type { SqliteSession } from './sqlite-session.ts'
import { memoryScopeCondition, readById, writeVersionedUpdate } from './sqlite-values.ts'
import { visibleRow } from './scope-filter.ts'
import type { WriteOptions } from './types-common.ts'
import type { AddMemoryInput, MemoryFilter, MemoryRepository, MemoryScopeFilter, UpdateMemoryPatch } from './types-memories.ts'
import { idList, optionalTime, requireId, requireTime } from './validate.ts'

export function memoryRepository(s: SqliteSession): MemoryRepository {
  const t = schema.memories
  // Another user's global memory is not there for this session: get, update, supersede,
  // merge and delete all answer as for a missing id.
  const getRow = (id: string) => visibleRow(s, s.db.select().from(t).where(eq(t.id, id)).get())

  /** A new row by `createdBy`: the session user, or the old version's author (a new version keeps it). */
  const insertMemory = (values: MemoryValues, createdAtInput: number | undefined, options: WriteOptions | undefined, createdBy: string): string => {
    const now = s.now()
    const createdAt = createdAtInput ?? now
    const id = newId(createdAt)
    s.db
      .insert(t)
      .values({ id, ...values, revision: 1, createdAt, updatedAt: createdAt, createdBy })
      .run()
    s.fts.addMemory(id, values.text)
    s.record({ entity: 'memory', entityId: id, change: 'insert', audit: 'memory.add', revision: 1 }, options, now)
    return id
  }

  return {
    add: async (input: AddMemoryInput, options?: WriteOptions) => {
      // Validate before waiting for the connection, so bad input fails fast.
      const values = memoryValuesOf(s.options.limits, input)
      const createdAt = input.createdAt === undefined ? undefined : requireTime(input.createdAt, 'createdAt')
      return s.write(() => {
        const memory = toMemory(getRow(insertMemory(values, createdAt, options, s.options.user))!)
        s.bumpLayers([layerKeyOfRow(memory.scope, memory.workspace, memory.createdBy)], options)
        return memory
      }, options)
    },
    get: readById(s, getRow, toMemory),
    update: async (id: string, patch: UpdateMemoryPatch, options?: WriteOptions) => {
      const set = memoryPatchOf(s.options.limits, id, patch)
      return writeVersionedUpdate(
        s,
        {
          table: t,
          entity: 'memory',
          getRow,
          map: toMemory,
          afterWrite: (existing) => {
            if (set.text !== undefined && set.text !== existing.text) s.fts.updateMemory(id, set.text)
          },
          // An embedding is derived data: attaching one does not change what the layer holds.
          changesLayer: () => memoryPatchChangesLayer(set),
        },
        id,
        set,
        options,
      )
    },
    supersede: async (oldId: string, input: Partial<AddMemoryInput> & { text: string }, options?: WriteOptions) => {
      supersedeArgsOf(oldId, input)
      return s.write(() => {
        const old = getRow(oldId)
        assertNewest(old, oldId, 'supersede')
        const merged = supersedingInputOf(old, input)
        const createdAt = merged.createdAt === undefined ? undefined : requireTime(merged.createdAt, 'createdAt')
        const newId = insertMemory(memoryValuesOf(s.options.limits, merged), createdAt, options, old.createdBy)
        const now = s.now()
        const revision = old.revision + 1
        s.db
          .update(t)
          .set({ supersededBy: newId, revision, updatedAt: Math.max(now, old.updatedAt) })
          .where(eq(t.id, oldId))
          .run()
        s.record({ entity: 'memory', entityId: oldId, change: 'update', audit: 'memory.supersede', revision }, options, now)
        const created = toMemory(getRow(newId)!)
        s.bumpLayers([layerKeyOfRow(old.scope, old.workspace, old.createdBy), layerKeyOfRow(created.scope, created.workspace, created.createdBy)], options, now)
        return created
      }, options)
    },
    history: async (id: string) => {
      requireId(id, 'id')
      return s.read(() => {
        if (!getRow(id)) return []
        const ids = memoryChain(s, id, 'both')
        if (ids.length === 0) return []
        return s.db.select().from(t).where(inArray(t.id, ids)).orderBy(asc(t.createdAt), asc(t.id)).all().map(toMemory)
      })
    },
    delete: async (id: string, options?: WriteOptions) => {
      requireId(id, 'id')
      return s.write(() => {
        if (!getRow(id)) return 0
        const ids = memoryChain(s, id, 'older')
        const now = s.now()
        const placements = s.db.select({ scope: t.scope, workspace: t.workspace, createdBy: t.createdBy }).from(t).where(inArray(t.id, ids)).all()
        s.db.delete(t).where(inArray(t.id, ids)).run()
        for (const deleted of ids) {
          s.fts.memories.remove(deleted)
          s.record({ entity: 'memory', entityId: deleted, change: 'delete', audit: 'memory.delete' }, options, now)
        }
        const sceneLayers = pruneSceneReferences(s, ids, options, now)
        s.bumpLayers([...placements.map((row) => layerKeyOfRow(row.scope, row.workspace, row.createdBy)), ...sceneLayers], options, now)
        return ids.length
      }, options)
    },
    list: async (filter: MemoryFilter = {}) => {
      const q = memoryListOf(filter, t, s.options.user)
      return s.read(() => s.db.select().from(t).where(q.where).orderBy(...q.orderBy).limit(q.limit).offset(q.offset).all().map(toMemory))
    },
    count: async (filter: MemoryScopeFilter = {}) => {
      const where = memoryScopeCondition(s, filter)
      return s.read(() => s.db.select({ n: sql<number>`count(*)` }).from(t).where(where).get()?.n ?? 0)
    },
    touchRecalled: async (ids: readonly string[], at?: number, options?: WriteOptions) => {
      const list = [...new Set(idList(ids, 'ids'))]
      if (list.length === 0) return 0
      return s.write(() => {
        const now = s.now()
        const recalledAt = optionalTime(at, 'at', now)
        const existing = s.db.select({ id: t.id }).from(t).where(and(inArray(t.id, list), memoryScopeCondition(s, { includeSuperseded: true }))).all()
        if (existing.length === 0) return 0
        s.db
          .update(t)
          .set({ lastRecalledAt: recalledAt })
          .where(inArray(t.id, existing.map((row) => row.id)))
          .run()
        for (const row of existing) s.record({ entity: 'memory', entityId: row.id, change: 'update', audit: 'memory.recall' }, options, now)
        return existing.length
      }, options)
    },
    mergeInto: async (targetId: string, sourceIds: readonly string[], options?: WriteOptions) => {
      const sources = mergeArgsOf(targetId, sourceIds)
      return s.write(() => {
        const target = getRow(targetId)
        assertNewest(target, targetId, 'target')
        if (sources.length === 0) return toMemory(target)
        const rows = sources.map((sourceId) => {
          const row = getRow(sourceId)
          assertNewest(row, sourceId, 'source')
          return row
        })
        const now = s.now()
        for (const row of rows) {
          const revision = row.revision + 1
          s.db
            .update(t)
            .set({ supersededBy: targetId, revision, updatedAt: Math.max(now, row.updatedAt) })
            .where(eq(t.id, row.id))
            .run()
          s.record({ entity: 'memory', entityId: row.id, change: 'update', audit: 'memory.merge', revision }, options, now)
        }
        const sourceMessageIds = mergedSourceIds(target, rows)
        const revision = target.revision + 1
        s.db
          .update(t)
          .set({ sourceMessageIds, revision, updatedAt: Math.max(now, target.updatedAt) })
          .where(eq(t.id, targetId))
          .run()
        s.record({ entity: 'memory', entityId: targetId, change: 'update', audit: 'memory.merge', revision }, options, now)
        s.bumpLayers([target, ...rows].map((row) => layerKeyOfRow(row.scope, row.workspace, row.createdBy)), options, now)
        return toMemory(getRow(targetId)!)
      }, options)
    },
  }
}

/** Ids linked to `id` through `superseded_by`: the older versions, or the whole chain. */
function memoryChain(s: SqliteSession, id: string, direction: 'older' | 'both'): string[] {
  const older = `WITH RECURSIVE older(id) AS (
      SELECT id FROM store_memories WHERE id = ?
      UNION SELECT m.id FROM store_memories m JOIN older o ON m.superseded_by = o.id)`
  if (direction === 'older') {
    return (s.sqlite.prepare(`${older} SELECT id FROM older`).all(id) as { id: string }[]).map((row) => row.id)
  }
  // Walk to the newest version, then collect everything older than it.
  const newest = s.sqlite
    .prepare(
      `WITH RECURSIVE newer(id, depth) AS (
        SELECT id, 0 FROM store_memories WHERE id = ?
        UNION SELECT m.superseded_by, n.depth + 1 FROM store_memories m JOIN newer n ON m.id = n.id WHERE m.superseded_by IS NOT NULL)
      SELECT id FROM newer ORDER BY depth DESC LIMIT 1`,
    )
    .get(id) as { id: string } | undefined
  if (!newest) return []
  return memoryChain(s, newest.id, 'older')
}

/**
 * Remove deleted memory ids from scenes that list them (a deletion must not leave pointers behind).
 * @returns the layer keys of the scenes changed (the caller bumps them with its own).
 */
function pruneSceneReferences(s: SqliteSession, deleted: string[], options: WriteOptions | undefined, now: number): (string | undefined)[] {
  const layers: (string | undefined)[] = []
  const gone = new Set(deleted)
  const placeholders = deleted.map(() => '?').join(',')
  const sceneIds = s.sqlite
    .prepare(`SELECT DISTINCT s.id AS id FROM store_scenes s, json_each(s.memory_ids) j WHERE j.value IN (${placeholders})`)
    .all(...deleted) as { id: string }[]
  for (const { id } of sceneIds) {
    const scene = s.db.select().from(schema.scenes).where(eq(schema.scenes.id, id)).get()!
    const revision = scene.revision + 1
    s.db
      .update(schema.scenes)
      .set({ memoryIds: scene.memoryIds.filter((memoryId) => !gone.has(memoryId)), revision, updatedAt: Math.max(now, scene.updatedAt) })
      .where(eq(schema.scenes.id, id))
      .run()
    s.record({ entity: 'scene', entityId: id, change: 'update', audit: 'scene.update', revision }, options, now)
    layers.push(layerKeyOfRow(scene.scope, scene.workspace, scene.createdBy))
  }
  return layers
}
