/** L2 of the SQLite store: scenes grouping memories, with their layer revisions. */
import { desc, eq } from 'drizzle-orm'
import { MemoryStoreError } from './errors.ts'
import { newId } from './ids.ts'
import { layerKeyOfRow } from './layers.ts'
import { toScene } from './rows.ts'
import * as schema from './schema.ts'
import { DEFAULT_PAGE, MAX_PAGE, type SqliteSession } from './sqlite-session.ts'
import { memoryScopeCondition, placementOf, readById, writeVersionedUpdate } from './sqlite-values.ts'
import { prepareLabel, prepareText } from './text.ts'
import type { WriteOptions } from './types-common.ts'
import type { AddSceneInput, SceneFilter, SceneRepository, UpdateScenePatch } from './types-scenes.ts'
import { flagsObject, idList, optionalTime, pageSize, requireCount, requireId, requireScope, requireUpdate } from './validate.ts'

export function sceneRepository(s: SqliteSession): SceneRepository {
  const t = schema.scenes
  const getRow = (id: string) => s.db.select().from(t).where(eq(t.id, id)).get()
  return {
    add: async (input: AddSceneInput, options?: WriteOptions) => {
      if (!input || typeof input !== 'object') throw new MemoryStoreError('invalid-argument', 'scene input must be an object')
      const scope = requireScope(input.scope)
      const values = {
        title: prepareLabel(input.title, 'title', s.options.limits.label),
        summary: prepareText(input.summary, 'summary', s.options.limits.scene).text,
        scope,
        ...placementOf(s.options.limits, scope, input.workspace, input.sessionId),
        memoryIds: idList(input.memoryIds, 'memoryIds'),
        flags: flagsObject(input.flags),
      }
      return s.write(() => {
        const now = s.now()
        const createdAt = optionalTime(input.createdAt, 'createdAt', now)
        const id = newId(createdAt)
        s.db
          .insert(t)
          .values({ id, ...values, revision: 1, createdAt, updatedAt: createdAt })
          .run()
        s.record({ entity: 'scene', entityId: id, change: 'insert', audit: 'scene.add', revision: 1 }, options, now)
        s.bumpLayers([layerKeyOfRow(values.scope, values.workspace)], options, now)
        return toScene(getRow(id)!)
      }, options)
    },
    get: readById(s, getRow, toScene),
    update: async (id: string, patch: UpdateScenePatch, options?: WriteOptions) => {
      requireUpdate(id, patch)
      const set: Partial<typeof t.$inferInsert> = {}
      if (patch.title !== undefined) set.title = prepareLabel(patch.title, 'title', s.options.limits.label)
      if (patch.summary !== undefined) set.summary = prepareText(patch.summary, 'summary', s.options.limits.scene).text
      if (patch.memoryIds !== undefined) set.memoryIds = idList(patch.memoryIds, 'memoryIds')
      if (patch.flags !== undefined) set.flags = flagsObject(patch.flags)
      return writeVersionedUpdate(s, { table: t, entity: 'scene', getRow, map: toScene }, id, set, options)
    },
    delete: async (id: string, options?: WriteOptions) => {
      requireId(id, 'id')
      return s.write(() => {
        const existing = getRow(id)
        if (!existing) return false
        s.db.delete(t).where(eq(t.id, id)).run()
        s.record({ entity: 'scene', entityId: id, change: 'delete', audit: 'scene.delete' }, options)
        s.bumpLayers([layerKeyOfRow(existing.scope, existing.workspace)], options)
        return true
      }, options)
    },
    list: async (filter: SceneFilter = {}) => {
      const limit = pageSize(filter.limit, DEFAULT_PAGE, MAX_PAGE)
      const offset = filter.offset === undefined ? 0 : requireCount(filter.offset, 'offset')
      const where = memoryScopeCondition(filter, t)
      return s.read(() =>
        s.db.select().from(t).where(where).orderBy(desc(t.updatedAt), desc(t.id)).limit(limit).offset(offset).all().map(toScene),
      )
    },
  }
}
