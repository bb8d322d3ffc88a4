import { describe, expect, it } from 'vitest'
import { breakTemplateBraces, detectLanguage, excerpt, messageText, omitCodeBlocks, stripNonProse } from '../src/core/text.js'

describe('text helpers', () => {
  it('joins only the text blocks of a host message', () => {
    expect(messageText([{ type: 'text', text: 'a' }, { type: 'reasoning', text: 'hidden' }, { type: 'text', text: 'b' }])).toBe('a\nb')
    expect(messageText(undefined)).toBe('')
  })

  it('removes code, URLs, e-mail and emoji but keeps the prose around them', () => {
    const text = 'Deploy fails 😅🔥 see https://example.com/a?b=1 or mail ops@example.com\n```ts\nconst secretName = 1\n```\nthen `kubectl apply` 🇨🇳 broke\nconst x = y(z);'
    const prose = stripNonProse(text)
    expect(prose).toMatch(/Deploy fails/)
    expect(prose).toMatch(/then/)
    expect(prose).toMatch(/broke/)
    for (const gone of ['😅', '🔥', '🇨🇳', 'example.com', 'secretName', 'kubectl', 'const x']) expect(prose).not.toContain(gone)
  })

  it('cuts excerpts by code point and marks the cut', () => {
    expect(excerpt('一二三四五六七八九十', 5)).toBe('一二三四…')
    expect(excerpt('  a   b  ', 10)).toBe('a b')
    expect(excerpt('😀😀😀😀', 3)).toBe('😀😀…')
    expect(excerpt('x', 0)).toBe('')
  })

  it('breaks every template brace pair so the host cannot interpolate remembered text', () => {
    expect(breakTemplateBraces('use {{model}} and {{{x}}}')).toBe('use { {model} } and { { {x} } }')
    expect(breakTemplateBraces('{{')).not.toContain('{{')
    expect(breakTemplateBraces('a } } b')).toBe('a } } b')
  })

  it('classifies the language mix', () => {
    expect(detectLanguage('我们决定使用数据库')).toBe('zh')
    expect(detectLanguage('データベースの移行について')).toBe('ja')
    expect(detectLanguage('Set up the CI pipeline')).toBe('en')
    expect(detectLanguage('部署 Kubernetes cluster with Helm charts to production')).toBe('mixed')
    expect(detectLanguage('12345 !!!')).toBe('other')
  })

  it('replaces fenced code with a marker for stored details', () => {
    expect(omitCodeBlocks('before\n```js\nlet a = 1\n```\nafter')).toBe('before\n[code omitted]\nafter')
  })
})
