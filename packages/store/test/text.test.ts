import { describe, expect, it } from 'vitest'
import { estimateTokens } from '../src/index.ts'
import { prepareText, stripControlCharacters, TRUNCATION_MARKER } from '../src/core/text.ts'
import { openTemp, rejectionOf } from './helpers.ts'

describe('text preparation', () => {
  it('strips control characters except newline and tab, normalises line endings and lone surrogates', () => {
    expect(stripControlCharacters('a\u0000b\u0008c\u000bd\u000ce\u001ff\u007fg\u0085h')).toBe('abcdefgh')
    expect(stripControlCharacters('line1\r\nline2\rline3\n\tx')).toBe('line1\nline2\nline3\n\tx')
    expect(stripControlCharacters('bad \ud800 pair 😀')).toBe('bad \ufffd pair 😀')
  })

  it('caps length with a marker and never splits a surrogate pair', () => {
    const capped = prepareText('😀'.repeat(100), 'text', 64)
    expect(capped.truncated).toBe(true)
    expect(capped.text.length).toBeLessThanOrEqual(64)
    expect(capped.text.endsWith(TRUNCATION_MARKER)).toBe(true)
    expect(capped.text).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/)
    expect(prepareText('short', 'text', 64)).toEqual({ text: 'short', redactions: 0, truncated: false })
  })

  it('estimates tokens with CJK counted per character', () => {
    expect(estimateTokens('abcdefgh')).toBe(2)
    expect(estimateTokens('数据库')).toBe(3)
    expect(estimateTokens('')).toBe(0)
  })

  it('applies configured limits per field', async () => {
    const { store } = openTemp({ limits: { memory: 100, persona: 120, scene: 90 } })
    const memory = await store.memories.add({ kind: 'fact', text: 'm'.repeat(500), scope: 'global' })
    expect(memory.text).toHaveLength(100)
    const persona = await store.persona.put({ scope: 'global', text: 'p'.repeat(500) })
    expect(persona.text).toHaveLength(120)
    const scene = await store.scenes.add({ title: 't', summary: 's'.repeat(500), scope: 'global' })
    expect(scene.summary).toHaveLength(90)
    expect((await rejectionOf(store.persona.put({ scope: 'global', text: '\u0000' }))).code).toBe('invalid-argument')
  })
})
