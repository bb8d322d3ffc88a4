/** L2 of the PostgreSQL store: scenes grouping memories, with their layer revisions (the contract of `sqlite-scenes.ts`). */
import { eq } from 'drizzle-orm'
import { newId } from './ids.ts'
import { layerKeyOfRow } from './layers.ts'
import * as pg from './pg-schema.ts'
import type { PgSession, PgTx } from './pg-session.ts'
import { firstRow, pgReadById, pgWriteVersionedUpdate } from './pg-values.ts'
import { sceneListOf } from './record-conditions.ts'
import { scenePatchOf, sceneValuesOf } from './record-values.ts'
import { toScene } from './rows.ts'
import { visibleRow } from './scope-filter.ts'
import type { SceneFilter, SceneRepository } from './types-scenes.ts'
import { optionalTime, requireId } from './validate.ts'

const t = pg.scenes

export function pgSceneRepository(s: PgSession): SceneRepository {
  // Another user's global scene is not there for this session (get, update and delete).
  const getRow = async (tx: PgTx, id: string) => visibleRow(s, await firstRow(tx.db.select().from(t).where(eq(t.id, id))))
  return {
    add: async (input, options) => {
      const values = sceneValuesOf(s.options.limits, input)
      return s.write(async (tx) => {
        const now = s.now()
        const createdAt = optionalTime(input.createdAt, 'createdAt', now)
        const id = newId(createdAt)
        const [row] = await tx.db
          .insert(t)
          .values({ id, ...values, revision: 1, createdAt, updatedAt: createdAt, createdBy: s.options.user })
          .returning()
        await s.record(tx, { entity: 'scene', entityId: id, change: 'insert', audit: 'scene.add', revision: 1 }, options, now)
        await s.bumpLayers(tx, [layerKeyOfRow(values.scope, values.workspace, s.options.user)], options, now)
        return toScene(row!)
      }, options)
    },
    get: pgReadById(s, getRow, toScene),
    update: async (id, patch, options) => {
      const set = scenePatchOf(s.options.limits, id, patch)
      return pgWriteVersionedUpdate(s, { table: t, entity: 'scene', getRow, map: toScene }, id, set, options)
    },
    delete: async (id, options) => {
      requireId(id, 'id')
      return s.write(async (tx) => {
        const existing = await getRow(tx, id)
        if (!existing) return false
        await tx.db.delete(t).where(eq(t.id, id))
        await s.record(tx, { entity: 'scene', entityId: id, change: 'delete', audit: 'scene.delete' }, options)
        await s.bumpLayers(tx, [layerKeyOfRow(existing.scope, existing.workspace, existing.createdBy)], options)
        return true
      }, options)
    },
    list: async (filter: SceneFilter = {}) => {
      const q = sceneListOf(filter, t, s.options.user)
      return s.read(async (tx) => (await tx.db.select().from(t).where(q.where).orderBy(...q.orderBy).limit(q.limit).offset(q.offset)).map(toScene))
    },
  }
}
