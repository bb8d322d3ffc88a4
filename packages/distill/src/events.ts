import type { MemoriesUpdatedEvent, PersonaUpdatedEvent, ScenesUpdatedEvent } from './core/distiller.js'
import type { EventAliases, SessionLike } from '@dsh-memory/store/kit'

/** The part of `memory-capture/captured` (from @dsh-memory/capture) distill reads. */
export interface CapturedMessageLike {
  readonly conversationId: string
  readonly messageId: string
  readonly role: 'user' | 'assistant'
  readonly workspace: string
  readonly turn: number
}

/** The part of a host session distill reads. */
export type { SessionLike }

/** The part of a host agent distill reads. */
export interface AgentLike {
  readonly id: string
  readonly session?: SessionLike
}

declare module '@deepseek-ai/cordis' {
  interface Events {
    /** A captured L0 message was committed (emitted by @dsh-memory/capture). */
    'memory-capture/captured'(message: CapturedMessageLike): void
    /** The host's session firehose (dsh-session owns it); distill reads `request/context`. */
    'session/event'(session: SessionLike, event: { readonly type: string; readonly data?: unknown }): void
    /** The host's awaited durability checkpoint (dsh-session owns it). */
    'session/flush'(session: SessionLike): Promise<void> | void
    /** An agent went running ⇄ idle (dsh-agent owns it). */
    'agent/status'(payload: { agent: AgentLike; status: string }): void
    /** An agent left the registry (dsh-agent owns it). */
    'agent/disposed'(payload: { agent: AgentLike }): void
    /** L1 memories were added or replaced; emitted after the commit. */
    'memory-distill/memories-updated'(event: MemoriesUpdatedEvent): void
    /** L2 scenes of one scope changed; emitted after the commit. */
    'memory-distill/scenes-updated'(event: ScenesUpdatedEvent): void
    /** The L3 persona of one scope was rewritten; emitted after the commit. */
    'memory-distill/persona-updated'(event: PersonaUpdatedEvent): void
    /** @deprecated Use `memory-distill/memories-updated` (same payload, emitted right before); removed in 1.0. */
    'distill/memories-updated'(event: MemoriesUpdatedEvent): void
    /** @deprecated Use `memory-distill/scenes-updated` (same payload, emitted right before); removed in 1.0. */
    'distill/scenes-updated'(event: ScenesUpdatedEvent): void
    /** @deprecated Use `memory-distill/persona-updated` (same payload, emitted right before); removed in 1.0. */
    'distill/persona-updated'(event: PersonaUpdatedEvent): void
  }
}

/** Event names this plugin emits, each only after its write is committed. */
export const DISTILL_EVENTS = Object.freeze({
  memoriesUpdated: 'memory-distill/memories-updated',
  scenesUpdated: 'memory-distill/scenes-updated',
  personaUpdated: 'memory-distill/persona-updated',
} as const)

/** The names published before the naming rule, emitted as well until 1.0 (new name → old name). */
export const DISTILL_EVENT_ALIASES: EventAliases = Object.freeze({
  [DISTILL_EVENTS.memoriesUpdated]: 'distill/memories-updated',
  [DISTILL_EVENTS.scenesUpdated]: 'distill/scenes-updated',
  [DISTILL_EVENTS.personaUpdated]: 'distill/persona-updated',
})
