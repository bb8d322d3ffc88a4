/**
 * Explicit memory layers for sessions: `/memory enable|refresh|disable`, delivery of index
 * snapshots through the host's inject API, and reconciliation with the host's session log
 * so that every snapshot a session asked for lands exactly once.
 *
 * The host is reached through {@link LayerSessionHandle} (the adapter implements it over a
 * live agent), so this module holds the whole protocol and no host import.
 *
 * Delivery protocol:
 * 1. enable/refresh records a `desired` snapshot (stable id = hash of session, layer,
 *    revision, generation) and delivers it: build the index, persist `queued`, then call the
 *    host's inject API with the id as the message id.
 * 2. The host claims it at the next step and logs it as a `user/message`; the adapter reports
 *    the log event and the record becomes `committed`.
 * 3. At every step that has live snapshots, and at session start, the record is compared with
 *    the log, the inbox and the entering batch. A live snapshot found in none of them (the
 *    process died after `queued`, the inbox was discarded on exit, another plugin rejected
 *    the step) is delivered again, under the same id, into the entering step: the log can
 *    never hold it twice, and a desired snapshot is never lost.
 */
import type { CoordinatedMemoryStore } from '@dsh-memory/store'
import { errorMessage, RecallError } from './errors.ts'
import {
  addDesired,
  type InjectionRecord,
  isExplicit,
  isLive,
  lastCommitted,
  liveRecord,
  markCommitted,
  markDesired,
  markQueued,
  nextGeneration,
  reconcile,
  type SessionLayerState,
  setEnabled,
  supersedeRecord,
} from './injection-ledger.ts'
import type { InjectionLedger } from './injection-ledger-repository.ts'
import { buildLayerSnapshot, LAYER_NAMES, layerFilter, type LayerName, layerRef, type LayerRef, type LayerSnapshot, snapshotInjectionId } from './layers.ts'
import type { LayerOptions } from './options.ts'
import type { RecallScope } from './scope.ts'

/** A live session as the controller needs it; the adapter implements it over the host's agent. */
export interface LayerSessionHandle extends RecallScope {
  /** Ids of the `user/message` events in the session log (including a resumed session's stored events). */
  loggedIds(): ReadonlySet<string>
  /** Ids pending in the agent's inbox. */
  pendingIds(): ReadonlySet<string>
  /** Ids of the messages in the session's current context (a compaction drops replaced ones). */
  contextIds(): ReadonlySet<string>
  /** Hand a snapshot message to the host's inject API (non-waking: it enters the next step). */
  inject(message: { readonly id: string; readonly text: string }): void
  /** Durably cancel a message still pending in the inbox. @returns false when it was not pending. */
  cancelPending(id: string): boolean
}

/** A snapshot message to add to a step. */
export interface SnapshotMessage {
  readonly id: string
  readonly text: string
  readonly record: InjectionRecord
}

/** Collaborators of {@link LayerController}. */
export interface LayerControllerDeps {
  /** The store (resolved per use: a service reload swaps it). */
  readonly store: () => CoordinatedMemoryStore
  readonly ledger: InjectionLedger
  readonly options: LayerOptions
  /** After a snapshot was recorded as committed. */
  readonly onCommitted?: (sessionId: string, record: InjectionRecord) => void
  readonly onWarning?: (message: string) => void
}

const MAX_SCAN = 10_000
const ID_PREFIX = 'memory-layer-'

/** What happened to one layer in a command. */
interface LayerOutcome {
  readonly layer: LayerName
  readonly text: string
}

/** The controller. One per plugin instance. */
export class LayerController {
  readonly #deps: LayerControllerDeps
  readonly #warn: (message: string) => void

  constructor(deps: LayerControllerDeps) {
    this.#deps = deps
    this.#warn = deps.onWarning ?? (() => {})
  }

  /** Whether `id` could be a snapshot id (cheap pre-filter for log events). */
  static isSnapshotId(id: unknown): id is string {
    return typeof id === 'string' && id.startsWith(ID_PREFIX)
  }

  /** A layer of the session as this host's user sees it (the global layer is per user). */
  #ref(layer: LayerName, handle: LayerSessionHandle): LayerRef {
    return layerRef(layer, handle, this.#deps.store().user)
  }

  /** A session's state. */
  state(sessionId: string): Promise<SessionLayerState> {
    return this.#deps.ledger.get(sessionId)
  }

  /** True while the session has an enabled layer (automatic recall then stays out of it). */
  async isExplicit(sessionId: string): Promise<boolean> {
    return isExplicit(await this.#deps.ledger.get(sessionId))
  }

  /**
   * Enable a layer for the session and deliver its index snapshot (unless one of the current
   * revision is already in context or on its way).
   * @throws RecallError `invalid-argument` for the workspace layer of a session without a workspace.
   */
  async enable(handle: LayerSessionHandle, layer: LayerName): Promise<string> {
    const ref = this.#ref(layer, handle)
    const { text, deliver } = await this.#deps.ledger.lock(handle.sessionId, async () => {
      const ledger = this.#deps.ledger
      const before = await ledger.get(handle.sessionId)
      let state = setEnabled(before, layer, true, ledger.now()).state
      const wanted = await this.#want(handle, state, ref)
      state = wanted.state
      await ledger.put(state)
      const already = before.enabled[layer] ? `The ${layer} layer was already enabled; ` : `Enabled the ${layer} layer for this session; `
      return { text: already + wanted.note, deliver: wanted.record }
    })
    return deliver ? `${text}${await this.#deliverNow(handle, deliver)}` : text
  }

  /** Deliver a new snapshot of the enabled layer(s) when the layer changed or its snapshot left the context. */
  async refresh(handle: LayerSessionHandle, layer?: LayerName): Promise<string> {
    const state = await this.#deps.ledger.get(handle.sessionId)
    const layers = layer ? [layer] : LAYER_NAMES.filter((name) => state.enabled[name])
    if (layers.length === 0) throw new RecallError('invalid-argument', 'no memory layer is enabled in this session; use /memory enable global|workspace first', { path: 'layer' })
    const out: LayerOutcome[] = []
    for (const name of layers) {
      if (!state.enabled[name]) throw new RecallError('invalid-argument', `the ${name} layer is not enabled in this session; use /memory enable ${name}`, { path: 'layer' })
      const ref = this.#ref(name, handle)
      const { note, record } = await this.#deps.ledger.lock(handle.sessionId, async () => {
        const wanted = await this.#want(handle, await this.#deps.ledger.get(handle.sessionId), ref)
        await this.#deps.ledger.put(wanted.state)
        return wanted
      })
      out.push({ layer: name, text: record ? `${note}${await this.#deliverNow(handle, record)}` : note })
    }
    return out.map((outcome) => `${outcome.layer}: ${outcome.text}`).join('\n')
  }

  /**
   * Disable one or both layers. A snapshot that has not landed yet is cancelled (removed from
   * the inbox); snapshots already in the session stay, as every message does.
   */
  async disable(handle: LayerSessionHandle, layer?: LayerName): Promise<string> {
    const layers = layer ? [layer] : [...LAYER_NAMES]
    const cancelled = await this.#deps.ledger.update(handle.sessionId, (state, now) => {
      let next = state
      const ids: string[] = []
      for (const name of layers) {
        const result = setEnabled(next, name, false, now)
        next = result.state
        ids.push(...result.cancelled)
      }
      return { state: next, result: ids }
    })
    for (const id of cancelled) handle.cancelPending(id)
    const still = LAYER_NAMES.filter((name) => !layers.includes(name))
    const state = await this.#deps.ledger.get(handle.sessionId)
    const explicit = still.some((name) => state.enabled[name])
    return [
      `Disabled the ${layers.join(' and ')} layer${layers.length > 1 ? 's' : ''} for this session${cancelled.length ? ` (${cancelled.length} pending snapshot cancelled)` : ''}.`,
      'Snapshots already in the conversation stay there; they are no longer refreshed.',
      explicit ? '' : 'Automatic recall applies again.',
    ]
      .filter(Boolean)
      .join(' ')
  }

  /**
   * Reconcile a session that just started or resumed: snapshots the log already holds become
   * committed; missing ones stay live and are delivered at the next step. Never throws.
   */
  async atSessionStart(handle: LayerSessionHandle): Promise<void> {
    try {
      await this.#deps.ledger.lock(handle.sessionId, async () => {
        const state = await this.#deps.ledger.get(handle.sessionId)
        if (!state.injections.some(isLive)) return
        const { state: next } = reconcile(state, { logged: handle.loggedIds(), pending: handle.pendingIds() }, this.#deps.ledger.now())
        if (next !== state) await this.#deps.ledger.put(next)
        for (const record of next.injections) {
          const before = state.injections.find((candidate) => candidate.id === record.id)
          if (record.state === 'committed' && before?.state !== 'committed') this.#deps.onCommitted?.(handle.sessionId, record)
        }
      })
    } catch (error) {
      this.#warn(`memory-recall: could not reconcile the layer snapshots of session ${handle.sessionId}: ${errorMessage(error)}`)
    }
  }

  /**
   * Before a step: the snapshots that must enter it (live, and in neither the log, the inbox
   * nor the entering batch). They are recorded `queued` before they are returned. Never throws.
   */
  async atStep(handle: LayerSessionHandle, entering: ReadonlySet<string>): Promise<SnapshotMessage[]> {
    try {
      const first = await this.#deps.ledger.get(handle.sessionId)
      if (!first.injections.some(isLive)) return []
      return await this.#deps.ledger.lock(handle.sessionId, async () => {
        const ledger = this.#deps.ledger
        let state = await ledger.get(handle.sessionId)
        const reconciled = reconcile(state, { logged: handle.loggedIds(), pending: handle.pendingIds(), entering }, ledger.now())
        // Every write names the state it came from: when another process sharing the
        // database queued a snapshot of this session meanwhile, this one delivers nothing.
        if (reconciled.state !== state) {
          if (!(await ledger.put(reconciled.state, state))) return []
          state = reconciled.state
        }
        const out: SnapshotMessage[] = []
        for (const record of reconciled.missing) {
          if (!state.enabled[record.layer]) continue
          const built = await this.#build(handle, state, record)
          if (!(await ledger.put(built.state, state))) break
          state = built.state
          out.push({ id: built.snapshot.injectionId, text: built.snapshot.text, record: built.record })
        }
        return out
      })
    } catch (error) {
      this.#warn(`memory-recall: could not deliver the layer snapshots of session ${handle.sessionId}: ${errorMessage(error)}`)
      return []
    }
  }

  /** The session log now holds message `id` (at `seq`). Never throws. */
  async noteLogged(sessionId: string, id: string, seq: number | null): Promise<void> {
    if (!LayerController.isSnapshotId(id)) return
    try {
      const committed = await this.#deps.ledger.update(sessionId, (state, now) => {
        const record = state.injections.find((candidate) => candidate.id === id)
        if (!record || record.state === 'committed') return { state, result: undefined }
        const next = markCommitted(state, id, now, seq)
        return { state: next, result: next.injections.find((candidate) => candidate.id === id) }
      })
      if (committed) this.#deps.onCommitted?.(sessionId, committed)
    } catch (error) {
      this.#warn(`memory-recall: could not record snapshot ${id} as committed: ${errorMessage(error)}`)
    }
  }

  /** The host discarded message `id` from the inbox before it landed: desired again. Never throws. */
  async noteDiscarded(sessionId: string, id: string): Promise<void> {
    if (!LayerController.isSnapshotId(id)) return
    try {
      await this.#deps.ledger.update(sessionId, (state, now) => ({ state: markDesired(state, id, now), result: undefined }))
    } catch (error) {
      this.#warn(`memory-recall: could not record snapshot ${id} as discarded: ${errorMessage(error)}`)
    }
  }

  /** Lines for `/memory status`. */
  async statusLines(sessionId: string): Promise<string[]> {
    const state = await this.#deps.ledger.get(sessionId)
    if (!isExplicit(state) && state.injections.length === 0) return ['Layers: none enabled (automatic recall)']
    const store = this.#deps.store()
    const lines = [`Layers: ${isExplicit(state) ? `explicit — ${LAYER_NAMES.filter((name) => state.enabled[name]).join(', ')} enabled (automatic recall is off in this session)` : 'none enabled (automatic recall)'}`]
    for (const name of LAYER_NAMES) {
      const live = liveRecord(state, name)
      const committed = lastCommitted(state, name)
      if (!live && !committed && !state.enabled[name]) continue
      const record = live ?? committed!
      const current = record ? (await store.layers.revision(record.layer === 'global' ? { scope: 'global' } : { scope: 'workspace', workspace: record.layerKey.slice('workspace:'.length) })).revision : 0
      lines.push(
        `  ${name}: ${state.enabled[name] ? 'enabled' : 'disabled'}` +
          (record ? `, snapshot ${record.id} ${record.state} at revision ${record.revision} (${record.entries} listed, ~${record.tokens} tokens)` : '') +
          (record && current !== record.revision ? `; the layer is at revision ${current} now (/memory refresh)` : ''),
      )
    }
    return lines
  }

  // ---------------------------------------------------------------------------------------
  // internals

  /** Decide whether the layer needs a new snapshot; add it as desired when it does. */
  async #want(handle: LayerSessionHandle, state: SessionLayerState, ref: LayerRef): Promise<{ state: SessionLayerState; record?: InjectionRecord; note: string }> {
    const live = liveRecord(state, ref.layer)
    if (live) return { state, note: `a snapshot (revision ${live.revision}) is already on its way.` }
    const { revision } = await this.#revision(ref)
    const last = lastCommitted(state, ref.layer)
    if (last && last.layerKey === ref.key && last.revision === revision && handle.contextIds().has(last.id)) {
      return { state, note: `the snapshot in this conversation is current (revision ${revision}).` }
    }
    const generation = nextGeneration(state, ref.key, revision)
    const id = snapshotInjectionId(handle.sessionId, ref.key, revision, generation)
    const next = addDesired(state, { id, layer: ref.layer, layerKey: ref.key, revision, generation }, this.#deps.ledger.now())
    return { state: next, record: next.injections.find((record) => record.id === id)!, note: '' }
  }

  /** Build and hand a desired snapshot to the host's inject API, persisting `queued` first. */
  async #deliverNow(handle: LayerSessionHandle, record: InjectionRecord): Promise<string> {
    return this.#deps.ledger.lock(handle.sessionId, async () => {
      const ledger = this.#deps.ledger
      let state = await ledger.get(handle.sessionId)
      const current = state.injections.find((candidate) => candidate.id === record.id)
      if (!current || current.state !== 'desired') return 'its snapshot is already on its way.'
      const built = await this.#build(handle, state, current)
      // Queued only while nobody else changed the session since it was read: of two processes
      // delivering the same snapshot, exactly one hands it to its host.
      if (!(await ledger.put(built.state, state))) return 'its snapshot is already on its way.'
      state = built.state
      try {
        handle.inject({ id: built.snapshot.injectionId, text: built.snapshot.text })
      } catch (error) {
        // Not handed over: desired again, so the next step delivers it.
        await ledger.put(markDesired(state, built.snapshot.injectionId, ledger.now()))
        this.#warn(`memory-recall: the host refused snapshot ${built.snapshot.injectionId}: ${errorMessage(error)}`)
        return `its snapshot (revision ${built.snapshot.revision}) enters the next step.`
      }
      const s = built.snapshot
      return `its index (revision ${s.revision}: ${s.memoryIds.length} of ${s.total} memories listed, ~${s.tokens} tokens) enters the conversation with the next message.`
    })
  }

  /**
   * Build the snapshot of a live record at the layer's current revision. A record of an
   * older revision that never landed is superseded by one of the current revision.
   * @returns the state with the (possibly new) record marked `queued`.
   */
  async #build(handle: LayerSessionHandle, state: SessionLayerState, record: InjectionRecord): Promise<{ state: SessionLayerState; record: InjectionRecord; snapshot: LayerSnapshot }> {
    const ref = this.#ref(record.layer, handle)
    const { revision, memories } = await this.#read(ref)
    const now = this.#deps.ledger.now()
    let next = state
    let target = record
    if (record.revision !== revision || record.layerKey !== ref.key) {
      next = supersedeRecord(next, record.id, now)
      const generation = nextGeneration(next, ref.key, revision)
      const id = snapshotInjectionId(handle.sessionId, ref.key, revision, generation)
      next = addDesired(next, { id, layer: ref.layer, layerKey: ref.key, revision, generation }, now)
      target = next.injections.find((candidate) => candidate.id === id)!
    }
    const options = this.#deps.options
    const snapshot = buildLayerSnapshot(ref, revision, memories, target.id, {
      maxEntries: options.snapshotMaxEntries,
      maxChars: options.snapshotMaxChars,
      titleChars: options.titleChars,
    })
    next = markQueued(next, target.id, { entries: snapshot.memoryIds.length, tokens: snapshot.tokens }, now)
    return { state: next, record: next.injections.find((candidate) => candidate.id === target.id)!, snapshot }
  }

  async #revision(ref: LayerRef): Promise<{ revision: number }> {
    const key = ref.layer === 'global' ? ({ scope: 'global' } as const) : ({ scope: 'workspace', workspace: ref.workspace! } as const)
    return { revision: (await this.#deps.store().layers.revision(key)).revision }
  }

  /** The layer's memories and the revision they belong to (re-read when a write slipped in between). */
  async #read(ref: LayerRef) {
    const store = this.#deps.store()
    for (let attempt = 0; ; attempt++) {
      const before = await this.#revision(ref)
      const memories = await store.memories.list({ ...layerFilter(ref), limit: MAX_SCAN })
      const after = await this.#revision(ref)
      if (before.revision === after.revision || attempt >= 4) return { revision: after.revision, memories }
    }
  }
}
