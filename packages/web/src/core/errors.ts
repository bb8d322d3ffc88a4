/** Errors of the memory browser, with stable codes callers switch on. */

/** Stable codes of {@link WebError}. */
export type WebErrorCode = 'not-found' | 'invalid-argument' | 'invalid-config' | 'refused' | 'unsupported'

/** An error of the memory browser; `code` is stable, the message is for people. */
export class WebError extends Error {
  override readonly name = 'WebError'
  readonly code: WebErrorCode
  constructor(code: WebErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
  }
}

/** True for a {@link WebError} (also across module copies). */
export function isWebError(error: unknown): error is WebError {
  return error instanceof Error && error.name === 'WebError' && typeof (error as { code?: unknown }).code === 'string'
}

/** A one-line description of any thrown value, with its code when it has one. */
export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const code = (error as { code?: unknown }).code
  return typeof code === 'string' && !error.message.startsWith(code) ? `${error.message} (${code})` : error.message
}
