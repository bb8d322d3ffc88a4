/** Options of {@link retryWhileBusy}. */
export interface BusyRetryOptions {
  /** True for the error that means "the database is locked, try again" (e.g. code `busy`). */
  isBusy(error: unknown): boolean
  /** Stop retrying once this much time has passed since the first attempt. Default: no limit. */
  readonly budgetMs?: number
  /** Stop after this many retries. Default: no limit (one of the two limits must be given). */
  readonly retries?: number
  /** Checked after a failed attempt: false when the attempt changed something and must not run again. */
  retryable?(): boolean
  /** The pause before retry number `attempt` (1-based). Default {@link busyBackoffMs}. */
  delayMs?(attempt: number): number
}

/**
 * Run `attempt` until it succeeds, fails with something other than busy, `retryable()` says
 * no, or a limit is reached; waits asynchronously between attempts, so the event loop keeps
 * running. The last error is rethrown unchanged.
 * @throws TypeError when neither `budgetMs` nor `retries` is given (it would retry forever).
 */
export async function retryWhileBusy<T>(attempt: () => Promise<T>, options: BusyRetryOptions): Promise<T> {
  if (options.budgetMs === undefined && options.retries === undefined) throw new TypeError('retryWhileBusy needs budgetMs or retries')
  const deadline = options.budgetMs === undefined ? Infinity : Date.now() + options.budgetMs
  const retries = options.retries ?? Infinity
  const delayMs = options.delayMs ?? busyBackoffMs
  for (let count = 1; ; count++) {
    try {
      return await attempt()
    } catch (error) {
      if (!options.isBusy(error) || count > retries || Date.now() >= deadline) throw error
      if (options.retryable && !options.retryable()) throw error
      await new Promise((resolve) => setTimeout(resolve, delayMs(count)))
    }
  }
}

/**
 * Jittered, growing pause before retry number `attempt`: between half and all of
 * `baseMs * 2^attempt`, capped at `capMs`. The jitter spreads out processes that collided, so
 * they do not collide again in step.
 */
export function busyBackoffMs(attempt: number, baseMs = 5, capMs = 250): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(attempt, 30))
  return ceiling / 2 + Math.random() * (ceiling / 2)
}
