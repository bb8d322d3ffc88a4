/**
 * Per-session memory settings (mode and injection switch, see `session-modes.ts`) in
 * recall's own table `recall_session_settings`, on the store's session. Reads go to the
 * database every time, so another process (or a restart) sees the current choice.
 */
import { RecallError } from './errors.ts'
import type { InjectSwitch, MemoryMode } from './options.ts'
import { INJECT_SWITCHES, MEMORY_MODES, type SessionMemorySettings } from './session-modes.ts'
import { readSettings, sessionAuditId, writeSettings } from './state-rows.ts'
import { openRecallTables, type RecallStateHost } from './state-tables.ts'

/** Per-session settings; sessions that never chose get the defaults. */
export class SessionSettingsRepository {
  readonly #store: RecallStateHost
  #defaults: { mode: MemoryMode; inject: InjectSwitch }
  readonly #now: () => number
  readonly #warn: ((message: string) => void) | undefined

  constructor(store: RecallStateHost, defaults: { mode: MemoryMode; inject: InjectSwitch }, now: () => number = Date.now, onWarning?: (message: string) => void) {
    this.#store = store
    this.#defaults = defaults
    this.#now = now
    this.#warn = onWarning
  }

  /** New defaults for sessions that never chose (a live change of `defaultMode`). */
  setDefaults(defaults: { mode: MemoryMode; inject: InjectSwitch }): void {
    this.#defaults = { ...defaults }
  }

  /**
   * The session's settings, or the defaults when it never chose.
   * @throws MemoryStoreError from the store (`busy`, `closed`, ...)
   */
  async get(sessionId: string): Promise<SessionMemorySettings> {
    const tables = await openRecallTables(this.#store, { onWarning: this.#warn })
    return (await tables.read((db, t) => readSettings(db, t, sessionId))) ?? { ...this.#defaults, updatedAt: null }
  }

  /**
   * Change a session's mode and/or injection switch; unspecified fields keep their value.
   * The read and the write are one transaction, so two processes changing different fields
   * of one session both land.
   * @throws RecallError `invalid-argument` (with `path`) for an unknown mode or switch; nothing is written.
   */
  async update(sessionId: string, patch: { mode?: MemoryMode; inject?: InjectSwitch }, actor = 'recall'): Promise<SessionMemorySettings> {
    if (patch.mode !== undefined && !MEMORY_MODES.includes(patch.mode)) {
      throw new RecallError('invalid-argument', `unknown memory mode ${JSON.stringify(patch.mode)}; use one of ${MEMORY_MODES.join(', ')}`, { path: 'mode' })
    }
    if (patch.inject !== undefined && !INJECT_SWITCHES.includes(patch.inject)) {
      throw new RecallError('invalid-argument', `unknown inject switch ${JSON.stringify(patch.inject)}; use one of ${INJECT_SWITCHES.join(', ')}`, { path: 'inject' })
    }
    const tables = await openRecallTables(this.#store, { onWarning: this.#warn })
    const updatedAt = this.#now()
    return tables.write(
      async (db, t) => {
        const current = (await readSettings(db, t, sessionId)) ?? this.#defaults
        const next = { mode: patch.mode ?? current.mode, inject: patch.inject ?? current.inject, updatedAt }
        await writeSettings(db, t, sessionId, next)
        return next
      },
      { actor, audit: { op: 'recall.session-settings.set', entityId: sessionAuditId(sessionId) } },
    )
  }
}
