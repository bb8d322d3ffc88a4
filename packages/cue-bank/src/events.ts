/**
 * The events this plugin emits, and the host events it listens to, declared structurally
 * (the host packages own the real declarations; these overloads only type what is read).
 */
import type { CueWokenEvent, CueWrittenEvent } from './core/cue-bank-contract.js'
import type { ContentBlockLike } from './core/text.js'
import type { EventAliases, SessionEventLike, SessionLike } from '@dsh-memory/store/kit'

/** The parts of a host session and its events the plugin reads. */
export type { SessionEventLike, SessionLike }

/** The part of a host message the plugin reads. */
export interface MessageLike {
  readonly id?: string
  readonly content?: readonly ContentBlockLike[]
  readonly source?: { readonly kind?: string }
}

/** The part of a host agent the plugin reads. */
export interface AgentLike {
  readonly id: string
  readonly session?: SessionLike
}

/** The part of a prompt assembly the plugin touches: its dynamic contexts. */
export interface AssemblyLike {
  contexts?: { name: string; text: string }[]
}

/** The part of an assembly context the plugin reads. */
export interface AssembleContextLike {
  readonly agent?: AgentLike
}

declare module '@deepseek-ai/cordis' {
  interface Events {
    /** The host's session firehose (dsh-session owns it). */
    'session/event'(session: SessionLike, event: SessionEventLike): void
    /** The host's awaited durability checkpoint (dsh-session owns it). */
    'session/flush'(session: SessionLike): Promise<void> | void
    /** A message left the agent's inbox into a step, before the step's prompt is assembled (dsh-agent owns it). */
    'agent/inbox/claimed'(payload: { agent: AgentLike; message: MessageLike; turn: number }): void
    /** An agent left the registry (dsh-agent owns it). */
    'agent/disposed'(payload: { agent: AgentLike }): void
    /** The prompt-assembly waterfall (dsh-system-prompt owns it). */
    'system-prompt/assemble'(assembly: AssemblyLike, context: AssembleContextLike, next: () => Promise<AssemblyLike>): Promise<AssemblyLike>
    /** A turn's cues were committed to the store. */
    'memory-cue-bank/written'(event: CueWrittenEvent): void
    /** Cues were woken for a new topic and marked (hit count, last touched) in the store. */
    'memory-cue-bank/woken'(event: CueWokenEvent): void
    /** @deprecated Use `memory-cue-bank/written` (same payload, emitted right before); removed in 1.0. */
    'cue-bank/written'(event: CueWrittenEvent): void
    /** @deprecated Use `memory-cue-bank/woken` (same payload, emitted right before); removed in 1.0. */
    'cue-bank/woken'(event: CueWokenEvent): void
  }
}

/** Event names this plugin emits, each only after its write is committed. */
export const CUE_BANK_EVENTS = Object.freeze({ written: 'memory-cue-bank/written', woken: 'memory-cue-bank/woken' } as const)

/** The names published before the naming rule, emitted as well until 1.0 (new name → old name). */
export const CUE_BANK_EVENT_ALIASES: EventAliases = Object.freeze({
  [CUE_BANK_EVENTS.written]: 'cue-bank/written',
  [CUE_BANK_EVENTS.woken]: 'cue-bank/woken',
})
