/**
 * The injection ledger (`injection-ledger.ts`, the pure state machine) kept in recall's own
 * tables: one `recall_layer_sessions` row per session and one `recall_injections` row per
 * snapshot, on the store's session. Changes to one session are serialised in this process by
 * a per-session lock; across processes sharing one database (one SQLite file, or several hosts
 * on one PostgreSQL database) a write may name the state it was computed from, and it lands
 * only while the stored state is still that one (checked and written in one write unit, under
 * the store's writer lock, by the session's write counter `recall_layer_sessions.version`): of
 * two processes delivering the same snapshot, one queues it and the other learns it lost.
 * Reads go to the database, so a restarted process sees the last committed state.
 */
import type { SessionLayerState } from './injection-ledger.ts'
import { listLayerSessions, readLayerState, readLayerVersion, sessionAuditId, writeLayerState } from './state-rows.ts'
import { RecallError } from './errors.ts'
import { openRecallTables, type RecallStateHost, type RecallTables } from './state-tables.ts'

/** Thrown inside a write unit to roll it back when the stored state moved on. */
const STALE = Symbol('stale layer state')

/** Read-modify-write attempts of {@link InjectionLedger.update} before it gives up. */
const MAX_ATTEMPTS = 5

/** Persistence of {@link SessionLayerState}, with a per-session lock for read-modify-write across awaits. */
export class InjectionLedger {
  readonly #store: () => RecallStateHost
  readonly #now: () => number
  readonly #warn: ((message: string) => void) | undefined
  readonly #locks = new Map<string, Promise<unknown>>()
  /** The stored write counter of each state this ledger read or wrote (for compare-and-set). */
  readonly #versions = new WeakMap<SessionLayerState, number>()

  /** @param store - resolved per use: a service restart swaps the store. */
  constructor(store: () => RecallStateHost, now: () => number = Date.now, onWarning?: (message: string) => void) {
    this.#store = store
    this.#now = now
    this.#warn = onWarning
  }

  #tables(): Promise<RecallTables> {
    return openRecallTables(this.#store(), { onWarning: this.#warn })
  }

  /** A session's state (empty when it never enabled a layer). */
  async get(sessionId: string): Promise<SessionLayerState> {
    return (await this.#tables()).read(async (db, t) => {
      const state = await readLayerState(db, t, sessionId)
      this.#versions.set(state, await readLayerVersion(db, t, sessionId))
      return state
    })
  }

  /**
   * Write a session's state (call under {@link InjectionLedger.lock}).
   * @param expected - the state `state` was computed from, as this ledger read or wrote it: the
   *   write lands only while the session's stored version is still that state's (no other
   *   process changed the session meanwhile).
   * @returns false (nothing written) when `expected` is no longer the stored state.
   * @throws RecallError `invalid-argument` when `expected` was not read or written by this ledger
   */
  async put(state: SessionLayerState, expected?: SessionLayerState): Promise<boolean> {
    const want = expected && this.#versions.get(expected)
    if (expected && want === undefined) throw new RecallError('invalid-argument', 'put: the expected state must be one this ledger read or wrote', { path: 'expected' })
    const tables = await this.#tables()
    try {
      await tables.write(
        async (db, t) => {
          // Throwing rolls the unit back, its audit row included.
          if (want !== undefined && (await readLayerVersion(db, t, state.sessionId)) !== want) throw STALE
          this.#versions.set(state, await writeLayerState(db, t, state))
        },
        { actor: 'recall', audit: { op: 'recall.layers.set', entityId: sessionAuditId(state.sessionId) } },
      )
      return true
    } catch (error) {
      if (error === STALE) return false
      throw error
    }
  }

  /**
   * Read-modify-write a session's state under its lock; `change` may return the state
   * unchanged (nothing is written). When another process changed the session between the
   * read and the write, `change` runs again on the fresh state.
   */
  async update<T>(sessionId: string, change: (state: SessionLayerState, now: number) => { state: SessionLayerState; result: T } | Promise<{ state: SessionLayerState; result: T }>): Promise<T> {
    return this.lock(sessionId, async () => {
      for (let attempt = 1; ; attempt++) {
        const current = await this.get(sessionId)
        const { state, result } = await change(current, this.#now())
        if (state === current || (await this.put(state, current))) return result
        if (attempt >= MAX_ATTEMPTS) throw new RecallError('conflict', `the layer state of session ${sessionId} kept changing under another process (${MAX_ATTEMPTS} attempts); try again`)
      }
    })
  }

  /** The clock the ledger stamps records with. */
  now(): number {
    return this.#now()
  }

  /** Run `fn` while holding the session's lock (other changes to the session wait). */
  async lock<T>(sessionId: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#locks.get(sessionId) ?? Promise.resolve()
    const run = previous.then(fn, fn)
    const settled = run.then(
      () => {},
      () => {},
    )
    this.#locks.set(sessionId, settled)
    void settled.then(() => {
      if (this.#locks.get(sessionId) === settled) this.#locks.delete(sessionId)
    })
    return run
  }

  /** Every session with a layer record, in session id order (for status and diagnostics). */
  async sessions(limit = 1_000): Promise<SessionLayerState[]> {
    return (await this.#tables()).read(async (db, t) => {
      const out: SessionLayerState[] = []
      for (const sessionId of await listLayerSessions(db, t, limit)) out.push(await readLayerState(db, t, sessionId))
      return out
    })
  }
}
