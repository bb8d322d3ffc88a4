/**
 * The per-step injection decision: given the messages a step is about to enter and the
 * session's current history, decide whether and what to recall, within the time budget.
 * The adapter turns a plan into a sourced user message; this module never touches the host.
 */
import { withinBudget } from './budget.ts'
import { errorMessage } from './errors.ts'
import type { LastRecallInfo } from './command.ts'
import type { RecallEngine, RecallScope } from './recall-engine.ts'
import { formatRecallMessage, type HistoryMessageLike, memoriesInContext } from './recall-text.ts'
import type { RecallPlacement } from './options.ts'
import { injectionActive, modePolicy, type SessionMemorySettings } from './session-modes.ts'

/** Reads a session's settings, falling back to the defaults (with a warning) when the record is damaged. */
export async function settingsOrDefaults(engine: RecallEngine, sessionId: string, warn: (message: string) => void): Promise<SessionMemorySettings> {
  try {
    return await engine.settings.get(sessionId)
  } catch (error) {
    warn(`memory-recall: ${errorMessage(error)}; using the defaults for session ${sessionId}`)
    return { mode: engine.options.defaultMode, inject: 'follow', updatedAt: null }
  }
}

/** A message as the pre-step payload carries it (only what recall reads). */
export interface StepMessageLike {
  readonly role?: string
  readonly content?: readonly { readonly type?: string; readonly text?: string }[]
  readonly source?: { readonly kind?: string }
}

/** What to inject. */
export interface InjectionPlan {
  /** The fenced text of the recall message. */
  readonly text: string
  readonly memoryIds: readonly string[]
  /** Characters of memory text (not counting the fence). */
  readonly chars: number
  readonly strategy: string
  readonly ms: number
}

/** Result of {@link RecallInjector.prepare}. */
export interface PrepareResult {
  /** Present when memories should be injected. */
  readonly plan?: InjectionPlan
  /** Why nothing was injected (for logs and `/memory status`); absent when `plan` is set or there was no user message. */
  readonly skipped?: string
  /** The same as a stable code for `memory.log` (set with `skipped`). */
  readonly miss?: RecallMiss
  /** Milliseconds the decision took (set with `plan` or `skipped`). */
  readonly ms?: number
}

/** Why a turn got no recall, as `memory.log` writes it. */
export type RecallMiss = 'explicit-layers' | 'mode-off' | 'inject-off' | 'timeout' | 'error' | 'in-context' | 'below-threshold' | 'over-budget' | 'no-match'

/** The text of the new human messages in a step's batch (`''` when there are none). */
export function humanQuery(messages: readonly StepMessageLike[]): string {
  return messages
    .filter((message) => message?.role === 'user' && message.source?.kind === 'user')
    .flatMap((message) => (message.content ?? []).filter((block) => block?.type === 'text' && typeof block.text === 'string').map((block) => block.text!))
    .join('\n')
    .trim()
}

/**
 * The step's batch with the recall message placed. `before-user` puts it just before the first
 * new human message, so the human's words stay the last thing the model reads (as `000` does);
 * `after-user` appends it. Either way only the entering batch changes: every earlier message
 * keeps its bytes, so the cached prefix is the same (the README gives the measurement).
 */
export function placeRecallMessage<T extends StepMessageLike>(messages: readonly T[], recall: T, placement: RecallPlacement): T[] {
  const at = placement === 'before-user' ? messages.findIndex((message) => message?.role === 'user' && message.source?.kind === 'user') : -1
  if (at < 0) return [...messages, recall]
  return [...messages.slice(0, at), recall, ...messages.slice(at)]
}

/**
 * Decides injections for sessions and remembers the last outcome per session. Never throws:
 * every failure ends as `skipped` with a reason, and the turn goes on.
 */
export class RecallInjector {
  readonly #engine: RecallEngine
  readonly #now: () => number
  readonly #warn: (message: string) => void
  readonly #explicit: ((sessionId: string) => Promise<boolean>) | undefined
  readonly #last = new Map<string, LastRecallInfo>()

  /**
   * @param deps.explicitLayers - whether a session runs in explicit layer mode (it then gets
   *   no automatic recall: memory comes from the layer snapshots it enabled).
   */
  constructor(engine: RecallEngine, deps: { now?: () => number; onWarning?: (message: string) => void; explicitLayers?: (sessionId: string) => Promise<boolean> } = {}) {
    this.#engine = engine
    this.#now = deps.now ?? Date.now
    this.#warn = deps.onWarning ?? (() => {})
    this.#explicit = deps.explicitLayers
  }

  /** The last recall outcome of a session. */
  lastRecall(sessionId: string): LastRecallInfo | undefined {
    return this.#last.get(sessionId)
  }

  /** Forget a disposed session's state. */
  forget(sessionId: string): void {
    this.#last.delete(sessionId)
  }

  #settings(sessionId: string): Promise<SessionMemorySettings> {
    return settingsOrDefaults(this.#engine, sessionId, this.#warn)
  }

  async #explicitMode(sessionId: string): Promise<boolean> {
    if (!this.#explicit) return false
    try {
      return await this.#explicit(sessionId)
    } catch (error) {
      this.#warn(`memory-recall: ${errorMessage(error)}; treating session ${sessionId} as not in explicit layer mode`)
      return false
    }
  }

  /**
   * Plan the injection for one step. Does nothing (and costs one string scan) unless the
   * batch holds a new human message. Runs within `recall.timeoutMs`.
   */
  async prepare(scope: RecallScope, messages: readonly StepMessageLike[], history: readonly HistoryMessageLike[], signal?: AbortSignal): Promise<PrepareResult> {
    const query = humanQuery(messages)
    if (!query) return {}
    const options = this.#engine.options
    // When the budget ends, the work behind it (an embeddings request above all) is cancelled
    // too, so a stalled endpoint holds no socket open after the turn moved on.
    const budget = new AbortController()
    const combined = signal ? AbortSignal.any([signal, budget.signal]) : budget.signal
    const outcome = await withinBudget(
      async () => {
        const settings = await this.#settings(scope.sessionId)
        if (await this.#explicitMode(scope.sessionId)) return { skipped: 'explicit layer mode: memory comes from the enabled layer snapshots', miss: 'explicit-layers' as const }
        if (!injectionActive(settings, options.recall.enabled)) {
          const off = settings.mode === 'off'
          return { skipped: off ? 'memory mode is off' : 'injection is off for this session (write-only)', miss: off ? ('mode-off' as const) : ('inject-off' as const) }
        }
        const recall = await this.#engine.recallForTurn(query, scope, modePolicy(settings.mode), memoriesInContext(history), combined)
        return { recall }
      },
      options.recall.timeoutMs,
      (error) => {
        // The cancellation above is expected; anything else is worth a line.
        if (!budget.signal.aborted) this.#warn(`memory-recall: a recall that had already timed out failed: ${errorMessage(error)}`)
      },
    )
    if (!outcome.ok && outcome.reason === 'timeout') budget.abort(new Error('recall.timeoutMs elapsed'))
    if (!outcome.ok) {
      const skipped =
        outcome.reason === 'timeout'
          ? `recall took longer than recall.timeoutMs (${options.recall.timeoutMs} ms); skipped this turn`
          : `recall failed: ${errorMessage(outcome.error)}`
      if (outcome.reason === 'error') this.#warn(`memory-recall: ${skipped}`)
      this.#last.set(scope.sessionId, { at: this.#now(), injected: 0, chars: 0, strategy: options.recall.strategy, skipped })
      return { skipped, miss: outcome.reason === 'timeout' ? 'timeout' : 'error', ms: outcome.ms }
    }
    const { recall, skipped, miss } = outcome.value as { recall?: Awaited<ReturnType<RecallEngine['recallForTurn']>>; skipped?: string; miss?: RecallMiss }
    if (!recall) {
      this.#last.set(scope.sessionId, { at: this.#now(), injected: 0, chars: 0, strategy: options.recall.strategy, skipped })
      return { skipped, miss, ms: outcome.ms }
    }
    const { selection, strategy, fallbackReason } = recall
    const note = [
      selection.alreadyInContext ? `${selection.alreadyInContext} already in context` : '',
      selection.belowThreshold ? `${selection.belowThreshold} below threshold` : '',
      selection.overBudget ? `${selection.overBudget} over budget` : '',
      fallbackReason ?? '',
    ]
      .filter(Boolean)
      .join(', ')
    this.#last.set(scope.sessionId, { at: this.#now(), injected: selection.selected.length, chars: selection.chars, strategy, skipped: note || undefined })
    if (selection.selected.length === 0) {
      const code: RecallMiss = selection.alreadyInContext ? 'in-context' : selection.belowThreshold ? 'below-threshold' : selection.overBudget ? 'over-budget' : 'no-match'
      return { skipped: note || 'no memory matched', miss: code, ms: outcome.ms }
    }
    const text = formatRecallMessage(
      selection.selected.map(({ scored, text: clipped }) => ({
        id: scored.memory.id,
        kind: scored.memory.kind,
        scope: scored.memory.scope,
        updatedAt: scored.memory.updatedAt,
        text: clipped,
      })),
    )
    return {
      plan: { text, memoryIds: selection.selected.map(({ scored }) => scored.memory.id), chars: selection.chars, strategy, ms: outcome.ms },
    }
  }
}
