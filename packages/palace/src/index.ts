/**
 * `@dsh-memory/palace`: the memory palace core, usable without DSH. It archives a session's
 * turns verbatim into `<workspace>/memory-palace/`, and searches and reads them back.
 * The DSH adapter lives in `@dsh-memory/palace/plugin`.
 *
 * @module @dsh-memory/palace
 */
export { describeError, isPalaceError, PalaceError } from './core/errors.js'
export type { PalaceErrorCode } from './core/errors.js'
export {
  DEFAULT_PALACE_OPTIONS,
  mergeSettings,
  parseSettingsLayer,
  RECALL_STRENGTHS,
  resolvePalaceOptions,
  SETTING_KEYS,
  settingsLayerSchema,
} from './core/options.js'
export type { PalaceOptions, PalaceSettings, RecallStrength, SettingsLayer } from './core/options.js'
export { automaticNamespace, isInside, isValidNamespace, MAX_CATEGORY_LENGTH, MAX_NAMESPACE_LENGTH, resolveInside, validateCategory, validateNamespace, validateSelfName } from './core/names.js'
export { blocksText, buildTurns, countTurns, fenced } from './core/turns.js'
export type { BuildTurnsOptions, SessionEventLike, Speaker, Turn } from './core/turns.js'
export { formatRanges, inRanges, mergeRanges, rangesOf } from './core/ranges.js'
export type { TurnRange } from './core/ranges.js'
export { CheckCadence, evaluateGates, retainBudget, splitArchivable } from './core/gates.js'
export type { ArchivableSplit, GateInput, GateResult } from './core/gates.js'
export { FileCommit, JOURNAL_FILE, readTextIfExists, recoverCommits, TEMP_MARKER, withLock, writeFileAtomic } from './core/fs.js'
export type { CrashHook, LockOptions } from './core/fs.js'
export {
  CONFIG_FILE,
  displayTime,
  fileStamp,
  FORMAT_VERSION,
  INDEX_FILE,
  isMonth,
  monthOf,
  NAMESPACES_FILE,
  PalaceLayout,
  STATE_FILE,
  SUMMARY_FILE,
  volumeFileName,
} from './core/layout.js'
export { lineCount, parseVolumeHeader, scanVolume, turnBlock, VOLUME_VERSION, volumeHeader } from './core/volume.js'
export type { VolumeHeader, VolumeTurn } from './core/volume.js'
export { autoSummary, parseSummary, renderSummaryParagraph, summaryFileHeader } from './core/summary.js'
export type { SummaryKind, SummaryParagraph } from './core/summary.js'
export { NamespaceArchive } from './core/namespace.js'
export type { ArchivedFile, ArchiveKind, ArchiveOutcome, ArchivePlan, IndexEntry, MonthInfo, NamespaceArchiveOptions, PalaceState } from './core/namespace.js'
export { MAX_SUMMARY_CHARS, planArchive, planAutoArchive } from './core/segments.js'
export type { ArchiveRequest, SegmentInput } from './core/segments.js'
export { MatchText, normalize, parseQuery, snippet } from './core/query.js'
export type { Keyword, ParsedQuery } from './core/query.js'
export { searchArchives, SEARCH_OUTPUT_CAP, SNIPPET_WIDTH } from './core/search.js'
export type { SearchHit, SearchOptions, SearchResult, SearchSource, SummaryHit, TurnGroup } from './core/search.js'
export { backLinks, parseReadPath, readArchive, READ_CAP } from './core/read.js'
export type { ReadRequest, ReadResult } from './core/read.js'
export { PalaceWorkspace } from './core/workspace.js'
export type { PalaceWorkspaceDeps, SessionSettings } from './core/workspace.js'
export { forcedRecallNote, PALACE_PLUGIN_ID, postCompactionNote, recallGuidance, steeringNote } from './core/guidance.js'
export type { ArchiveStatus } from './core/guidance.js'
export { ArchiveIndex, INDEX_VERSION, newTermSearch, PALACE_MIGRATION_OWNER, palaceMigrations, palacePgMigrations, palaceTables, prefixTerm, turnTerms } from './core/archive-index.js'
export type { IndexedNamespace, PalaceTablesHost, Suggestion } from './core/archive-index.js'
export { palaceNamespaces, palaceSchema, palaceTurns } from './core/index-schema.js'
export type { PalaceSchema } from './core/index-schema.js'
export { palacePgSchema } from './core/pg-index-schema.js'
export { Palace } from './core/palace.js'
export { PalaceSessions } from './core/sessions.js'
export type { StepNote } from './core/sessions.js'
export type { ArchivedEvent, PalaceDeps, PalaceLogger, PressureSample, SessionContext, SessionView } from './core/palace.js'
export { createPalaceTools } from './core/tools.js'
export type { PalaceTool, ToolCallContext, ToolReply } from './core/tools.js'
