import { describe, expect, it } from 'vitest'
import { clip, messageText, stripCodeBlocks } from '../src/core/text.js'

describe('messageText', () => {
  it('keeps text blocks and drops reasoning, images and tool calls', () => {
    expect(
      messageText([
        { type: 'reasoning', text: 'thinking hard' },
        { type: 'text', text: 'First.' },
        { type: 'tool-call' },
        { type: 'text', text: 'Second.' },
      ]),
    ).toBe('First.\nSecond.')
  })

  it('returns an empty string for missing or non-array content', () => {
    expect(messageText(undefined)).toBe('')
    expect(messageText([{ type: 'text', text: '   ' }])).toBe('')
  })
})

describe('stripCodeBlocks', () => {
  it('replaces a fenced block with a placeholder naming the language and size', () => {
    const text = 'Use this:\n```ts\nconst a = 1\nconst b = 2\n```\nThen run it.'
    expect(stripCodeBlocks(text)).toBe('Use this:\n[code block: ts, 2 lines omitted]\nThen run it.')
  })

  it('handles tilde fences, fences at the start and unterminated fences', () => {
    expect(stripCodeBlocks('~~~\nx\n~~~')).toBe('[code block, 1 lines omitted]')
    expect(stripCodeBlocks('Look:\n```py\nprint(1)\nprint(2)')).toBe('Look:\n[code block: py, 2 lines omitted]')
  })

  it('leaves inline code and prose alone', () => {
    const text = 'Call `npm test` and 日本語の説明。'
    expect(stripCodeBlocks(text)).toBe(text)
  })
})

describe('clip', () => {
  it('cuts by code point so CJK and emoji stay whole, and marks the cut', () => {
    const text = '数据库'.repeat(100) + '😀'.repeat(100)
    const { text: cut, truncated } = clip(text, 100)
    expect(truncated).toBe(true)
    expect(Array.from(cut)).toHaveLength(100)
    expect(cut.endsWith('…[truncated]')).toBe(true)
    expect(cut).not.toMatch(/\uFFFD/)
  })

  it('leaves short text and the unlimited setting alone', () => {
    expect(clip('short', 100)).toEqual({ text: 'short', truncated: false })
    expect(clip('x'.repeat(10_000), 0).truncated).toBe(false)
  })
})
