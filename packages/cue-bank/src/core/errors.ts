import { codedErrorClass, type CodedError } from '@dsh-memory/store/kit'

/**
 * Stable error codes of the cue bank. Callers switch on `code`, never on the message; a
 * published code is never renamed.
 *
 * - `invalid-config`: a config field is missing, of the wrong type or out of range; `path` names it.
 * - `unsupported-store`: the memory store cannot host the cue tables (an in-memory or read-only store).
 * - `invalid-import`: an imported cue-bank file is not the documented data model; `path` names the bad field.
 * - `not-found`: the cue (or its source) does not exist.
 * - `embedding-failed`: the embedding endpoint failed, timed out or answered something that is not an embedding.
 * - `busy`: another connection held the database lock for too long.
 * - `closed`: the cue bank was closed.
 */
export type CueBankErrorCode = 'invalid-config' | 'unsupported-store' | 'invalid-import' | 'not-found' | 'embedding-failed' | 'busy' | 'closed'

/** The only error type the cue bank throws on purpose. */
export const CueBankError = codedErrorClass<CueBankErrorCode>('CueBankError')
/** An instance of {@link CueBankError}. */
export type CueBankError = CodedError<CueBankErrorCode>

/** True when `error` is a {@link CueBankError} (optionally with `code`); checks the shape, so duplicated copies of the package agree. */
export const isCueBankError = CueBankError.is
