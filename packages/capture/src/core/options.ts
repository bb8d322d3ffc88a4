import { findUnknownOption, optionKeysOf, strictOptionsSchema } from '@dsh-memory/store/kit'

/** Capture options as the core uses them (already validated shape; see the plugin's Config). */
export interface CaptureOptions {
  /** Master switch: when false nothing is written. */
  readonly enabled: boolean
  /** Replace fenced code blocks in assistant replies with a short placeholder. */
  readonly stripCodeBlocks: boolean
  /** Longest stored message in characters; longer text is cut with a marker. 0 = unlimited. */
  readonly maxMessageChars: number
}

/** The defaults, matching the reference capture block. */
export const DEFAULT_CAPTURE_OPTIONS: CaptureOptions = Object.freeze({
  enabled: true,
  stripCodeBlocks: true,
  maxMessageChars: 4000,
})

/** The option keys; any other key is refused. */
const OPTION_KEYS = strictOptionsSchema(optionKeysOf(DEFAULT_CAPTURE_OPTIONS))

/** Error thrown for options the core cannot run with; `path` names the bad field. */
export class CaptureOptionsError extends Error {
  readonly code = 'invalid-config'
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`memory-capture: ${path}: ${message}`)
    this.name = 'CaptureOptionsError'
  }
}

/**
 * Fill defaults and check cross-field rules the schema cannot express.
 * @returns a frozen options object.
 * @throws CaptureOptionsError naming the field path.
 */
export function resolveCaptureOptions(input: Partial<CaptureOptions> = {}): CaptureOptions {
  const unknown = findUnknownOption(input, OPTION_KEYS)
  if (unknown) throw new CaptureOptionsError(unknown.path, unknown.message)
  const options = { ...DEFAULT_CAPTURE_OPTIONS, ...input }
  if (typeof options.enabled !== 'boolean') throw new CaptureOptionsError('enabled', 'must be a boolean')
  if (typeof options.stripCodeBlocks !== 'boolean') throw new CaptureOptionsError('stripCodeBlocks', 'must be a boolean')
  if (!Number.isInteger(options.maxMessageChars) || options.maxMessageChars < 0) {
    throw new CaptureOptionsError('maxMessageChars', `must be a non-negative integer, got ${JSON.stringify(options.maxMessageChars)}`)
  }
  if (options.maxMessageChars > 0 && options.maxMessageChars < 64) {
    throw new CaptureOptionsError('maxMessageChars', 'must be 0 (unlimited) or at least 64')
  }
  return Object.freeze(options)
}
