/**
 * The injection ledger (`injection-ledger.ts`, the pure state machine) kept in recall's own
 * tables: one `recall_layer_sessions` row per session and one `recall_injections` row per
 * snapshot, on the store's session. Changes to one session are serialised in this process (a
 * session is driven by one host at a time); reads go to the database, so a restarted process
 * sees the last committed state.
 */
import type { SessionLayerState } from './injection-ledger.ts'
import { listLayerSessions, readLayerState, sessionAuditId, writeLayerState } from './state-rows.ts'
import { openRecallTables, type RecallStateHost, type RecallTables } from './state-tables.ts'

/** Persistence of {@link SessionLayerState}, with a per-session lock for read-modify-write across awaits. */
export class InjectionLedger {
  readonly #store: () => RecallStateHost
  readonly #now: () => number
  readonly #warn: ((message: string) => void) | undefined
  readonly #locks = new Map<string, Promise<unknown>>()

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
    return (await this.#tables()).read((db) => readLayerState(db, sessionId))
  }

  /** Write a session's state (call under {@link InjectionLedger.lock}). */
  async put(state: SessionLayerState): Promise<void> {
    await (await this.#tables()).write((db) => writeLayerState(db, state), { actor: 'recall', audit: { op: 'recall.layers.set', entityId: sessionAuditId(state.sessionId) } })
  }

  /** Read-modify-write a session's state under its lock; `change` may return the state unchanged (nothing is written). */
  async update<T>(sessionId: string, change: (state: SessionLayerState, now: number) => { state: SessionLayerState; result: T } | Promise<{ state: SessionLayerState; result: T }>): Promise<T> {
    return this.lock(sessionId, async () => {
      const current = await this.get(sessionId)
      const { state, result } = await change(current, this.#now())
      if (state !== current) await this.put(state)
      return result
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
    return (await this.#tables()).read((db) => listLayerSessions(db, limit).map((sessionId) => readLayerState(db, sessionId)))
  }
}
