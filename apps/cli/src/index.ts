/**
 * `dsh-memory` as a library: the program (for embedding and tests), the data commands (status,
 * search, show, forget, export, import, doctor, migrate) and the benchmarks.
 *
 * @module dsh-memory
 */
export { COMMANDS, createProgram, runCli } from './program.ts'
export { CliError, CliUsageError, EXIT, processIO } from './io.ts'
export type { CliErrorCode, CliIO } from './io.ts'
export { createProgress } from './progress.ts'
export { parseKs, parseModes, registerBench } from './commands/bench.ts'
export {
  evaluateLocomo,
  formatLocomoComparison,
  formatLocomoReport,
  LOCOMO_CATEGORIES,
  LOCOMO_MODES,
  loadLocomo,
  runLocomoBench,
  turnText,
} from './bench/locomo.ts'
export type { BenchProgress, CategoryMetrics, LocomoBenchOptions, LocomoMode, LocomoReport, ModeMetrics, RecallAtK } from './bench/locomo.ts'
export { LocomoFormatError, normaliseEvidence, parseLocomo, parseSessionDate } from './bench/locomo-format.ts'
export type { LocomoObservation, LocomoQuestion, LocomoSample, LocomoSession, LocomoTurn } from './bench/locomo-format.ts'
export { seededRandom } from './bench/corpus.ts'
export type { BenchBackend } from './bench/backend.ts'
export { FULL_SIZES, formatScaleComparison, formatScaleReport, latencyStats, POSTGRES_NOT_MEASURED, parseSizes, QUICK_SIZES, runScaleBench, SCALE_TARGETS } from './bench/scale.ts'
export type { LatencyStats, ScaleBenchOptions, ScaleKind, ScaleReport, ScaleSize } from './bench/scale.ts'
export { formatTokenCostReport, runTokenCostBench, scriptedDistillModel, TOKEN_COST_FACTS, TOKEN_COST_REFERENCE, tokenCostConversation } from './bench/token-cost.ts'
export type { LayerCost, ScriptedFact, ScriptedTurn, TokenCostBenchOptions, TokenCostReport } from './bench/token-cost.ts'
export { DATABASE_FILE, openDataStore, openSourceStore, resolveCliDataDir, resolveDataSource } from './data/data-dir.ts'
export type { DataSource, DataSourceOptions } from './data/data-dir.ts'
export { checkDatabaseUrl, DATABASE_URL_ENV, isDatabaseUrl, redactDatabaseUrl } from './data/database-url.ts'
export { DEFAULT_PAGE_SIZE, migrateEndpoint, NOT_MOVED_REASON, RECORD_TYPES, runMigrate } from './data/migrate.ts'
export type { MigrateOptions, MigrateReport, NotMoved, RecordType, VerifiedCount } from './data/migrate.ts'
export { formatMigrate } from './commands/migrate.ts'
export { collectStatus, formatStatus } from './commands/status.ts'
export type { CostReport, DistillReport, StatusReport } from './commands/status.ts'
export { findRecord } from './commands/records.ts'
export type { FoundRecord } from './commands/records.ts'
export { MARKDOWN_EXPORT_VERSION } from './commands/export.ts'
export { formatImport, runImport } from './commands/import.ts'
export type { ImportReport } from './commands/import.ts'
export { formatDoctor, runDoctor } from './commands/doctor.ts'
export type { DoctorCheck, DoctorReport } from './commands/doctor.ts'
export { autoMemoryItem, classifyInstruction, splitInstructions } from '@dsh-memory/recall'
export type { ImportedKind, InstructionItem } from '@dsh-memory/recall'
export { decodeProjectSlug, detectFormat, instructionTarget } from './import/sources.ts'
export type { ImportFormat, InstructionTarget } from './import/sources.ts'
export { checkSingleCordis, dataDirOf, installPlugins, resolveDshHome, TARBALL_FOLDER, uninstallPlugins } from './install/installer.ts'
export { runProgram } from './install/launcher.ts'
export type { RunResult } from './install/launcher.ts'
export type { InstallOptions, InstallReport, ProfileTarget, UninstallReport } from './install/installer.ts'
export { InstallError } from './install/errors.ts'
export type { InstallErrorReason } from './install/errors.ts'
export { checkoutRoot, packWorkspaces, parsePluginList, PLUGIN_NAMES, publishablePackages, tarballsIn } from './install/packages.ts'
export { bundleRows, dumpedRowIds, missingRows } from './install/rows.ts'
export type { LoaderRow } from './install/rows.ts'
export { BUILT_DEPENDENCIES, checkScaffold, HOST_SCAFFOLD, mergeWorkspaceYaml, readOverrides, removeOverrides } from './install/workspace-yaml.ts'
export { handleProcessExits, INTERRUPTED_EXIT, onInterrupt } from './process-exit.ts'
