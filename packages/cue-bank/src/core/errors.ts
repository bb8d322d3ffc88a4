/**
 * Stable error codes of the cue bank. Callers switch on `code`, never on the message; a
 * published code is never renamed.
 */
export type CueBankErrorCode =
  /** A config field is missing, of the wrong type or out of range; `path` names it. */
  | 'invalid-config'
  /** The memory store cannot host the cue tables (an in-memory or read-only store). */
  | 'unsupported-store'
  /** An imported cue-bank file is not the documented data model; `path` names the bad field. */
  | 'invalid-import'
  /** The cue (or its source) does not exist. */
  | 'not-found'
  /** The embedding endpoint failed, timed out or answered something that is not an embedding. */
  | 'embedding-failed'
  /** Another connection held the database lock for too long. */
  | 'busy'
  /** The cue bank was closed. */
  | 'closed'

/** The only error type the cue bank throws on purpose. */
export class CueBankError extends Error {
  override readonly name = 'CueBankError'
  readonly code: CueBankErrorCode
  /** For `invalid-config` / `invalid-import`: the dotted path of the offending field. */
  readonly path: string | undefined

  constructor(code: CueBankErrorCode, message: string, options: { path?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.path = options.path
  }
}

/** True when `error` is a {@link CueBankError} (optionally with `code`); checks the shape, so duplicated copies of the package agree. */
export function isCueBankError(error: unknown, code?: CueBankErrorCode): error is CueBankError {
  if (!(error instanceof Error) || error.name !== 'CueBankError') return false
  const actual = (error as { code?: unknown }).code
  return typeof actual === 'string' && (code === undefined || actual === code)
}
