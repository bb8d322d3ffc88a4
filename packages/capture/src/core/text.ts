import { clip as clipText, messageText as kitMessageText, replaceCodeFences, type ContentBlockLike } from '@dsh-memory/store/kit'

export type { ContentBlockLike }

/**
 * Join the text blocks of a message. Reasoning, images and tool-call blocks are not
 * conversation: they are dropped.
 */
export function messageText(content: readonly ContentBlockLike[] | undefined): string {
  return kitMessageText(content)
}

/**
 * Replace fenced code blocks with a one-line placeholder naming the language and size,
 * so code the assistant wrote does not crowd out what was decided. An unterminated fence
 * runs to the end of the text, as Markdown renders it.
 */
export function stripCodeBlocks(text: string): string {
  return replaceCodeFences(text, (fence) => {
    const lines = fence.body === '' ? 0 : fence.body.split('\n').length
    return `[code block${fence.language ? `: ${fence.language}` : ''}, ${lines} lines omitted]`
  })
}

/** Marks text cut at `maxMessageChars`, inside the limit. */
const TRUNCATED = ' …[truncated]'

/**
 * Cut text to at most `max` characters (by code point, so CJK and emoji are not split),
 * marking the cut. `max` of 0 means no limit.
 */
export function clip(text: string, max: number): { text: string; truncated: boolean } {
  const cut = clipText(text, max, TRUNCATED)
  return { text: cut, truncated: cut !== text }
}
