/**
 * Waiting for another connection's lock without blocking the event loop: every backend's
 * session retries a failed-with-`busy` attempt that changed nothing, with jittered, growing
 * pauses (the kit's `retryWhileBusy`), until its busy timeout has passed.
 */
import { retryWhileBusy as retry } from '../kit/retry.ts'
import { isMemoryStoreError } from './errors.ts'

/**
 * Run `attempt` until it succeeds, or fails with something other than `busy`, or `retryable()`
 * says the failed attempt changed something, or `budgetMs` has passed.
 */
export function retryWhileBusy<T>(budgetMs: number, attempt: () => Promise<T>, retryable: () => boolean = () => true): Promise<T> {
  return retry(attempt, { isBusy: (error) => isMemoryStoreError(error, 'busy'), budgetMs, retryable })
}
