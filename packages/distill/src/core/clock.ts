/** The time source and timer of the distiller; tests pass a fake one. */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number
  /** Run `fn` after `ms`; returns a canceller. The timer must not keep the process alive. */
  setTimer(fn: () => void, ms: number): () => void
}

/** The real clock: `Date.now` and unref'd `setTimeout`, so a pending wake-up never delays a headless exit. */
export const systemClock: Clock = Object.freeze({
  now: () => Date.now(),
  setTimer(fn: () => void, ms: number): () => void {
    const timer = setTimeout(fn, Math.max(0, Math.min(ms, 2_147_483_647)))
    timer.unref?.()
    return () => clearTimeout(timer)
  },
})
