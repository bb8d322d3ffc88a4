/**
 * `@dsh-memory/distill`: L1-L3 distillation as a library. Nothing here imports DSH; the host
 * adapter is `@dsh-memory/distill/plugin`.
 *
 * @module @dsh-memory/distill
 */
export { Distiller, defaultIsLeaseOwnerAlive, EVALUATE_DELAY_MS, fitSlice } from './core/distiller.js'
export type {
  DistillerDeps,
  DistillEventSink,
  DistillLogger,
  DistillStatus,
  BatchEndedEvent,
  MemoriesUpdatedEvent,
  PersonaUpdatedEvent,
  ScenesUpdatedEvent,
} from './core/distiller.js'
export { DistillError, describeError, isDistillError } from './core/errors.js'
export type { DistillErrorCode } from './core/errors.js'
export { DEFAULT_DISTILL_OPTIONS, resolveDistillOptions } from './core/options.js'
export type {
  DistillLayer,
  DistillOptions,
  DistillOptionsInput,
  ExtractOptions,
  L2Options,
  L3Options,
  LayerRoutes,
  LlmOptions,
  ModelRoute,
  TokenCostOptions,
} from './core/options.js'
export { systemClock } from './core/clock.js'
export type { Clock } from './core/clock.js'
export { decideTrigger, rampThreshold, retryDelayMs } from './core/trigger.js'
export type { TriggerDecision, TriggerInput, TriggerOptions, TriggerReason } from './core/trigger.js'
export { parseModelJson } from './core/json.js'
export type { JsonRepair, ModelJsonResult } from './core/json.js'
export {
  DEDUP_ACTIONS,
  MAX_MEMORY_TEXT,
  MAX_PERSONA_CHARS,
  MEMORY_KINDS,
  MEMORY_SCOPES,
  normalizeForCompare,
  validateDedupDecisions,
  validateExtraction,
  validatePersonaText,
  validateSceneOps,
} from './core/schemas.js'
export type { DedupAction, DedupDecision, ExtractedMemory, RejectedItem, SceneOp, SuggestedScope, Validated } from './core/schemas.js'
export { applyMemoryOps, placeMemory, planMemoryOps, sameScopeFilter } from './core/dedup.js'
export type { AppliedMemoryOps, MemoryOp, PlacedCandidate, Placement } from './core/dedup.js'
export { applySceneOps, layerKey, parseLayerKey, relatedScenes } from './core/scenes.js'
export type { AppliedSceneOps, SceneScope } from './core/scenes.js'
export { RoutedModel, isTransient } from './core/model.js'
export type { Completion, LedgerEntry, ModelCall, ModelCallResult, ModelTransport, RoutedModelDeps, UsageLike } from './core/model.js'
export { dayKey, expiredDays, LEDGER_VERSION, oldestKeptDay, summarizeLedger } from './core/ledger.js'
export type { LedgerCall, LedgerCallFilter, LedgerDay, LedgerFilter, LedgerRow } from './core/ledger.js'
export { DistillStateRepository, initialConversationState, initialLayerState, MAX_SKIPPED, STATE_VERSION } from './core/state.js'
export type { ConversationPatch, ConversationState, LayerState, Lease, SkippedRange, StateStore } from './core/state.js'
export { DISTILL_MIGRATION_OWNER, distillDeclaration, distillMigrations, distillSchema } from './core/tables.js'
export type { DistillDb, DistillSchema, DistillTables } from './core/tables.js'
export { LEGACY_META_PREFIX, readLegacyState } from './core/legacy-state.js'
export type { LegacySnapshot } from './core/legacy-state.js'
export { upgradeLegacyState } from './core/upgrade.js'
export type { UpgradeReport } from './core/upgrade.js'
export {
  buildDedupPrompt,
  buildExtractionPrompt,
  buildPersonaPrompt,
  buildScenePrompt,
  DEDUP_SYSTEM,
  L1_SYSTEM,
  L3_SYSTEM,
  l2System,
  PROMPT_MARKER,
} from './core/prompts.js'
