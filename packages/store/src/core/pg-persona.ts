/** L3 of the PostgreSQL store: one versioned persona document per key (the contract of `sqlite-persona.ts`). */
import { and, asc, eq } from 'drizzle-orm'
import { layerKeyOfRow } from './layers.ts'
import * as pg from './pg-schema.ts'
import type { PgSession, PgTx } from './pg-session.ts'
import { firstRow } from './pg-values.ts'
import { assertPersonaVersion, personaEntityId, personaKeyOf } from './record-values.ts'
import { toPersona } from './rows.ts'
import { prepareText } from './text.ts'
import type { PersonaRepository } from './types-persona.ts'
import { requireCount } from './validate.ts'

const t = pg.persona
type Key = { scope: 'global' | 'workspace'; workspace: string }
const byKey = (key: Key) => and(eq(t.scope, key.scope), eq(t.workspace, key.workspace))

export function pgPersonaRepository(s: PgSession): PersonaRepository {
  const getRow = (tx: PgTx, key: Key) => firstRow(tx.db.select().from(t).where(byKey(key)))
  return {
    get: async (key) => {
      const resolved = personaKeyOf(s.options.limits, key)
      return s.read(async (tx) => {
        const row = await getRow(tx, resolved)
        return row ? toPersona(row) : undefined
      })
    },
    put: async (input, options) => {
      const key = personaKeyOf(s.options.limits, input)
      const text = prepareText(input.text, 'text', s.options.limits.persona).text
      const expected = input.expectedVersion === undefined ? undefined : requireCount(input.expectedVersion, 'expectedVersion')
      return s.write(async (tx) => {
        const existing = await getRow(tx, key)
        const current = existing?.version ?? 0
        assertPersonaVersion(key, current, expected)
        const now = s.now()
        const version = current + 1
        const [row] = await tx.db
          .insert(t)
          .values({ ...key, text, version, updatedAt: now })
          .onConflictDoUpdate({ target: [t.scope, t.workspace], set: { text, version, updatedAt: now } })
          .returning()
        await s.record(tx, { entity: 'persona', entityId: personaEntityId(key), change: existing ? 'update' : 'insert', audit: 'persona.put', revision: version }, options, now)
        await s.bumpLayers(tx, [layerKeyOfRow(key.scope, key.workspace)], options, now)
        return toPersona(row!)
      }, options)
    },
    list: async () => s.read(async (tx) => (await tx.db.select().from(t).orderBy(asc(t.scope), asc(t.workspace))).map(toPersona)),
    delete: async (key, options) => {
      const resolved = personaKeyOf(s.options.limits, key)
      return s.write(async (tx) => {
        const deleted = await tx.db.delete(t).where(byKey(resolved)).returning({ version: t.version })
        if (deleted.length === 0) return false
        await s.record(tx, { entity: 'persona', entityId: personaEntityId(resolved), change: 'delete', audit: 'persona.delete' }, options)
        await s.bumpLayers(tx, [layerKeyOfRow(resolved.scope, resolved.workspace)], options)
        return true
      }, options)
    },
  }
}
