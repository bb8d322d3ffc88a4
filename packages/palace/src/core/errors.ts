import { codedErrorClass, describeError as describeCodedError, type CodedError } from '@dsh-memory/store/kit'

/**
 * Stable error codes of the memory palace. Callers (the tools, the adapter, tests) switch on
 * `code`, never on the message; a code is never renamed once published.
 *
 * Input and names:
 * - `invalid-argument`: a tool argument or API input has the wrong shape or is out of range.
 * - `invalid-config`: plugin config, a workspace `config.json` or a session `config.json` breaks a rule.
 * - `invalid-name`: a namespace, category or file-name prefix is not an allowed name.
 * - `path-refused`: a path is absolute, climbs out with `..`, or resolves outside the palace.
 *
 * Sessions and their memory name:
 * - `unnamed-session`: the session has no memory name yet; nothing is archived for it.
 * - `namespace-taken`: the memory name is already used by another session of this workspace.
 * - `namespace-locked`: the session already archived under its name; renaming would orphan those files.
 * - `disabled`: the palace is switched off for this session.
 *
 * Archiving:
 * - `not-found`: a namespace, month, turn or file that does not exist.
 * - `overlap`: archive segments overlap, or claim turns that are already archived.
 * - `gap`: archive segments leave an unarchived turn between archived ones.
 * - `not-archivable`: a segment names turns that cannot be archived yet (missing, still running).
 *
 * Files:
 * - `unsupported-format`: a persisted file carries a format version this code does not know.
 * - `busy`: another process held the palace lock for too long.
 * - `io`: a file-system operation failed.
 */
export type PalaceErrorCode =
  | 'invalid-argument' | 'invalid-config' | 'invalid-name' | 'path-refused'
  | 'unnamed-session' | 'namespace-taken' | 'namespace-locked' | 'disabled'
  | 'not-found' | 'overlap' | 'gap' | 'not-archivable'
  | 'unsupported-format' | 'busy' | 'io'

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
