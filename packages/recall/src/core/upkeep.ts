/**
 * When the background upkeep runs: the lifecycle pass and the Markdown projection refresh
 * once soon after start (a restarted host catches up with what others wrote) and then on an
 * interval, never two passes at once; recall's own writes ask for a debounced projection
 * refresh. Timers are unref'd, so nothing here keeps a headless run alive, and `stop()`
 * clears every one of them.
 */
import { errorMessage } from './errors.ts'
import type { Lifecycle } from './lifecycle.ts'
import type { LayerProjection } from './projection.ts'

/** Collaborators and timing of {@link Upkeep}. */
export interface UpkeepDeps {
  readonly lifecycle: Pick<Lifecycle, 'tick' | 'close'>
  /** Absent when the projection is off. */
  readonly projection: Pick<LayerProjection, 'refresh' | 'dir'> | undefined
  /** Whether the lifecycle runs at all (the projection alone also keeps the interval). */
  readonly lifecycleEnabled: boolean
  /** Registers background work a session flush waits for. */
  readonly track: (job: Promise<unknown>) => void
  readonly onWarning: (message: string) => void
  /** Interval between passes, first pass delay and projection debounce, in ms. */
  readonly timing?: { readonly tickMs?: number; readonly firstMs?: number; readonly debounceMs?: number }
}

/** How often the lifecycle runs its checks (consolidation and sweeps are due in hours). */
const TICK_MS = 60_000
const FIRST_MS = 1_000
const PROJECTION_DEBOUNCE_MS = 250

/** The upkeep schedule. One per plugin instance. */
export class Upkeep {
  readonly #deps: UpkeepDeps
  #running: Promise<unknown> | undefined
  #projectTimer: ReturnType<typeof setTimeout> | undefined

  constructor(deps: UpkeepDeps) {
    this.#deps = deps
  }

  /** Start the timers. @returns the disposer: clears the timers and closes the lifecycle. */
  start(): () => void {
    const timing = this.#deps.timing ?? {}
    const run = () => this.#pass()
    const interval = this.#deps.lifecycleEnabled || this.#deps.projection ? setInterval(run, timing.tickMs ?? TICK_MS) : undefined
    interval?.unref?.()
    const first = setTimeout(run, timing.firstMs ?? FIRST_MS)
    first.unref?.()
    return () => {
      clearInterval(interval)
      clearTimeout(first)
      clearTimeout(this.#projectTimer)
      this.#projectTimer = undefined
      this.#deps.lifecycle.close()
    }
  }

  /** Rebuild the projection soon (debounced): after writes made by recall or distill. */
  projectSoon(): void {
    const projection = this.#deps.projection
    if (!projection || this.#projectTimer) return
    this.#projectTimer = setTimeout(() => {
      this.#projectTimer = undefined
      this.#deps.track(projection.refresh().catch((error: unknown) => this.#deps.onWarning(`memory-recall: could not update the layer projection: ${errorMessage(error)}`)))
    }, this.#deps.timing?.debounceMs ?? PROJECTION_DEBOUNCE_MS)
    this.#projectTimer.unref?.()
  }

  /** Rebuild every projection file now. @returns a summary line for `/memory project`. */
  async projectNow(): Promise<string> {
    const projection = this.#deps.projection
    if (!projection) return 'the Markdown projection is off (layers.projection: false)'
    const written = await projection.refresh(true)
    return `Rebuilt ${written.length} layer file${written.length === 1 ? '' : 's'} in ${projection.dir}.`
  }

  #pass(): void {
    if (this.#running) return
    this.#running = Promise.allSettled([this.#deps.lifecycle.tick(), this.#deps.projection?.refresh()]).finally(() => {
      this.#running = undefined
    })
  }
}
