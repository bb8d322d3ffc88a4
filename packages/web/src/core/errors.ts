import { codedErrorClass, describeError as describeCodedError, type CodedError } from '@dsh-memory/store/kit'

/** Errors of the memory browser, with stable codes callers switch on. */

/** Stable codes of {@link WebError}. */
export type WebErrorCode = 'not-found' | 'invalid-argument' | 'invalid-config' | 'refused' | 'unsupported'

/** An error of the memory browser; `code` is stable, the message is for people. */
export const WebError = codedErrorClass<WebErrorCode>('WebError')
/** An instance of {@link WebError}. */
export type WebError = CodedError<WebErrorCode>

/** True for a {@link WebError} (also across module copies). */
export const isWebError = WebError.is

/** A one-line description of any thrown value, with its code when it has one. */
export function describeError(error: unknown): string {
  return describeCodedError(error, 'suffix')
}
