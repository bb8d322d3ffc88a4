import { codedErrorClass, type CodedError } from '@dsh-memory/store/kit'

/** A readable one-line description of any thrown value. */
export { describeError } from '@dsh-memory/store/kit'

/**
 * Stable error codes of the memory tree. Callers (the tool layer, the MCP server, tests)
 * switch on `code`, never on the message; a code is never renamed once published.
 *
 * - `invalid-argument`: input of the wrong type, empty where text is required, or out of range.
 * - `invalid-config`: a configuration value is invalid; the message names the field.
 * - `not-found`: the referenced project, branch, item or checkpoint does not exist.
 * - `conflict`: the write was based on a stale view: an `expectedRevision` that no longer matches, a
 *   branch that another writer merged first, or an optimistic retry budget that ran out.
 * - `busy`: the database stayed locked by another process for longer than the busy timeout.
 * - `closed`: the tree (or its database connection) has been closed.
 * - `unsupported`: the operation needs something this setup cannot give (e.g. an in-memory store).
 */
export type TreeErrorCode = 'invalid-argument' | 'invalid-config' | 'not-found' | 'conflict' | 'busy' | 'closed' | 'unsupported'

/**
 * The only error type the memory tree throws on purpose. `code` is stable API; `message` is
 * for humans (and for the model, which reads it in a tool result).
 */
export const TreeError = codedErrorClass<TreeErrorCode>('TreeError')
/** An instance of {@link TreeError}. */
export type TreeError = CodedError<TreeErrorCode>

/**
 * True when `error` is a {@link TreeError}, optionally with the given code. Checks the shape,
 * not the prototype, so it works across duplicated copies of this package.
 */
export const isTreeError = TreeError.is
