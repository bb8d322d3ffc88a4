import { codedErrorClass, describeError, type CodedError } from '@dsh-memory/store/kit'

/**
 * Stable error codes of the recall package. Callers switch on `code`, never on the message.
 *
 * - `invalid-config`: a config value the recall core cannot run with; `path` names the field.
 * - `invalid-argument`: a tool or command argument of the wrong shape or out of range.
 * - `not-found`: the referenced memory, scene or message does not exist (or is not visible from here).
 * - `ambiguous-id`: an id prefix matched more than one memory.
 * - `embedding-unavailable`: the embeddings endpoint failed, timed out or answered something unusable.
 * - `corrupt-state`: a record of the old meta-table format has an unknown version or shape (`path`
 *   names the field); it is left where it was.
 * - `conflict`: another process kept changing a session's layer state while this one tried to update it.
 */
export type RecallErrorCode = 'invalid-config' | 'invalid-argument' | 'not-found' | 'ambiguous-id' | 'embedding-unavailable' | 'corrupt-state' | 'conflict'

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
