import { isMemoryStoreError, type MemoryStore } from '@dsh-memory/store'
import { busyBackoffMs, retryWhileBusy } from '@dsh-memory/store/kit'
import type { CaptureOptions } from './options.js'
import { clip, messageText, stripCodeBlocks, type ContentBlockLike } from './text.js'

/** The part of a host session the recorder reads. */
export interface SessionLike {
  readonly id: string
  readonly header?: { readonly cwd?: string; readonly createdAt?: number }
}

/** The part of a host session event the recorder reads. */
export interface SessionEventLike {
  readonly type: string
  readonly seq: number
  readonly time?: number
  readonly data?: unknown
}

interface MessageLike {
  readonly id?: string
  readonly role?: string
  readonly content?: readonly ContentBlockLike[]
  readonly source?: { readonly kind?: string }
}

/** What one stored message looks like to listeners of `memory-capture/captured`. */
export interface CapturedMessage {
  /** The conversation (host session id). */
  readonly conversationId: string
  /** The store's id of the new L0 row. */
  readonly messageId: string
  /** The host's message id (the idempotency key). */
  readonly hostMessageId: string
  readonly role: 'user' | 'assistant'
  /** The session's workspace id (`hooks.workspaceOf` of its cwd: its git project, or the absolute directory; '' when the host gave none). */
  readonly workspace: string
  readonly turn: number
  /** True when the text was cut at `maxMessageChars`. */
  readonly truncated: boolean
}

/** Counters a status command or a test can read. */
export interface CaptureStats {
  captured: number
  duplicates: number
  skipped: number
  errors: number
}

/** Callbacks of {@link CaptureRecorder}. */
export interface CaptureHooks {
  /** Called after the row is committed. */
  readonly onCaptured?: (message: CapturedMessage) => void
  /**
   * The workspace id of a session directory (the store service's `workspaceOf`: the project's
   * git remote, or the path). Default: the directory itself.
   */
  readonly workspaceOf?: (cwd: string) => string
  /** Called with every write failure; the recorder itself never throws. */
  readonly onError?: (error: unknown, context: { sessionId: string; eventType: string; seq: number }) => void
}

/**
 * Extra attempts of a write that found the database locked (`busy`: another process held the
 * write lock past the store's busy timeout, e.g. several hosts on an overloaded machine).
 * Writes are idempotent (host message id), so a retry never stores twice; the queue runs in
 * the background, so the wait never holds the user's turn.
 */
export const BUSY_RETRIES = 4
/** Pause before the first retry of a `busy` write (ms); doubled each time, plus jitter. */
export const BUSY_RETRY_DELAY_MS = 250

/**
 * Turns host session events into L0 rows: each human prompt and each assistant reply's text.
 * Plugin-sourced user messages (recall injections, compaction checkpoints, notices) and goal
 * continuations are not conversation and are skipped. Idempotent through the host message id,
 * so a resumed or replayed session stores nothing twice.
 */
export class CaptureRecorder {
  readonly stats: CaptureStats = { captured: 0, duplicates: 0, skipped: 0, errors: 0 }
  private readonly turns = new Map<string, number>()
  /** Sessions whose conversation row this recorder has created or seen. */
  private readonly ensured = new Set<string>()
  private queue: Promise<unknown> = Promise.resolve()

  constructor(
    private readonly store: Pick<MemoryStore, 'conversations' | 'messages' | 'transaction'>,
    private options: CaptureOptions,
    private readonly hooks: CaptureHooks = {},
  ) {}

  /** Put new options in force for the next event (live settings); writes already queued keep theirs. */
  reconfigure(options: CaptureOptions): void {
    this.options = options
  }

  /**
   * Record one event if it is conversation. Writes are queued so they commit in event order.
   * Never rejects: failures go to `hooks.onError` and are counted, so the user's turn goes on.
   * @returns the stored message, or undefined when nothing new was stored.
   */
  handle(session: SessionLike, event: SessionEventLike): Promise<CapturedMessage | undefined> {
    // Turn tracking is synchronous so a user message always sees the turn that opened it.
    const job = this.plan(session, event)
    if (!job) return Promise.resolve(undefined)
    const run = this.queue.then(() => retryBusy(job)).catch((error: unknown) => {
      this.stats.errors++
      try {
        this.hooks.onError?.(error, { sessionId: session?.id, eventType: event?.type, seq: event?.seq })
      } catch {
        // A failing logger must not break the turn either.
      }
      return undefined
    })
    this.queue = run
    return run
  }

  /** Resolves when every queued write has settled (call before the host exits). */
  whenIdle(): Promise<void> {
    return this.queue.then(() => undefined)
  }

  /** Sessions whose current turn is being tracked (forgotten when their agent is disposed). */
  get trackedSessions(): number {
    return this.turns.size
  }

  /** Drop per-session turn tracking (call when the session ends). */
  forget(sessionId: string): void {
    this.turns.delete(sessionId)
    this.ensured.delete(sessionId)
  }

  private plan(session: SessionLike, event: SessionEventLike): (() => Promise<CapturedMessage | undefined>) | undefined {
    if (!session || typeof session.id !== 'string' || !event) return undefined
    if (event.type === 'turn/start') {
      const turn = (event.data as { turn?: unknown } | undefined)?.turn
      if (typeof turn === 'number') this.turns.set(session.id, turn)
      return undefined
    }
    if (!this.options.enabled) return undefined
    if (event.type === 'user/message') {
      const message = event.data as MessageLike
      if (message?.source?.kind !== 'user') {
        this.stats.skipped++
        return undefined
      }
      const turn = this.turns.get(session.id) ?? 0
      return () => this.write(session, event, message, 'user', turn)
    }
    if (event.type === 'assistant/message') {
      const data = event.data as { turn?: number; message?: MessageLike }
      if (!data?.message) return undefined
      const turn = data.turn ?? this.turns.get(session.id) ?? 0
      return () => this.write(session, event, data.message!, 'assistant', turn)
    }
    if (event.type === 'session/title') {
      const title = (event.data as { title?: unknown } | undefined)?.title
      if (typeof title !== 'string' || !title.trim()) return undefined
      return async () => {
        await this.store.conversations.ensure({ id: session.id, workspace: this.workspaceOf(session), title: title.trim() })
        return undefined
      }
    }
    return undefined
  }

  private workspaceOf(session: SessionLike): string {
    const cwd = session.header?.cwd ?? ''
    return cwd !== '' && this.hooks.workspaceOf ? this.hooks.workspaceOf(cwd) : cwd
  }

  private async write(
    session: SessionLike,
    event: SessionEventLike,
    message: MessageLike,
    role: 'user' | 'assistant',
    turn: number,
  ): Promise<CapturedMessage | undefined> {
    let text = messageText(message.content)
    if (role === 'assistant' && this.options.stripCodeBlocks) text = stripCodeBlocks(text).trim()
    if (!text || typeof message.id !== 'string') {
      this.stats.skipped++
      return undefined
    }
    const hostMessageId = message.id
    const clipped = clip(text, this.options.maxMessageChars)
    const workspace = this.workspaceOf(session)
    const at = typeof event.time === 'number' ? event.time : Date.now()
    const writeTo = async (target: Pick<MemoryStore, 'conversations' | 'messages'>) => {
      await target.conversations.ensure({ id: session.id, workspace, startedAt: session.header?.createdAt ?? at })
      return target.messages.append({ conversationId: session.id, hostMessageId, role, text: clipped.text, turn, seq: event.seq, createdAt: at })
    }
    // The first message of a session creates its conversation in the same transaction: a kill
    // in between would leave an empty conversation behind. Later ones skip the transaction
    // (ensure is then a read that changes nothing; an explicit transaction costs ~0.2 ms).
    const first = !this.ensured.has(session.id)
    const { inserted, message: row } = first ? await this.store.transaction((tx) => writeTo(tx)) : await writeTo(this.store)
    this.ensured.add(session.id)
    if (!inserted) {
      this.stats.duplicates++
      return undefined
    }
    this.stats.captured++
    const captured: CapturedMessage = {
      conversationId: session.id,
      messageId: row.id,
      hostMessageId: message.id,
      role,
      workspace,
      turn,
      truncated: clipped.truncated,
    }
    this.hooks.onCaptured?.(captured)
    return captured
  }
}

/** Run `job`, running it again after a pause when the store reports `busy`. */
function retryBusy<T>(job: () => Promise<T>): Promise<T> {
  return retryWhileBusy(job, {
    isBusy: (error) => isMemoryStoreError(error, 'busy'),
    retries: BUSY_RETRIES,
    delayMs: (attempt) => busyBackoffMs(attempt, BUSY_RETRY_DELAY_MS, Infinity),
  })
}
