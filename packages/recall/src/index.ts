/**
 * `@dsh-memory/recall`: the recall core as a plain library (no DSH import). The ranking
 * core here is what the plugin runs and what `dsh-memory bench locomo` measures.
 * The DSH adapter lives in `@dsh-memory/recall/plugin`.
 *
 * @module @dsh-memory/recall
 */
export { analyze, ANALYZER_VERSION } from './core/analyzer.ts'
export { RankingCorpus } from './core/corpus.ts'
export type { Bm25Parameters, CorpusDocument, WeightedQuery } from './core/corpus.ts'
export {
  asksAboutTime,
  decayFactor,
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
export { DEFAULT_RECALL_OPTIONS, resolveRecallOptions } from './core/options.ts'
export type {
  EmbeddingOptions,
  InjectSwitch,
  MemoryMode,
  RecallInjectionOptions,
  RecallOptions,
  RecallOptionsInput,
  RecallStrategy,
} from './core/options.ts'
export { errorMessage, isRecallError, RecallError } from './core/errors.ts'
export type { RecallErrorCode } from './core/errors.ts'
export {
  INJECT_SWITCHES,
  injectionActive,
  MEMORY_MODES,
  MODE_DESCRIPTIONS,
  modePolicy,
  policyAllows,
  SESSION_SETTINGS_VERSION,
  sessionSettingsKey,
  SessionSettingsRepository,
  settingsLabel,
} from './core/session-modes.ts'
export type { MetaLike, ModePolicy, SessionMemorySettings } from './core/session-modes.ts'
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
export { MAX_SCAN, MEMORY_KINDS, RecallEngine } from './core/recall-engine.ts'
export type { ConversationHit, RecallEngineDeps, RecallScope, RecallStore, ScopeStatus, TurnRecall } from './core/recall-engine.ts'
export { humanQuery, RecallInjector, settingsOrDefaults } from './core/injector.ts'
export type { InjectionPlan, PrepareResult, StepMessageLike } from './core/injector.ts'
export { PromptSections } from './core/prompt-sections.ts'
export type { SectionTexts } from './core/prompt-sections.ts'
export { withinBudget } from './core/budget.ts'
export type { BudgetOutcome } from './core/budget.ts'
export { RECALL_TOOLS } from './core/tools.ts'
export type { Json, RecallToolSpec } from './core/tools.ts'
export { MEMORY_COMMAND_USAGE, runMemoryCommand } from './core/command.ts'
export type { CommandOutcome, LastRecallInfo, MemoryCommandHooks } from './core/command.ts'
