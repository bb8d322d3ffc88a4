import { describe, expect, it } from 'vitest'
import { redactionMarker, tokenize, TOKENIZER_VERSION, type SecretKind } from '../src/index.ts'

const KINDS: SecretKind[] = ['private-key', 'api-key', 'aws-access-key', 'github-token', 'slack-token', 'google-api-key', 'bearer-token', 'url-password', 'env-secret']

// The stores' side (both backends): contract/redaction-search.test.ts.
describe('redaction markers are never search terms', () => {
  it('the tokenizer emits no term of any marker, and keeps the words around it (CJK included)', () => {
    for (const kind of KINDS) {
      expect(tokenize(redactionMarker(kind))).toEqual([])
      expect(tokenize(`staging ${redactionMarker(kind)} 数据库`)).toEqual(tokenize('staging 数据库'))
    }
    // Glued to text on both sides, and a marker kind this version does not know yet.
    expect(tokenize(`key=${redactionMarker('api-key')}」東京`)).toEqual(tokenize('key= 」東京'))
    expect(tokenize('[REDACTED:future-kind-2]')).toEqual([])
    // Text that only looks like a marker stays text.
    expect(tokenize('[redacted] api')).toEqual(['redacted', 'api'])
    expect(TOKENIZER_VERSION).toMatch(/no-redaction-markers/)
  })
})
