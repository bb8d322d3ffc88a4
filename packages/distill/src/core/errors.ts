import { codedErrorClass, describeError as describeCodedError, type CodedError } from '@dsh-memory/store/kit'

/**
 * Stable error codes of the distill package. Callers switch on `code`, never on the message;
 * a published code is never renamed.
 *
 * - `invalid-config`: a config value the core cannot run with; the message names the field.
 * - `invalid-output`: the model's reply could not be parsed or did not match the expected schema.
 * - `model-unavailable`: every route of the chain failed (HTTP error, stream error, timeout).
 * - `no-route`: no provider/model is configured and the host offers no default route.
 * - `aborted`: the work was cancelled (plugin disposed, host exiting).
 * - `conflict`: another writer changed the state this job was based on; the job is dropped and redone later.
 * - `unsupported-state`: persisted distill state carries a version this code does not know.
 * - `closed`: the distiller has been closed.
 */
export type DistillErrorCode =
  | 'invalid-config' | 'invalid-output' | 'model-unavailable' | 'no-route'
  | 'aborted' | 'conflict' | 'unsupported-state' | 'closed'

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
