/**
 * The distiller's scheduler: decides when a conversation's pending slice is due, queues L1
 * extraction (l1-extraction.ts) and then L2 scenes and L3 persona (layer-jobs.ts) when their
 * counters say so, and runs one job at a time in the background. It never throws into its
 * caller: failures are logged, persisted with a backoff and retried; a restart resumes every
 * pending slice from the persisted cursor.
 */
import { createHash, randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import { type HeldLease, holdLease, isCoordinatedStore, type MemoryStore } from '@dsh-memory/store'
import { type Clock, systemClock } from './clock.js'
import { DistillError, describeError } from './errors.js'
import type { DistillerDeps, DistillEventSink, DistillLogger, DistillStatus, Job, JobContext, Live } from './job-context.js'
import { afterCursor, ExtractionJob } from './l1-extraction.js'
import { LayerJobs } from './layer-jobs.js'
import type { LedgerFilter, LedgerRow } from './ledger.js'
import { defaultIsLeaseOwnerAlive, LIVE_INSTANCES } from './liveness.js'
import { RoutedModel } from './model.js'
import type { DistillOptions, ModelRoute } from './options.js'
import { adoptUnattributedGlobal, parseLayerKey, runsLayer } from './scenes.js'
import { DistillStateRepository } from './state.js'
import { decideTrigger, rampThreshold } from './trigger.js'

export type {
  BatchEndedEvent,
  DistillerDeps,
  DistillEventSink,
  DistillLogger,
  DistillStatus,
  MemoriesUpdatedEvent,
  PersonaUpdatedEvent,
  ScenesUpdatedEvent,
} from './job-context.js'
export { fitSlice } from './l1-extraction.js'
export { defaultIsLeaseOwnerAlive } from './liveness.js'

const SETTLE_MS = 50
/** Store-lease TTL of a running job; renewed every third of it while the job runs. */
const JOB_LEASE_TTL_MS = 30_000
/** Conversations updated this long before the previous scan are looked at again. */
const SCAN_MARGIN_MS = 10 * 60_000

/** Delay before evaluating after an event, so a user message and its reply land in one slice. */
export const EVALUATE_DELAY_MS = SETTLE_MS


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
  private readonly extraction: ExtractionJob
  private readonly layerJobs: LayerJobs

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
    const jobs = this.jobContext()
    this.extraction = new ExtractionJob(jobs)
    this.layerJobs = new LayerJobs(jobs)
  }

  /** The view of this scheduler its jobs get (getters: options and `closed` change over time). */
  private jobContext(): JobContext {
    // The getters read the live fields: options and `closed` change after construction.
    const self = this
    return {
      store: this.deps.store,
      state: this.state,
      model: this.model,
      clock: this.clock,
      instanceId: this.instanceId,
      signal: this.abort.signal,
      counters: this.counters,
      get options() {
        return self.options
      },
      get closed() {
        return self.closed
      },
      get leaseMs() {
        return self.leaseMs
      },
      live: (id) => this.live(id),
      forget: (id) => void this.lives.delete(id),
      writeStore: () => this.writeStore(),
      fenced: () => this.fenced(),
      isOwnerAlive: (owner) => this.isOwnerAlive(owner),
      scheduleWake: (at) => this.scheduleWake(at),
      evaluateAll: () => this.evaluateAll(),
      queueDueLayers: () => this.queueDueLayers(),
      resumeConversations: () => this.resumeConversations(),
      log: (level, message) => this.log(level, message),
      emit: (kind, event) => this.emit(kind, event),
      guard: (what, fn) => this.guard(what, fn),
    }
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
      // Another user's conversation (a team database) is distilled by that user's host: this
      // host would write its global memories as its own user, private to the wrong person.
      if (conversation?.createdBy && conversation.createdBy !== this.deps.store.user && !existing) continue
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
    const user = this.deps.store.user
    let layers = await this.state.layers()
    if ('global' in layers) layers = await this.state.updateLayers((all) => void adoptUnattributedGlobal(all, user))
    const now = this.clock.now()
    let wakeAt: number | undefined
    for (const [key, state] of Object.entries(layers)) {
      const owner = parseLayerKey(key)
      // Another user's global layer: that user's host runs it.
      if (owner && !runsLayer(owner, user)) continue
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
      if (job.kind === 'l1') return await this.extraction.run(job.id, job.reason)
      return await this.layerJobs.run(job.key, job.kind, job.force)
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

/** Key of a job (dedup in the queue, status output). */
function jobKey(job: Job): string {
  return job.kind === 'l1' ? `l1:${job.id}` : `${job.kind}:${job.key}`
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms)
    timer.unref?.()
  })
}
