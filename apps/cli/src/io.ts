/**
 * The CLI's view of the terminal, injectable so tests run commands in-process and read what
 * they printed, and the errors that decide the exit code.
 */

/** Where a command writes and how it ends. */
export interface CliIO {
  /** Results (JSON with `--json`). */
  readonly stdout: NodeJS.WritableStream & { isTTY?: boolean }
  /** Progress and diagnostics. */
  readonly stderr: NodeJS.WritableStream & { isTTY?: boolean; columns?: number }
}

/**
 * Exit codes of `dsh-memory` (documented in the README):
 * 0 success; 1 failure (an unreadable database, a store error); 2 bad usage (unknown option,
 * bad value, unreadable or malformed input file); 3 not found (no database in the data dir, no
 * record with that id); 4 `doctor` found problems it did not fix.
 */
export const EXIT = Object.freeze({ ok: 0, failure: 1, usage: 2, notFound: 3, problems: 4 } as const)

/**
 * Stable codes of {@link CliError}. `unsupported`: the command cannot work on the chosen
 * backend (a SQLite-only command given a PostgreSQL URL); it exits 2 like bad usage.
 * `mismatch`: `migrate` copied, but the target lacks records of the source (exit 1).
 */
export type CliErrorCode = 'invalid-argument' | 'unsupported' | 'not-found' | 'problems' | 'mismatch' | 'failed'

/** An error the CLI prints as `error: <message>` and exits with its `exitCode`. */
export class CliError extends Error {
  override readonly name: string = 'CliError'
  readonly code: CliErrorCode
  readonly exitCode: number
  constructor(code: CliErrorCode, message: string, exitCode?: number, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
    this.exitCode = exitCode ?? (code === 'invalid-argument' || code === 'unsupported' ? EXIT.usage : code === 'not-found' ? EXIT.notFound : code === 'problems' ? EXIT.problems : EXIT.failure)
  }
}

/** Error for bad command-line input; the CLI prints it and exits with status 2. */
export class CliUsageError extends CliError {
  override readonly name: string = 'CliUsageError'
  constructor(message: string, options?: { cause?: unknown }) {
    super('invalid-argument', message, EXIT.usage, options)
  }
}

/** The real process streams. */
export function processIO(): CliIO {
  return { stdout: process.stdout, stderr: process.stderr }
}

/** Write one line to stdout. */
export function println(io: CliIO, line = ''): void {
  io.stdout.write(`${line}\n`)
}

/** Write a value as one line of JSON to stdout. */
export function printJson(io: CliIO, value: unknown): void {
  io.stdout.write(`${JSON.stringify(value)}\n`)
}
