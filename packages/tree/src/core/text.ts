import { redactSecrets, tokenize } from '@dsh-memory/store'
import { clip } from '@dsh-memory/store/kit'
import { TreeError } from './errors.js'

/** Cut text to at most `max` code points, marked with `…`; never splits a surrogate pair. */
export { clip, CLIP_MARKER } from '@dsh-memory/store/kit'

// C0/C1 controls except tab and newline: they break markdown and terminals and carry no meaning.
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g

/**
 * Validate and prepare free text for storage: must be a string with visible content;
 * control characters are removed, secrets redacted (the store's redactor), length capped.
 * @throws TreeError `invalid-argument` naming `field`.
 */
export function prepareText(value: unknown, field: string, max: number): string {
  if (typeof value !== 'string') throw new TreeError('invalid-argument', `${field} must be a string`)
  const cleaned = value.replace(CONTROL, '').replace(/\r\n?/g, '\n').trim()
  if (cleaned.length === 0) throw new TreeError('invalid-argument', `${field} must not be empty`)
  return clip(redactSecrets(cleaned).text, max)
}

/** A one-line version of `text` (for titles and list entries). */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim()
}

/**
 * The dedupe key of an item text: NFKC, lower case, collapsed whitespace, no trailing
 * punctuation. Two items with the same key say the same thing.
 */
export function textKey(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .replace(/[\s.。!！?？;；,，、:：]+$/u, '')
    .trim()
}

/**
 * Token-set Jaccard similarity of two texts over the store's CJK-aware tokenizer, in [0, 1].
 * Used to skip near-duplicate conclusions at merge.
 */
export function similarity(a: string, b: string): number {
  const left = new Set(tokenize(a))
  const right = new Set(tokenize(b))
  if (left.size === 0 || right.size === 0) return textKey(a) === textKey(b) ? 1 : 0
  let shared = 0
  for (const token of left) if (right.has(token)) shared++
  return shared / (left.size + right.size - shared)
}

// Sentence ends: Western punctuation followed by space, CJK full stops (no space needed), and
// line breaks. Bullets and numbering are stripped afterwards.
const SENTENCE_BREAK = /(?<=[.!?;])\s+|(?<=[。！？；])|\n+/u
const BULLET = /^\s*(?:[-*•·>]|\d+[.)、]|[（(]?\d+[)）])\s*/u

/** Split text into trimmed sentences without list markers; empty pieces are dropped. */
export function splitSentences(text: string): string[] {
  return text
    .split(SENTENCE_BREAK)
    .map((piece) => piece.replace(BULLET, '').trim())
    .filter((piece) => piece.length > 0)
}

/** A filesystem-safe slug of `name` (keeps CJK letters; never empty). */
export function slugify(name: string): string {
  const slug = name
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60)
  return slug.length > 0 ? slug : 'project'
}
