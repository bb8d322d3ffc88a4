/**
 * The cue bank engine: the write side (cues and idioms at the end of each turn) and the wake
 * side (topic-switch detection and the block to inject), over a {@link CueRepository}.
 *
 * It knows nothing about the host. The adapter feeds it user messages as the agent claims
 * them, finished turns, and asks it for the prepared block when the prompt is assembled; the
 * block is computed when the message arrives, so reading it is synchronous and instant.
 */
import { redactSecrets, type MessageRepository } from '@dsh-memory/store'
import { BackgroundWork } from '@dsh-memory/store/kit'
import {
  partitionKey,
  type CueBankDependencies,
  type CueBankHooks,
  type CueListFilter,
  type CueWrittenEvent,
  type OpenedCue,
  type SessionRef,
  type TurnMessage,
  type TurnRecord,
  type WakeDecision,
} from './cue-bank-contract.js'
import type { Embedder } from './embedding.js'
import { CueBankError, isCueBankError } from './errors.js'
import { draftTurn, embeddingText, MAX_EXTRACT_CHARS, writeTurnCues } from './formation.js'
import { candidateTerms, extractKeywords, type Keyword } from './keywords.js'
import { isTopicSwitch, topicOverlap } from './matching.js'
import type { Cue, Idiom } from './model.js'
import { assertLiveChange, type ResolvedCueBankOptions } from './options.js'
import type { CueRepository } from './store-cue-repository.js'
import { decideWake, describeWake, isWakeable } from './wake.js'

/** Cues lacking a vector that are embedded along with each write. */
const BACKFILL_PER_WRITE = 4
const BUSY_RETRIES = [50, 100, 200, 400, 800, 1600]

interface PendingVector {
  readonly messageId: string
  promise: Promise<void>
  settled: boolean
}

interface SessionState {
  readonly partition: string
  readonly reads: readonly string[]
  /** Keywords of the previous user turn (the topic reference). */
  previous: readonly Keyword[] | undefined
  /** The turn that opened the current topic segment. */
  segmentStart: number
  /** Turns up to this one were compacted away: their own conversation cues may wake again. */
  compactedThrough: number
  /** The block currently served. */
  text: string
  decision: WakeDecision | undefined
  /** Whether the current decision's hits were recorded. */
  finalized: boolean
  pending: PendingVector | undefined
}

/** The cue bank. Construct one per repository; `close()` when done. */
export class CueBank {
  #options: ResolvedCueBankOptions
  readonly #repository: CueRepository
  readonly #now: () => number
  readonly #embedder: Embedder | null
  readonly #messages: Pick<MessageRepository, 'getByHostId'> | undefined
  readonly #hooks: CueBankHooks
  readonly #openTool: () => string | undefined
  readonly #sessions = new Map<string, SessionState>()
  #queue: Promise<unknown> = Promise.resolve()
  readonly #background = new BackgroundWork()
  #closed = false
  #closing: Promise<void> | undefined

  constructor(dependencies: CueBankDependencies) {
    this.#repository = dependencies.repository
    this.#options = dependencies.options
    this.#now = dependencies.now ?? Date.now
    this.#embedder = dependencies.options.vectorAvailable ? (dependencies.embedder ?? null) : null
    this.#messages = dependencies.messages
    this.#hooks = dependencies.hooks ?? {}
    this.#openTool = dependencies.openTool ?? (() => undefined)
  }

  /** The options in force (read anew by every decision, so {@link reconfigure} applies at the next message). */
  get options(): ResolvedCueBankOptions {
    return this.#options
  }

  /**
   * Put new options in force from the next message and turn (live settings). The embedding
   * client, the partition and the block's place among the runtime contexts were fixed at
   * start: changes of `embedding`, `matchMode`, `partition`, `userId` and `inject.order` are
   * refused here, so a caller cannot believe they applied.
   * @throws CueBankError `invalid-config` naming the first such field.
   */
  reconfigure(options: ResolvedCueBankOptions): void {
    this.assertLive(options)
    this.#options = options
  }

  /**
   * Whether {@link reconfigure} would take `options` (only live fields differ from those in force).
   * @throws CueBankError `invalid-config` naming the first field that applies only at start.
   */
  assertLive(options: ResolvedCueBankOptions): void {
    assertLiveChange(this.#options, options)
  }

  /** The partition a session writes to. */
  partitionOf(session: SessionRef): string {
    return partitionKey(this.options.partition, session, this.options.localUser)
  }

  /** The partitions a session reads (its own, plus `global` when configured). */
  readPartitions(session: SessionRef): string[] {
    const own = this.partitionOf(session)
    return own !== 'global' && this.options.includeGlobal ? [own, 'global'] : [own]
  }

  // -------------------------------------------------------------------------------------------
  // wake side

  /**
   * A human message entered the session: detect a topic switch against the previous user
   * turn and, on a switch (or with `scanEveryTurn`), scan the bank and prepare the block.
   * Synchronous; with vectors available the query embedding starts in the background and
   * {@link CueBank.settle} waits for it. Never throws: failures are reported and the previous
   * block stays.
   */
  observeUserMessage(session: SessionRef, message: TurnMessage, turn: number): WakeDecision | undefined {
    if (this.#closed) return undefined
    try {
      return this.#observe(session, message, turn)
    } catch (error) {
      this.#report(error, 'wake')
      return undefined
    }
  }

  /**
   * Wait (at most `embedding.waitMs`) for a pending query embedding of the session, then
   * record the hits of the final decision. Resolves immediately when nothing is pending.
   * Never rejects.
   */
  async settle(sessionId: string): Promise<WakeDecision | undefined> {
    const state = this.#sessions.get(sessionId)
    if (!state) return undefined
    const pending = state.pending
    if (pending && !pending.settled) {
      await waitAtMost(pending.promise, this.options.embedding.waitMs)
      if (!pending.settled) {
        // Too late for this request: keep the keyword decision, and never switch blocks mid-turn.
        pending.settled = true
        this.#debug(`query embedding of ${pending.messageId} missed the ${this.options.embedding.waitMs} ms wait; keyword match stays`)
      }
    }
    this.#finalize(state)
    return state.decision
  }

  /** The block to inject for a session right now (`''` = nothing). Synchronous and cheap. */
  injection(sessionId: string): string {
    return this.#sessions.get(sessionId)?.text ?? ''
  }

  /** The last wake decision of a session. */
  lastDecision(sessionId: string): WakeDecision | undefined {
    return this.#sessions.get(sessionId)?.decision
  }

  #observe(session: SessionRef, message: TurnMessage, turn: number): WakeDecision {
    const state = this.#state(session)
    const { topic, inject, extract } = this.options
    // Redacted: the text may travel to the embedding endpoint.
    const text = redactSecrets(message.text.slice(0, MAX_EXTRACT_CHARS)).text
    const keywords = extractKeywords(text, { max: topic.maxKeywords, minLength: extract.keywordMinLen })
    const previous = state.previous
    const overlap = keywords.length > 0 && previous && previous.length > 0 ? topicOverlap(previous, keywords) : null
    const switched = topic.switchDetection && isTopicSwitch(previous, keywords, topic.switchThreshold)
    if (keywords.length > 0) state.previous = keywords
    if (switched) state.segmentStart = turn
    const scan = inject.enabled && keywords.length > 0 && (switched || topic.scanEveryTurn)
    // A superseded message's late embedding must not touch the new decision.
    if (state.pending) state.pending.settled = true
    state.pending = undefined

    const base = { sessionId: session.id, partition: state.partition, messageId: message.id, turn, keywords, overlap, switched, scanned: scan }
    if (!scan) {
      // Same topic: the block already served stays as it is (no second block, no cache churn).
      const decision: WakeDecision = { ...base, cues: [], idioms: [], via: 'none', text: state.text }
      state.decision = decision
      state.finalized = true
      this.#debug(`${session.id} turn ${turn}: ${describeWake(decision)}`)
      return decision
    }

    const cues = this.#repository.listCues(state.reads).filter((cue) => isWakeable(cue, session.id, state.compactedThrough))
    const idioms = this.#repository.listIdioms(state.reads)
    const terms = candidateTerms(text, extract.keywordMinLen)
    const decide = (queryVector: Float32Array | null): WakeDecision =>
      decideWake({
        base,
        cues,
        idioms,
        terms,
        now: this.#now(),
        mode: queryVector ? this.options.matchMode : 'keyword',
        queryVector,
        vectorModel: this.#embedder?.model ?? null,
        inject,
        maxIdiomHints: extract.maxIdiomHints,
        halfLifeDays: this.options.decay.halfLifeDays,
        openTool: this.#openTool(),
      })

    const apply = (decision: WakeDecision): void => {
      state.decision = decision
      state.text = decision.text
      state.finalized = false
    }
    apply(decide(null))

    const embedder = this.#embedder
    if (embedder && embedder.available && cues.length > 0) {
      const pending: PendingVector = { messageId: message.id, settled: false, promise: Promise.resolve() }
      pending.promise = embedder.embed([text]).then(
        ([vector]) => {
          if (pending.settled || this.#closed || !vector) return
          pending.settled = true
          // Nobody may await this promise (no prompt assembly happens), so it must never reject.
          try {
            apply(decide(vector))
          } catch (error) {
            this.#report(error, 'vector wake')
          }
        },
        (error: unknown) => {
          if (pending.settled) return
          pending.settled = true
          this.#report(error, 'query embedding')
        },
      )
      state.pending = pending
    } else {
      this.#finalize(state)
    }
    this.#debug(`${session.id} turn ${turn}: ${describeWake(state.decision!)}`)
    return state.decision!
  }

  /**
   * The host compacted a session's history: turns up to `throughTurn` are no longer in the
   * model's context verbatim, so their conversation cues may wake in this session again (a
   * long-lived session, such as one per chat user, then recalls its own past).
   */
  observeCompaction(session: SessionRef, throughTurn: number): void {
    if (this.#closed) return
    try {
      const state = this.#state(session)
      state.compactedThrough = Math.max(state.compactedThrough, throughTurn)
    } catch (error) {
      this.#report(error, 'compaction')
    }
  }

  /** Record the hits of the current decision once, then announce them. */
  #finalize(state: SessionState): void {
    const decision = state.decision
    if (!decision || state.finalized) return
    state.finalized = true
    if (decision.cues.length === 0 || decision.via === 'none') return
    const ids = decision.cues.map((entry) => entry.cue.id)
    const via = decision.via
    this.#enqueue('wake hits', async () => {
      await this.#withRetry(() => this.#repository.touchCues(ids, this.#now()))
      this.#notify('onWoken', () => this.#hooks.onWoken?.({ partition: decision.partition, sessionId: decision.sessionId, turn: decision.turn, cueIds: ids, via }))
    })
  }

  // -------------------------------------------------------------------------------------------
  // write side

  /**
   * A turn ended: write its conversation cue, merge it into the session's task cue, update the
   * idiom window, apply decay and the LRU cap, all in one transaction; then compute vectors in
   * the background. Queued behind earlier writes; never rejects (failures go to `onError`).
   * @returns what was written, or undefined when the turn had no human message or no keywords.
   */
  recordTurn(session: SessionRef, record: TurnRecord): Promise<CueWrittenEvent | undefined> {
    if (this.#closed) return Promise.resolve(undefined)
    let job: (() => Promise<CueWrittenEvent | undefined>) | undefined
    try {
      job = this.#planTurn(session, record)
    } catch (error) {
      this.#report(error, 'turn')
    }
    if (!job) return Promise.resolve(undefined)
    return this.#enqueue('turn write', job)
  }

  #planTurn(session: SessionRef, record: TurnRecord): (() => Promise<CueWrittenEvent | undefined>) | undefined {
    const state = this.#state(session)
    const turnDraft = draftTurn(session, record, this.options)
    if (!turnDraft) return undefined
    // The topic reference of the next message is this turn's human text.
    if (turnDraft.topic.length > 0) state.previous = turnDraft.topic
    const draft = turnDraft.cue
    if (!draft) return undefined
    const segment = `${session.id}#${state.segmentStart}`

    return async () => {
      const now = this.#now()
      const written = await this.#withRetry(() =>
        this.#repository.transaction((writer) =>
          writeTurnCues(writer, this.options, { partition: state.partition, sessionId: session.id, turn: record.turn, segment, draft, now }),
        ),
      )
      if (written.cueIds.length === 0 && written.evicted.length === 0) return undefined
      this.#notify('onWritten', () => this.#hooks.onWritten?.(written))
      this.#debug(`${session.id} turn ${record.turn}: wrote ${written.cueIds.join(', ') || 'nothing'}; evicted ${written.evicted.length}`)
      // Vectors are background work: a slow endpoint must not hold up the turn's flush.
      if (this.#embedder) this.#track(this.#embedCues(state.reads, written.cueIds))
      return written
    }
  }

  /** Embed the new cues plus a few older ones still lacking a vector; failures leave them keyword-only. */
  async #embedCues(partitions: readonly string[], ids: readonly string[]): Promise<void> {
    const embedder = this.#embedder
    if (!embedder || !embedder.available) return
    try {
      const fresh = (await Promise.all(ids.map((id) => this.#repository.getCue(id)))).filter((cue): cue is Cue => !!cue)
      const backlog = (await this.#repository.cuesWithoutEmbedding(partitions, embedder.model, BACKFILL_PER_WRITE + fresh.length))
        .filter((cue) => !ids.includes(cue.id))
        .slice(0, BACKFILL_PER_WRITE)
      const cues = [...fresh, ...backlog]
      if (cues.length === 0) return
      const vectors = await embedder.embed(cues.map(embeddingText))
      await this.#withRetry(() =>
        this.#repository.transaction(async (writer) => {
          for (const [index, cue] of cues.entries()) await writer.setEmbedding(cue.id, vectors[index]!, embedder.model)
        }),
      )
    } catch (error) {
      this.#report(error, 'cue embedding')
    }
  }

  // -------------------------------------------------------------------------------------------
  // reading and traceability

  /** Cues, most recently touched first. */
  list(filter: CueListFilter = {}): Cue[] {
    const partitions = filter.partitions ?? (filter.workspace === undefined ? undefined : this.readPartitions({ id: '', workspace: filter.workspace }))
    const cues = this.#repository.listCues(partitions).filter((cue) => !filter.level || cue.level === filter.level)
    return cues.slice(0, filter.limit ?? 100)
  }

  /** Idioms of the partitions a session of `workspace` reads (every partition without one), best first. */
  idioms(workspace?: string): Idiom[] {
    return this.#repository.listIdioms(workspace === undefined ? undefined : this.readPartitions({ id: '', workspace }))
  }

  /**
   * A cue with its source turns: the store's L0 messages when capture recorded them, else the
   * excerpt kept on the cue. With `viewer`, only cues of the partitions that session reads are
   * found, so a session cannot open another workspace's memories by id.
   * @throws CueBankError `not-found`
   */
  async open(cueId: string, viewer?: SessionRef): Promise<OpenedCue> {
    const cue = await this.#repository.getCue(cueId)
    if (!cue || (viewer && !this.readPartitions(viewer).includes(cue.partition))) {
      throw new CueBankError('not-found', `no cue with id ${JSON.stringify(cueId)}`)
    }
    const turns: { role: string; turn: number; at: number; text: string }[] = []
    if (this.#messages) {
      const sessions = [...new Set([cue.sessionId, ...cue.refSessions])]
      for (const hostId of cue.sourceMessageIds) {
        for (const sessionId of sessions) {
          const message = await this.#messages.getByHostId(sessionId, hostId).catch(() => undefined)
          if (message) {
            turns.push({ role: message.role, turn: message.turn, at: message.createdAt, text: message.text })
            break
          }
        }
      }
    }
    if (turns.length > 0) return { cue, source: 'store', turns }
    return { cue, source: 'cue-detail', turns: [{ role: 'excerpt', turn: cue.turn, at: cue.lastMentionedAt, text: cue.detail }] }
  }

  // -------------------------------------------------------------------------------------------
  // lifecycle

  /** Catch the wake's reads up with the database now (PostgreSQL's view; nothing to do on SQLite). */
  refresh(): Promise<void> {
    return this.#repository.refresh()
  }

  /** Resolves when every queued cue write has committed (what the host's flush waits for). */
  whenCommitted(): Promise<void> {
    return this.#queue.then(() => undefined)
  }

  /** Resolves when queued writes and background embeddings have all settled. */
  async whenIdle(): Promise<void> {
    await this.whenCommitted()
    await this.#background.settled()
  }

  /**
   * What the host's flush waits for: every queued write, then background embeddings for at
   * most `maxWaitMs`. A headless run exits right after its flush, so cue vectors computed after
   * it would never land; the bound keeps a slow endpoint from holding the exit for long (a
   * vector that misses it is backfilled at a later write).
   */
  async flush(maxWaitMs: number): Promise<void> {
    await this.whenCommitted()
    if (this.#background.size === 0 || !(maxWaitMs > 0)) return
    await waitAtMost(this.whenIdle(), maxWaitMs)
  }

  /** Drop a session's in-memory state (its cues stay). */
  forget(sessionId: string): void {
    const state = this.#sessions.get(sessionId)
    if (state?.pending) state.pending.settled = true
    this.#sessions.delete(sessionId)
  }

  /** Wait for queued writes, then close the repository. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      // Refuse new work first, then let what is queued or in flight finish.
      this.#closed = true
      for (const id of [...this.#sessions.keys()]) this.forget(id)
      await this.whenIdle()
      this.#repository.close()
    })()
    return this.#closing
  }

  #state(session: SessionRef): SessionState {
    let state = this.#sessions.get(session.id)
    if (!state) {
      // A resumed session continues its topic: the newest conversation cue is the reference.
      const last = this.#repository.latestConversationCue(session.id)
      state = {
        partition: this.partitionOf(session),
        reads: this.readPartitions(session),
        previous: last?.keywords,
        segmentStart: last?.turn ?? 0,
        compactedThrough: 0,
        text: '',
        decision: undefined,
        finalized: true,
        pending: undefined,
      }
      this.#sessions.set(session.id, state)
    }
    return state
  }

  /** Keep a background promise (which never rejects) until it settles, so close() can wait for it. */
  #track(work: Promise<void>): void {
    void this.#background.track(work)
  }

  #enqueue<T>(where: string, job: () => Promise<T>): Promise<T | undefined> {
    const run = this.#queue.then(job).catch((error: unknown) => {
      this.#report(error, where)
      return undefined
    })
    this.#queue = run
    return run
  }

  /** Run a write, retrying later while another connection held the lock past the store's busy timeout. */
  async #withRetry<T>(op: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await op()
      } catch (error) {
        if (!isCueBankError(error, 'busy') || attempt >= BUSY_RETRIES.length) throw error
        await new Promise((resolve) => setTimeout(resolve, BUSY_RETRIES[attempt]))
      }
    }
  }

  #report(error: unknown, where: string): void {
    this.#safely(() => this.#hooks.onError?.(error, where))
  }

  #debug(message: string): void {
    if (this.options.dbg) this.#safely(() => this.#hooks.debug?.(message))
  }

  /** Call a listener hook; its failure is reported, never thrown into the turn. */
  #notify(name: string, fn: () => void): void {
    try {
      fn()
    } catch (error) {
      this.#report(error, `${name} listener`)
    }
  }

  #safely(fn: () => void): void {
    try {
      fn()
    } catch {
      // A hook must not break the turn.
    }
  }
}

/** Wait for `work` (which never rejects), but at most `ms`; the timer never outlives the wait. */
async function waitAtMost(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))
  try {
    await Promise.race([work, bound])
  } finally {
    clearTimeout(timer)
  }
}
