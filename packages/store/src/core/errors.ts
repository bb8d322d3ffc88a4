import { codedErrorClass, type CodedError } from '../kit/errors.ts'

/**
 * Stable error codes of the store. Callers switch on `code`, never on the message,
 * so a code is never renamed once published; new failure kinds get new codes.
 */
export type MemoryStoreErrorCode =
  /** The database records a schema version for an owner newer than this code knows. */
  | 'schema-too-new'
  /** A read-only store found migrations it would have to apply first. */
  | 'schema-too-old'
  /** An applied migration's checksum differs from the shipped SQL (someone edited history). */
  | 'migration-mismatch'
  /** A migration's SQL failed; everything applied in that open was rolled back. */
  | 'migration-failed'
  /** Input of the wrong type, empty where text is required, or out of range. */
  | 'invalid-argument'
  /** The referenced row does not exist. */
  | 'not-found'
  /** A write would contradict the current state (stale version, superseding a non-head memory). */
  | 'conflict'
  /** Another connection held the database lock for longer than `busyTimeoutMs`. */
  | 'busy'
  /** The store (or the service) has been closed. */
  | 'closed'
  /** A write was attempted on a store opened with `readonly: true`. */
  | 'readonly'
  /** Persisted data could not be understood. */
  | 'corrupt'
  /** An export/import stream has an unknown format or version. */
  | 'unsupported-format'
  /** A fenced write named a lease that expired or was taken over (its writer is stale). */
  | 'fenced'

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
