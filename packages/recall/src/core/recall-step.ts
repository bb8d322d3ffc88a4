/**
 * Automatic recall at step admission, without the host: for a step the host admitted, ask
 * the injector for a plan, place the fenced recall message, and record the recall time in
 * the background (bookkeeping must not hold the step back). The adapter builds the host
 * message and emits the event. Also the background-work tracker a session flush drains.
 */
import { errorMessage } from './errors.ts'
import { type AgentLike, historyOf, scopeOf, type WorkspaceOf } from './host-agent.ts'
import { placeRecallMessage, type RecallInjector, type StepMessageLike } from './injector.ts'
import type { RecallEngine } from './recall-engine.ts'
import type { HistoryMessageLike } from './recall-text.ts'

/** Wait for `work` at most `ms` (opportunistic work must not hold a process open). */
export async function waitAtMost(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const limit = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms)
  })
  await Promise.race([work, limit]).finally(() => clearTimeout(timer))
}

/** What an injection did, for the `memory-recall/injected` event. */
export interface InjectedFact {
  readonly sessionId: string
  readonly workspace: string
  /** Memories injected into the step (their `lastRecalledAt` is already updated). */
  readonly memoryIds: readonly string[]
  /** Characters of memory text injected. */
  readonly chars: number
  /** The strategy that ran (`keyword` when embeddings were unavailable). */
  readonly strategy: string
  /** How long the recall took, in ms. */
  readonly ms: number
}

/** Collaborators of {@link RecallStep}. */
export interface RecallStepDeps {
  readonly engine: Pick<RecallEngine, 'touch' | 'options'>
  readonly injector: Pick<RecallInjector, 'prepare'>
  /** The host message carrying the recall block (marked as coming from recall). */
  readonly createMessage: (text: string) => StepMessageLike
  readonly track: (job: Promise<unknown>) => void
  /** After the recall time of the injected memories was recorded. */
  readonly onInjected: (fact: InjectedFact) => void
  readonly onWarning: (message: string) => void
  readonly debug?: (message: string) => void
  /** The workspace id of a session directory (the store service's); default the directory. */
  readonly workspaceOf?: WorkspaceOf
  /** One line of the stage log (`memory.log`). */
  readonly stage?: (kind: string, outcome: string, fields: Readonly<Record<string, string | number | boolean | null | undefined>>) => void
}

/** Automatic recall for admitted steps. One per plugin instance. */
export class RecallStep {
  readonly #deps: RecallStepDeps

  constructor(deps: RecallStepDeps) {
    this.#deps = deps
  }

  /**
   * The messages of an admitted step with the recall message placed among them, or
   * `undefined` to leave the step as the host admitted it. Never throws: a failed recall
   * lets the step go on without memory.
   */
  async admit(agent: AgentLike, messages: readonly StepMessageLike[], signal: AbortSignal): Promise<StepMessageLike[] | undefined> {
    const { engine, stage } = this.#deps
    try {
      const scope = scopeOf(agent, this.#deps.workspaceOf)
      if (!scope) return undefined
      const result = await this.#deps.injector.prepare(scope, messages, historyOf(agent) as HistoryMessageLike[], signal)
      if (result.skipped) {
        this.#deps.debug?.(`no recall for session ${scope.sessionId}: ${result.skipped}`)
        stage?.('recall', 'miss', { session: scope.sessionId, reason: result.miss, ms: result.ms })
      }
      const plan = result.plan
      if (!plan) return undefined
      this.#deps.track(
        engine
          .touch(plan.memoryIds)
          .then(() => this.#deps.onInjected({ sessionId: scope.sessionId, workspace: scope.workspace, memoryIds: plan.memoryIds, chars: plan.chars, strategy: plan.strategy, ms: plan.ms }))
          .catch((error: unknown) => this.#deps.onWarning(`memory-recall: could not record recall time: ${errorMessage(error)}`)),
      )
      const placement = engine.options.recall.placement
      this.#deps.debug?.(`recalled ${plan.memoryIds.length} memories (${plan.chars} chars) for session ${scope.sessionId}`)
      stage?.('recall', 'hit', { session: scope.sessionId, memories: plan.memoryIds.length, chars: plan.chars, strategy: plan.strategy, placement, ms: plan.ms })
      return placeRecallMessage([...messages], this.#deps.createMessage(plan.text), placement)
    } catch (error) {
      this.#deps.onWarning(`memory-recall: recall failed, the step goes on without it: ${errorMessage(error)}`)
      return undefined
    }
  }
}
