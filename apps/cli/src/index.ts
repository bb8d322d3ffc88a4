/**
 * `dsh-memory` as a library: the program (for embedding and tests) and the benchmarks.
 *
 * @module dsh-memory
 */
export { COMMANDS, createProgram, runCli } from './program.ts'
export { CliUsageError, processIO } from './io.ts'
export type { CliIO } from './io.ts'
export { createProgress } from './progress.ts'
export { parseKs, parseModes, registerBench } from './commands/bench.ts'
export {
  evaluateLocomo,
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
