/**
 * Events recall emits (each only after its write committed) and the host events it listens
 * to, declared structurally so the package needs no host type packages at build time.
 */
import type { InjectSwitch, MemoryMode } from './core/options.ts'

/** Payload of `recall/injected`. */
export interface RecallInjectedEvent {
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

/** Payload of `recall/settings-changed`. */
export interface RecallSettingsChangedEvent {
  readonly sessionId: string
  readonly mode: MemoryMode
  readonly inject: InjectSwitch
}

/** Payload of `recall/memory-changed` (explicit edits by the user or the model). */
export interface RecallMemoryChangedEvent {
  readonly op: 'add' | 'correct' | 'delete'
  /** The memory id (the new one for `correct`). */
  readonly id: string
  readonly sessionId: string
  /** `user` (the /memory command) or `model` (a tool call). */
  readonly actor: 'user' | 'model'
}

/** Event names, for `ctx.on(RECALL_EVENTS.injected, …)`. */
export const RECALL_EVENTS = Object.freeze({
  injected: 'recall/injected',
  settingsChanged: 'recall/settings-changed',
  memoryChanged: 'recall/memory-changed',
} as const)

declare module '@deepseek-ai/cordis' {
  interface Events {
    /** Memories were injected into a step and their recall time was recorded. */
    'recall/injected'(event: RecallInjectedEvent): void
    /** A session's memory mode or injection switch changed (persisted). */
    'recall/settings-changed'(event: RecallSettingsChangedEvent): void
    /** A memory was added, corrected or deleted through a tool or the /memory command. */
    'recall/memory-changed'(event: RecallMemoryChangedEvent): void
  }
}
