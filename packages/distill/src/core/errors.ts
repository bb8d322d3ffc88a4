/**
 * Stable error codes of the distill package. Callers switch on `code`, never on the message;
 * a published code is never renamed.
 */
export type DistillErrorCode =
  /** A config value the core cannot run with; the message names the field. */
  | 'invalid-config'
  /** The model's reply could not be parsed or did not match the expected schema. */
  | 'invalid-output'
  /** Every route of the chain failed (HTTP error, stream error, timeout). */
  | 'model-unavailable'
  /** No provider/model is configured and the host offers no default route. */
  | 'no-route'
  /** The work was cancelled (plugin disposed, host exiting). */
  | 'aborted'
  /** Another writer changed the state this job was based on; the job is dropped and redone later. */
  | 'conflict'
  /** Persisted distill state carries a version this code does not know. */
  | 'unsupported-state'
  /** The distiller has been closed. */
  | 'closed'

/** The only error type the distill core throws on purpose. */
export class DistillError extends Error {
  override readonly name = 'DistillError'
  readonly code: DistillErrorCode

  constructor(code: DistillErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
  }
}

/** True when `error` is a {@link DistillError} (optionally with `code`); checks the shape, not the prototype. */
export function isDistillError(error: unknown, code?: DistillErrorCode): error is DistillError {
  if (!(error instanceof Error) || error.name !== 'DistillError') return false
  return code === undefined || (error as DistillError).code === code
}

/** One line for logs: the message of an Error (with its code), or the value as a string. */
export function describeError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code
    return typeof code === 'string' && !error.message.includes(code) ? `${code}: ${error.message}` : error.message
  }
  return String(error)
}
