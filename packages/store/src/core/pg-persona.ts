/**
 * L3 of the PostgreSQL store: one versioned persona document per key, a workspace's and each
 * user's global one (the contract of `sqlite-persona.ts`, the rules of `persona-rules.ts`).
 */
import { and, asc, eq, inArray, or } from 'drizzle-orm'
import { layerKeyOfRow } from './layers.ts'
import { personaRowKeys, personaTarget, shownPersona, visiblePersonaRows } from './persona-rules.ts'
import * as pg from './pg-schema.ts'
import type { PgSession, PgTx } from './pg-session.ts'
import { assertPersonaVersion, personaEntityId, personaKeyOf, type PersonaRowKey } from './record-values.ts'
import { toPersona } from './rows.ts'
import { prepareText } from './text.ts'
import type { PersonaRepository } from './types-persona.ts'
import { requireCount } from './validate.ts'

const t = pg.persona
type Key = { scope: 'global' | 'workspace'; workspace: string }
const byKey = (key: PersonaRowKey) => and(eq(t.scope, key.scope), eq(t.workspace, key.workspace), eq(t.owner, key.owner))

export function pgPersonaRepository(s: PgSession): PersonaRepository {
  /** The row the session user sees for `key` (see `shownPersona`). */
  const shownRow = async (tx: PgTx, key: Key) => {
    const owners = personaRowKeys(key, s.options.user).map((k) => k.owner)
    const rows = await tx.db
      .select()
      .from(t)
      .where(and(eq(t.scope, key.scope), eq(t.workspace, key.workspace), inArray(t.owner, owners)))
    return shownPersona(rows, s.options.user)
  }
  return {
    get: async (key) => {
      const resolved = personaKeyOf(s.options.limits, key)
      return s.read(async (tx) => {
        const row = await shownRow(tx, resolved)
        return row ? toPersona(row) : undefined
      })
    },
    put: async (input, options) => {
      const key = personaKeyOf(s.options.limits, input)
      const text = prepareText(input.text, 'text', s.options.limits.persona).text
      const expected = input.expectedVersion === undefined ? undefined : requireCount(input.expectedVersion, 'expectedVersion')
      return s.write(async (tx) => {
        const shown = await shownRow(tx, key)
        const current = shown?.version ?? 0
        assertPersonaVersion(key, current, expected)
        const { target, existing, createdBy } = personaTarget(key, s.options.user, shown)
        const now = s.now()
        const version = current + 1
        const [row] = await tx.db
          .insert(t)
          .values({ ...target, text, version, updatedAt: now, createdBy })
          .onConflictDoUpdate({ target: [t.scope, t.workspace, t.owner], set: { text, version, updatedAt: now } })
          .returning()
        await s.record(tx, { entity: 'persona', entityId: personaEntityId(target), change: existing ? 'update' : 'insert', audit: 'persona.put', revision: version }, options, now)
        await s.bumpLayers(tx, [layerKeyOfRow(target.scope, target.workspace, target.owner)], options, now)
        return toPersona(row!)
      }, options)
    },
    list: async () =>
      s.read(async (tx) => {
        const rows = await tx.db
          .select()
          .from(t)
          .where(or(eq(t.scope, 'workspace'), inArray(t.owner, ['', s.options.user])))
          .orderBy(asc(t.scope), asc(t.workspace), asc(t.owner))
        return visiblePersonaRows(rows, s.options.user).map(toPersona)
      }),
    delete: async (key, options) => {
      const resolved = personaKeyOf(s.options.limits, key)
      return s.write(async (tx) => {
        const shown = await shownRow(tx, resolved)
        if (!shown) return false
        await tx.db.delete(t).where(byKey(shown))
        await s.record(tx, { entity: 'persona', entityId: personaEntityId(shown), change: 'delete', audit: 'persona.delete' }, options)
        await s.bumpLayers(tx, [layerKeyOfRow(shown.scope, shown.workspace, shown.owner)], options)
        return true
      }, options)
    },
  }
}
