import type { MemoriesUpdatedEvent, PersonaUpdatedEvent, ScenesUpdatedEvent } from './core/distiller.js'
import type { SessionLike } from '@dsh-memory/store/kit'

/** The part of `memory/captured` (from @dsh-memory/capture) distill reads. */
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
    'memory/captured'(message: CapturedMessageLike): void
    /** The host's session firehose (dsh-session owns it); distill reads `request/context`. */
    'session/event'(session: SessionLike, event: { readonly type: string; readonly data?: unknown }): void
    /** The host's awaited durability checkpoint (dsh-session owns it). */
    'session/flush'(session: SessionLike): Promise<void> | void
    /** An agent went running ⇄ idle (dsh-agent owns it). */
    'agent/status'(payload: { agent: AgentLike; status: string }): void
    /** An agent left the registry (dsh-agent owns it). */
    'agent/disposed'(payload: { agent: AgentLike }): void
    /** L1 memories were added or replaced; emitted after the commit. */
    'distill/memories-updated'(event: MemoriesUpdatedEvent): void
    /** L2 scenes of one scope changed; emitted after the commit. */
    'distill/scenes-updated'(event: ScenesUpdatedEvent): void
    /** The L3 persona of one scope was rewritten; emitted after the commit. */
    'distill/persona-updated'(event: PersonaUpdatedEvent): void
  }
}

/** Event names this plugin emits, each only after its write is committed. */
export const DISTILL_EVENTS = Object.freeze({
  memoriesUpdated: 'distill/memories-updated',
  scenesUpdated: 'distill/scenes-updated',
  personaUpdated: 'distill/persona-updated',
} as const)
