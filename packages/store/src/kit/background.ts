/**
 * Tracking fire-and-forget work (an embedding backfill, an archive past its caller's timeout)
 * so a flush or close can wait for it: a headless host exits right after its flush, and work
 * still running then is cut off.
 */
export class BackgroundWork {
  readonly #running = new Set<Promise<void>>()

  /**
   * Keep `work` until it settles and return it unchanged. The tracked copy never rejects, so
   * tracking never turns a handled failure into an unhandled rejection.
   */
  track<T>(work: Promise<T>): Promise<T> {
    const settled = work.then(
      () => undefined,
      () => undefined,
    )
    this.#running.add(settled)
    void settled.finally(() => this.#running.delete(settled))
    return work
  }

  /** How much tracked work is still running. */
  get size(): number {
    return this.#running.size
  }

  /** Resolves once every tracked piece of work, including work tracked meanwhile, has settled. */
  async settled(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running])
  }
}
