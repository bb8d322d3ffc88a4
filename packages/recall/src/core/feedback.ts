/**
 * Feedback on recalled memories: a session rates a memory it was shown as helpful,
 * unhelpful or incorrect. Ratings live in the memory's flags (one vote per session, the
 * latest counts) and weigh its ranking; `incorrect` also flags it for review.
 */
import type { Flags } from '@dsh-memory/store'

/** The ratings `memory_feedback` accepts. */
export const FEEDBACK_RATINGS = ['helpful', 'unhelpful', 'incorrect'] as const

/** One rating. */
export type FeedbackRating = (typeof FEEDBACK_RATINGS)[number]

/** What the flags record (`flags.feedback`). */
export interface FeedbackRecord {
  readonly helpful: number
  readonly unhelpful: number
  readonly incorrect: number
  /** The vote of each session (the newest sessions only; see {@link MAX_SESSION_VOTES}). */
  readonly bySession: Readonly<Record<string, FeedbackRating>>
  readonly lastAt: number
}

/** Session votes kept per memory (older votes still count in the totals). */
export const MAX_SESSION_VOTES = 50

/** Weight of a memory flagged for review (an `incorrect` rating). */
export const REVIEW_WEIGHT = 0.25

function count(value: unknown): number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : 0
}

/** The feedback record in `flags` (an empty one when there is none or it is malformed). */
export function feedbackOf(flags: Flags | null | undefined): FeedbackRecord {
  const raw = (flags?.feedback ?? {}) as Partial<FeedbackRecord>
  const bySession: Record<string, FeedbackRating> = {}
  if (raw.bySession && typeof raw.bySession === 'object') {
    for (const [session, rating] of Object.entries(raw.bySession)) {
      if ((FEEDBACK_RATINGS as readonly string[]).includes(rating)) bySession[session] = rating
    }
  }
  return { helpful: count(raw.helpful), unhelpful: count(raw.unhelpful), incorrect: count(raw.incorrect), bySession, lastAt: count(raw.lastAt) }
}

/** True when the memory was rated incorrect and nobody has corrected it since. */
export function needsReview(flags: Flags | null | undefined): boolean {
  return flags?.needsReview === true
}

/**
 * The ranking weight of a memory's feedback, multiplied into its recall score: each helpful
 * vote adds 15 % (up to four), each unhelpful vote takes 25 % off (up to four), and a memory
 * flagged for review weighs {@link REVIEW_WEIGHT}. 1 without feedback.
 */
export function feedbackWeight(flags: Flags | null | undefined): number {
  if (needsReview(flags)) return REVIEW_WEIGHT
  const record = feedbackOf(flags)
  return (1 + 0.15 * Math.min(record.helpful, 4)) * Math.pow(0.75, Math.min(record.unhelpful, 4))
}

/**
 * The flags after `sessionId` rated the memory `rating`. A session's later vote replaces its
 * earlier one. `incorrect` sets `needsReview`.
 */
export function applyFeedback(flags: Flags | null | undefined, sessionId: string, rating: FeedbackRating, at: number): Flags {
  const record = feedbackOf(flags)
  const totals = { helpful: record.helpful, unhelpful: record.unhelpful, incorrect: record.incorrect }
  const previous = record.bySession[sessionId]
  if (previous) totals[previous] = Math.max(0, totals[previous] - 1)
  totals[rating]++
  const bySession = { ...record.bySession }
  delete bySession[sessionId]
  bySession[sessionId] = rating
  const sessions = Object.keys(bySession)
  for (const old of sessions.slice(0, Math.max(0, sessions.length - MAX_SESSION_VOTES))) delete bySession[old]
  const next: Flags = { ...(flags ?? {}), feedback: { ...totals, bySession, lastAt: at } }
  if (rating === 'incorrect') {
    next.needsReview = true
    next.reviewReason = 'rated incorrect'
  } else if (previous === 'incorrect' && totals.incorrect === 0) {
    delete next.needsReview
    delete next.reviewReason
  }
  return next
}

/** Flags of a corrected memory: the old ratings were about the old text. */
export function clearFeedback(flags: Flags | null | undefined): Flags {
  const next: Flags = { ...(flags ?? {}) }
  delete next.feedback
  delete next.needsReview
  delete next.reviewReason
  return next
}
