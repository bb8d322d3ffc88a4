/** L3 of the SQLite store: one versioned persona document per key (global, or a workspace). */
import { and, asc, eq } from 'drizzle-orm'
import { layerKeyOfRow } from './layers.ts'
import { assertPersonaVersion, personaEntityId, personaKeyOf } from './record-values.ts'
import { toPersona } from './rows.ts'
import * as schema from './schema.ts'
import type { SqliteSession } from './sqlite-session.ts'
import { prepareText } from './text.ts'
import type { WriteOptions } from './types-common.ts'
import type { PersonaKey, PersonaRepository, PutPersonaInput } from './types-persona.ts'
import { requireCount } from './validate.ts'

export function personaRepository(s: SqliteSession): PersonaRepository {
  const t = schema.persona
  const getRow = (key: { scope: 'global' | 'workspace'; workspace: string }) =>
    s.db
      .select()
      .from(t)
      .where(and(eq(t.scope, key.scope), eq(t.workspace, key.workspace)))
      .get()
  return {
    get: async (key: PersonaKey) => {
      const resolved = personaKeyOf(s.options.limits, key)
      return s.read(() => {
        const row = getRow(resolved)
        return row ? toPersona(row) : undefined
      })
    },
    put: async (input: PutPersonaInput, options?: WriteOptions) => {
      const key = personaKeyOf(s.options.limits, input)
      const text = prepareText(input.text, 'text', s.options.limits.persona).text
      const expected = input.expectedVersion === undefined ? undefined : requireCount(input.expectedVersion, 'expectedVersion')
      return s.write(() => {
        const existing = getRow(key)
        const current = existing?.version ?? 0
        assertPersonaVersion(key, current, expected)
        const now = s.now()
        const version = current + 1
        s.db
          .insert(t)
          .values({ ...key, text, version, updatedAt: now })
          .onConflictDoUpdate({ target: [t.scope, t.workspace], set: { text, version, updatedAt: now } })
          .run()
        s.record({ entity: 'persona', entityId: personaEntityId(key), change: existing ? 'update' : 'insert', audit: 'persona.put', revision: version }, options, now)
        s.bumpLayers([layerKeyOfRow(key.scope, key.workspace)], options, now)
        return toPersona(getRow(key)!)
      }, options)
    },
    list: async () => s.read(() => s.db.select().from(t).orderBy(asc(t.scope), asc(t.workspace)).all().map(toPersona)),
    delete: async (key: PersonaKey, options?: WriteOptions) => {
      const resolved = personaKeyOf(s.options.limits, key)
      return s.write(() => {
        if (!getRow(resolved)) return false
        s.db
          .delete(t)
          .where(and(eq(t.scope, resolved.scope), eq(t.workspace, resolved.workspace)))
          .run()
        s.record({ entity: 'persona', entityId: personaEntityId(resolved), change: 'delete', audit: 'persona.delete' }, options)
        s.bumpLayers([layerKeyOfRow(resolved.scope, resolved.workspace)], options)
        return true
      }, options)
    },
  }
}
