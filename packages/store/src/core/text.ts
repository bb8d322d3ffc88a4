import { MemoryStoreError } from './errors.ts'
import { redactSecrets } from './redact.ts'

/** Maximum stored length (UTF-16 code units) per text field; longer text is truncated. */
export interface TextLimits {
  /** L0 message text. Default 100 000. */
  message: number
  /** L1 memory text. Default 8 000. */
  memory: number
  /** L2 scene summary. Default 20 000. */
  scene: number
  /** L3 persona document. Default 50 000. */
  persona: number
  /** Titles, kinds, workspaces and other short labels. Default 1 000. */
  label: number
}

/** The defaults of {@link TextLimits}; frozen. */
export const DEFAULT_TEXT_LIMITS: Readonly<TextLimits> = Object.freeze({
  message: 100_000,
  memory: 8_000,
  scene: 20_000,
  persona: 50_000,
  label: 1_000,
})

/** Appended to truncated text so a reader knows the end is missing. */
export const TRUNCATION_MARKER = '\n…[truncated]'

// C0 controls except \t and \n, DEL, and C1 controls: invisible, break terminals and JSONL
// consumers, and have no place in remembered text.
const CONTROL_CHARS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/g

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g

/**
 * Normalise text for storage: CRLF/CR become LF, lone surrogates become U+FFFD, control
 * characters other than `\n` and `\t` are removed. Does not trim.
 */
export function stripControlCharacters(text: string): string {
  return text.replace(/\r\n?/g, '\n').replace(LONE_SURROGATE, '\ufffd').replace(CONTROL_CHARS, '')
}

/** The result of {@link prepareText}. */
export interface PreparedText {
  text: string
  redactions: number
  truncated: boolean
}

/**
 * The single path every stored text goes through: type check, control-character
 * stripping, secret redaction, then the length cap (truncation with a marker).
 * @param field - named in the error message.
 * @throws MemoryStoreError `invalid-argument` when `value` is not a string or is blank after cleaning.
 */
export function prepareText(value: unknown, field: string, limit: number): PreparedText {
  if (typeof value !== 'string') {
    throw new MemoryStoreError('invalid-argument', `${field} must be a string, got ${describe(value)}`)
  }
  const cleaned = stripControlCharacters(value)
  if (cleaned.trim().length === 0) {
    throw new MemoryStoreError('invalid-argument', `${field} must not be empty`)
  }
  // Redact before capping so a secret straddling the cut is still recognised.
  const redacted = redactSecrets(cleaned)
  let text = redacted.text
  let truncated = false
  if (text.length > limit) {
    const keep = Math.max(0, limit - TRUNCATION_MARKER.length)
    // Do not cut a surrogate pair in half.
    const cut = isHighSurrogate(text.charCodeAt(keep - 1)) ? keep - 1 : keep
    text = text.slice(0, cut) + TRUNCATION_MARKER
    truncated = true
  }
  return { text, redactions: redacted.redactions, truncated }
}

/**
 * Like {@link prepareText} for short labels (workspace, kind, title), which are trimmed.
 * @returns the cleaned label; `''` only when `allowEmpty`.
 */
export function prepareLabel(value: unknown, field: string, limit: number, allowEmpty = false): string {
  if (typeof value !== 'string') {
    throw new MemoryStoreError('invalid-argument', `${field} must be a string, got ${describe(value)}`)
  }
  const cleaned = redactSecrets(stripControlCharacters(value).replace(/\n/g, ' ').trim()).text
  if (!allowEmpty && cleaned.length === 0) {
    throw new MemoryStoreError('invalid-argument', `${field} must not be empty`)
  }
  return cleaned.length > limit ? cleaned.slice(0, limit) : cleaned
}

/**
 * A cheap token estimate for budgets, not a tokenizer: CJK characters count one token
 * each (as BPE vocabularies mostly do), everything else one token per four characters.
 */
export function estimateTokens(text: string): number {
  let cjk = 0
  for (const match of text.matchAll(CJK_CHAR)) cjk += match[0].length
  const rest = text.length - cjk
  return cjk + Math.ceil(rest / 4)
}

const CJK_CHAR = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]+/gu

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff
}

function describe(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value
}
