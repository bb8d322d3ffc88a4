/** L2 of the SQLite store: scenes grouping memories, with their layer revisions. */
import { eq } from 'drizzle-orm'
import { newId } from './ids.ts'
import { layerKeyOfRow } from './layers.ts'
import { sceneListOf } from './record-conditions.ts'
import { scenePatchOf, sceneValuesOf } from './record-values.ts'
import { toScene } from './rows.ts'
import * as schema from './schema.ts'
import type { SqliteSession } from './sqlite-session.ts'
import { readById, writeVersionedUpdate } from './sqlite-values.ts'
import { visibleRow } from './scope-filter.ts'
import type { WriteOptions } from './types-common.ts'
import type { AddSceneInput, SceneFilter, SceneRepository, UpdateScenePatch } from './types-scenes.ts'
import { optionalTime, requireId } from './validate.ts'

export function sceneRepository(s: SqliteSession): SceneRepository {
  const t = schema.scenes
  // Another user's global scene is not there for this session (get, update and delete).
  const getRow = (id: string) => visibleRow(s, s.db.select().from(t).where(eq(t.id, id)).get())
  return {
    add: async (input: AddSceneInput, options?: WriteOptions) => {
      const values = sceneValuesOf(s.options.limits, input)
      return s.write(() => {
        const now = s.now()
        const createdAt = optionalTime(input.createdAt, 'createdAt', now)
        const id = newId(createdAt)
        s.db
          .insert(t)
          .values({ id, ...values, revision: 1, createdAt, updatedAt: createdAt, createdBy: s.options.user })
          .run()
        s.record({ entity: 'scene', entityId: id, change: 'insert', audit: 'scene.add', revision: 1 }, options, now)
        s.bumpLayers([layerKeyOfRow(values.scope, values.workspace, s.options.user)], options, now)
        return toScene(getRow(id)!)
      }, options)
    },
    get: readById(s, getRow, toScene),
    update: async (id: string, patch: UpdateScenePatch, options?: WriteOptions) => {
      const set = scenePatchOf(s.options.limits, id, patch)
      return writeVersionedUpdate(s, { table: t, entity: 'scene', getRow, map: toScene }, id, set, options)
    },
    delete: async (id: string, options?: WriteOptions) => {
      requireId(id, 'id')
      return s.write(() => {
        const existing = getRow(id)
        if (!existing) return false
        s.db.delete(t).where(eq(t.id, id)).run()
        s.record({ entity: 'scene', entityId: id, change: 'delete', audit: 'scene.delete' }, options)
        s.bumpLayers([layerKeyOfRow(existing.scope, existing.workspace, existing.createdBy)], options)
        return true
      }, options)
    },
    list: async (filter: SceneFilter = {}) => {
      const q = sceneListOf(filter, t, s.options.user)
      return s.read(() => s.db.select().from(t).where(q.where).orderBy(...q.orderBy).limit(q.limit).offset(q.offset).all().map(toScene))
    },
  }
}
