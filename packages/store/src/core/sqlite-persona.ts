/**
 * L3 of the SQLite store: one versioned persona document per key: a workspace's (the team's),
 * and each user's global one (the rules are `persona-rules.ts`'s, shared with PostgreSQL).
 */
import { and, asc, eq, inArray, or } from 'drizzle-orm'
import { layerKeyOfRow } from './layers.ts'
import { personaRowKeys, personaTarget, type PersonaRow, shownPersona, visiblePersonaRows } from './persona-rules.ts'
import { assertPersonaVersion, personaEntityId, personaKeyOf, type PersonaRowKey } from './record-values.ts'
import { toPersona } from './rows.ts'
import * as schema from './schema.ts'
import type { SqliteSession } from './sqlite-session.ts'
import { prepareText } from './text.ts'
import type { WriteOptions } from './types-common.ts'
import type { PersonaKey, PersonaRepository, PutPersonaInput } from './types-persona.ts'
import { requireCount } from './validate.ts'

export function personaRepository(s: SqliteSession): PersonaRepository {
  const t = schema.persona
  const byKey = (key: PersonaRowKey) => and(eq(t.scope, key.scope), eq(t.workspace, key.workspace), eq(t.owner, key.owner))
  /** The rows that may answer for `key` as the session user sees it (see {@link shownPersona}). */
  const candidates = (key: { scope: 'global' | 'workspace'; workspace: string }): PersonaRow[] =>
    s.db
      .select()
      .from(t)
      .where(and(eq(t.scope, key.scope), eq(t.workspace, key.workspace), inArray(t.owner, personaRowKeys(key, s.options.user).map((k) => k.owner))))
      .all()
  return {
    get: async (key: PersonaKey) => {
      const resolved = personaKeyOf(s.options.limits, key)
      return s.read(() => {
        const row = shownPersona(candidates(resolved), s.options.user)
        return row ? toPersona(row) : undefined
      })
    },
    put: async (input: PutPersonaInput, options?: WriteOptions) => {
      const key = personaKeyOf(s.options.limits, input)
      const text = prepareText(input.text, 'text', s.options.limits.persona).text
      const expected = input.expectedVersion === undefined ? undefined : requireCount(input.expectedVersion, 'expectedVersion')
      return s.write(() => {
        const shown = shownPersona(candidates(key), s.options.user)
        const current = shown?.version ?? 0
        assertPersonaVersion(key, current, expected)
        const { target, existing, createdBy } = personaTarget(key, s.options.user, shown)
        const now = s.now()
        const version = current + 1
        s.db
          .insert(t)
          .values({ ...target, text, version, updatedAt: now, createdBy })
          .onConflictDoUpdate({ target: [t.scope, t.workspace, t.owner], set: { text, version, updatedAt: now } })
          .run()
        s.record({ entity: 'persona', entityId: personaEntityId(target), change: existing ? 'update' : 'insert', audit: 'persona.put', revision: version }, options, now)
        s.bumpLayers([layerKeyOfRow(target.scope, target.workspace, target.owner)], options, now)
        return toPersona(s.db.select().from(t).where(byKey(target)).get()!)
      }, options)
    },
    list: async () =>
      s.read(() =>
        visiblePersonaRows(
          s.db
            .select()
            .from(t)
            .where(or(eq(t.scope, 'workspace'), inArray(t.owner, ['', s.options.user])))
            .orderBy(asc(t.scope), asc(t.workspace), asc(t.owner))
            .all(),
          s.options.user,
        ).map(toPersona),
      ),
    delete: async (key: PersonaKey, options?: WriteOptions) => {
      const resolved = personaKeyOf(s.options.limits, key)
      return s.write(() => {
        const shown = shownPersona(candidates(resolved), s.options.user)
        if (!shown) return false
        s.db.delete(t).where(byKey(shown)).run()
        s.record({ entity: 'persona', entityId: personaEntityId(shown), change: 'delete', audit: 'persona.delete' }, options)
        s.bumpLayers([layerKeyOfRow(shown.scope, shown.workspace, shown.owner)], options)
        return true
      }, options)
    },
  }
}
