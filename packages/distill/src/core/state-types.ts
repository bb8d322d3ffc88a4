/** The shapes of the distiller's persisted state (rows of its own tables, see tables.ts). */

/** Shape version of {@link ConversationState} (kept for callers that build states). */
export const STATE_VERSION = 1

/** A range of messages given up on (invalid model output twice), kept for inspection. */
export interface SkippedRange {
  readonly fromSeq: number
  readonly toSeq: number
  readonly at: number
  readonly reason: string
}

/** A time-limited claim on a conversation, so two processes do not pay for the same slice. */
export interface Lease {
  /** `host:pid:random` of the claiming distiller. */
  readonly owner: string
  readonly until: number
}

/** Distill state of one conversation. */
export interface ConversationState {
  readonly v: typeof STATE_VERSION
  readonly conversationId: string
  /** Seq of the last message distilled (or skipped); -1 before the first. */
  readonly cursorSeq: number
  /** Extractions done: the ramp position. */
  readonly stage: number
  /** Consecutive failed attempts (outages); reset on success. */
  readonly attempts: number
  /** Earliest next attempt after a failure (epoch ms), 0 = none. */
  readonly notBefore: number
  readonly lastError: string | null
  readonly lastRunAt: number | null
  /**
   * When the conversation was given up on after `extract.maxAttempts` consecutive failures
   * (epoch ms), null while it is retried. A message captured after it brings it back.
   */
  readonly gaveUpAt: number | null
  /** Most recent given-up ranges (at most {@link MAX_SKIPPED}), oldest first. */
  readonly skipped: readonly SkippedRange[]
  readonly lease: Lease | null
}

/** Counters of one L2/L3 scope key (`global` or `workspace:<path>`). */
export interface LayerState {
  /** New memories since the last scene pass. */
  readonly sinceL2: number
  /** New memories since the last persona. */
  readonly sinceL3: number
  /** Creation time of the newest memory the last scene pass saw. */
  readonly lastL2At: number
  /** Creation time of the newest memory the last persona saw. */
  readonly lastL3At: number
  readonly attempts: number
  readonly notBefore: number
  readonly lastError: string | null
}

/** How many skipped ranges a conversation keeps. */
export const MAX_SKIPPED = 20

/** A fresh conversation state. */
export function initialConversationState(conversationId: string): ConversationState {
  return { v: STATE_VERSION, conversationId, cursorSeq: -1, stage: 0, attempts: 0, notBefore: 0, lastError: null, lastRunAt: null, gaveUpAt: null, skipped: [], lease: null }
}

/** A fresh layer state. */
export function initialLayerState(): LayerState {
  return { sinceL2: 0, sinceL3: 0, lastL2At: 0, lastL3At: 0, attempts: 0, notBefore: 0, lastError: null }
}
