/**
 * Events recall emits (each only after its write committed) and the host events it listens
 * to, declared structurally so the package needs no host type packages at build time.
 */
import type { InjectSwitch, MemoryMode } from './core/options.ts'
import type { InjectedFact } from './core/recall-step.ts'

/** Payload of `recall/injected` (the memories' `lastRecalledAt` is already updated). */
export type RecallInjectedEvent = InjectedFact

/** Payload of `recall/settings-changed`. */
export interface RecallSettingsChangedEvent {
  readonly sessionId: string
  readonly mode: MemoryMode
  readonly inject: InjectSwitch
}

/** Payload of `recall/memory-changed` (explicit edits by the user or the model). */
export interface RecallMemoryChangedEvent {
  readonly op: 'add' | 'correct' | 'delete' | 'promote'
  /** The memory id (the new one for `correct` and `promote`). */
  readonly id: string
  readonly sessionId: string
  /** `user` (the /memory command) or `model` (a tool call). */
  readonly actor: 'user' | 'model'
}

/** Payload of `recall/layer-committed`: a layer snapshot is in the session log. */
export interface RecallLayerCommittedEvent {
  readonly sessionId: string
  readonly layer: 'global' | 'workspace'
  readonly layerKey: string
  readonly revision: number
  /** The stable injection id (also the host message id). */
  readonly injectionId: string
}

/** Payload of `recall/feedback`. */
export interface RecallFeedbackEvent {
  readonly sessionId: string
  readonly memoryId: string
  readonly rating: 'helpful' | 'unhelpful' | 'incorrect'
  /** The memory is flagged for review. */
  readonly review: boolean
}

/** Payload of `recall/review-due`: enough user turns (or idle time) for a review (distillation). */
export interface RecallReviewDueEvent {
  readonly reason: 'turns' | 'idle'
  /** Completed user turns since the previous review. */
  readonly turns: number
}

/** Payload of `recall/consolidated`. */
export interface RecallConsolidatedEvent {
  readonly layerKey: string
  readonly groups: readonly { readonly into: string; readonly merged: readonly string[] }[]
  readonly revision: number
}

/** Payload of `recall/retention-swept`. */
export interface RecallRetentionSweptEvent {
  readonly deleted: number
  readonly byLayerKind: Readonly<Record<string, number>>
}

/** Event names, for `ctx.on(RECALL_EVENTS.injected, …)`. */
export const RECALL_EVENTS = Object.freeze({
  injected: 'recall/injected',
  settingsChanged: 'recall/settings-changed',
  memoryChanged: 'recall/memory-changed',
  layerCommitted: 'recall/layer-committed',
  feedback: 'recall/feedback',
  reviewDue: 'recall/review-due',
  consolidated: 'recall/consolidated',
  retentionSwept: 'recall/retention-swept',
} as const)

declare module '@deepseek-ai/cordis' {
  interface Events {
    /** Memories were injected into a step and their recall time was recorded. */
    'recall/injected'(event: RecallInjectedEvent): void
    /** A session's memory mode or injection switch changed (persisted). */
    'recall/settings-changed'(event: RecallSettingsChangedEvent): void
    /** A memory was added, corrected, deleted or promoted through a tool or the /memory command. */
    'recall/memory-changed'(event: RecallMemoryChangedEvent): void
    /** A layer snapshot was found in the session log and recorded as committed. */
    'recall/layer-committed'(event: RecallLayerCommittedEvent): void
    /** A session rated a memory (the rating is stored). */
    'recall/feedback'(event: RecallFeedbackEvent): void
    /** A review is due; the distiller (when installed) was asked to distill what is pending. */
    'recall/review-due'(event: RecallReviewDueEvent): void
    /** A layer was consolidated (the merges are committed). */
    'recall/consolidated'(event: RecallConsolidatedEvent): void
    /** A retention sweep finished (the deletions are committed). */
    'recall/retention-swept'(event: RecallRetentionSweptEvent): void
  }
}
