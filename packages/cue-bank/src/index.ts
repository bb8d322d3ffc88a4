/**
 * `@dsh-memory/cue-bank`: topic-switch detection and cue re-activation, as a plain library
 * over `@dsh-memory/store`. Nothing here imports DSH; the host adapter is `./plugin`.
 *
 * @module @dsh-memory/cue-bank
 */
export { CueBank } from './core/cue-bank.js'
export { partitionKey } from './core/cue-bank-contract.js'
export type {
  CueBankDependencies,
  CueBankHooks,
  CueListFilter,
  CueWokenEvent,
  CueWrittenEvent,
  OpenedCue,
  SessionRef,
  TurnMessage,
  TurnRecord,
  WakeDecision,
} from './core/cue-bank-contract.js'
export { embeddingText, turnKeywords } from './core/formation.js'
export { createEmbeddingClient, cueEmbeddingModelKey } from './core/embedding.js'
export type { Embedder, EmbeddingClientOptions } from './core/embedding.js'
export { CueBankError, isCueBankError } from './core/errors.js'
export type { CueBankErrorCode } from './core/errors.js'
export { computeIdioms, selectIdiomHints } from './core/idioms.js'
export type { IdiomCandidate, UserTurnTerms } from './core/idioms.js'
export { importCueBankJson, REFERENCE_FORMAT_VERSION } from './core/import.js'
export type { ImportCueBankOptions, ImportCueBankResult } from './core/import.js'
export {
  CHINESE_STOP_WORDS,
  candidateTerms,
  ENGLISH_FILLER_WORDS,
  extractKeywords,
  isCjk,
  isStopWord,
  JAPANESE_STOP_WORDS,
} from './core/keywords.js'
export type { ExtractKeywordsOptions, Keyword } from './core/keywords.js'
export {
  cosineSimilarity,
  coverage,
  decayFactor,
  inverseDocumentFrequency,
  isTopicSwitch,
  keywordMatch,
  mergeKeywords,
  rankCues,
  termSimilarity,
  topicOverlap,
} from './core/matching.js'
export type { Coverage, KeywordMatch, RankedCue, RankInput } from './core/matching.js'
export type { Cue, CueDimensions, CueLevel, Idiom } from './core/model.js'
export { DEFAULT_CUE_BANK_OPTIONS, resolveCueBankOptions } from './core/options.js'
export type {
  CueBankOptions,
  CueBankOptionsInput,
  DecayOptions,
  EmbeddingOptions,
  ExtractOptions,
  InjectOptions,
  MatchMode,
  PartitionMode,
  ResolvedCueBankOptions,
  TopicOptions,
} from './core/options.js'
export { CUE_BLOCK_TAG, formatDate, renderCueBlock } from './core/render.js'
export type { RenderCueBlockInput } from './core/render.js'
export { openCueRepository } from './core/store-cue-repository.js'
export type { CueReads, CueRepository, CueRepositoryOptions, CueWriter } from './core/store-cue-repository.js'
export { breakTemplateBraces, detectLanguage, excerpt, messageText, omitCodeBlocks, stripNonProse } from './core/text.js'
export type { ContentBlockLike, TextLanguage } from './core/text.js'
export { CUE_BANK_MIGRATION_OWNER, cueBankDeclaration, cueBankMigrations, cueBankPostgresMigrations } from './migrations.js'
