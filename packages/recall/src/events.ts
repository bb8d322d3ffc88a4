/**
 * Events recall emits (each only after its write committed) and the host events it listens
 * to, declared structurally so the package needs no host type packages at build time.
 */
import type { EventAliases } from '@dsh-memory/store/kit'
import type { ConsolidationResult, SweepResult } from './core/lifecycle.ts'
import type { InjectSwitch, MemoryMode } from './core/options.ts'
import type { InjectedFact } from './core/recall-step.ts'

/** Payload of `memory-recall/injected` (the memories' `lastRecalledAt` is already updated). */
export type RecallInjectedEvent = InjectedFact

/** Payload of `memory-recall/settings-changed`. */
export interface RecallSettingsChangedEvent {
  readonly sessionId: string
  readonly mode: MemoryMode
  readonly inject: InjectSwitch
}

/** Payload of `memory-recall/memory-changed` (explicit edits by the user or the model). */
export interface RecallMemoryChangedEvent {
  readonly op: 'add' | 'correct' | 'delete' | 'promote'
  /** The memory id (the new one for `correct` and `promote`). */
  readonly id: string
  readonly sessionId: string
  /** `user` (the /memory command) or `model` (a tool call). */
  readonly actor: 'user' | 'model'
}

/** Payload of `memory-recall/layer-committed`: a layer snapshot is in the session log. */
export interface RecallLayerCommittedEvent {
  readonly sessionId: string
  readonly layer: 'global' | 'workspace'
  readonly layerKey: string
  readonly revision: number
  /** The stable injection id (also the host message id). */
  readonly injectionId: string
}

/** Payload of `memory-recall/feedback`. */
export interface RecallFeedbackEvent {
  readonly sessionId: string
  readonly memoryId: string
  readonly rating: 'helpful' | 'unhelpful' | 'incorrect'
  /** The memory is flagged for review. */
  readonly review: boolean
}

/** Payload of `memory-recall/review-due`: enough user turns (or idle time) for a review (distillation). */
export interface RecallReviewDueEvent {
  readonly reason: 'turns' | 'idle'
  /** Completed user turns since the previous review. */
  readonly turns: number
}

/** Payload of `memory-recall/consolidated`: the lifecycle's result of that pass. */
export type RecallConsolidatedEvent = ConsolidationResult

/** Payload of `memory-recall/retention-swept`: the lifecycle's result of that sweep. */
export type RecallRetentionSweptEvent = SweepResult

/** Event names, for `ctx.on(RECALL_EVENTS.injected, …)`. */
export const RECALL_EVENTS = Object.freeze({
  injected: 'memory-recall/injected',
  settingsChanged: 'memory-recall/settings-changed',
  memoryChanged: 'memory-recall/memory-changed',
  layerCommitted: 'memory-recall/layer-committed',
  feedback: 'memory-recall/feedback',
  reviewDue: 'memory-recall/review-due',
  consolidated: 'memory-recall/consolidated',
  retentionSwept: 'memory-recall/retention-swept',
} as const)

/** The names published before the naming rule, emitted as well until 1.0 (new name → old name). */
export const RECALL_EVENT_ALIASES: EventAliases = Object.freeze({
  [RECALL_EVENTS.injected]: 'recall/injected',
  [RECALL_EVENTS.settingsChanged]: 'recall/settings-changed',
  [RECALL_EVENTS.memoryChanged]: 'recall/memory-changed',
  [RECALL_EVENTS.layerCommitted]: 'recall/layer-committed',
  [RECALL_EVENTS.feedback]: 'recall/feedback',
  [RECALL_EVENTS.reviewDue]: 'recall/review-due',
  [RECALL_EVENTS.consolidated]: 'recall/consolidated',
  [RECALL_EVENTS.retentionSwept]: 'recall/retention-swept',
})

declare module '@deepseek-ai/cordis' {
  interface Events {
    /** Memories were injected into a step and their recall time was recorded. */
    'memory-recall/injected'(event: RecallInjectedEvent): void
    /** A session's memory mode or injection switch changed (persisted). */
    'memory-recall/settings-changed'(event: RecallSettingsChangedEvent): void
    /** A memory was added, corrected, deleted or promoted through a tool or the /memory command. */
    'memory-recall/memory-changed'(event: RecallMemoryChangedEvent): void
    /** A layer snapshot was found in the session log and recorded as committed. */
    'memory-recall/layer-committed'(event: RecallLayerCommittedEvent): void
    /** A session rated a memory (the rating is stored). */
    'memory-recall/feedback'(event: RecallFeedbackEvent): void
    /** A review is due; the distiller (when installed) was asked to distill what is pending. */
    'memory-recall/review-due'(event: RecallReviewDueEvent): void
    /** A layer was consolidated (the merges are committed). */
    'memory-recall/consolidated'(event: RecallConsolidatedEvent): void
    /** A retention sweep finished (the deletions are committed). */
    'memory-recall/retention-swept'(event: RecallRetentionSweptEvent): void
    /** @deprecated Use `memory-recall/injected` (same payload, emitted right before); removed in 1.0. */
    'recall/injected'(event: RecallInjectedEvent): void
    /** @deprecated Use `memory-recall/settings-changed` (same payload, emitted right before); removed in 1.0. */
    'recall/settings-changed'(event: RecallSettingsChangedEvent): void
    /** @deprecated Use `memory-recall/memory-changed` (same payload, emitted right before); removed in 1.0. */
    'recall/memory-changed'(event: RecallMemoryChangedEvent): void
    /** @deprecated Use `memory-recall/layer-committed` (same payload, emitted right before); removed in 1.0. */
    'recall/layer-committed'(event: RecallLayerCommittedEvent): void
    /** @deprecated Use `memory-recall/feedback` (same payload, emitted right before); removed in 1.0. */
    'recall/feedback'(event: RecallFeedbackEvent): void
    /** @deprecated Use `memory-recall/review-due` (same payload, emitted right before); removed in 1.0. */
    'recall/review-due'(event: RecallReviewDueEvent): void
    /** @deprecated Use `memory-recall/consolidated` (same payload, emitted right before); removed in 1.0. */
    'recall/consolidated'(event: RecallConsolidatedEvent): void
    /** @deprecated Use `memory-recall/retention-swept` (same payload, emitted right before); removed in 1.0. */
    'recall/retention-swept'(event: RecallRetentionSweptEvent): void
  }
}
