import { describe, expect, it } from 'vitest'
import { parseModelJson } from '../src/core/json.js'

describe('parseModelJson', () => {
  it('parses plain JSON without repairs', () => {
    expect(parseModelJson('{"memories":[]}')).toEqual({ ok: true, value: { memories: [] }, repairs: [] })
  })

  it('unwraps a ```json fence, with or without prose around it', () => {
    const fenced = 'Here you go:\n```json\n{"memories":[{"text":"a"}]}\n```\nHope that helps.'
    const result = parseModelJson(fenced)
    expect(result).toMatchObject({ ok: true, value: { memories: [{ text: 'a' }] } })
    expect(result.ok && result.repairs).toContain('fence')
    expect(parseModelJson('```\n{"a":1}\n```')).toMatchObject({ ok: true, value: { a: 1 } })
    expect(parseModelJson('```json\n{"a":1}')).toMatchObject({ ok: true, value: { a: 1 } })
  })

  it('cuts leading and trailing prose around the object', () => {
    const result = parseModelJson('Sure! {"decisions":[{"id":"n1","action":"add"}]} Done.')
    expect(result).toMatchObject({ ok: true, value: { decisions: [{ id: 'n1', action: 'add' }] } })
    expect(result.ok && result.repairs).toEqual(['surrounding-text'])
  })

  it('drops trailing commas and comments outside strings only', () => {
    const result = parseModelJson('{"memories":[{"text":"a, b, // not a comment",},], // trailing\n}')
    expect(result).toMatchObject({ ok: true, value: { memories: [{ text: 'a, b, // not a comment' }] } })
    expect(result.ok && result.repairs).toEqual(expect.arrayContaining(['trailing-comma', 'comment']))
  })

  it('keeps braces inside strings when finding the object', () => {
    expect(parseModelJson('note: {"text":"use {curly} and ] brackets"} end')).toMatchObject({ ok: true, value: { text: 'use {curly} and ] brackets' } })
  })

  it('handles CJK content and a BOM', () => {
    expect(parseModelJson('\ufeff{"text":"東京に住んでいる"}')).toMatchObject({ ok: true, value: { text: '東京に住んでいる' } })
  })

  const unsafe = [
    ['empty text', ''],
    ['plain prose', 'I could not find any memories.'],
    ['a cut-off reply', '{"memories":[{"text":"a"'],
    ['single quotes', "{'memories': []}"],
    ['unquoted keys', '{memories: []}'],
    ['an HTML error page', '<html><body>502 Bad Gateway</body></html>'],
  ] as const
  for (const [label, text] of unsafe) {
    it(`rejects ${label} instead of guessing`, () => {
      const result = parseModelJson(text)
      expect(result.ok).toBe(false)
      expect(!result.ok && result.error).toBeTruthy()
    })
  }
})
