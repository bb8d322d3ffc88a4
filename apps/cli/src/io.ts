/**
 * The CLI's view of the terminal, injectable so tests run commands in-process and read what
 * they printed.
 */

/** Where a command writes and how it ends. */
export interface CliIO {
  /** Results (JSON with `--json`). */
  readonly stdout: NodeJS.WritableStream & { isTTY?: boolean }
  /** Progress and diagnostics. */
  readonly stderr: NodeJS.WritableStream & { isTTY?: boolean; columns?: number }
}

/** Error for bad command-line input; the CLI prints it and exits with status 2. */
export class CliUsageError extends Error {
  override readonly name = 'CliUsageError'
  readonly code = 'invalid-argument'
  readonly exitCode = 2
}

/** The real process streams. */
export function processIO(): CliIO {
  return { stdout: process.stdout, stderr: process.stderr }
}
