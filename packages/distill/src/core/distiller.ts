/**
 * The distiller: decides when a conversation's pending slice is due, runs L1 extraction and
 * dedup, then L2 scenes and L3 persona when their counters say so, one job at a time in the
 * background. It never throws into its caller: failures are logged, persisted with a backoff
 * and retried; a restart resumes every pending slice from the persisted cursor.
 */
import { createHash, randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import { type HeldLease, holdLease, isCoordinatedStore, isMemoryStoreError, type Memory, type MemoryScopeFilter, type MemoryStore, type Message, type Scene } from '@dsh-memory/store'
import { type Clock, systemClock } from './clock.js'
import { applyMemoryOps, exactDuplicate, placeMemory, planMemoryOps, sameScopeFilter, type AppliedMemoryOps, type PlacedCandidate } from './dedup.js'
import { DistillError, describeError, isDistillError } from './errors.js'
import { parseModelJson } from './json.js'
import type { LedgerFilter, LedgerRow } from './ledger.js'
import { RoutedModel, type ModelTransport } from './model.js'
import type { DistillLayer, DistillOptions, ModelRoute } from './options.js'
import {
  buildDedupPrompt,
  buildExtractionPrompt,
  buildPersonaPrompt,
  buildScenePrompt,
  DEDUP_SYSTEM,
  L1_SYSTEM,
  L3_SYSTEM,
  l2System,
  retryNote,
} from './prompts.js'
import { applySceneOps, layerKey, parseLayerKey, relatedScenes, type SceneScope } from './scenes.js'
import { validateDedupDecisions, validateExtraction, validatePersonaText, validateSceneOps, type DedupDecision, type ExtractedMemory } from './schemas.js'
import { DistillStateRepository, initialLayerState, MAX_SKIPPED, type ConversationState, type LayerState } from './state.js'
import { decideTrigger, rampThreshold, retryDelayMs, type TriggerReason } from './trigger.js'

/** Log sink (the host logger, or console in a script). Must not throw. */
export interface DistillLogger {
  debug(message: string): void
  info(message: string): void
  warn(message: string): void
}

/** Announced after an L1 commit. */
export interface MemoriesUpdatedEvent {
  readonly conversationId: string
  readonly workspace: string
  /** Ids of memories added as new. */
  readonly added: readonly string[]
  /** Replacements; `from` stays as history (`supersededBy` = `to`). */
  readonly replaced: readonly { readonly from: string; readonly to: string; readonly action: 'update' | 'merge' | 'supersede' }[]
  /** Candidates dropped as already known. */
  readonly skipped: number
  /** The L0 messages this slice covered. */
  readonly messageIds: readonly string[]
}

/** Announced after an L2 commit. */
export interface ScenesUpdatedEvent {
  readonly scope: 'global' | 'workspace'
  readonly workspace: string | null
  readonly created: readonly string[]
  readonly updated: readonly string[]
  readonly deleted: readonly string[]
}

/** Announced after an L3 commit. */
export interface PersonaUpdatedEvent {
  readonly scope: 'global' | 'workspace'
  readonly workspace: string | null
  readonly version: number
}

/** One L1 batch (slice) ended: the stage line of `memory.log` (counts and timing, no text). */
export interface BatchEndedEvent {
  readonly conversationId: string
  readonly reason: string
  /** `done`: memories committed; `skipped`: the reply stayed invalid, the slice was passed over; `failed`: retried later (or given up). */
  readonly outcome: 'done' | 'skipped' | 'failed'
  readonly messages: number
  readonly added: number
  readonly replaced: number
  readonly ms: number
}

/** Listeners of committed changes; called after the transaction, errors are caught. */
export interface DistillEventSink {
  batchEnded?(event: BatchEndedEvent): void
  memoriesUpdated?(event: MemoriesUpdatedEvent): void
  scenesUpdated?(event: ScenesUpdatedEvent): void
  personaUpdated?(event: PersonaUpdatedEvent): void
}

/** Dependencies of {@link Distiller}. */
export interface DistillerDeps {
  readonly store: MemoryStore
  /** One model call on one route (the host's `ctx.llm.stream` in the plugin). */
  readonly transport: ModelTransport
  readonly options: DistillOptions
  readonly clock?: Clock
  readonly logger?: DistillLogger
  /** The agent's route when the config pins none (`conversationId` given when known). */
  readonly defaultRoute?: (conversationId?: string) => ModelRoute | undefined
  readonly events?: DistillEventSink
  /** Whether a lease owner (`host:pid:id`) of another distiller still runs. Default: pid check on this host. */
  readonly isLeaseOwnerAlive?: (owner: string) => boolean
}

/** One conversation as the scheduler sees it. */
interface Live {
  workspace: string
  pending: number
  lastMessageAt: number
  running: boolean
  orphan: boolean
  stage: number
  notBefore: number
  loaded: boolean
  lastError: string | null
  /** Given up after `extract.maxAttempts` failures: not scheduled until a new message arrives. */
  gaveUp: boolean
}

/** `force` (from `runPending`): run even inside the layer's retry backoff. */
type Job = { kind: 'l1'; id: string; reason: TriggerReason | 'manual' } | { kind: 'l2' | 'l3'; key: string; force?: boolean }

/** A snapshot for status commands and tests. */
export interface DistillStatus {
  readonly closed: boolean
  readonly running: string | null
  readonly queued: readonly string[]
  readonly conversations: readonly {
    readonly id: string
    readonly pending: number
    readonly agentRunning: boolean
    readonly orphan: boolean
    readonly stage: number
    readonly nextThreshold: number
    readonly lastError: string | null
    /** Given up after `extract.maxAttempts` consecutive failures (a new message retries). */
    readonly gaveUp: boolean
  }[]
  /** Jobs finished / failed since start. */
  readonly counters: { readonly jobs: number; readonly failures: number; readonly memoriesWritten: number }
}

const SETTLE_MS = 50
/** Store-lease TTL of a running job; renewed every third of it while the job runs. */
const JOB_LEASE_TTL_MS = 30_000
/** Conversations updated this long before the previous scan are looked at again. */
const SCAN_MARGIN_MS = 10 * 60_000
const LIVE_INSTANCES = new Set<string>()

/** Delay before evaluating after an event, so a user message and its reply land in one slice. */
export const EVALUATE_DELAY_MS = SETTLE_MS

/** The background distiller. Construct, call {@link Distiller.start}, feed it events, {@link Distiller.close} it. */
export class Distiller {
  /** `host:pid:uuid`: the lease owner id of this instance. */
  readonly instanceId = `${hostname()}:${process.pid}:${randomUUID()}`
  readonly state: DistillStateRepository
  private readonly model: RoutedModel
  private readonly clock: Clock
  private options: DistillOptions
  private readonly lives = new Map<string, Live>()
  private readonly routes = new Map<string, ModelRoute>()
  private readonly queue: Job[] = []
  private readonly queued = new Set<string>()
  private current: Job | undefined
  private loop: Promise<void> | undefined
  private readonly abort = new AbortController()
  private evaluateTimer: (() => void) | undefined
  private wake: { at: number; cancel: () => void } | undefined
  private idleWaiters: (() => void)[] = []
  private closed = false
  private started: Promise<void> | undefined
  private readonly counters = { jobs: 0, failures: 0, memoriesWritten: 0 }
  private jobLease: HeldLease | undefined

  constructor(private readonly deps: DistillerDeps) {
    this.clock = deps.clock ?? systemClock
    this.options = deps.options
    this.state = new DistillStateRepository(deps.store)
    this.model = new RoutedModel({
      transport: deps.transport,
      options: deps.options,
      clock: this.clock,
      defaultRoute: (hint) => (hint ? this.routes.get(hint) : undefined) ?? this.safeDefaultRoute(hint),
      onAttempt: (entry) => this.state.recordCost(entry, this.options.tokenCost.retentionDays, this.clock.now()),
      onRouteFailure: (route, layer, error) => this.log('warn', `${layer} call on ${route.provider}/${route.model} failed: ${describeError(error)}`),
    })
    LIVE_INSTANCES.add(this.instanceId)
  }

  // ---------------------------------------------------------------------------------------
  // inputs

  /**
   * Resume persisted work: prune the ledger, then queue every conversation with undistilled
   * messages (they belong to no live agent of this process, so they are due at once) and
   * every scope whose L2/L3 counter is due. Never rejects.
   */
  start(): Promise<void> {
    this.started ??= this.guard('start', async () => {
      await this.state.pruneCosts(this.options.tokenCost.retentionDays, this.clock.now())
      if (this.options.extract.enabled) await this.resumeConversations()
      await this.queueDueLayers()
      this.kick()
    })
    return this.started
  }

  /** A message was captured (after its commit). */
  noteCaptured(message: { conversationId: string; workspace?: string }): void {
    if (this.closed || !this.options.extract.enabled || !message?.conversationId) return
    const live = this.live(message.conversationId)
    if (message.workspace) live.workspace = message.workspace
    live.gaveUp = false
    live.pending++
    live.lastMessageAt = this.clock.now()
    if (live.pending === 1) void this.guard('pending index', () => this.state.updatePending([message.conversationId], []))
    this.scheduleEvaluate()
  }

  /** The conversation's agent started or finished a turn in this process. */
  noteAgentStatus(conversationId: string, running: boolean, workspace?: string): void {
    if (this.closed || !conversationId) return
    const live = this.live(conversationId)
    live.running = running
    live.orphan = false
    if (workspace) live.workspace = workspace
    if (!running) this.scheduleEvaluate()
  }

  /** The conversation's agent left this process: its pending slice is due now. */
  noteAgentGone(conversationId: string): void {
    if (this.closed || !conversationId) return
    const live = this.lives.get(conversationId)
    if (!live) return
    live.running = false
    live.orphan = true
    this.scheduleEvaluate()
  }

  /** The route the conversation's agent uses (from the host's request context). */
  noteRoute(conversationId: string, route: ModelRoute): void {
    if (conversationId && route?.provider && route?.model) this.routes.set(conversationId, { provider: route.provider, model: route.model })
  }

  /**
   * Give due work of a conversation up to `budgetMs` to finish (a headless run exits after
   * its flush). Returns at once while that conversation's agent is mid-turn, so a flush
   * inside a turn is never slowed down. Never rejects; unfinished work stays persisted.
   */
  async settle(conversationId: string | undefined, budgetMs: number): Promise<void> {
    if (this.closed || budgetMs <= 0) return
    const live = conversationId ? this.lives.get(conversationId) : undefined
    if (live?.running) return
    let cancel: () => void = () => {}
    // The whole wait is bounded, including a start-up scan that is still running.
    const deadline = new Promise<void>((resolve) => {
      cancel = this.clock.setTimer(resolve, budgetMs)
    })
    const work = (async () => {
      await this.started
      await this.evaluateAll()
      if (this.busy) await this.waitIdle(budgetMs)
    })().catch((error: unknown) => this.log('warn', `settle failed: ${describeError(error)}`))
    try {
      await Promise.race([work, deadline])
    } finally {
      cancel()
    }
  }

  /**
   * Distill everything pending now, ignoring thresholds and backoff, and wait until the queue
   * is empty (for commands and tests). Never rejects.
   */
  async runPending(timeoutMs = 600_000): Promise<void> {
    if (this.closed) return
    await this.started
    await this.guard('runPending', async () => {
      await this.resumeConversations()
      for (const live of this.lives.values()) {
        live.notBefore = 0
        live.gaveUp = false
        if (live.pending > 0) live.orphan = true
      }
      await this.evaluateAll()
      await this.queueDueLayers(true)
      this.kick()
    })
    await this.waitIdle(timeoutMs)
  }

  /** Token-cost totals per (provider, model, layer). */
  costs(filter: LedgerFilter = {}): Promise<LedgerRow[]> {
    return this.state.costs(filter)
  }

  /**
   * Swap in new options (live settings). Routes, budgets and triggers apply from the next
   * job and the next captured message; a job in flight finishes with the options it started
   * with. Turning a layer off stops queuing it; turning it on picks up at the next trigger.
   */
  reconfigure(options: DistillOptions): void {
    this.options = options
    this.model.reconfigure(options)
  }

  /** What the distiller is doing. */
  status(): DistillStatus {
    return {
      closed: this.closed,
      running: this.current ? jobKey(this.current) : null,
      queued: this.queue.map(jobKey),
      conversations: [...this.lives.entries()].map(([id, live]) => ({
        id,
        pending: live.pending,
        agentRunning: live.running,
        orphan: live.orphan,
        stage: live.stage,
        nextThreshold: rampThreshold(live.stage, this.options.extract.minMessages),
        lastError: live.lastError,
        gaveUp: live.gaveUp,
      })),
      counters: { ...this.counters },
    }
  }

  /** True while a job runs or waits. */
  get busy(): boolean {
    return this.current !== undefined || this.queue.length > 0
  }

  /**
   * Stop: cancel timers and the running model call, wait (bounded) for the job to unwind.
   * Its slice stays pending and is redone by the next start. Idempotent.
   */
  async close(timeoutMs = 5_000): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.evaluateTimer?.()
    this.wake?.cancel()
    this.queue.length = 0
    this.queued.clear()
    this.abort.abort(new DistillError('aborted', 'distiller closed'))
    if (this.loop) await Promise.race([this.loop, sleep(timeoutMs)])
    LIVE_INSTANCES.delete(this.instanceId)
    this.flushIdleWaiters()
  }

  // ---------------------------------------------------------------------------------------
  // scheduling

  private live(conversationId: string): Live {
    let live = this.lives.get(conversationId)
    if (!live) {
      live = { workspace: '', pending: 0, lastMessageAt: this.clock.now(), running: false, orphan: false, stage: 0, notBefore: 0, loaded: false, lastError: null, gaveUp: false }
      this.lives.set(conversationId, live)
    }
    return live
  }

  private scheduleEvaluate(): void {
    if (this.evaluateTimer || this.closed) return
    this.evaluateTimer = this.clock.setTimer(() => {
      this.evaluateTimer = undefined
      void this.guard('evaluate', () => this.evaluateAll())
    }, SETTLE_MS)
  }

  private async evaluateAll(): Promise<void> {
    if (this.closed) return
    let wakeAt: number | undefined
    for (const [id, live] of this.lives) {
      if (live.pending <= 0 || live.gaveUp) continue
      if (!live.loaded) {
        const state = await this.state.conversation(id)
        live.stage = state.stage
        live.loaded = true
      }
      const decision = decideTrigger(
        { pending: live.pending, stage: live.stage, lastMessageAt: live.lastMessageAt, agentRunning: live.running, orphan: live.orphan, notBefore: live.notBefore },
        this.clock.now(),
        this.options.extract,
      )
      if (decision.due) this.enqueue({ kind: 'l1', id, reason: decision.reason })
      else if (decision.wakeAt !== undefined) wakeAt = Math.min(wakeAt ?? Infinity, decision.wakeAt)
    }
    if (wakeAt !== undefined) this.scheduleWake(wakeAt)
    this.kick()
  }

  private scheduleWake(at: number): void {
    if (this.closed) return
    if (this.wake && this.wake.at <= at) return
    this.wake?.cancel()
    const cancel = this.clock.setTimer(
      () => {
        this.wake = undefined
        void this.guard('wake', async () => {
          await this.evaluateAll()
          await this.queueDueLayers()
          this.kick()
        })
      },
      Math.max(0, at - this.clock.now()),
    )
    this.wake = { at, cancel }
  }

  private enqueue(job: Job): void {
    const key = jobKey(job)
    // The running job may be queued again: it re-reads the cursor, so new messages that
    // arrived while it ran are picked up and nothing runs twice on the same slice.
    if (this.closed) return
    if (this.queued.has(key)) {
      // A forced request (runPending) upgrades the job already waiting.
      if (job.kind !== 'l1' && job.force) for (const waiting of this.queue) if (waiting.kind === job.kind && waiting.key === job.key) waiting.force = true
      return
    }
    this.queued.add(key)
    this.queue.push(job)
  }

  private kick(): void {
    if (this.loop || this.closed || this.queue.length === 0) return
    this.loop = (async () => {
      while (!this.closed && this.queue.length > 0) {
        const job = this.queue.shift()!
        this.queued.delete(jobKey(job))
        this.current = job
        try {
          await this.runJob(job)
          this.counters.jobs++
        } catch (error) {
          // runJob handles its own failures; this is the last line of defence.
          this.counters.failures++
          this.log('warn', `${jobKey(job)} failed: ${describeError(error)}`)
        } finally {
          this.current = undefined
        }
      }
    })().finally(() => {
      this.loop = undefined
      if (!this.closed && this.queue.length > 0) this.kick()
      else this.flushIdleWaiters()
    })
  }

  private waitIdle(timeoutMs: number): Promise<void> {
    if (!this.busy) return Promise.resolve()
    return new Promise<void>((resolve) => {
      let cancel: () => void = () => {}
      const done = () => {
        cancel()
        resolve()
      }
      this.idleWaiters.push(done)
      cancel = this.clock.setTimer(() => {
        this.idleWaiters = this.idleWaiters.filter((waiter) => waiter !== done)
        resolve()
      }, timeoutMs)
    })
  }

  private flushIdleWaiters(): void {
    const waiters = this.idleWaiters
    this.idleWaiters = []
    for (const waiter of waiters) waiter()
  }

  private async resumeConversations(): Promise<void> {
    const ids = new Set(await this.state.pendingIds())
    // Conversations written while no distiller listened (or a crash between a capture and
    // the pending-index write) are found from the store itself: everything updated since
    // the previous scan (with a margin for clock skew between processes).
    const scanStarted = this.clock.now()
    const lastScan = await this.state.lastScan()
    const since = lastScan === undefined ? undefined : Math.max(0, lastScan - SCAN_MARGIN_MS)
    for (const conversation of await this.deps.store.conversations.list({ limit: 10_000, ...(since !== undefined ? { since } : {}) })) ids.add(conversation.id)
    const done: string[] = []
    for (const id of ids) {
      if (this.current?.kind === 'l1' && this.current.id === id) continue
      const state = await this.state.conversation(id)
      const pending = await this.deps.store.messages.list({ conversationId: id, ...afterCursor(state.cursorSeq), limit: this.options.extract.maxBatchMessages + 1 })
      const existing = this.lives.get(id)
      if (pending.length === 0) {
        if (!existing?.pending) done.push(id)
        continue
      }
      const conversation = await this.deps.store.conversations.get(id)
      const live = this.live(id)
      live.pending = Math.max(live.pending, pending.length)
      live.lastMessageAt = pending[pending.length - 1]!.createdAt
      live.stage = state.stage
      live.loaded = true
      live.lastError = state.lastError
      // Given up stays given up until the conversation changes (a new message) after that moment.
      const changedAt = Math.max(pending[pending.length - 1]!.createdAt, conversation?.updatedAt ?? 0)
      live.gaveUp = state.gaveUpAt !== null && changedAt <= state.gaveUpAt
      if (!existing || (!existing.running && existing.pending === 0)) live.orphan = true
      if (conversation?.workspace) live.workspace = conversation.workspace
    }
    if (done.length > 0) await this.state.updatePending([], done)
    await this.state.markScan(scanStarted)
    await this.evaluateAll()
  }

  private async queueDueLayers(force = false): Promise<void> {
    if (!this.options.l2.enabled && !this.options.l3.enabled) return
    const layers = await this.state.layers()
    const now = this.clock.now()
    let wakeAt: number | undefined
    for (const [key, state] of Object.entries(layers)) {
      if (!force && state.notBefore > now) {
        wakeAt = Math.min(wakeAt ?? Infinity, state.notBefore)
        continue
      }
      if (this.options.l2.enabled && state.sinceL2 >= this.options.l2.minNewMemories) this.enqueue({ kind: 'l2', key, force })
      if (this.options.l3.enabled && state.sinceL3 >= this.options.l3.interval) this.enqueue({ kind: 'l3', key, force })
    }
    if (wakeAt !== undefined) this.scheduleWake(wakeAt)
  }

  // ---------------------------------------------------------------------------------------
  // jobs

  private async runJob(job: Job): Promise<void> {
    if (job.kind === 'l1') {
      // A job queued while the same slice was failing (a message captured during the call)
      // must not retry at once: the failure set a backoff after the job was queued.
      // `runPending` clears the backoff before it queues, so forced work still runs.
      const live = this.live(job.id)
      if (live.notBefore > this.clock.now()) {
        this.scheduleWake(live.notBefore)
        return
      }
    }
    // A store lease per job (heartbeat, stale takeover) whose fencing token every commit of
    // the job names: a distiller that stalled past its lease cannot write after another took over.
    const lease = await this.acquireJobLease(job)
    if (lease === 'busy') {
      this.log('debug', `${jobKey(job)} is being run by another process`)
      if (job.kind === 'l1') {
        const live = this.live(job.id)
        live.notBefore = this.clock.now() + 60_000
        this.scheduleWake(live.notBefore)
      }
      return
    }
    this.jobLease = lease
    try {
      if (job.kind === 'l1') return await this.runExtraction(job.id, job.reason)
      if (job.kind === 'l2') return await this.runLayer(job.key, 'l2', job.force)
      return await this.runLayer(job.key, 'l3', job.force)
    } finally {
      this.jobLease = undefined
      await lease?.release()
    }
  }

  /** The store lease of a job, `undefined` when the store has no leases, `'busy'` when another live holder has it. */
  private async acquireJobLease(job: Job): Promise<HeldLease | undefined | 'busy'> {
    const store = this.writeStore()
    if (!isCoordinatedStore(store)) return undefined
    const name = `distill/${job.kind}/${createHash('sha256').update(job.kind === 'l1' ? job.id : job.key).digest('hex').slice(0, 32)}`
    const held = await holdLease(store, name, this.instanceId, {
      ttlMs: JOB_LEASE_TTL_MS,
      actor: 'distill',
      isHolderStale: (holder) => !this.isOwnerAlive(holder),
      onLost: () => this.log('warn', `${jobKey(job)}: its lease was taken over by another process; this job's writes will be refused`),
    })
    return held ?? 'busy'
  }

  /** Transaction options naming the running job's lease, so a stale job's commit is refused. */
  private fenced(): { fence?: { name: string; token: number } } {
    return this.jobLease ? { fence: this.jobLease.fence } : {}
  }

  /**
   * The store to commit through: the coordinated store behind a service wrapper (the
   * `ctx.memoryStore` service does not pass transaction options on), else the given one.
   */
  private writeStore(): MemoryStore {
    const store = this.deps.store
    if (isCoordinatedStore(store)) return store
    const inner = (store as { store?: unknown }).store
    return isCoordinatedStore(inner) ? inner : store
  }

  private get leaseMs(): number {
    return this.options.llm.timeoutMs * 6 + 60_000
  }

  private async runExtraction(conversationId: string, reason: TriggerReason | 'manual'): Promise<void> {
    const live = this.live(conversationId)
    const owner = this.instanceId
    const claimed = await this.state.claim(conversationId, owner, this.clock.now(), this.leaseMs, (other) => this.isOwnerAlive(other))
    if (!claimed) {
      this.log('debug', `conversation ${conversationId} is being distilled by another process`)
      live.notBefore = this.clock.now() + 60_000
      this.scheduleWake(live.notBefore)
      return
    }
    let slice: Message[] = []
    const started = this.clock.now()
    let reported = false
    // Once per batch: a failure after the commit (the next layers) is not this batch's outcome.
    const ended = (outcome: BatchEndedEvent['outcome'], added = 0, replaced = 0) => {
      if (!reported) this.emit('batchEnded', { conversationId, reason, outcome, messages: slice.length, added, replaced, ms: this.clock.now() - started })
      reported = true
    }
    try {
      const conversation = await this.deps.store.conversations.get(conversationId)
      const workspace = conversation?.workspace || live.workspace
      const batch = await this.deps.store.messages.list({ conversationId, ...afterCursor(claimed.cursorSeq), limit: this.options.extract.maxBatchMessages })
      slice = fitSlice(batch, this.options.llm.maxInputChars - L1_SYSTEM.length - 4_000)
      if (slice.length === 0) {
        await this.state.release(conversationId, owner)
        await this.state.updatePending([], [conversationId])
        live.pending = 0
        return
      }
      const context = await this.contextBefore(conversationId, slice[0]!, claimed.cursorSeq)
      const built = buildExtractionPrompt({ workspace, context, slice, budgetChars: this.options.llm.maxInputChars - L1_SYSTEM.length - 4_000 })
      this.log('debug', `l1 ${conversationId}: ${slice.length} messages (${reason}), ${context.length} context`)

      const extraction = await this.askJson('l1', L1_SYSTEM, built.prompt, conversationId, (value) => validateExtraction(value, built.aliases))
      if (!extraction.ok) {
        await this.commitSkip(conversationId, claimed, slice, extraction.error)
        ended('skipped')
        return
      }
      const candidates = await this.placeCandidates(extraction.items, workspace, conversationId)
      const { decisions, existing } = await this.decideDuplicates(candidates, conversationId)
      const ops = planMemoryOps(candidates, decisions, existing)

      let applied: AppliedMemoryOps | undefined
      await this.writeStore().transaction(async (tx) => {
        const current = await this.state.conversation(conversationId, tx.meta)
        if (current.cursorSeq !== claimed.cursorSeq || current.lease?.owner !== owner) {
          throw new DistillError('conflict', `conversation ${conversationId} moved on while it was being distilled`)
        }
        applied = await applyMemoryOps(tx, candidates, ops, { conversationId, layer: 'l1' })
        await this.state.putConversation(
          { ...current, cursorSeq: slice[slice.length - 1]!.seq, stage: current.stage + 1, attempts: 0, notBefore: 0, lastError: null, lastRunAt: this.clock.now(), gaveUpAt: null, lease: null },
          tx.meta,
        )
        if (applied.written.length > 0) await this.countNewMemories(applied.written, tx)
      }, this.fenced())
      const result = applied!
      this.counters.memoriesWritten += result.written.length
      live.stage = claimed.stage + 1
      live.notBefore = 0
      live.lastError = null
      this.log('info', `l1 ${conversationId}: ${slice.length} messages → ${result.added.length} added, ${result.replaced.length} replaced, ${result.skipped} skipped`)
      this.emit('memoriesUpdated', {
        conversationId,
        workspace,
        added: result.added.map((memory) => memory.id),
        replaced: result.replaced,
        skipped: result.skipped,
        messageIds: slice.map((message) => message.id),
      })
      ended('done', result.added.length, result.replaced.length)
      await this.afterSlice(conversationId, slice[slice.length - 1]!.seq)
      if (result.written.length > 0) await this.queueDueLayers()
    } catch (error) {
      if (slice.length > 0) ended('failed')
      await this.failSlice(conversationId, error)
    }
  }

  /** The `backgroundMessages` messages before the slice (already distilled), oldest first. */
  private async contextBefore(conversationId: string, first: Message, cursorSeq: number): Promise<Message[]> {
    const wanted = this.options.extract.backgroundMessages
    if (wanted <= 0 || cursorSeq < 0) return []
    const before = await this.deps.store.messages.list({ conversationId, until: first.createdAt, order: 'desc', limit: wanted + 20 })
    return before
      .filter((message) => message.seq <= cursorSeq)
      .slice(0, wanted)
      .reverse()
  }

  /**
   * Ask for JSON and validate it; on a parse or schema failure ask once more with the error.
   * Model outages propagate (the caller retries the slice later).
   */
  private async askJson<T>(
    layer: DistillLayer,
    system: string,
    prompt: string,
    conversationId: string | undefined,
    validate: (value: unknown) => { ok: true; items: readonly T[]; rejected: readonly { index: number; reason: string }[] } | { ok: false; error: string },
  ): Promise<{ ok: true; items: readonly T[] } | { ok: false; error: string }> {
    let error = ''
    for (let attempt = 0; attempt < 2; attempt++) {
      const reply = await this.model.complete(layer, { system, prompt: attempt === 0 ? prompt : prompt + retryNote(error) }, this.abort.signal, conversationId)
      const parsed = parseModelJson(reply.text, 'object')
      if (!parsed.ok) {
        error = parsed.error
      } else {
        if (parsed.repairs.length) this.log('debug', `${layer} reply repaired (${parsed.repairs.join(', ')})`)
        const validated = validate(parsed.value)
        if (validated.ok) {
          if (validated.rejected.length) {
            this.log('warn', `${layer}: dropped ${validated.rejected.length} invalid item(s) from the model reply (${validated.rejected[0]!.reason})`)
          }
          return { ok: true, items: validated.items }
        }
        error = validated.error
      }
      this.log('warn', `${layer}: invalid model reply (${error})${attempt === 0 ? ', asking once more' : ''}`)
    }
    return { ok: false, error }
  }

  private async placeCandidates(items: readonly ExtractedMemory[], workspace: string, conversationId: string): Promise<PlacedCandidate[]> {
    const pool = this.options.extract.candidatePool
    const out: PlacedCandidate[] = []
    for (const memory of items) {
      const placement = placeMemory(memory.scope, workspace, conversationId)
      const similar =
        pool > 0 ? (await this.deps.store.search.memories(memory.text, { ...sameScopeFilter(placement), limit: pool })).map((hit) => hit.memory) : []
      out.push({ memory, placement, similar })
    }
    return out
  }

  /**
   * One dedup call for every candidate that has similar memories (none when nothing is
   * similar or an exact duplicate settles it). An invalid reply, twice, means "add all".
   */
  private async decideDuplicates(
    candidates: readonly PlacedCandidate[],
    conversationId: string,
  ): Promise<{ decisions: DedupDecision[] | undefined; existing: Map<string, string> }> {
    const asked = candidates.map((candidate, index) => ({ candidate, index })).filter(({ candidate }) => candidate.similar.length > 0 && !exactDuplicate(candidate))
    if (asked.length === 0) return { decisions: undefined, existing: new Map() }
    const built = buildDedupPrompt(asked.map(({ candidate }) => ({ kind: candidate.memory.kind, scope: candidate.placement.scope, text: candidate.memory.text, similar: candidate.similar })))
    const result = await this.askJson('dedup', DEDUP_SYSTEM, built.prompt, conversationId, (value) => validateDedupDecisions(value, built.pools))
    const existing = new Map<string, string>()
    for (const [alias, id] of built.aliases) if (alias.startsWith('e')) existing.set(alias, id)
    if (!result.ok) {
      this.log('warn', `dedup gave no usable decisions (${result.error}); adding the ${asked.length} candidate(s) as new`)
      return { decisions: undefined, existing }
    }
    // Decisions name candidates by their position in the dedup prompt; map back to the batch.
    const decisions = result.items.map((decision) => {
      const position = Number(decision.id.slice(1)) - 1
      return { ...decision, id: `n${asked[position]!.index + 1}` }
    })
    return { decisions, existing }
  }

  private async commitSkip(conversationId: string, claimed: ConversationState, slice: readonly Message[], error: string): Promise<void> {
    const live = this.live(conversationId)
    await this.writeStore().transaction(async (tx) => {
      const current = await this.state.conversation(conversationId, tx.meta)
      if (current.cursorSeq !== claimed.cursorSeq || current.lease?.owner !== this.instanceId) {
        throw new DistillError('conflict', `conversation ${conversationId} moved on while it was being distilled`)
      }
      const skipped = [...current.skipped, { fromSeq: slice[0]!.seq, toSeq: slice[slice.length - 1]!.seq, at: this.clock.now(), reason: error.slice(0, 300) }].slice(-MAX_SKIPPED)
      await this.state.putConversation(
        { ...current, cursorSeq: slice[slice.length - 1]!.seq, stage: current.stage + 1, attempts: 0, notBefore: 0, lastError: `skipped: ${error}`.slice(0, 500), lastRunAt: this.clock.now(), gaveUpAt: null, skipped, lease: null },
        tx.meta,
      )
    }, this.fenced())
    live.stage = claimed.stage + 1
    live.lastError = `skipped: ${error}`
    this.counters.failures++
    this.log('warn', `l1 ${conversationId}: gave up on messages seq ${slice[0]!.seq}..${slice[slice.length - 1]!.seq} after two invalid replies (${error}); the L0 messages stay stored`)
    await this.afterSlice(conversationId, slice[slice.length - 1]!.seq)
  }

  /** Recount what is left after a commit and decide the next step. */
  private async afterSlice(conversationId: string, lastSeq: number): Promise<void> {
    const live = this.live(conversationId)
    const rest = await this.deps.store.messages.list({ conversationId, ...afterCursor(lastSeq), limit: this.options.extract.maxBatchMessages + 1 })
    live.pending = rest.length
    if (rest.length === 0) {
      await this.state.updatePending([], [conversationId])
      if (live.orphan) this.lives.delete(conversationId)
    } else {
      live.lastMessageAt = Math.max(live.lastMessageAt, rest[rest.length - 1]!.createdAt)
      await this.evaluateAll()
    }
  }

  private async failSlice(conversationId: string, error: unknown): Promise<void> {
    const live = this.live(conversationId)
    if (isDistillError(error, 'aborted') || this.closed) {
      await this.guard('release', () => this.state.release(conversationId, this.instanceId))
      return
    }
    this.counters.failures++
    const message = describeError(error).slice(0, 500)
    // A fenced commit means another process took the job over: redo, no backoff.
    const conflict = isDistillError(error, 'conflict') || isMemoryStoreError(error, 'fenced')
    const attempts = conflict ? 0 : (await this.guard('read state', () => this.state.conversation(conversationId)))?.attempts ?? 0
    // Bounded: after maxAttempts consecutive failures the conversation waits for a new message.
    const giveUp = !conflict && attempts + 1 >= this.options.extract.maxAttempts
    const notBefore = conflict || giveUp ? 0 : this.clock.now() + retryDelayMs(attempts + 1)
    const patch = conflict ? {} : { attempts: attempts + 1, notBefore, lastError: message, gaveUpAt: giveUp ? this.clock.now() : null }
    await this.guard('release', () => this.state.release(conversationId, this.instanceId, patch))
    live.notBefore = notBefore
    live.lastError = message
    live.gaveUp = giveUp
    const outcome = conflict
      ? 'conflict, will redo'
      : giveUp
        ? `failed (attempt ${attempts + 1}), given up until a new message arrives`
        : `failed (attempt ${attempts + 1}), retry after ${Math.round((notBefore - this.clock.now()) / 1000)} s`
    this.log('warn', `l1 ${conversationId}: ${outcome}: ${message}`)
    if (conflict) await this.guard('resume', () => this.resumeConversations())
    else if (!giveUp) this.scheduleWake(notBefore)
  }

  /** Add new memories to the L2/L3 counters of their scope (inside the commit transaction). */
  private async countNewMemories(memories: readonly Memory[], tx: MemoryStore): Promise<void> {
    const keys = new Map<string, number>()
    for (const memory of memories) {
      if (memory.scope === 'session') continue
      const key = layerKey({ scope: memory.scope, workspace: memory.workspace })
      keys.set(key, (keys.get(key) ?? 0) + 1)
    }
    if (keys.size === 0) return
    await this.state.updateLayers((all) => {
      for (const [key, count] of keys) {
        const prev = all[key] ?? initialLayerState()
        all[key] = { ...prev, sinceL2: prev.sinceL2 + count, sinceL3: prev.sinceL3 + count }
      }
    }, tx.meta)
  }

  private async runLayer(key: string, layer: 'l2' | 'l3', force = false): Promise<void> {
    const scope = parseLayerKey(key)
    if (!scope) {
      await this.state.updateLayers((all) => void delete all[key])
      return
    }
    const before = (await this.state.layers())[key]
    if (!before) return
    // Queued before a failure of the same scope set its backoff: wait for it (see runJob).
    if (!force && before.notBefore > this.clock.now()) {
      this.scheduleWake(before.notBefore)
      return
    }
    const threshold = layer === 'l2' ? this.options.l2.minNewMemories : this.options.l3.interval
    if ((layer === 'l2' ? before.sinceL2 : before.sinceL3) < threshold) return
    try {
      if (layer === 'l2') await this.runScenes(key, scope, before)
      else await this.runPersona(key, scope, before)
    } catch (error) {
      if (isDistillError(error, 'aborted') || this.closed) return
      this.counters.failures++
      const message = describeError(error).slice(0, 500)
      const attempts = before.attempts + 1
      const notBefore = this.clock.now() + retryDelayMs(attempts)
      await this.guard('layer state', () =>
        this.state.updateLayers((all) => {
          all[key] = { ...(all[key] ?? initialLayerState()), attempts, notBefore, lastError: message }
        }),
      )
      this.log('warn', `${layer} ${key}: failed (attempt ${attempts}): ${message}`)
      this.scheduleWake(notBefore)
    }
  }

  private scopeFilter(scope: SceneScope): MemoryScopeFilter {
    return scope.scope === 'global' ? { scope: 'global' } : { scope: 'workspace', workspace: scope.workspace!, includeGlobal: false }
  }

  private sceneFilter(scope: SceneScope): { scope: 'global' } | { scope: 'workspace'; workspace: string; includeGlobal: false } {
    return scope.scope === 'global' ? { scope: 'global' } : { scope: 'workspace', workspace: scope.workspace!, includeGlobal: false }
  }

  private async runScenes(key: string, scope: SceneScope, before: LayerState): Promise<void> {
    const memories = (await this.deps.store.memories.list({ ...this.scopeFilter(scope), since: before.lastL2At + 1, orderBy: 'created', limit: 60 })).reverse()
    const newest = memories.reduce((max, memory) => Math.max(max, memory.createdAt), before.lastL2At)
    if (memories.length === 0) {
      await this.resetLayer(key, 'l2', before, newest, undefined)
      return
    }
    const scenes = await this.deps.store.scenes.list({ ...this.sceneFilter(scope), limit: 1_000 })
    const { context, others } = relatedScenes(scenes, memories, this.options.l2.sceneContextLimit)
    const built = buildScenePrompt({ memories, contextScenes: context, otherScenes: others, maxScenes: this.options.l2.maxScenes })
    const reply = await this.askJson('l2', l2System(this.options.l2.maxScenes), built.prompt, undefined, (value) => validateSceneOps(value, built.sceneAliases, built.memoryAliases))
    if (!reply.ok) {
      this.log('warn', `l2 ${key}: gave up on this pass after two invalid replies (${reply.error})`)
      await this.resetLayer(key, 'l2', before, newest, undefined)
      return
    }
    let changes: Awaited<ReturnType<typeof applySceneOps>> | undefined
    await this.writeStore().transaction(async (tx) => {
      const current = (await this.state.layers(tx.meta))[key]
      if (!current || current.lastL2At !== before.lastL2At) throw new DistillError('conflict', `scenes of ${key} changed during the pass`)
      changes = await applySceneOps(tx, reply.items, built.sceneAliases, built.memoryAliases, scope, scenes.length, this.options.l2.maxScenes)
      await this.resetLayer(key, 'l2', current, newest, tx)
    }, this.fenced())
    const applied = changes!
    if (applied.refused.length) this.log('warn', `l2 ${key}: refused ${applied.refused.length} op(s) (${applied.refused[0]!.reason})`)
    this.log('info', `l2 ${key}: ${applied.created.length} created, ${applied.updated.length} updated, ${applied.deleted.length} deleted`)
    this.emit('scenesUpdated', {
      scope: scope.scope,
      workspace: scope.workspace,
      created: applied.created.map((scene) => scene.id),
      updated: applied.updated.map((scene) => scene.id),
      deleted: [...applied.deleted],
    })
  }

  private async runPersona(key: string, scope: SceneScope, before: LayerState): Promise<void> {
    const memories = (await this.deps.store.memories.list({ ...this.scopeFilter(scope), since: before.lastL3At + 1, orderBy: 'created', limit: 40 })).reverse()
    const newest = memories.reduce((max, memory) => Math.max(max, memory.createdAt), before.lastL3At)
    if (memories.length === 0) {
      await this.resetLayer(key, 'l3', before, newest, undefined)
      return
    }
    const personaKey = { scope: scope.scope, workspace: scope.workspace }
    const current = await this.deps.store.persona.get(personaKey)
    const scenes: Scene[] = await this.deps.store.scenes.list({ ...this.sceneFilter(scope), limit: this.options.l2.maxScenes })
    const prompt = buildPersonaPrompt({ scopeLabel: scope.scope === 'global' ? 'global' : `workspace ${scope.workspace}`, current: current?.text, scenes, memories })
    let text: string | undefined
    let error = ''
    for (let attempt = 0; attempt < 2 && text === undefined; attempt++) {
      const reply = await this.model.complete('l3', { system: L3_SYSTEM, prompt: attempt === 0 ? prompt : `${prompt}\n\n(Your previous reply was rejected: ${error}. Reply with the markdown persona only.)` }, this.abort.signal)
      const checked = validatePersonaText(reply.text)
      if (checked.ok) text = checked.text
      else error = checked.error
    }
    if (text === undefined) {
      this.log('warn', `l3 ${key}: gave up on this pass after two invalid replies (${error})`)
      await this.resetLayer(key, 'l3', before, newest, undefined)
      return
    }
    let version = 0
    await this.writeStore().transaction(async (tx) => {
      const state = (await this.state.layers(tx.meta))[key]
      if (!state || state.lastL3At !== before.lastL3At) throw new DistillError('conflict', `persona of ${key} changed during the pass`)
      const saved = await tx.persona.put({ ...personaKey, text: text!, expectedVersion: current?.version ?? 0 }, { actor: 'distill' })
      version = saved.version
      await this.resetLayer(key, 'l3', state, newest, tx)
    }, this.fenced())
    this.log('info', `l3 ${key}: persona version ${version}`)
    this.emit('personaUpdated', { scope: scope.scope, workspace: scope.workspace, version })
  }

  /** Counter back to what arrived after the pass, watermark forward, failure state cleared. */
  private async resetLayer(key: string, layer: 'l2' | 'l3', seen: LayerState, newest: number, tx: MemoryStore | undefined): Promise<void> {
    const update = (all: Record<string, LayerState>) => {
      const current = all[key] ?? initialLayerState()
      // Memories counted after `seen` was read belong to the next pass.
      const arrived = layer === 'l2' ? Math.max(0, current.sinceL2 - seen.sinceL2) : Math.max(0, current.sinceL3 - seen.sinceL3)
      all[key] =
        layer === 'l2'
          ? { ...current, sinceL2: arrived, lastL2At: newest, attempts: 0, notBefore: 0, lastError: null }
          : { ...current, sinceL3: arrived, lastL3At: newest, attempts: 0, notBefore: 0, lastError: null }
    }
    await this.state.updateLayers(update, tx?.meta)
  }

  // ---------------------------------------------------------------------------------------
  // helpers

  private isOwnerAlive(owner: string): boolean {
    if (this.deps.isLeaseOwnerAlive) return this.deps.isLeaseOwnerAlive(owner)
    return defaultIsLeaseOwnerAlive(owner)
  }

  private safeDefaultRoute(hint?: string): ModelRoute | undefined {
    try {
      return this.deps.defaultRoute?.(hint)
    } catch (error) {
      this.log('warn', `default route lookup failed: ${describeError(error)}`)
      return undefined
    }
  }

  private emit<K extends keyof DistillEventSink>(kind: K, event: Parameters<NonNullable<DistillEventSink[K]>>[0]): void {
    try {
      ;(this.deps.events?.[kind] as ((event: unknown) => void) | undefined)?.(event)
    } catch (error) {
      this.log('warn', `a ${kind} listener failed: ${describeError(error)}`)
    }
  }

  private log(level: keyof DistillLogger, message: string): void {
    try {
      this.deps.logger?.[level](message)
    } catch {
      // a broken logger must not break distillation
    }
  }

  private async guard<T>(what: string, fn: () => Promise<T>): Promise<T | undefined> {
    try {
      return await fn()
    } catch (error) {
      if (!this.closed) this.log('warn', `${what} failed: ${describeError(error)}`)
      return undefined
    }
  }
}

/** The message filter for "after the cursor" (-1 = from the start; the store wants seq >= 0). */
function afterCursor(cursorSeq: number): { afterSeq?: number } {
  return cursorSeq >= 0 ? { afterSeq: cursorSeq } : {}
}

/** Key of a job (dedup in the queue, status output). */
function jobKey(job: Job): string {
  return job.kind === 'l1' ? `l1:${job.id}` : `${job.kind}:${job.key}`
}

/**
 * The longest prefix of `messages` whose text fits `budgetChars` (at least one message, which
 * the prompt builder cuts to fit).
 */
export function fitSlice(messages: readonly Message[], budgetChars: number): Message[] {
  const out: Message[] = []
  let used = 0
  for (const message of messages) {
    used += message.text.length + 16
    if (out.length > 0 && used > budgetChars) break
    out.push(message)
  }
  return out
}

/**
 * Default lease-owner liveness: an owner in this process is alive while its distiller is open;
 * one on this host while its pid exists; one on another host until its lease expires.
 */
export function defaultIsLeaseOwnerAlive(owner: string): boolean {
  const [host, pidText] = owner.split(':')
  if (host !== hostname()) return true
  const pid = Number(pidText)
  if (!Number.isInteger(pid) || pid <= 0) return false
  if (pid === process.pid) return LIVE_INSTANCES.has(owner)
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms)
    timer.unref?.()
  })
}
