import { codedErrorClass, type CodedError } from '../kit/errors.ts'

/**
 * Stable error codes of the store. Callers switch on `code`, never on the message,
 * so a code is never renamed once published; new failure kinds get new codes.
 *
 * Schema and migrations:
 * - `schema-too-new`: the database records a schema version for an owner newer than this code knows.
 * - `schema-too-old`: a read-only store found migrations it would have to apply first.
 * - `migration-mismatch`: an applied migration's checksum differs from the shipped SQL (someone edited history).
 * - `migration-failed`: a migration's SQL failed; everything applied in that open was rolled back.
 *
 * Calls and writes:
 * - `invalid-argument`: input of the wrong type, empty where text is required, or out of range.
 * - `not-found`: the referenced row does not exist.
 * - `conflict`: a write would contradict the current state (stale version, superseding a non-head memory).
 * - `busy`: another connection held the database lock for longer than `busyTimeoutMs`.
 * - `closed`: the store (or the service) has been closed.
 * - `readonly`: a write was attempted on a store opened with `readonly: true`.
 * - `fenced`: a fenced write named a lease that expired or was taken over (its writer is stale).
 * - `unavailable`: the database server (PostgreSQL) could not be reached or dropped the
 *   connection; the message names host:port, never the password. Retrying later may work.
 * - `unsupported`: the backend does not offer this yet (e.g. package tables on PostgreSQL).
 *
 * Data:
 * - `corrupt`: persisted data could not be understood.
 * - `unsupported-format`: an export/import stream has an unknown format or version.
 */
export type MemoryStoreErrorCode =
  | 'schema-too-new' | 'schema-too-old' | 'migration-mismatch' | 'migration-failed'
  | 'invalid-argument' | 'not-found' | 'conflict' | 'busy' | 'closed' | 'readonly' | 'fenced'
  | 'unavailable' | 'unsupported'
  | 'corrupt' | 'unsupported-format'

/**
 * The only error type the store throws on purpose. `code` is stable API; `message` is
 * for humans and may change. `cause` carries the underlying driver error when there is one.
 */
export const MemoryStoreError = codedErrorClass<MemoryStoreErrorCode>('MemoryStoreError')
/** An instance of {@link MemoryStoreError}. */
export type MemoryStoreError = CodedError<MemoryStoreErrorCode>

/**
 * True when `error` is a {@link MemoryStoreError}, optionally with the given code.
 * Works across duplicated copies of this package (checks the shape, not the prototype).
 */
export const isMemoryStoreError = MemoryStoreError.is
