/** A content block as the host shapes it; only `text` blocks carry conversation text. */
export interface ContentBlockLike {
  readonly type: string
  readonly text?: string
}

/**
 * Join the text blocks of a message. Reasoning, images and tool-call blocks are not
 * conversation: they are dropped.
 */
export function messageText(content: readonly ContentBlockLike[] | undefined): string {
  if (!Array.isArray(content)) return ''
  const parts: string[] = []
  for (const block of content) {
    if (block?.type === 'text' && typeof block.text === 'string' && block.text.length > 0) parts.push(block.text)
  }
  return parts.join('\n').trim()
}

const FENCE = /(^|\n)(`{3,}|~{3,})([^\n`]*)\n[\s\S]*?(?:\n\2[ \t]*(?=\n|$)|$)/g

/**
 * Replace fenced code blocks with a one-line placeholder naming the language and size,
 * so code the assistant wrote does not crowd out what was decided. An unterminated fence
 * runs to the end of the text, as Markdown renders it.
 */
export function stripCodeBlocks(text: string): string {
  return text.replace(FENCE, (match: string, lead: string, fence: string, info: string) => {
    const language = info.trim().split(/\s+/)[0] ?? ''
    const lines = match.slice(lead.length).split('\n')
    const closed = lines.length > 1 && lines.at(-1)!.trim().startsWith(fence)
    const body = lines.length - 1 - (closed ? 1 : 0)
    return `${lead}[code block${language ? `: ${language}` : ''}, ${body} lines omitted]`
  })
}

/**
 * Cut text to at most `max` characters (by code point, so CJK and emoji are not split),
 * marking the cut. `max` of 0 means no limit.
 */
export function clip(text: string, max: number): { text: string; truncated: boolean } {
  if (max <= 0) return { text, truncated: false }
  const points = Array.from(text)
  if (points.length <= max) return { text, truncated: false }
  const marker = ' …[truncated]'
  return { text: points.slice(0, Math.max(0, max - marker.length)).join('') + marker, truncated: true }
}
