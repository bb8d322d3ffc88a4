/**
 * The persisted state machine of explicit-layer snapshots, one record per session.
 *
 * Every snapshot has a stable injection id (also its host message id) and moves
 *
 *     desired ──► queued ──► committed
 *        ▲          │
 *        └──────────┘  (discarded from the host's inbox, or missing after a restart)
 *
 * plus the terminal states `superseded` (a snapshot that never landed and was replaced by one
 * of a newer revision) and `cancelled` (its layer was disabled before it landed). A snapshot
 * counts as committed only when the host's session log holds a `user/message` with its id.
 * `queued` is written before the host's inject API is called, so a crash in between leaves a
 * record that reconciliation finds missing from the log and the inbox, and delivers again
 * under the same id: never twice, never lost.
 *
 * The record holds ids, revisions, states and times only, never memory text. This module is
 * the pure state machine; `injection-ledger-repository.ts` keeps it in recall's tables.
 */
import { RecallError } from './errors.ts'
import type { LayerName } from './layers.ts'

/** States of one snapshot. */
export type InjectionState = 'desired' | 'queued' | 'committed' | 'superseded' | 'cancelled'

/** One snapshot of one layer for one session. */
export interface InjectionRecord {
  /** The stable injection id, also the host message id. */
  readonly id: string
  readonly layer: LayerName
  /** `'global'` or `'workspace:<path>'`. */
  readonly layerKey: string
  /** The layer revision the snapshot shows. */
  readonly revision: number
  /** 0 for the first snapshot of this revision in the session; +1 for each refresh of the same revision. */
  readonly generation: number
  readonly state: InjectionState
  readonly desiredAt: number
  readonly queuedAt: number | null
  readonly committedAt: number | null
  /** Session log position of the committed message, when known. */
  readonly seq: number | null
  /** Memories listed and estimated tokens of the message (0 before it was built). */
  readonly entries: number
  readonly tokens: number
}

/** Explicit-layer state of a session. */
export interface SessionLayerState {
  readonly sessionId: string
  /** Layers the session enabled (explicit mode is on while any is). */
  readonly enabled: Readonly<Record<LayerName, boolean>>
  /** Oldest first; at most {@link MAX_RECORDS}, live ones always kept. */
  readonly injections: readonly InjectionRecord[]
  readonly updatedAt: number
}

/** What the host's session says about message ids. */
export interface SessionLogView {
  /** Ids of `user/message` events in the session log (append-only: a compaction does not remove them). */
  readonly logged: ReadonlySet<string>
  /** Ids pending in the agent's inbox (restored from the log on resume). */
  readonly pending: ReadonlySet<string>
  /** Ids entering the step being admitted right now, when reconciling at a step. */
  readonly entering?: ReadonlySet<string>
}

/** Records kept per session. */
export const MAX_RECORDS = 40

/** A session that never enabled a layer. */
export function emptyLayerState(sessionId: string, now = 0): SessionLayerState {
  return { sessionId, enabled: { global: false, workspace: false }, injections: [], updatedAt: now }
}

/** True for `desired` and `queued`: the snapshot has not landed yet. */
export function isLive(record: InjectionRecord): boolean {
  return record.state === 'desired' || record.state === 'queued'
}

/** True while any layer is enabled. */
export function isExplicit(state: SessionLayerState): boolean {
  return state.enabled.global || state.enabled.workspace
}

function withRecords(state: SessionLayerState, injections: InjectionRecord[], now: number): SessionLayerState {
  // Keep every live record; drop the oldest terminal ones beyond the cap.
  let excess = injections.length - MAX_RECORDS
  const kept = injections.filter((record) => {
    if (excess > 0 && !isLive(record)) {
      excess--
      return false
    }
    return true
  })
  return { ...state, injections: kept, updatedAt: now }
}

function patch(state: SessionLayerState, id: string, change: Partial<InjectionRecord>, now: number): SessionLayerState {
  return withRecords(
    state,
    state.injections.map((record) => (record.id === id ? { ...record, ...change } : record)),
    now,
  )
}

/** The live snapshot of a layer, if any (at most one exists). */
export function liveRecord(state: SessionLayerState, layer: LayerName): InjectionRecord | undefined {
  return state.injections.find((record) => record.layer === layer && isLive(record))
}

/** The newest committed snapshot of a layer, if any. */
export function lastCommitted(state: SessionLayerState, layer: LayerName): InjectionRecord | undefined {
  return [...state.injections].reverse().find((record) => record.layer === layer && record.state === 'committed')
}

/** The next generation for a snapshot of `layerKey` at `revision` in this session. */
export function nextGeneration(state: SessionLayerState, layerKey: string, revision: number): number {
  return state.injections.filter((record) => record.layerKey === layerKey && record.revision === revision).reduce((max, record) => Math.max(max, record.generation + 1), 0)
}

/** Add a desired snapshot (the caller checked there is no live one for the layer). */
export function addDesired(state: SessionLayerState, record: Pick<InjectionRecord, 'id' | 'layer' | 'layerKey' | 'revision' | 'generation'>, now: number): SessionLayerState {
  if (liveRecord(state, record.layer)) throw new RecallError('invalid-argument', `a ${record.layer} snapshot is already on its way`)
  return withRecords(
    state,
    [...state.injections, { ...record, state: 'desired', desiredAt: now, queuedAt: null, committedAt: null, seq: null, entries: 0, tokens: 0 }],
    now,
  )
}

/** Mark a snapshot queued (about to be handed to the host), with what it lists. */
export function markQueued(state: SessionLayerState, id: string, built: { entries: number; tokens: number }, now: number): SessionLayerState {
  return patch(state, id, { state: 'queued', queuedAt: now, entries: built.entries, tokens: built.tokens }, now)
}

/** Mark a snapshot committed: the session log holds it. */
export function markCommitted(state: SessionLayerState, id: string, now: number, seq: number | null = null): SessionLayerState {
  const record = state.injections.find((candidate) => candidate.id === id)
  if (!record || record.state === 'committed') return state
  return patch(state, id, { state: 'committed', committedAt: now, seq }, now)
}

/** Back to desired: the host dropped it before it landed (inbox discarded, step rejected). */
export function markDesired(state: SessionLayerState, id: string, now: number): SessionLayerState {
  const record = state.injections.find((candidate) => candidate.id === id)
  if (!record || record.state !== 'queued') return state
  return patch(state, id, { state: 'desired' }, now)
}

/** Replace a snapshot that never landed by a newer one. */
export function supersedeRecord(state: SessionLayerState, id: string, now: number): SessionLayerState {
  return patch(state, id, { state: 'superseded' }, now)
}

/** Turn a layer on or off; turning it off cancels its live snapshot. @returns the new state and the cancelled ids. */
export function setEnabled(state: SessionLayerState, layer: LayerName, enabled: boolean, now: number): { state: SessionLayerState; cancelled: string[] } {
  const cancelled = enabled ? [] : state.injections.filter((record) => record.layer === layer && isLive(record)).map((record) => record.id)
  let next: SessionLayerState = { ...state, enabled: { ...state.enabled, [layer]: enabled }, updatedAt: now }
  for (const id of cancelled) next = patch(next, id, { state: 'cancelled' }, now)
  return { state: next, cancelled }
}

/**
 * Compare live snapshots with the host's session: a snapshot whose id is in the log is
 * committed; one pending in the inbox or entering the current step stays queued; any other
 * live one is missing and must be delivered (again).
 * @returns the reconciled state and the records to deliver.
 */
export function reconcile(state: SessionLayerState, view: SessionLogView, now: number): { state: SessionLayerState; missing: InjectionRecord[] } {
  let next = state
  const missing: InjectionRecord[] = []
  for (const record of state.injections) {
    if (!isLive(record)) continue
    if (view.logged.has(record.id)) next = markCommitted(next, record.id, now)
    else if (view.pending.has(record.id) || view.entering?.has(record.id)) continue
    else missing.push(record)
  }
  return { state: next, missing }
}
