/**
 * Validation of `palace_archive` input, as the reference states it: segments
 * `[{category, fromTurn, toTurn}, …]`, one category per turn, no overlapping ranges, a
 * category may appear in several segments (they merge into one file), and one summary per
 * category. Archives also stay contiguous: they start at the first unarchived turn and leave
 * no unarchived turn between archived ones, so the recorded ranges never have a gap.
 */
import { PalaceError } from './errors.js'
import { validateCategory } from './names.js'
import type { ArchivePlan } from './namespace.js'
import { formatRanges, rangesOf } from './ranges.js'
import type { Turn } from './turns.js'

/** One segment as the model sends it. */
export interface SegmentInput {
  readonly category: string
  readonly fromTurn: number
  readonly toTurn: number
}

/** The archive part of `palace_archive` arguments. */
export interface ArchiveRequest {
  readonly segments: readonly SegmentInput[]
  readonly summaries?: readonly { readonly category: string; readonly text: string }[]
  readonly summary?: string
  readonly selfName: string
}

/** Longest summary paragraph accepted. */
export const MAX_SUMMARY_CHARS = 4000

/**
 * Turn a request into a plan, or explain precisely what is wrong.
 * @param turns - every turn of the session, oldest first.
 * @param isArchived - whether a turn is already archived.
 * @throws PalaceError `invalid-argument`, `invalid-name`, `overlap`, `gap`, `not-archivable`
 */
export function planArchive(
  request: ArchiveRequest,
  turns: readonly Turn[],
  isArchived: (turn: number) => boolean,
  options: { maxFileBytes: number },
): ArchivePlan {
  if (request.segments.length === 0) throw new PalaceError('invalid-argument', 'segments must list at least one {category, fromTurn, toTurn}')
  const segments = request.segments.map((segment, index) => {
    const category = validateCategory(segment.category)
    if (!Number.isSafeInteger(segment.fromTurn) || !Number.isSafeInteger(segment.toTurn)) {
      throw new PalaceError('invalid-argument', `segments[${index}]: fromTurn and toTurn must be integers`)
    }
    if (segment.fromTurn > segment.toTurn) {
      throw new PalaceError('invalid-argument', `segments[${index}]: fromTurn ${segment.fromTurn} is after toTurn ${segment.toTurn}`)
    }
    return { category, from: segment.fromTurn, to: segment.toTurn, index }
  })
  const sorted = [...segments].sort((a, b) => a.from - b.from)
  for (let i = 1; i < sorted.length; i++) {
    const previous = sorted[i - 1]!
    const current = sorted[i]!
    if (current.from <= previous.to) {
      throw new PalaceError(
        'overlap',
        `segments overlap: ${previous.category} ${previous.from}–${previous.to} and ${current.category} ${current.from}–${current.to}; every turn belongs to exactly one category`,
      )
    }
  }
  const byNumber = new Map(turns.map((turn) => [turn.turn, turn]))
  const claimed: { turn: Turn; category: string }[] = []
  for (const segment of sorted) {
    const inside = turns.filter((turn) => turn.turn >= segment.from && turn.turn <= segment.to)
    if (inside.length === 0) {
      throw new PalaceError('not-archivable', `segment ${segment.category} ${segment.from}–${segment.to} contains no turn; list turns with palace_turns`)
    }
    for (const turn of inside) claimed.push({ turn, category: segment.category })
  }
  const already = claimed.filter((entry) => isArchived(entry.turn.turn)).map((entry) => entry.turn.turn)
  if (already.length > 0) {
    const first = turns.find((turn) => !isArchived(turn.turn))
    throw new PalaceError(
      'overlap',
      `turns ${formatRanges(rangesOf(already, [...byNumber.keys()]))} are already archived${first ? `; the first unarchived turn is ${first.turn}` : ''}`,
    )
  }
  const running = claimed.filter((entry) => !entry.turn.complete).map((entry) => entry.turn.turn)
  if (running.length > 0) {
    throw new PalaceError('not-archivable', `turn ${running.join(', ')} is still waiting for tool results and cannot be archived yet`)
  }
  // Contiguity: every unarchived turn from the first unarchived one up to the last claimed one is claimed.
  const claimedSet = new Set(claimed.map((entry) => entry.turn.turn))
  const last = Math.max(...claimedSet)
  const missing = turns.filter((turn) => turn.turn <= last && !isArchived(turn.turn) && !claimedSet.has(turn.turn))
  if (missing.length > 0) {
    const shown = missing
      .slice(0, 5)
      .map((turn) => `${turn.turn} (${turn.speaker}: “${turn.head.slice(0, 30)}”)`)
      .join(', ')
    throw new PalaceError(
      'gap',
      `segments leave unarchived turns before turn ${last}: ${shown}${missing.length > 5 ? ` and ${missing.length - 5} more` : ''}; archives start at the first unarchived turn and cover every turn up to where they end`,
    )
  }
  // Categories in first-appearance order, each with its turns oldest first.
  const groups = new Map<string, Turn[]>()
  for (const entry of claimed) {
    const list = groups.get(entry.category) ?? []
    list.push(entry.turn)
    groups.set(entry.category, list)
  }
  const summaries = collectSummaries(request, [...groups.keys()])
  return {
    kind: 'model',
    groups: [...groups].map(([category, list]) => ({ category, turns: list.sort((a, b) => a.turn - b.turn) })),
    summaries,
    selfName: request.selfName,
    knownTurns: turns.map((turn) => turn.turn),
    maxFileBytes: options.maxFileBytes,
  }
}

function collectSummaries(request: ArchiveRequest, categories: readonly string[]): Map<string, string> {
  const summaries = new Map<string, string>()
  if (request.summaries && request.summaries.length > 0) {
    for (const [index, entry] of request.summaries.entries()) {
      const category = validateCategory(entry.category)
      if (!categories.includes(category)) {
        throw new PalaceError('invalid-argument', `summaries[${index}] is for category "${category}", which no segment uses (categories: ${categories.join(', ')})`)
      }
      if (summaries.has(category)) throw new PalaceError('invalid-argument', `summaries has two entries for category "${category}"`)
      summaries.set(category, checkSummaryText(entry.text, `summaries[${index}].text`))
    }
  }
  if (request.summary !== undefined) {
    if (categories.length !== 1) {
      throw new PalaceError('invalid-argument', `summary can only stand in for summaries with a single category; these segments use ${categories.length}: ${categories.join(', ')}`)
    }
    if (summaries.size > 0) throw new PalaceError('invalid-argument', 'give either summary or summaries, not both')
    summaries.set(categories[0]!, checkSummaryText(request.summary, 'summary'))
  }
  const missing = categories.filter((category) => !summaries.has(category))
  if (missing.length > 0) {
    throw new PalaceError('invalid-argument', `every category needs a summary of what its turns covered; missing: ${missing.join(', ')} (use summaries=[{category, text}, …])`)
  }
  return summaries
}

function checkSummaryText(text: unknown, field: string): string {
  if (typeof text !== 'string' || text.trim().length === 0) throw new PalaceError('invalid-argument', `${field} must be a non-empty string`)
  if (text.length > MAX_SUMMARY_CHARS) throw new PalaceError('invalid-argument', `${field} is ${text.length} characters; keep it under ${MAX_SUMMARY_CHARS}`)
  return text.trim()
}

/**
 * The plan of an automatic archive before a compaction: every unarchived, complete turn
 * from the first unarchived one through `throughTurn`, in one category.
 */
export function planAutoArchive(
  turns: readonly Turn[],
  isArchived: (turn: number) => boolean,
  throughTurn: number,
  options: { category: string; selfName: string; maxFileBytes: number; summarize: (turns: readonly Turn[]) => string },
): ArchivePlan | undefined {
  const chosen: Turn[] = []
  for (const turn of turns) {
    if (turn.turn > throughTurn) break
    if (isArchived(turn.turn)) continue
    if (!turn.complete) break
    chosen.push(turn)
  }
  if (chosen.length === 0) return undefined
  return {
    kind: 'auto',
    groups: [{ category: options.category, turns: chosen }],
    summaries: new Map([[options.category, options.summarize(chosen)]]),
    selfName: options.selfName,
    knownTurns: turns.map((turn) => turn.turn),
    maxFileBytes: options.maxFileBytes,
  }
}
