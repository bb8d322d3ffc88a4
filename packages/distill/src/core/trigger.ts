/**
 * When to extract: the reference's per-session ramp (1→2→4→…→N new messages), an idle
 * fallback, and retry backoff. Pure functions of the state and the time, so a fake clock
 * tests every branch.
 */

/**
 * New messages needed for the next extraction of a session that has already had `stage`
 * extractions: 1, 2, 4, … doubling, capped at `minMessages`.
 */
export function rampThreshold(stage: number, minMessages: number): number {
  const safeStage = Math.max(0, Math.min(30, Math.floor(stage)))
  return Math.max(1, Math.min(minMessages, 2 ** safeStage))
}

/** What the trigger decision looks at for one conversation. */
export interface TriggerInput {
  /** Messages captured after the distilled cursor. */
  readonly pending: number
  /** Extractions done so far in this conversation (the ramp position). */
  readonly stage: number
  /** When the newest pending message was captured (epoch ms). */
  readonly lastMessageAt: number
  /** True while this conversation's agent is running a turn in this process. */
  readonly agentRunning: boolean
  /**
   * True when no live agent of this process owns the conversation (found by the start-up
   * scan, or its agent was disposed): nothing more will arrive, so the slice is due at once.
   */
  readonly orphan: boolean
  /** Earliest time of the next attempt after a failure (epoch ms); 0 = no backoff. */
  readonly notBefore: number
}

/** Why a slice is due. */
export type TriggerReason = 'threshold' | 'idle' | 'orphan'

/** The decision: due now, or when to look again (undefined = only on the next event). */
export type TriggerDecision =
  | { readonly due: true; readonly reason: TriggerReason }
  | { readonly due: false; readonly wakeAt?: number }

/** Trigger settings (a subset of the extract options). */
export interface TriggerOptions {
  readonly minMessages: number
  /** 0 disables the idle fallback. */
  readonly idleSeconds: number
}

/**
 * Decide whether a conversation's pending slice should be extracted now.
 *
 * The threshold trigger waits for the agent to be idle, so extraction never runs inside a
 * turn; the idle fallback fires even while an agent is (still) running, because by then the
 * session has been silent for `idleSeconds` and the work is background anyway.
 */
export function decideTrigger(input: TriggerInput, now: number, options: TriggerOptions): TriggerDecision {
  if (input.pending <= 0) return { due: false }
  if (input.notBefore > now) return { due: false, wakeAt: input.notBefore }
  const idleMs = options.idleSeconds * 1000
  const idleDue = idleMs > 0 && now - input.lastMessageAt >= idleMs
  if (!input.agentRunning) {
    if (input.orphan) return { due: true, reason: 'orphan' }
    if (input.pending >= rampThreshold(input.stage, options.minMessages)) return { due: true, reason: 'threshold' }
  }
  if (idleDue) return { due: true, reason: 'idle' }
  return idleMs > 0 ? { due: false, wakeAt: input.lastMessageAt + idleMs } : { due: false }
}

/** Backoff after `attempts` consecutive failures: 30 s doubling, at most one hour. */
export function retryDelayMs(attempts: number): number {
  const exponent = Math.max(0, Math.min(20, attempts - 1))
  return Math.min(3_600_000, 30_000 * 2 ** exponent)
}
