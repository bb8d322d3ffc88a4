import { codedErrorClass, describeError as describeCodedError, type CodedError } from '@dsh-memory/store/kit'

/**
 * Stable error codes of the distill package. Callers switch on `code`, never on the message;
 * a published code is never renamed.
 */
export type DistillErrorCode =
  /** A config value the core cannot run with; the message names the field. */
  | 'invalid-config'
  /** The model's reply could not be parsed or did not match the expected schema. */
  | 'invalid-output'
  /** Every route of the chain failed (HTTP error, stream error, timeout). */
  | 'model-unavailable'
  /** No provider/model is configured and the host offers no default route. */
  | 'no-route'
  /** The work was cancelled (plugin disposed, host exiting). */
  | 'aborted'
  /** Another writer changed the state this job was based on; the job is dropped and redone later. */
  | 'conflict'
  /** Persisted distill state carries a version this code does not know. */
  | 'unsupported-state'
  /** The distiller has been closed. */
  | 'closed'

/** The only error type the distill core throws on purpose. */
export const DistillError = codedErrorClass<DistillErrorCode>('DistillError')
/** An instance of {@link DistillError}. */
export type DistillError = CodedError<DistillErrorCode>

/** True when `error` is a {@link DistillError} (optionally with `code`); checks the shape, not the prototype. */
export const isDistillError = DistillError.is

/** One line for logs: the message of an Error (with its code), or the value as a string. */
export function describeError(error: unknown): string {
  return describeCodedError(error, 'prefix')
}
