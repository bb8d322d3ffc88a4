import type { CapturedMessage, SessionEventLike, SessionLike } from './core/recorder.js'
import type { EventAliases } from '@dsh-memory/store/kit'

declare module '@deepseek-ai/cordis' {
  interface Events {
    /** The host's session firehose (declared here structurally; dsh-session owns it). */
    'session/event'(session: SessionLike, event: SessionEventLike): void
    /** The host's awaited durability checkpoint for a session (dsh-session owns it). */
    'session/flush'(session: SessionLike): Promise<void> | void
    /** An agent left the host's registry (dsh-agent owns it). */
    'agent/disposed'(payload: { readonly agent: { readonly id: string } }): void
    /** A human prompt or assistant reply was committed to the store as an L0 message. */
    'memory-capture/captured'(message: CapturedMessage): void
    /** @deprecated Use `memory-capture/captured` (same payload, emitted right before); removed in 1.0. */
    'memory/captured'(message: CapturedMessage): void
  }
}

/** Event names this plugin emits, emitted only after the write is committed. */
export const CAPTURE_EVENTS = Object.freeze({ captured: 'memory-capture/captured' } as const)

/** The names published before the naming rule, emitted as well until 1.0 (new name → old name). */
export const CAPTURE_EVENT_ALIASES: EventAliases = Object.freeze({ [CAPTURE_EVENTS.captured]: 'memory/captured' })
