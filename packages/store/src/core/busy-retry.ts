/**
 * Waiting for another connection's lock without blocking the event loop: every backend's
 * session retries a failed-with-`busy` attempt that changed nothing, with jittered, growing
 * pauses, until its busy timeout has passed.
 */
import { isMemoryStoreError } from './errors.ts'

/**
 * Run `attempt` until it succeeds, or fails with something other than `busy`, or `retryable()`
 * says the failed attempt changed something, or `budgetMs` has passed; waits asynchronously
 * (jittered) between attempts so the event loop keeps running.
 */
export async function retryWhileBusy<T>(budgetMs: number, attempt: () => Promise<T>, retryable: () => boolean = () => true): Promise<T> {
  const deadline = Date.now() + budgetMs
  for (let count = 1; ; count++) {
    try {
      return await attempt()
    } catch (error) {
      if (!isMemoryStoreError(error, 'busy') || !retryable() || Date.now() >= deadline) throw error
      await sleep(busyBackoffMs(count))
    }
  }
}

/** Jittered, growing pause between lock attempts (5 ms .. 250 ms), so waiting writers spread out. */
function busyBackoffMs(attempt: number): number {
  const ceiling = Math.min(250, 5 * 2 ** Math.min(attempt, 6))
  return ceiling / 2 + Math.random() * (ceiling / 2)
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
