/**
 * The two gates of the reference. Archiving is proposed to the model only when both hold:
 * - pressure: estimated history ÷ context window ≥ `triggerPressure`;
 * - batch: at least `minBatchTurns` archivable turns, or archivable text of at least
 *   `batchByteFraction` × the retained budget (`retainFraction` × window).
 * Amounts are in estimated tokens (the host's meter for the history, the store's CJK-aware
 * estimate for turns), so both sides of every comparison use one unit.
 */
import type { PalaceSettings } from './options.js'
import type { Turn } from './turns.js'

/** How a session's turns split for archiving. */
export interface ArchivableSplit {
  /** Unarchived, complete turns before the retained tail, contiguous from the first unarchived turn. */
  readonly archivable: readonly Turn[]
  /** The newest turns that fit the retained budget; never proposed for archiving. */
  readonly retained: readonly Turn[]
  /** The first turn not yet archived, if any. */
  readonly firstUnarchived: Turn | undefined
  /** Estimated tokens of the archivable turns. */
  readonly archivableTokens: number
  /** The retained budget in tokens (`retainFraction` × window; 0 when the window is unknown). */
  readonly retainTokens: number
}

/**
 * Split turns into archivable / retained.
 * @param turns - all turns of the session, oldest first.
 * @param isArchived - whether a turn is already on disk.
 * @param retainTokens - the retained budget in tokens.
 */
export function splitArchivable(turns: readonly Turn[], isArchived: (turn: number) => boolean, retainTokens: number): ArchivableSplit {
  // The retained tail: newest turns while they fit the budget.
  let used = 0
  let tailStart = turns.length
  for (let i = turns.length - 1; i >= 0; i--) {
    const tokens = turns[i]!.tokens
    if (used + tokens > retainTokens) break
    used += tokens
    tailStart = i
  }
  const retained = turns.slice(tailStart)
  const archivable: Turn[] = []
  let firstUnarchived: Turn | undefined
  for (let i = 0; i < turns.length; i++) {
    const turn = turns[i]!
    if (isArchived(turn.turn)) continue
    firstUnarchived ??= turn
    // Archives are contiguous: an unfinished turn (tool calls still running) or the retained
    // tail ends the archivable run, so no later turn is archived before it.
    if (i >= tailStart || !turn.complete) break
    archivable.push(turn)
  }
  return {
    archivable,
    retained,
    firstUnarchived,
    archivableTokens: archivable.reduce((sum, turn) => sum + turn.tokens, 0),
    retainTokens,
  }
}

/** What the gates were given. */
export interface GateInput {
  /** Estimated tokens of the next request (history + envelope), from the host's token meter. */
  readonly historyTokens: number | undefined
  /** The model's context window in tokens. */
  readonly contextWindow: number | undefined
  readonly split: ArchivableSplit
}

/** The verdict of both gates, with the numbers behind it (shown in the steering note and tests). */
export interface GateResult {
  readonly open: boolean
  readonly pressure: { readonly open: boolean; readonly ratio: number | undefined; readonly threshold: number }
  readonly batch: {
    readonly open: boolean
    readonly turns: number
    readonly minTurns: number
    readonly tokens: number
    readonly minTokens: number
  }
}

/** Evaluate both gates. An unknown window or history keeps the pressure gate closed. */
export function evaluateGates(input: GateInput, settings: Pick<PalaceSettings, 'triggerPressure' | 'minBatchTurns' | 'batchByteFraction'>): GateResult {
  const ratio =
    input.historyTokens !== undefined && input.contextWindow !== undefined && input.contextWindow > 0
      ? input.historyTokens / input.contextWindow
      : undefined
  const pressureOpen = ratio !== undefined && ratio >= settings.triggerPressure
  const turns = input.split.archivable.length
  const tokens = input.split.archivableTokens
  const minTokens = Math.ceil(settings.batchByteFraction * input.split.retainTokens)
  const batchOpen = turns > 0 && (turns >= settings.minBatchTurns || (minTokens > 0 && tokens >= minTokens))
  return {
    open: pressureOpen && batchOpen,
    pressure: { open: pressureOpen, ratio, threshold: settings.triggerPressure },
    batch: { open: batchOpen, turns, minTurns: settings.minBatchTurns, tokens, minTokens },
  }
}

/** The retained budget in tokens for a window (0 when the window is unknown). */
export function retainBudget(contextWindow: number | undefined, settings: Pick<PalaceSettings, 'retainFraction'>): number {
  return contextWindow && contextWindow > 0 ? Math.floor(contextWindow * settings.retainFraction) : 0
}

/**
 * Per-session cadence of gate checks: the gates are evaluated once every `checkEveryTurns`
 * new turns, so a long tool loop does not pay a measurement on every step.
 */
export class CheckCadence {
  private lastChecked = new Map<string, number>()

  /**
   * @param turnCount - how many turns the session has now.
   * @returns true when at least `every` turns arrived since the last check (the first check
   *   happens once the session has `every` turns).
   */
  due(sessionId: string, turnCount: number, every: number): boolean {
    const last = this.lastChecked.get(sessionId) ?? 0
    if (turnCount - last < every) return false
    this.lastChecked.set(sessionId, turnCount)
    return true
  }

  /** Forget a session (when its agent is disposed). */
  forget(sessionId: string): void {
    this.lastChecked.delete(sessionId)
  }
}
