import { clip, messageText, replaceCodeFences, type ContentBlockLike } from '@dsh-memory/store/kit'

export { messageText, type ContentBlockLike }

const INLINE_CODE = /`[^`\n]+`/g
const URL = /\b(?:https?|ftp|file):\/\/[^\s<>()"'`]+/gi
// The store's redaction markers (`[REDACTED:api-key]`) are not topics.
const REDACTED = /\[REDACTED:[a-z-]+\]/g
const EMAIL = /\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b/g
// Pictographs, keycaps, skin tones, flags, joiners and variation selectors: none of them is a topic.
const EMOJI = /[\p{Extended_Pictographic}\p{Regional_Indicator}\u{1F3FB}-\u{1F3FF}\u200D\uFE0E\uFE0F\u20E3]/gu
// Lines dense with code punctuation (`const x = f(a);`, `}`): code, not prose.
const CODE_PUNCTUATION = /[{}()[\];=<>$|&\\]/g
const CODE_KEYWORD_LINE = /^\s*(?:import|export|const|let|var|function|def|class|return|if|for|while|#include|public|private|SELECT|INSERT|UPDATE|CREATE)\b.*[;{}()=:]\s*$/

/**
 * Remove what must never become a keyword: fenced and inline code, code-like lines, URLs,
 * e-mail addresses and emoji. Prose around them is kept, so "帮我看看 `const x = 1` 的问题"
 * still yields its prose terms.
 */
export function stripNonProse(text: string): string {
  if (typeof text !== 'string' || text.length === 0) return ''
  const withoutBlocks = replaceCodeFences(text, () => ' ').replace(INLINE_CODE, ' ').replace(URL, ' ').replace(EMAIL, ' ').replace(REDACTED, ' ')
  const lines = withoutBlocks.split('\n').filter((line) => !isCodeLine(line))
  return lines.join('\n').replace(EMOJI, ' ')
}

function isCodeLine(line: string): boolean {
  const trimmed = line.trim()
  if (trimmed.length === 0) return false
  if (CODE_KEYWORD_LINE.test(trimmed)) return true
  // Indented four spaces or a tab: a Markdown code block.
  if (/^(?: {4}|\t)\S/.test(line) && /[;{}()=]/.test(trimmed)) return true
  const punctuation = trimmed.match(CODE_PUNCTUATION)?.length ?? 0
  return trimmed.length >= 4 && punctuation / trimmed.length > 0.2
}

/**
 * Collapse whitespace and cut to at most `max` code points (CJK and emoji are never split),
 * ending with `…` when cut. `max` 0 returns ''.
 */
export function excerpt(text: string, max: number): string {
  return max <= 0 ? '' : clip(text.replace(/\s+/g, ' ').trim(), max)
}

/**
 * The host interpolates `{{name}}` in runtime context text strictly (an unknown name fails the
 * whole prompt assembly), with no escape syntax. Remembered text is user data, so every brace
 * pair is broken apart: `{{x}}` becomes `{ {x} }`.
 */
export function breakTemplateBraces(text: string): string {
  return text.replace(/\{(?=\{)/g, '{ ').replace(/\}(?=\})/g, '} ')
}

/** The language mix of a text, stored as a cue dimension. */
export type TextLanguage = 'zh' | 'ja' | 'en' | 'mixed' | 'other'

/** Classify a text by its scripts: kana means Japanese, Han without kana Chinese, Latin letters English. */
export function detectLanguage(text: string): TextLanguage {
  const kana = countMatches(text, /[\p{Script=Hiragana}\p{Script=Katakana}]/gu)
  const han = countMatches(text, /\p{Script=Han}/gu)
  const latin = countMatches(text, /[A-Za-z]/g)
  const cjk = kana + han
  if (cjk === 0 && latin === 0) return 'other'
  const cjkLanguage: TextLanguage = kana > 0 ? 'ja' : 'zh'
  if (cjk === 0) return 'en'
  // One CJK character carries about as much as one English word of ~5 letters.
  const latinWords = latin / 5
  if (latinWords < 0.2 * cjk) return cjkLanguage
  if (cjk < 0.2 * latinWords) return 'en'
  return 'mixed'
}

function countMatches(text: string, pattern: RegExp): number {
  let count = 0
  for (const _ of text.matchAll(pattern)) count++
  return count
}

/**
 * Replace fenced code blocks with a short marker, for the detail kept on a cue: the excerpt
 * should say what was decided, not repeat the code.
 */
export function omitCodeBlocks(text: string): string {
  return replaceCodeFences(text, () => '[code omitted]')
}
