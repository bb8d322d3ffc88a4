import { describe, expect, it } from 'vitest'
import { redactSecrets } from '../src/index.ts'

const PEM = ['-----BEGIN RSA PRIVATE KEY-----', 'MIIEowIBAAKCAQEAx3k9examplekeymaterial0123456789abcdef', 'moreKeyMaterial+/=', '-----END RSA PRIVATE KEY-----'].join('\n')

describe('redactSecrets', () => {
  const positives: Array<[input: string, expected: string]> = [
    ['key sk-abcdefghijklmnopqrstuvwxyz012345 end', 'key [REDACTED:api-key] end'],
    ['OPENAI sk-proj-AbCdEf1234567890_abcdefGHIJ-klmn', 'OPENAI [REDACTED:api-key]'],
    ['deepseek sk-0123456789abcdef0123456789abcdef', 'deepseek [REDACTED:api-key]'],
    ['claude sk-ant-api03-abcdefghijklmnopqrstuvwxyz', 'claude [REDACTED:api-key]'],
    ['aws AKIAIOSFODNN7EXAMPLE id', 'aws [REDACTED:aws-access-key] id'],
    ['gh ghp_abcdefghijklmnopqrstuvwxyz0123456789', 'gh [REDACTED:github-token]'],
    ['gho_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ab', '[REDACTED:github-token]'],
    ['ghs_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ab and ghr_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ab', '[REDACTED:github-token] and [REDACTED:github-token]'],
    ['pat github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz', 'pat [REDACTED:github-token]'],
    ['slack xoxb-1234567890-abcdefghij', 'slack [REDACTED:slack-token]'],
    ['xoxp-12345-67890-abcdef', '[REDACTED:slack-token]'],
    ['google AIzaSyA1234567890abcdefghijklmnopqrstuv', 'google [REDACTED:google-api-key]'],
    [`key:\n${PEM}\ndone`, 'key:\n[REDACTED:private-key]\ndone'],
    ['-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n(truncated', '[REDACTED:private-key]'],
    ['Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc', 'Authorization: Bearer [REDACTED:bearer-token]'],
    ['authorization: bearer abc', 'authorization: bearer [REDACTED:bearer-token]'],
    ['curl -H "Authorization: Bearer 0123456789abcdef0123"', 'curl -H "Authorization: Bearer [REDACTED:bearer-token]"'],
    ['use bearer 9f8e7d6c5b4a39281716 for the call', 'use bearer [REDACTED:bearer-token] for the call'],
    ['postgres://admin:hunter2@db.internal:5432/app', 'postgres://admin:[REDACTED:url-password]@db.internal:5432/app'],
    ['https://user:p%40ss@example.com/path', 'https://user:[REDACTED:url-password]@example.com/path'],
    ['export OPENAI_API_KEY=abcd1234efgh5678', 'export OPENAI_API_KEY=[REDACTED:env-secret]'],
    ['DB_PASSWORD: "correct-horse-battery"', 'DB_PASSWORD: "[REDACTED:env-secret]"'],
  ]
  for (const [input, expected] of positives) {
    it(`redacts ${JSON.stringify(input.slice(0, 40))}`, () => {
      const result = redactSecrets(input)
      expect(result.text).toBe(expected)
      expect(result.redactions).toBeGreaterThan(0)
    })
  }

  const negatives = [
    'Use the task-manager skill to plan the sprint.',
    'skills, sk-learn and scikit-learn are fine',
    'ask-me-anything and risk-based testing',
    'mask-image-source-outset is a CSS property',
    'the bearer of bad news; Bearer tokens are short-lived',
    'http://example.com:8080/path and user@example.com',
    'AKIA alone, or AKIAshort',
    'ghp_short and github_pattern matching',
    'xoxb is a slack prefix',
    'The PASSWORD field must be at least 8 chars',
    'BEGIN PRIVATE KEY without dashes',
    '我们决定使用PostgreSQL作为主数据库',
    'token: the thing you get after login',
  ]
  for (const input of negatives) {
    it(`leaves ${JSON.stringify(input.slice(0, 40))} alone`, () => {
      expect(redactSecrets(input)).toEqual({ text: input, redactions: 0 })
    })
  }

  it('is idempotent', () => {
    for (const [input] of positives) {
      const once = redactSecrets(input)
      expect(redactSecrets(once.text)).toEqual({ text: once.text, redactions: 0 })
    }
  })

  it('counts every secret', () => {
    const result = redactSecrets('a sk-abcdefghijklmnopqrstuvwxyz0 b AKIAIOSFODNN7EXAMPLE c https://u:pw@h')
    expect(result.redactions).toBe(3)
  })
})
