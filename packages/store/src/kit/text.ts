/**
 * Text helpers every plugin needs on host messages: the text of a message, clipping by code
 * point, CJK detection and code-fence handling. Pure; Chinese and Japanese are first-class.
 */

/** A content block as the host shapes it; only `text` blocks carry conversation text. */
export interface ContentBlockLike {
  readonly type: string
  readonly text?: string
}

/**
 * The conversation text of a host message's `content`: a string as it is, or the non-empty
 * `text` blocks joined by newlines; reasoning, images and tool calls are not conversation.
 * Anything else gives `''`. The result is trimmed.
 */
export function messageText(content: unknown): string {
  if (typeof content === 'string') return content.trim()
  if (!Array.isArray(content)) return ''
  const parts: string[] = []
  for (const block of content as unknown[]) {
    const { type, text } = (block ?? {}) as { type?: unknown; text?: unknown }
    if (type === 'text' && typeof text === 'string' && text.length > 0) parts.push(text)
  }
  return parts.join('\n').trim()
}

/** The marker {@link clip} ends a cut text with unless told otherwise. */
export const CLIP_MARKER = '…'

/**
 * Cut `text` to at most `max` code points, marker included, so CJK characters and emoji are
 * never split; trailing white space before the marker is dropped. `max` of 0 (or less) means
 * no limit.
 */
export function clip(text: string, max: number, marker: string = CLIP_MARKER): string {
  if (max <= 0) return text
  const points = Array.from(text)
  if (points.length <= max) return text
  return points.slice(0, Math.max(0, max - Array.from(marker).length)).join('').trimEnd() + marker
}

/**
 * The characters counted as CJK, as a character-class body: Han, kana, Hangul, the prolonged
 * sound mark and 〆. The store's tokenizer uses the same set, so detection agrees with search.
 */
export const CJK_CLASS = '\\p{Script=Han}\\p{Script=Hiragana}\\p{Script=Katakana}\\p{Script=Hangul}\\u30fc\\u3006'

const CJK_CHARACTER = new RegExp(`[${CJK_CLASS}]`, 'u')

/** True when `text` contains at least one CJK character. */
export function containsCjk(text: string): boolean {
  return CJK_CHARACTER.test(text)
}

/** How many CJK characters (code points) `text` contains. */
export function countCjk(text: string): number {
  let count = 0
  for (const _ of text.matchAll(new RegExp(`[${CJK_CLASS}]`, 'gu'))) count++
  return count
}

/** A fenced piece of code found by {@link findCodeFences}. */
export interface CodeFence {
  /** Offset of the opening fence. */
  readonly start: number
  /** Offset just after the closing fence (or the end of the text when unterminated). */
  readonly end: number
  /** The opening fence (three or more backticks or tildes). */
  readonly fence: string
  /** The first word of the info string (`ts` in ```` ```ts ````), or `''`. */
  readonly language: string
  /** The code between the fences. */
  readonly body: string
  /** False when the text ends before a closing fence. */
  readonly closed: boolean
}

const OPENING = /`{3,}|~{3,}/g

/**
 * Find fenced code. At the start of a line (up to three spaces in) a fence opens a Markdown
 * block, closed only by a line holding the same character at least as many times, so a
 * ```` ``` ```` inside the code (a Markdown example, a shell `echo`) does not end it. Chat
 * users also open fences mid-line ("看看 ```js …"): such a backtick fence closes at the next
 * run of exactly as many backticks, wherever it stands, as Markdown closes a code span.
 * Unterminated fences run to the end of the text, as Markdown renders them.
 */
export function findCodeFences(text: string): CodeFence[] {
  const fences: CodeFence[] = []
  let from = 0
  for (;;) {
    OPENING.lastIndex = from
    const match = OPENING.exec(text)
    if (!match) return fences
    const fence = match[0]
    const start = match.index
    const lineStart = text.lastIndexOf('\n', start - 1) + 1
    const found = /^ {0,3}$/.test(text.slice(lineStart, start)) ? blockFence(text, start, fence) : inlineFence(text, start, fence)
    if (found) {
      fences.push(found)
      from = found.end
    } else {
      from = start + fence.length
    }
  }
}

function blockFence(text: string, start: number, fence: string): CodeFence | undefined {
  const newline = text.indexOf('\n', start)
  const lineEnd = newline === -1 ? text.length : newline
  const info = text.slice(start + fence.length, lineEnd)
  // A backtick fence's info string cannot hold a backtick: then it is a code span.
  if (fence.startsWith('`') && info.includes('`')) return inlineFence(text, start, fence)
  const char = fence.startsWith('`') ? '`' : '~'
  const closing = new RegExp(`\\n {0,3}${char}{${fence.length},}[ \\t]*(?=\\n|$)`, 'g')
  closing.lastIndex = lineEnd
  const close = lineEnd < text.length ? closing.exec(text) : null
  const bodyStart = Math.min(text.length, lineEnd + 1)
  const bodyEnd = close ? close.index : text.length
  return {
    start,
    end: close ? close.index + close[0].length : text.length,
    fence,
    language: info.trim().split(/\s+/)[0] ?? '',
    body: text.slice(bodyStart, Math.max(bodyStart, bodyEnd)),
    closed: close !== null,
  }
}

function inlineFence(text: string, start: number, fence: string): CodeFence | undefined {
  // Tildes mid-line are prose ("~~~ wow ~~~"), not code.
  if (!fence.startsWith('`')) return undefined
  const closing = new RegExp(`(?<!\`)\`{${fence.length}}(?!\`)`, 'g')
  // "```js\n…": a language word right after the fence, then the code on the next line.
  const lead = /^([\w+#.-]*)[ \t]*\n/.exec(text.slice(start + fence.length))
  const bodyStart = start + fence.length + (lead ? lead[0].length : 0)
  closing.lastIndex = bodyStart
  const close = closing.exec(text)
  const bodyEnd = close ? close.index : text.length
  return {
    start,
    end: close ? close.index + fence.length : text.length,
    fence,
    language: lead?.[1] ?? '',
    body: text.slice(bodyStart, bodyEnd).replace(/\n$/, ''),
    closed: close !== null,
  }
}

/** `text` with every fenced piece of code (see {@link findCodeFences}) replaced by `replace(fence)`. */
export function replaceCodeFences(text: string, replace: (fence: CodeFence) => string): string {
  let out = ''
  let at = 0
  for (const fence of findCodeFences(text)) {
    out += text.slice(at, fence.start) + replace(fence)
    at = fence.end
  }
  return out + text.slice(at)
}
