/**
 * The change feed (`store.changes`): committed writes of every process on one database,
 * delivered to this process's subscribers in change-log order, each change once.
 *
 * The change log (`store_changes`, one row per write of an indexed entity, `seq` increasing
 * in commit order because writers are serialised per database) is the truth; everything
 * else only says "look now": a PostgreSQL notification (the store's listener, see
 * `pg-listener.ts`), the poll timer (the fallback after a missed notification or while the
 * listener is down), or a caller's {@link ChangeFeed.catchUp}. Every look reads the log past
 * the feed's position, so a notification that never arrived loses nothing and one that arrives
 * twice delivers nothing twice. Backend-neutral: SQLite has no notifications and polls.
 */
import { DEFAULT_CHANGE_POLL_MS } from './options.ts'
import type { ChangeFeed, StoreChange, StoreChangeEvent, StoreChangeListener } from './types-changes.ts'

/** Changes read per round trip while catching up (a long gap is read in pages). */
const PAGE = 500

/** What a backend gives the feed. */
export interface ChangeFeedPort {
  /** The highest `seq` in the change log now (0 when empty). */
  head(): Promise<number>
  /** Up to `limit` changes with `seq > after`, in `seq` order. */
  since(after: number, limit: number): Promise<StoreChange[]>
  /**
   * Start receiving notifications (PostgreSQL): `wake()` on a store change, `tables(owner)`
   * on a package-table write, `resync()` after a lost listener connection is back (anything
   * may have been missed). Resolves once listening (or once the first attempt failed: the
   * listener keeps retrying). Absent on a backend without notifications.
   */
  listen?(handlers: ListenHandlers): Promise<ListenHandle>
}

export interface ListenHandlers {
  wake(): void
  tables(owner: string): void
  resync(): void
}

export interface ListenHandle {
  readonly listening: boolean
  stop(): Promise<void>
}

/** The feed of one store. Internal: the store exposes it as {@link ChangeFeed}. */
export class ChangeFeedCore implements ChangeFeed {
  readonly #port: ChangeFeedPort
  readonly #pollMs: number
  readonly #listeners = new Set<StoreChangeListener>()
  /** The last `seq` delivered; undefined until the log's head could be read. */
  #position: number | undefined
  /** Set while subscribers exist: the start (position read, listener up) every catch-up waits for. */
  #started: Promise<void> | undefined
  #listen: ListenHandle | undefined
  #timer: ReturnType<typeof setInterval> | undefined
  /** Catch-ups run one after another, so a change is never delivered twice or out of order. */
  #chain: Promise<void> = Promise.resolve()
  /** A catch-up is queued behind the running one: further wakes join it. */
  #queued: Promise<void> | undefined
  #closed = false

  constructor(port: ChangeFeedPort, pollMs = DEFAULT_CHANGE_POLL_MS) {
    this.#port = port
    this.#pollMs = pollMs
  }

  get position(): number {
    return this.#position ?? 0
  }

  get listening(): boolean {
    return this.#listen?.listening ?? false
  }

  subscribe(listener: StoreChangeListener): () => void {
    if (typeof listener !== 'function') throw new TypeError('changes.subscribe needs a function')
    if (this.#closed) return () => {}
    this.#listeners.add(listener)
    this.#started ??= this.#start()
    return () => {
      this.#listeners.delete(listener)
      if (this.#listeners.size === 0) void this.#stop()
    }
  }

  async ready(): Promise<void> {
    await this.#started
  }

  catchUp(): Promise<void> {
    if (!this.#started) return Promise.resolve()
    // One queued catch-up is enough: it reads everything committed before it runs.
    this.#queued ??= this.#chain.then(async () => {
      this.#queued = undefined
      await this.#started
      return this.#read()
    })
    const run = this.#queued
    this.#chain = run.catch(() => undefined)
    return run
  }

  /** Stop listening and polling; subscribers get nothing more. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true
    this.#listeners.clear()
    await this.#stop()
  }

  async #start(): Promise<void> {
    // Subscribers hear of changes committed after they subscribed, not the whole history. The
    // database away now: the first catch-up that reaches it starts from its head then.
    this.#position = await this.#port.head().catch(() => undefined)
    if (this.#port.listen && !this.#closed) {
      this.#listen = await this.#port.listen({
        wake: () => void this.catchUp().catch(() => undefined),
        tables: (owner) => this.#deliver({ type: 'tables', owner }),
        resync: () => {
          this.#deliver({ type: 'resync' })
          void this.catchUp().catch(() => undefined)
        },
      })
    }
    if (this.#pollMs > 0 && !this.#closed) {
      // A failed poll (the database away) is retried by the next one.
      this.#timer = setInterval(() => void this.catchUp().catch(() => undefined), this.#pollMs)
      this.#timer.unref?.()
    }
  }

  async #stop(): Promise<void> {
    const started = this.#started
    if (!started) return
    await started.catch(() => undefined)
    if (this.#listeners.size > 0 && !this.#closed) return
    if (this.#started !== started) return
    this.#started = undefined
    clearInterval(this.#timer)
    this.#timer = undefined
    const listen = this.#listen
    this.#listen = undefined
    await listen?.stop()
  }

  async #read(): Promise<void> {
    if (this.#position === undefined) {
      this.#position = await this.#port.head()
      return
    }
    for (;;) {
      if (this.#listeners.size === 0) return
      const changes = await this.#port.since(this.#position, PAGE)
      if (changes.length === 0) return
      this.#position = changes[changes.length - 1]!.seq
      this.#deliver({ type: 'changes', changes })
      if (changes.length < PAGE) return
    }
  }

  #deliver(event: StoreChangeEvent): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(event)
      } catch {
        // A subscriber's failure is its own: the others still hear of the change.
      }
    }
  }
}
