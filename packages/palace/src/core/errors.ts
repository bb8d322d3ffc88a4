import { codedErrorClass, describeError as describeCodedError, type CodedError } from '@dsh-memory/store/kit'

/**
 * Stable error codes of the memory palace. Callers (the tools, the adapter, tests) switch on
 * `code`, never on the message; a code is never renamed once published.
 */
export type PalaceErrorCode =
  /** A tool argument or API input has the wrong shape or is out of range. */
  | 'invalid-argument'
  /** Plugin config, a workspace `config.json` or a session `config.json` breaks a rule. */
  | 'invalid-config'
  /** A namespace, category or file-name prefix is not an allowed name. */
  | 'invalid-name'
  /** A path is absolute, climbs out with `..`, or resolves outside the palace. */
  | 'path-refused'
  /** The session has no memory name yet; nothing is archived for it. */
  | 'unnamed-session'
  /** The memory name is already used by another session of this workspace. */
  | 'namespace-taken'
  /** The session already archived under its name; renaming would orphan those files. */
  | 'namespace-locked'
  /** A namespace, month, turn or file that does not exist. */
  | 'not-found'
  /** Archive segments overlap, or claim turns that are already archived. */
  | 'overlap'
  /** Archive segments leave an unarchived turn between archived ones. */
  | 'gap'
  /** A segment names turns that cannot be archived yet (missing, still running). */
  | 'not-archivable'
  /** A persisted file carries a format version this code does not know. */
  | 'unsupported-format'
  /** Another process held the palace lock for too long. */
  | 'busy'
  /** A file-system operation failed. */
  | 'io'
  /** The palace is switched off for this session. */
  | 'disabled'

/** The only error type the palace throws on purpose; `code` is stable API, `message` is for humans. */
export const PalaceError = codedErrorClass<PalaceErrorCode>('PalaceError')
/** An instance of {@link PalaceError}. */
export type PalaceError = CodedError<PalaceErrorCode>

/** True for a {@link PalaceError}, also across module copies (checks the name and a string code). */
export const isPalaceError = PalaceError.is

/** A one-line description of any thrown value, for logs and tool results. */
export function describeError(error: unknown): string {
  return describeCodedError(error, isPalaceError(error) ? 'bracket' : 'none')
}
