import { codedErrorClass, describeError, type CodedError } from '@dsh-memory/store/kit'

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
export const RecallError = codedErrorClass<RecallErrorCode>('RecallError')
/** An instance of {@link RecallError}. */
export type RecallError = CodedError<RecallErrorCode>

/** True when `error` is a {@link RecallError} (checked by shape, so duplicated copies of the package agree). */
export const isRecallError = RecallError.is

/** Human-readable message of any thrown value. */
export function errorMessage(error: unknown): string {
  return describeError(error)
}
