/**
 * Stable error codes of the recall package. Callers switch on `code`, never on the message.
 */
export type RecallErrorCode =
  /** A config value the recall core cannot run with; `path` names the field. */
  | 'invalid-config'
  /** A tool or command argument of the wrong shape or out of range. */
  | 'invalid-argument'
  /** The referenced memory, scene or message does not exist (or is not visible from here). */
  | 'not-found'
  /** An id prefix matched more than one memory. */
  | 'ambiguous-id'
  /** The embeddings endpoint failed, timed out or answered something unusable. */
  | 'embedding-unavailable'
  /** A record of the old meta-table format has an unknown version or shape (`path` names the field); it is left where it was. */
  | 'corrupt-state'

/** The only error type the recall core throws on purpose. */
export class RecallError extends Error {
  override readonly name = 'RecallError'
  readonly code: RecallErrorCode
  /** For `invalid-config` / `invalid-argument`: the offending field path. */
  readonly path: string | undefined

  constructor(code: RecallErrorCode, message: string, options: { path?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.path = options.path
  }
}

/** True when `error` is a {@link RecallError} (checked by shape, so duplicated copies of the package agree). */
export function isRecallError(error: unknown, code?: RecallErrorCode): error is RecallError {
  if (!(error instanceof Error) || error.name !== 'RecallError') return false
  return code === undefined || (error as { code?: unknown }).code === code
}

/** Human-readable message of any thrown value. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
