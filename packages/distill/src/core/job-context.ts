/**
 * What the distiller's jobs (l1-extraction.ts, layer-jobs.ts) and its scheduler
 * (distiller.ts) share: the public event and status shapes, and the {@link JobContext} the
 * scheduler hands each job.
 */
import type { MemoryStore } from '@dsh-memory/store'
import type { Clock } from './clock.js'
import type { ModelTransport, RoutedModel } from './model.js'
import type { DistillOptions, ModelRoute } from './options.js'
import type { DistillStateRepository } from './state.js'
import type { TriggerReason } from './trigger.js'

/** Log sink (the host logger, or console in a script). Must not throw. */
export interface DistillLogger {
  debug(message: string): void
  info(message: string): void
  warn(message: string): void
}

/** Announced after an L1 commit. */
export interface MemoriesUpdatedEvent {
  readonly conversationId: string
  readonly workspace: string
  /** Ids of memories added as new. */
  readonly added: readonly string[]
  /** Replacements; `from` stays as history (`supersededBy` = `to`). */
  readonly replaced: readonly { readonly from: string; readonly to: string; readonly action: 'update' | 'merge' | 'supersede' }[]
  /** Candidates dropped as already known. */
  readonly skipped: number
  /** The L0 messages this slice covered. */
  readonly messageIds: readonly string[]
}

/** Announced after an L2 commit. */
export interface ScenesUpdatedEvent {
  readonly scope: 'global' | 'workspace'
  readonly workspace: string | null
  readonly created: readonly string[]
  readonly updated: readonly string[]
  readonly deleted: readonly string[]
}

/** Announced after an L3 commit. */
export interface PersonaUpdatedEvent {
  readonly scope: 'global' | 'workspace'
  readonly workspace: string | null
  readonly version: number
}

/** One L1 batch (slice) ended: the stage line of `memory.log` (counts and timing, no text). */
export interface BatchEndedEvent {
  readonly conversationId: string
  readonly reason: string
  /** `done`: memories committed; `skipped`: the reply stayed invalid, the slice was passed over; `failed`: retried later (or given up). */
  readonly outcome: 'done' | 'skipped' | 'failed'
  readonly messages: number
  readonly added: number
  readonly replaced: number
  readonly ms: number
}

/** Listeners of committed changes; called after the transaction, errors are caught. */
export interface DistillEventSink {
  batchEnded?(event: BatchEndedEvent): void
  memoriesUpdated?(event: MemoriesUpdatedEvent): void
  scenesUpdated?(event: ScenesUpdatedEvent): void
  personaUpdated?(event: PersonaUpdatedEvent): void
}

/** Dependencies of {@link Distiller}. */
export interface DistillerDeps {
  readonly store: MemoryStore
  /** One model call on one route (the host's `ctx.llm.stream` in the plugin). */
  readonly transport: ModelTransport
  readonly options: DistillOptions
  readonly clock?: Clock
  readonly logger?: DistillLogger
  /** The agent's route when the config pins none (`conversationId` given when known). */
  readonly defaultRoute?: (conversationId?: string) => ModelRoute | undefined
  readonly events?: DistillEventSink
  /** Whether a lease owner (`host:pid:id`) of another distiller still runs. Default: pid check on this host. */
  readonly isLeaseOwnerAlive?: (owner: string) => boolean
}

/** One conversation as the scheduler sees it. */
export interface Live {
  workspace: string
  pending: number
  lastMessageAt: number
  running: boolean
  orphan: boolean
  stage: number
  notBefore: number
  loaded: boolean
  lastError: string | null
  /** Given up after `extract.maxAttempts` failures: not scheduled until a new message arrives. */
  gaveUp: boolean
}

/** `force` (from `runPending`): run even inside the layer's retry backoff. */
export type Job = { kind: 'l1'; id: string; reason: TriggerReason | 'manual' } | { kind: 'l2' | 'l3'; key: string; force?: boolean }

/** A snapshot for status commands and tests. */
export interface DistillStatus {
  readonly closed: boolean
  readonly running: string | null
  readonly queued: readonly string[]
  readonly conversations: readonly {
    readonly id: string
    readonly pending: number
    readonly agentRunning: boolean
    readonly orphan: boolean
    readonly stage: number
    readonly nextThreshold: number
    readonly lastError: string | null
    /** Given up after `extract.maxAttempts` consecutive failures (a new message retries). */
    readonly gaveUp: boolean
  }[]
  /** Jobs finished / failed since start. */
  readonly counters: { readonly jobs: number; readonly failures: number; readonly memoriesWritten: number }
}

/** What a job may use of the scheduler that runs it. */
export interface JobContext {
  readonly store: MemoryStore
  readonly state: DistillStateRepository
  readonly model: RoutedModel
  readonly clock: Clock
  /** `host:pid:uuid`: the lease owner id of the distiller. */
  readonly instanceId: string
  /** Aborted when the distiller closes. */
  readonly signal: AbortSignal
  /** The current options (live settings swap them between jobs). */
  readonly options: DistillOptions
  readonly closed: boolean
  /** How long a conversation claim lasts. */
  readonly leaseMs: number
  readonly counters: { jobs: number; failures: number; memoriesWritten: number }
  /** The scheduler's record of a conversation (created when missing). */
  live(conversationId: string): Live
  /** Drop the scheduler's record of a conversation. */
  forget(conversationId: string): void
  /** The store to commit through (see `Distiller.writeStore`). */
  writeStore(): MemoryStore
  /** Transaction options naming the running job's lease. */
  fenced(): { fence?: { name: string; token: number } }
  isOwnerAlive(owner: string): boolean
  scheduleWake(at: number): void
  evaluateAll(): Promise<void>
  queueDueLayers(): Promise<void>
  resumeConversations(): Promise<void>
  log(level: keyof DistillLogger, message: string): void
  emit<K extends keyof DistillEventSink>(kind: K, event: Parameters<NonNullable<DistillEventSink[K]>>[0]): void
  /** Run `fn`, logging (not throwing) a failure. */
  guard<T>(what: string, fn: () => Promise<T>): Promise<T | undefined>
}
