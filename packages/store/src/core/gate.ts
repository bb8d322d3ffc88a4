import { AsyncLocalStorage } from 'node:async_hooks'

/**
 * Serialises access to one SQLite connection while an async transaction is open.
 *
 * better-sqlite3 is synchronous, so a single call can never interleave with another.
 * Only `store.transaction(async fn)` spans awaits; while it is open every other caller on
 * this connection must wait, or its statements would silently join (and commit or roll
 * back with) someone else's transaction. Calls made inside the transaction are recognised
 * through AsyncLocalStorage and pass straight through.
 *
 * The last "is it free?" check and the work it guards always run in the same synchronous
 * stretch, with no await between them, so nobody can slip in.
 */
export class ConnectionGate {
  private readonly context = new AsyncLocalStorage<symbol>()
  private holder: { token: symbol; released: Promise<void> } | undefined

  /** True when the caller runs inside the transaction that holds the gate. */
  get insideTransaction(): boolean {
    return this.holder !== undefined && this.context.getStore() === this.holder.token
  }

  /** True while any transaction holds the connection. */
  get held(): boolean {
    return this.holder !== undefined
  }

  /** Run the synchronous `op` as soon as no other transaction holds the connection. */
  async run<T>(op: () => T): Promise<T> {
    while (this.holder && this.context.getStore() !== this.holder.token) await this.holder.released
    return op()
  }

  /**
   * Run `body` holding the connection: other callers wait until it settles; calls made
   * inside it pass. `body` starts synchronously, so its first statement (BEGIN) runs
   * before anyone else can use the connection. A `body` that returns a plain value (not a
   * promise) releases the connection before `hold` returns, in the same synchronous stretch,
   * so a synchronous unit never keeps others waiting for a tick.
   */
  async hold<T>(body: () => T | Promise<T>): Promise<T> {
    while (this.holder) await this.holder.released
    let release!: () => void
    const token = Symbol('transaction')
    this.holder = { token, released: new Promise<void>((resolve) => (release = resolve)) }
    try {
      const result = this.context.run(token, body)
      // No await before the `finally` for a plain value: the holder is cleared synchronously.
      return result instanceof Promise ? await result : result
    } finally {
      this.holder = undefined
      release()
    }
  }

  /** Resolves when no transaction holds the connection. */
  async idle(): Promise<void> {
    while (this.holder) await this.holder.released
  }
}
