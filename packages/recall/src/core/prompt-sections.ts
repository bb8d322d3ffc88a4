/**
 * The persona and scene-navigation texts of each session's system prompt. They are computed
 * once per user turn (at the turn's first prompt assembly) and reused for every later step
 * of that turn, so the prompt prefix is byte-identical between steps and changes only when
 * the persona, the scenes or the session's mode changed since the previous turn.
 */
import { withinBudget } from './budget.ts'
import { errorMessage } from './errors.ts'
import { settingsOrDefaults } from './injector.ts'
import type { RecallEngine, RecallScope } from './recall-engine.ts'
import { modePolicy } from './session-modes.ts'

/** The two section texts (`''` = nothing to show; the host drops empty sections). */
export interface SectionTexts {
  readonly persona: string
  readonly scenes: string
}

const EMPTY: SectionTexts = Object.freeze({ persona: '', scenes: '' })

/** Per-session cache of the section texts, keyed by turn. */
export class PromptSections {
  readonly #engine: RecallEngine
  readonly #warn: (message: string) => void
  readonly #cache = new Map<string, { turn: string; texts: SectionTexts }>()

  constructor(engine: RecallEngine, deps: { onWarning?: (message: string) => void } = {}) {
    this.#engine = engine
    this.#warn = deps.onWarning ?? (() => {})
  }

  /** The cached texts of a session (what synchronous section providers read). */
  current(sessionId: string): SectionTexts {
    return this.#cache.get(sessionId)?.texts ?? EMPTY
  }

  /**
   * The texts for `turn` of a session: computed on the first call of a turn (within
   * `recall.timeoutMs`), cached for the rest of it. On a failure or timeout the previous
   * texts stay, so a slow store never blocks or reshapes the prompt.
   */
  async forTurn(scope: RecallScope, turn: string): Promise<SectionTexts> {
    const cached = this.#cache.get(scope.sessionId)
    if (cached && cached.turn === turn) return cached.texts
    const outcome = await withinBudget(
      async (): Promise<SectionTexts> => {
        const settings = await settingsOrDefaults(this.#engine, scope.sessionId, this.#warn)
        const policy = modePolicy(settings.mode)
        const [persona, scenes] = [await this.#engine.personaSection(scope, policy), await this.#engine.sceneNavSection(scope, policy)]
        return { persona, scenes }
      },
      this.#engine.options.recall.timeoutMs,
      (error) => this.#warn(`memory-recall: a late section refresh failed: ${errorMessage(error)}`),
    )
    const previous = cached?.texts ?? EMPTY
    if (!outcome.ok) {
      this.#warn(`memory-recall: persona/scene sections not refreshed (${outcome.reason === 'timeout' ? 'timed out' : errorMessage(outcome.error)}); keeping the previous ones`)
      this.#cache.set(scope.sessionId, { turn, texts: previous })
      return previous
    }
    // Keep the identical object when nothing changed, so comparisons stay cheap.
    const texts = outcome.value.persona === previous.persona && outcome.value.scenes === previous.scenes ? previous : Object.freeze(outcome.value)
    this.#cache.set(scope.sessionId, { turn, texts })
    return texts
  }

  /** Forget a disposed session. */
  forget(sessionId: string): void {
    this.#cache.delete(sessionId)
  }
}
