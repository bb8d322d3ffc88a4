/**
 * The host's session events, as recall's state machines need them:
 *
 * - a logged `user/message` whose id is a layer snapshot's makes that snapshot `committed`
 *   in the injection ledger; a snapshot the host discarded from the inbox is `desired` again;
 * - a **completed user turn** (a turn that took a human message and ended `completed`) is
 *   counted by the lifecycle, which may start a review.
 *
 * Per session it remembers only how many human messages the running turn took. Nothing
 * here throws into the host: failures are logged by the collaborators.
 */
import { errorMessage } from './errors.ts'
import { LayerController } from './layer-controller.ts'

/** A session log event as the host publishes it (only what is read here). */
export interface SessionEventLike {
  readonly type?: string
  readonly seq?: number
  readonly data?: {
    readonly id?: unknown
    readonly source?: { readonly kind?: unknown }
    readonly reason?: { readonly kind?: unknown }
  }
}

/** Collaborators of {@link RecallSessionEvents}. */
export interface RecallSessionEventsDeps {
  readonly controller: Pick<LayerController, 'noteLogged' | 'noteDiscarded'>
  readonly lifecycle: { noteUserTurn(): Promise<boolean> }
  /** Registers background work a session flush waits for. */
  readonly track: (job: Promise<unknown>) => void
  readonly onWarning?: (message: string) => void
}

/** Routes session events to the ledger and the lifecycle. One per plugin instance. */
export class RecallSessionEvents {
  readonly #deps: RecallSessionEventsDeps
  /** Human messages in each session's running turn. */
  readonly #humanMessages = new Map<string, number>()

  constructor(deps: RecallSessionEventsDeps) {
    this.#deps = deps
  }

  /** One `session/event`. Never throws. */
  event(sessionId: unknown, event: SessionEventLike | undefined): void {
    try {
      if (typeof sessionId !== 'string' || !event) return
      if (event.type === 'user/message') {
        const id = event.data?.id
        if (LayerController.isSnapshotId(id)) this.#deps.track(this.#deps.controller.noteLogged(sessionId, id, typeof event.seq === 'number' ? event.seq : null))
        if (event.data?.source?.kind === 'user') this.#humanMessages.set(sessionId, (this.#humanMessages.get(sessionId) ?? 0) + 1)
      } else if (event.type === 'turn/end') {
        const human = this.#humanMessages.get(sessionId) ?? 0
        this.#humanMessages.delete(sessionId)
        if (human > 0 && event.data?.reason?.kind === 'completed') this.#deps.track(this.#deps.lifecycle.noteUserTurn())
      }
    } catch (error) {
      this.#deps.onWarning?.(`memory-recall: session event not processed: ${errorMessage(error)}`)
    }
  }

  /** The host discarded message `messageId` from the session's inbox before it landed. */
  discarded(sessionId: unknown, messageId: unknown): void {
    if (typeof sessionId === 'string' && LayerController.isSnapshotId(messageId)) this.#deps.track(this.#deps.controller.noteDiscarded(sessionId, messageId))
  }

  /** The session's agent is gone: forget its running turn. */
  forget(sessionId: unknown): void {
    if (typeof sessionId === 'string') this.#humanMessages.delete(sessionId)
  }
}
