/**
 * The coded-error base every dsh-memory package shares. A package declares its code union and
 * a subclass that only sets `name`; callers switch on `code`, never on the message.
 */

/** Options of a {@link CodedError}. */
export interface CodedErrorOptions {
  /** The dotted path of the offending field (config, tool argument, imported file). */
  readonly path?: string
  /** The underlying error, when there is one. */
  readonly cause?: unknown
}

/**
 * An error with a stable `code` (API) and a human `message` (may change). Subclasses set
 * `name` to their class name, which {@link isCodedError} checks, so duplicated copies of a
 * package (two installs in one process) still agree.
 */
export class CodedError<Code extends string = string> extends Error {
  readonly code: Code
  /** For invalid input: the dotted path of the offending field; otherwise undefined. */
  readonly path: string | undefined

  constructor(code: Code, message: string, options: CodedErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.path = options.path
  }
}

/** A package's error class made by {@link codedErrorClass}: `new X(code, message, options)` and `X.is(error, code?)`. */
export interface CodedErrorClass<Code extends string> {
  new (code: Code, message: string, options?: CodedErrorOptions): CodedError<Code>
  /** True when `error` is one of these, optionally with `code`; by shape, so two copies of a package agree. */
  is(error: unknown, code?: Code): error is CodedError<Code>
}

/**
 * A package's error class in one line: `export const TreeError = codedErrorClass<TreeErrorCode>('TreeError')`
 * (plus `export type TreeError = CodedError<TreeErrorCode>`). Instances are `instanceof` the
 * class and {@link CodedError}, and carry `name`.
 */
export function codedErrorClass<Code extends string>(name: string): CodedErrorClass<Code> {
  const named = class extends CodedError<Code> {
    override readonly name = name
  }
  Object.defineProperty(named, 'name', { value: name })
  return Object.assign(named, { is: (error: unknown, code?: Code): error is CodedError<Code> => isCodedError<CodedError<Code>>(error, name, code) })
}

/**
 * True when `error` is an Error named `name` with a string `code` (equal to `code` when given).
 * Checks the shape, not the prototype, so it works across duplicated copies of a package.
 */
export function isCodedError<E extends CodedError<string>>(error: unknown, name: string, code?: E['code']): error is E {
  if (!(error instanceof Error) || error.name !== name) return false
  const actual = (error as { code?: unknown }).code
  return typeof actual === 'string' && (code === undefined || actual === code)
}

/**
 * How {@link describeError} shows a code: not at all, `code: message`, `[code] message` or
 * `message (code)`. Packages keep the form their logs and tool results already print.
 */
export type ErrorCodeStyle = 'none' | 'prefix' | 'bracket' | 'suffix'

/** A one-line description of any thrown value, for logs and tool results. */
export function describeError(error: unknown, style: ErrorCodeStyle = 'none'): string {
  if (!(error instanceof Error)) return String(error)
  const code = (error as { code?: unknown }).code
  if (style === 'none' || typeof code !== 'string') return error.message
  if (style === 'bracket') return `[${code}] ${error.message}`
  // The message may already name its code ("busy: …"); do not say it twice.
  if (style === 'prefix') return error.message.includes(code) ? error.message : `${code}: ${error.message}`
  return error.message.startsWith(code) ? error.message : `${error.message} (${code})`
}
