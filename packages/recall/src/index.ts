/**
 * `@dsh-memory/recall`: the recall core as a plain library (no DSH import). The ranking
 * core here is what the plugin runs and what `dsh-memory bench locomo` measures.
 * The DSH adapter lives in `@dsh-memory/recall/plugin`.
 *
 * @module @dsh-memory/recall
 */
export { analyze, ANALYZER_VERSION, searchText } from './core/analyzer.ts'
export { RankingCorpus } from './core/corpus.ts'
export type { Bm25Parameters, CorpusDocument, CorpusOptions, WeightedQuery } from './core/corpus.ts'
export {
  asksAboutTime,
  decayFactor,
  endsWithQuestion,
  groupDocumentScores,
  MEMORY_RANKING,
  rankDocuments,
  reciprocalRankFusion,
  TURN_RANKING,
  weightTerms,
} from './core/ranking.ts'
export type { ContextParameters, RankedDocument, RankingParameters } from './core/ranking.ts'
export { clipText, rankMemories, selectForInjection } from './core/memory-ranking.ts'
export type {
  InjectionBudget,
  InjectionSelection,
  RankableMemory,
  RankMemoriesOptions,
  ScoredMemory,
  SelectedMemory,
} from './core/memory-ranking.ts'
export { cosineSimilarity, createEmbedder } from './core/embedding.ts'
export type { Embedder } from './core/embedding.ts'
export { assertMiniLmInstalled, createMiniLmEmbedder, MINILM_MODEL_KEY, MINILM_PACKAGES, miniLmCanEmbed, missingMiniLmPackages } from './core/minilm.ts'
export type { MiniLmEmbedder, MiniLmOptions } from './core/minilm.ts'
export { fuseTurnVectors, TURN_VECTOR_WEIGHT } from './core/turn-vectors.ts'
export type { ScoredTurn, TurnNeighbour } from './core/turn-vectors.ts'
export { DEFAULT_RECALL_OPTIONS, resolveRecallOptions } from './core/options.ts'
export type {
  EmbeddingOptions,
  EmbeddingProvider,
  InjectSwitch,
  LayerOptions,
  LifecycleOptions,
  LimitOptions,
  MemoryMode,
  RecallInjectionOptions,
  RecallOptions,
  RecallOptionsInput,
  RecallStrategy,
  RecallPlacement,
  RetentionOptions,
  RetentionRule,
} from './core/options.ts'
export { errorMessage, isRecallError, RecallError } from './core/errors.ts'
export { autoMemoryItem, autoMemoryKind, classifyInstruction, MAX_ITEM_CHARS, normalizeForCompare, splitFrontMatter, splitInstructions } from './core/instructions.ts'
export type { ImportedKind, InstructionItem } from './core/instructions.ts'
export { importInstructionItems, MAX_IMPORT_FILE_BYTES, MAX_IMPORT_FILES, planWorkspaceImport, workspaceRuleFiles } from './core/instruction-import.ts'
export type { ImportedInstruction, InstructionImportResult, PlannedImport } from './core/instruction-import.ts'
export type { RecallErrorCode } from './core/errors.ts'
export {
  INJECT_SWITCHES,
  injectionActive,
  MEMORY_MODES,
  MODE_DESCRIPTIONS,
  modePolicy,
  policyAllows,
  settingsLabel,
} from './core/session-modes.ts'
export type { ModePolicy, SessionMemorySettings } from './core/session-modes.ts'
export { SessionSettingsRepository } from './core/session-settings.ts'
export { openRecallTables, RECALL_MIGRATION_OWNER, recallDeclaration, recallMigrations } from './core/state-tables.ts'
export type { RecallStateHost, RecallTables } from './core/state-tables.ts'
export { recallSchema } from './core/state-schema.ts'
export type { RecallSchema } from './core/state-schema.ts'
export { LEGACY_META_PREFIXES, upgradeLegacyState } from './core/legacy-state.ts'
export type { LegacyStateHost, LegacyUpgradeReport } from './core/legacy-state.ts'
export {
  escapeFenced,
  formatPersonaSection,
  formatRecallMessage,
  formatSceneNavSection,
  memoriesInContext,
  promptSafe,
  RECALL_FENCE_CLOSE,
  RECALL_FENCE_OPEN,
  RECALL_PLUGIN_ID,
  RECALL_PREAMBLE,
  recalledIds,
} from './core/recall-text.ts'
export type { HistoryMessageLike, PersonaText, RecallLine, SceneNavEntry } from './core/recall-text.ts'
export { fuseConversationVectors, MAX_SCAN, MEMORY_CANDIDATES, MEMORY_KINDS, MESSAGE_CANDIDATES, rankConversationTurns, rankConversationTurnsByMeaning, RecallEngine, VECTOR_CANDIDATES, VECTOR_SCAN } from './core/recall-engine.ts'
export type { ConversationHit, ConversationRankingOptions, MemoryReadResult, RecallEngineDeps, RecallScope, RecallStore, ScopeStatus, TurnRecall } from './core/recall-engine.ts'
export {
  buildLayerSnapshot,
  indexOrder,
  injectedMemoryIds,
  isLayerName,
  LAYER_INDEX_CLOSE,
  LAYER_INDEX_OPEN,
  LAYER_NAMES,
  LAYER_SNAPSHOT_FORM,
  layerFilter,
  layerRef,
  memoryTitle,
  snapshotInjectionId,
  snapshotMemoryIds,
} from './core/layers.ts'
export type { LayerName, LayerRef, LayerSnapshot, LoggedEventLike, SnapshotLimits } from './core/layers.ts'
export {
  addDesired,
  emptyLayerState,
  isExplicit,
  isLive,
  lastCommitted,
  liveRecord,
  markCommitted,
  markDesired,
  markQueued,
  MAX_RECORDS,
  nextGeneration,
  reconcile,
  setEnabled,
  supersedeRecord,
} from './core/injection-ledger.ts'
export type { InjectionRecord, InjectionState, SessionLayerState, SessionLogView } from './core/injection-ledger.ts'
export { InjectionLedger } from './core/injection-ledger-repository.ts'
export { LayerController } from './core/layer-controller.ts'
export type { LayerControllerDeps, LayerSessionHandle, SnapshotMessage } from './core/layer-controller.ts'
export { applyFeedback, clearFeedback, FEEDBACK_RATINGS, feedbackOf, feedbackWeight, MAX_SESSION_VOTES, needsReview, REVIEW_WEIGHT } from './core/feedback.ts'
export type { FeedbackRating, FeedbackRecord } from './core/feedback.ts'
export { chunkManifest, chunkText } from './core/memory-read.ts'
export type { ChunkManifest, TextChunk } from './core/memory-read.ts'
export {
  CONSOLIDATION_SCAN,
  consolidationLease,
  foldedText,
  jaccard,
  Lifecycle,
  planConsolidation,
  RETENTION_LEASE,
} from './core/lifecycle.ts'
export type { ConsolidationResult, LayerSchedule, LifecycleDeps, RetentionState, ReviewReason, SweepResult, TickReport, TurnState } from './core/lifecycle.ts'
export { LayerProjection, PROJECTION_VERSION, projectedRevision, projectionPath, renderProjection } from './core/projection.ts'
export { humanQuery, placeRecallMessage, RecallInjector, settingsOrDefaults } from './core/injector.ts'
export type { InjectionPlan, PrepareResult, RecallMiss, StepMessageLike } from './core/injector.ts'
export { RecallStep, waitAtMost } from './core/recall-step.ts'
export type { InjectedFact, RecallStepDeps } from './core/recall-step.ts'
export { historyOf, layerSessionHandle, messageIds, scopeOf, turnKey } from './core/host-agent.ts'
export type { AgentLike } from './core/host-agent.ts'
export { RecallSessionEvents } from './core/session-events.ts'
export type { RecallSessionEventsDeps, SessionEventLike } from './core/session-events.ts'
export { Upkeep } from './core/upkeep.ts'
export type { UpkeepDeps } from './core/upkeep.ts'
export { toolFacts } from './core/tool-events.ts'
export type { ToolFact } from './core/tool-events.ts'
export { PromptSections } from './core/prompt-sections.ts'
export type { SectionTexts } from './core/prompt-sections.ts'
export { withinBudget } from './core/budget.ts'
export type { BudgetOutcome } from './core/budget.ts'
export { RECALL_TOOLS } from './core/tools.ts'
export type { Json, RecallToolContext, RecallToolSpec } from './core/tools.ts'
export { MEMORY_COMMAND_USAGE, runMemoryCommand } from './core/command.ts'
export type { CommandOutcome, LastRecallInfo, MemoryCommandHooks } from './core/command.ts'
