/**
 * The wake side's decisions, apart from the engine's session state and background work:
 * which cues may wake in a session, how a scanned message ranks them into the block to
 * serve, and the one-line account the debug log prints.
 */
import type { WakeDecision } from './cue-bank-contract.js'
import { selectIdiomHints } from './idioms.js'
import { rankCues, type RankInput } from './matching.js'
import type { Cue, Idiom } from './model.js'
import type { InjectOptions } from './options.js'
import { formatDate, renderCueBlock } from './render.js'

/** The parts of a decision fixed before ranking. */
export type WakeBase = Omit<WakeDecision, 'cues' | 'idioms' | 'via' | 'text'>

/** One ranking of a scanned message (first on keywords, again when its vector arrives). */
export interface WakeRanking {
  readonly base: WakeBase
  /** Cues that may wake (see {@link isWakeable}). */
  readonly cues: readonly Cue[]
  readonly idioms: readonly Idiom[]
  /** Candidate idiom terms of the message. */
  readonly terms: readonly string[]
  readonly now: number
  readonly mode: RankInput['mode']
  readonly queryVector: Float32Array | null
  readonly vectorModel: string | null
  readonly inject: InjectOptions
  readonly maxIdiomHints: number
  readonly halfLifeDays: number
  /** Tool name the block mentions for opening a cue, when that tool is present. */
  readonly openTool: string | undefined
}

/** Rank the cues of a scanned message and render the block to serve. */
export function decideWake(input: WakeRanking): WakeDecision {
  const { inject } = input
  const ranked = rankCues({
    query: input.base.keywords,
    cues: input.cues,
    now: input.now,
    mode: input.mode,
    queryVector: input.queryVector,
    vectorModel: input.vectorModel,
    maxCues: inject.maxCues,
    minScore: inject.minScore,
    minVectorScore: inject.minVectorScore,
    halfLifeDays: input.halfLifeDays,
  })
  const hints = ranked.length > 0 ? selectIdiomHints(input.idioms, input.terms, input.maxIdiomHints) : []
  const text = renderCueBlock({ cues: ranked, idioms: hints, maxDetailChars: inject.maxDetailChars, openTool: input.openTool, format: inject.format })
  const via = ranked.length === 0 ? 'none' : ranked.some((entry) => entry.via === 'vector') ? 'vector' : 'keyword'
  return { ...input.base, cues: ranked, idioms: hints, via, text }
}

/**
 * Whether a cue may wake in a session. Another session's cues may. The session's own cues
 * are still in its context, so they may not, except conversation cues of turns the host has
 * compacted away (up to `compactedThrough`).
 */
export function isWakeable(cue: Cue, sessionId: string, compactedThrough: number): boolean {
  const own = cue.sessionId === sessionId || cue.refSessions.includes(sessionId)
  if (!own) return true
  return cue.level === 'conversation' && cue.sessionId === sessionId && cue.turn <= compactedThrough
}

/** One line for the debug log. */
export function describeWake(decision: WakeDecision): string {
  const overlap = decision.overlap === null ? 'n/a' : decision.overlap.toFixed(2)
  if (!decision.scanned) return `overlap ${overlap}, same topic, block ${decision.text ? 'kept' : 'none'}`
  const cues = decision.cues.map((entry) => `${entry.cue.id}(${entry.via} ${entry.score.toFixed(2)}, ${formatDate(entry.cue.lastMentionedAt)})`)
  return `overlap ${overlap}, ${decision.switched ? 'switch' : 'scan'}, ${cues.length ? cues.join(' ') : 'no match'}`
}
