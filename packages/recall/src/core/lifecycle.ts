/**
 * Background upkeep of the memory layers, shared by every process on one data dir:
 *
 * - **Review**: completed user turns are counted (across sessions and processes); after
 *   `reviewEveryUserTurns` of them, or `idleDelayMinutes` after the last one, a review runs
 *   (the adapter asks the distiller to distill everything pending).
 * - **Consolidation**: each layer is consolidated `consolidationCooldownHours` (workspace) or
 *   `globalConsolidationCooldownDays` (global) after its first change since the previous
 *   consolidation; later changes inside that window do not postpone it. Consolidation is a
 *   deterministic merge (no model call): memories of one kind in one layer whose token sets
 *   (the store's CJK-aware tokenizer) have a Jaccard similarity of at least
 *   `consolidationSimilarity`, or that are equal after folding case, spaces and punctuation,
 *   are merged into the newest of them. Nothing is deleted: the older ones stay as its history.
 * - **Retention**: every `retentionSweepHours`, per layer and per rule (memory kind), memories
 *   unused (not updated, not recalled) for longer than `maxAgeDays` are deleted, then the
 *   least recently used beyond `maxCount`.
 *
 * Consolidation and sweeps are background writers: each holds a store lease with a heartbeat
 * and names it in every write (the store refuses a write whose lease was taken over), so two
 * processes never run the same job at once and a stalled one cannot write after losing it.
 * The turn counter, the retention clock and the layer schedules live in recall's own tables
 * (`recall_lifecycle`, `recall_layer_schedules`), so they survive restarts and are shared by
 * all processes; each read-modify-write of them is one transaction.
 */
import { createHash } from 'node:crypto'
import { type CoordinatedMemoryStore, holdLease, isMemoryStoreError, type Memory, parseLayerKey, tokenize } from '@dsh-memory/store'
import { errorMessage } from './errors.ts'
import { needsReview } from './feedback.ts'
import { layerFilter } from './layers.ts'
import type { LifecycleOptions, RetentionOptions } from './options.ts'
import { type LayerSchedule, readRetention, readSchedule, readTurns, type TurnState, writeRetention, writeSchedule, writeTurns } from './state-rows.ts'
import { openRecallTables, type RecallTables } from './state-tables.ts'

export type { LayerSchedule, RetentionState, TurnState } from './state-rows.ts'

const HOUR = 3_600_000
const DAY = 24 * HOUR
const MAX_SCAN = 10_000
/** Memories of one kind compared pairwise in one consolidation pass (the newest). */
export const CONSOLIDATION_SCAN = 2_000

/** Why a review ran. */
export type ReviewReason = 'turns' | 'idle'

/** Result of one consolidation. */
export interface ConsolidationResult {
  readonly layerKey: string
  /** Groups merged: each `into` absorbed `merged` (which stay as its history). */
  readonly groups: readonly { readonly into: string; readonly merged: readonly string[] }[]
  /** The layer revision after the pass. */
  readonly revision: number
}

/** Result of one retention sweep. */
export interface SweepResult {
  readonly deleted: number
  /** Deleted per `<layerKey>/<kind>`. */
  readonly byLayerKind: Readonly<Record<string, number>>
}

/** What one {@link Lifecycle.tick} did. */
export interface TickReport {
  readonly review?: ReviewReason
  readonly consolidated: readonly ConsolidationResult[]
  readonly swept?: SweepResult
  /** Jobs skipped because another process holds their lease. */
  readonly busy: readonly string[]
}

/** Collaborators of {@link Lifecycle}. */
export interface LifecycleDeps {
  readonly store: () => CoordinatedMemoryStore
  readonly options: { readonly lifecycle: LifecycleOptions; readonly retention: RetentionOptions }
  /** This process's lease holder id (`leaseHolderId()`). */
  readonly holder: string
  readonly now?: () => number
  /** Run a review. Errors are logged, never thrown into the caller. */
  readonly review?: (reason: ReviewReason, turns: number) => Promise<void>
  readonly onConsolidated?: (result: ConsolidationResult) => void
  readonly onSwept?: (result: SweepResult) => void
  readonly onWarning?: (message: string) => void
  /** Timer for lease heartbeats (tests pass a fake one). */
  readonly setTimer?: (fn: () => void, ms: number) => () => void
}

/** The lease name of a layer's consolidation. */
export function consolidationLease(layerKey: string): string {
  return `recall/consolidate/${createHash('sha256').update(layerKey).digest('hex').slice(0, 32)}`
}

/** The lease name of the retention sweep. */
export const RETENTION_LEASE = 'recall/retention'

/** Text folded for exact-duplicate detection: case, whitespace and punctuation removed. */
export function foldedText(text: string): string {
  return text.normalize('NFKC').toLowerCase().replace(/[\s\p{P}\p{S}]+/gu, ' ').trim()
}

/** Jaccard similarity of two token sets (1 for two empty sets). */
export function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 && b.size === 0) return 1
  let shared = 0
  const [small, large] = a.size <= b.size ? [a, b] : [b, a]
  for (const token of small) if (large.has(token)) shared++
  return shared / (a.size + b.size - shared)
}

/**
 * The deterministic merge plan of a layer: groups of near-duplicates (same kind, Jaccard ≥
 * `similarity` over tokens, or equal folded text), each merged into its newest member.
 * Memories flagged for review are left alone (a wrong memory must not absorb others).
 */
export function planConsolidation(memories: readonly Memory[], similarity: number): { into: Memory; merged: Memory[] }[] {
  const byKind = new Map<string, Memory[]>()
  for (const memory of memories) {
    if (memory.supersededBy || needsReview(memory.flags)) continue
    const list = byKind.get(memory.kind) ?? []
    list.push(memory)
    byKind.set(memory.kind, list)
  }
  const plan: { into: Memory; merged: Memory[] }[] = []
  for (const list of byKind.values()) {
    const candidates = [...list].sort((a, b) => b.updatedAt - a.updatedAt || (a.id < b.id ? 1 : -1)).slice(0, CONSOLIDATION_SCAN)
    const tokens = candidates.map((memory) => new Set(tokenize(memory.text)))
    const folded = candidates.map((memory) => foldedText(memory.text))
    const parent = candidates.map((_, index) => index)
    const find = (index: number): number => {
      while (parent[index] !== index) index = parent[index] = parent[parent[index]!]!
      return index
    }
    for (let i = 0; i < candidates.length; i++) {
      for (let j = i + 1; j < candidates.length; j++) {
        const a = tokens[i]!
        const b = tokens[j]!
        // Jaccard ≥ s needs |small| / |large| ≥ s: skip pairs that cannot reach it.
        const sizeRatio = Math.min(a.size, b.size) / Math.max(a.size, b.size, 1)
        const same = folded[i] === folded[j] || (sizeRatio >= similarity && jaccard(a, b) >= similarity)
        if (same) parent[find(j)] = find(i)
      }
    }
    const groups = new Map<number, Memory[]>()
    candidates.forEach((memory, index) => {
      const root = find(index)
      groups.set(root, [...(groups.get(root) ?? []), memory])
    })
    for (const group of groups.values()) {
      if (group.length < 2) continue
      // Candidates are newest first, so the group's first member is the newest: it survives.
      const [into, ...merged] = group
      plan.push({ into: into!, merged })
    }
  }
  return plan.sort((a, b) => (a.into.id < b.into.id ? -1 : 1))
}

/** The background upkeep. Call {@link Lifecycle.noteUserTurn} per completed user turn and {@link Lifecycle.tick} on a timer. */
export class Lifecycle {
  readonly #deps: LifecycleDeps
  readonly #now: () => number
  readonly #warn: (message: string) => void
  #closed = false

  constructor(deps: LifecycleDeps) {
    this.#deps = deps
    this.#now = deps.now ?? Date.now
    this.#warn = deps.onWarning ?? (() => {})
  }

  get #options(): LifecycleOptions {
    return this.#deps.options.lifecycle
  }

  /** Stop starting new jobs (running ones finish). */
  close(): void {
    this.#closed = true
  }

  /** The persisted turn counter. */
  async turns(): Promise<TurnState> {
    return (await this.#tables()).read(readTurns)
  }

  #tables(): Promise<RecallTables> {
    return openRecallTables(this.#deps.store(), { onWarning: this.#warn })
  }

  /**
   * Count one completed user turn; when `reviewEveryUserTurns` is reached the counter resets
   * (in the same transaction, so two processes cannot both trigger it) and a review runs.
   * @returns whether this turn triggered a review. Never throws.
   */
  async noteUserTurn(): Promise<boolean> {
    if (this.#closed || !this.#options.enabled) return false
    try {
      const every = this.#options.reviewEveryUserTurns
      const now = this.#now()
      const outcome = await (await this.#tables()).write(
        async (db, t) => {
          const current = await readTurns(db, t)
          const counted = { ...current, sinceReview: current.sinceReview + 1, total: current.total + 1, lastTurnAt: now }
          const due = every > 0 && counted.sinceReview >= every
          await writeTurns(db, t, due ? { ...counted, sinceReview: 0, lastReviewAt: now } : counted)
          return { due, turns: counted.sinceReview }
        },
        { actor: 'recall', audit: { op: 'recall.lifecycle.turn', entityId: 'turns' } },
      )
      if (outcome.due) await this.#review('turns', outcome.turns)
      return outcome.due
    } catch (error) {
      this.#warn(`memory-recall: could not count a user turn: ${errorMessage(error)}`)
      return false
    }
  }

  /** Run whatever is due now: an idle review, layer consolidations, the retention sweep. Never throws. */
  async tick(): Promise<TickReport> {
    const consolidated: ConsolidationResult[] = []
    const busy: string[] = []
    let review: ReviewReason | undefined
    let swept: SweepResult | undefined
    if (this.#closed || !this.#options.enabled) return { consolidated, busy }
    try {
      review = await this.#idleReview()
    } catch (error) {
      this.#warn(`memory-recall: idle review check failed: ${errorMessage(error)}`)
    }
    try {
      for (const layer of await this.#deps.store().layers.list()) {
        if (this.#closed) break
        const due = await this.#schedule(layer.key, layer.revision)
        if (!due) continue
        const result = await this.consolidate(layer.key)
        if (result === 'busy') busy.push(consolidationLease(layer.key))
        else if (result) consolidated.push(result)
      }
    } catch (error) {
      this.#warn(`memory-recall: consolidation failed: ${errorMessage(error)}`)
    }
    try {
      if (await this.#sweepDue()) {
        const result = await this.sweep()
        if (result === 'busy') busy.push(RETENTION_LEASE)
        else swept = result
      }
    } catch (error) {
      this.#warn(`memory-recall: retention sweep failed: ${errorMessage(error)}`)
    }
    return { ...(review ? { review } : {}), consolidated, ...(swept ? { swept } : {}), busy }
  }

  /** A layer's consolidation schedule. */
  async schedule(layerKey: string): Promise<LayerSchedule> {
    return (await this.#tables()).read((db, t) => readSchedule(db, t, layerKey))
  }

  /**
   * Consolidate one layer now, holding its lease; every merge is fenced by it.
   * @returns the result, or `'busy'` when another process holds the lease.
   */
  async consolidate(layerKey: string): Promise<ConsolidationResult | 'busy'> {
    const layer = parseLayerKey(layerKey)
    if (!layer) throw new Error(`not a layer key: ${layerKey}`)
    const store = this.#deps.store()
    const tables = await this.#tables()
    const held = await holdLease(store, consolidationLease(layerKey), this.#deps.holder, this.#leaseOptions())
    if (!held) return 'busy'
    try {
      const ref = layer.scope === 'global' ? ({ layer: 'global', workspace: null } as const) : ({ layer: 'workspace', workspace: layer.workspace } as const)
      const memories = await store.memories.list({ ...layerFilter(ref), limit: MAX_SCAN })
      const plan = planConsolidation(memories, this.#options.consolidationSimilarity)
      const groups: { into: string; merged: string[] }[] = []
      for (const group of plan) {
        if (held.lost) break
        try {
          await store.memories.mergeInto(
            group.into.id,
            group.merged.map((memory) => memory.id),
            { actor: 'recall-consolidation', fence: held.fence },
          )
        } catch (error) {
          // Another writer (distillation, a user edit) changed one of them meanwhile: the next pass sees it.
          if (isMemoryStoreError(error, 'conflict') || isMemoryStoreError(error, 'not-found')) continue
          throw error
        }
        groups.push({ into: group.into.id, merged: group.merged.map((memory) => memory.id) })
      }
      const now = this.#now()
      const revision = await store.transaction(
        async (tx) => {
          const current = (await tx.layers.revision(layer.scope === 'global' ? { scope: 'global' } : { scope: 'workspace', workspace: layer.workspace })).revision
          // Joins this transaction: the schedule records exactly the revision read above.
          await tables.write((db, t) => writeSchedule(db, t, { layerKey, consolidatedRevision: current, lastRunAt: now, dueAt: null }), {
            actor: 'recall-consolidation',
            audit: { op: 'recall.lifecycle.consolidated', entityId: layerKey },
          })
          return current
        },
        { fence: held.fence },
      )
      const result: ConsolidationResult = { layerKey, groups, revision }
      this.#notify('consolidation', () => this.#deps.onConsolidated?.(result))
      return result
    } finally {
      await held.release()
    }
  }

  /**
   * Run the retention sweep now, holding its lease; every deletion is fenced by it.
   * @returns the result, or `'busy'` when another process holds the lease.
   */
  async sweep(): Promise<SweepResult | 'busy'> {
    const store = this.#deps.store()
    const tables = await this.#tables()
    const held = await holdLease(store, RETENTION_LEASE, this.#deps.holder, this.#leaseOptions())
    if (!held) return 'busy'
    try {
      const now = this.#now()
      const byLayerKind: Record<string, number> = {}
      let deleted = 0
      for (const layer of await store.layers.list()) {
        const ref = layer.scope === 'global' ? ({ layer: 'global', workspace: null } as const) : ({ layer: 'workspace', workspace: layer.workspace! } as const)
        for (const rule of this.#deps.options.retention.rules) {
          if (held.lost) break
          const memories = await store.memories.list({ ...layerFilter(ref), kind: rule.kind, limit: MAX_SCAN })
          const lastUse = (memory: Memory) => Math.max(memory.updatedAt, memory.lastRecalledAt ?? 0)
          const ordered = [...memories].sort((a, b) => lastUse(b) - lastUse(a) || (a.id < b.id ? -1 : 1))
          const expired = new Set<string>()
          if (rule.maxAgeDays > 0) for (const memory of ordered) if (now - lastUse(memory) > rule.maxAgeDays * DAY) expired.add(memory.id)
          if (rule.maxCount > 0) {
            const kept = ordered.filter((memory) => !expired.has(memory.id))
            for (const memory of kept.slice(rule.maxCount)) expired.add(memory.id)
          }
          for (const id of expired) {
            if (held.lost) break
            await store.memories.delete(id, { actor: 'recall-retention', fence: held.fence })
            deleted++
            const key = `${layer.key}/${rule.kind}`
            byLayerKind[key] = (byLayerKind[key] ?? 0) + 1
          }
        }
      }
      await tables.write((db, t) => writeRetention(db, t, { lastSweepAt: now }), { actor: 'recall-retention', fence: held.fence, audit: { op: 'recall.lifecycle.swept', entityId: 'retention' } })
      const result: SweepResult = { deleted, byLayerKind }
      this.#notify('retention', () => this.#deps.onSwept?.(result))
      return result
    } finally {
      await held.release()
    }
  }

  // ---------------------------------------------------------------------------------------

  /** Tell a listener about committed work; a listener that throws is logged and cannot undo or fail the pass. */
  #notify(what: string, listener: () => void): void {
    try {
      listener()
    } catch (error) {
      this.#warn(`memory-recall: a ${what} listener failed: ${errorMessage(error)}`)
    }
  }

  #leaseOptions() {
    return {
      ttlMs: Math.round(this.#options.leaseTtlSeconds * 1000),
      actor: 'recall',
      onLost: () => this.#warn('memory-recall: a background lease was taken over by another process; this job stops writing'),
      ...(this.#deps.setTimer ? { setTimer: this.#deps.setTimer } : {}),
    }
  }

  async #review(reason: ReviewReason, turns: number): Promise<void> {
    try {
      await this.#deps.review?.(reason, turns)
    } catch (error) {
      this.#warn(`memory-recall: review (${reason}) failed: ${errorMessage(error)}`)
    }
  }

  async #idleReview(): Promise<ReviewReason | undefined> {
    const idle = this.#options.idleDelayMinutes * 60_000
    if (!(idle > 0)) return undefined
    const tables = await this.#tables()
    const waiting = (turns: TurnState) => turns.sinceReview > 0 && this.#now() - turns.lastTurnAt >= idle
    // A plain read first: the write lock is taken only when a review is actually due.
    if (!waiting(await tables.read(readTurns))) return undefined
    const outcome = await tables.write(
      async (db, t) => {
        const current = await readTurns(db, t)
        if (!waiting(current)) return undefined
        await writeTurns(db, t, { ...current, sinceReview: 0, lastReviewAt: this.#now() })
        return current.sinceReview
      },
      { actor: 'recall', audit: { op: 'recall.lifecycle.idle-review', entityId: 'turns' } },
    )
    if (outcome === undefined) return undefined
    await this.#review('idle', outcome)
    return 'idle'
  }

  /** Update a layer's schedule; @returns true when its consolidation is due now. */
  async #schedule(layerKey: string, revision: number): Promise<boolean> {
    const layer = parseLayerKey(layerKey)
    if (!layer) return false
    const cooldown = layer.scope === 'global' ? this.#options.globalConsolidationCooldownDays * DAY : this.#options.consolidationCooldownHours * HOUR
    const tables = await this.#tables()
    // Plain reads decide the common cases (clean, or waiting for its deadline) without the write lock.
    const seen = await tables.read((db, t) => readSchedule(db, t, layerKey))
    if (revision <= seen.consolidatedRevision) return false
    if (seen.dueAt !== null) return this.#now() >= seen.dueAt
    return tables.write(
      async (db, t) => {
        const now = this.#now()
        const current = await readSchedule(db, t, layerKey)
        if (revision <= current.consolidatedRevision) return false
        if (current.dueAt !== null) return now >= current.dueAt
        // First sight of this dirty window: fix its deadline; later writes do not move it.
        await writeSchedule(db, t, { ...current, dueAt: now + cooldown })
        return cooldown <= 0
      },
      { actor: 'recall', audit: { op: 'recall.lifecycle.scheduled', entityId: layerKey } },
    )
  }

  async #sweepDue(): Promise<boolean> {
    const every = this.#options.retentionSweepHours * HOUR
    if (!(every > 0) || this.#deps.options.retention.rules.length === 0) return false
    const tables = await this.#tables()
    const seen = await tables.read(readRetention)
    if (seen) return this.#now() - seen.lastSweepAt >= every
    return tables.write(
      async (db, t) => {
        const current = await readRetention(db, t)
        if (current) return this.#now() - current.lastSweepAt >= every
        // The first start only starts the clock: nothing is deleted right after installing.
        await writeRetention(db, t, { lastSweepAt: this.#now() })
        return false
      },
      { actor: 'recall', audit: { op: 'recall.lifecycle.retention-clock', entityId: 'retention' } },
    )
  }
}
