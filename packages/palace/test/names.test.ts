import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { isPalaceError, isValidNamespace, resolveInside, validateCategory, validateNamespace, validateSelfName } from '../src/index.js'

function error(fn: () => unknown): string {
  try {
    fn()
    return 'accepted'
  } catch (caught) {
    return isPalaceError(caught) ? `${caught.code}: ${caught.message}` : String(caught)
  }
}

describe('memory names', () => {
  it('accepts English letters of either case, digits, space, "_" and "-", up to 32', () => {
    for (const name of ['Project Alpha', 'alpha', 'A_b-c 9', 'x'.repeat(32)]) expect(isValidNamespace(name)).toBe(true)
    expect(validateNamespace('Project Alpha')).toBe('Project Alpha')
  })

  it('refuses everything else with a reason', () => {
    expect(error(() => validateNamespace(''))).toMatch(/^invalid-name: a memory name must not be empty/)
    expect(error(() => validateNamespace('x'.repeat(33)))).toMatch(/33 characters; at most 32/)
    expect(error(() => validateNamespace(' lead'))).toMatch(/must not start or end with a space/)
    expect(error(() => validateNamespace('trail '))).toMatch(/must not start or end with a space/)
    expect(error(() => validateNamespace('项目'))).toMatch(/contains "项"/)
    expect(error(() => validateNamespace('a/b'))).toMatch(/path separator/)
    expect(error(() => validateNamespace('a\\b'))).toMatch(/path separator/)
    expect(error(() => validateNamespace('..'))).toMatch(/path separator or "\.\."/)
    expect(error(() => validateNamespace('v1.2'))).toMatch(/contains "\."/)
    expect(error(() => validateNamespace('NUL'))).toMatch(/reserved device name/)
    expect(error(() => validateNamespace(42))).toMatch(/must be a string/)
  })
})

describe('categories and prefixes', () => {
  it('allows letters of any script in categories but nothing path-like', () => {
    expect(validateCategory('事故教訓')).toBe('事故教訓')
    expect(validateCategory('ops notes')).toBe('ops notes')
    expect(error(() => validateCategory('../x'))).toMatch(/path separator or "\.\."/)
    expect(error(() => validateCategory('a:b'))).toMatch(/contains ":"/)
    expect(error(() => validateCategory('x'.repeat(41)))).toMatch(/longer than 40/)
  })

  it('folds selfName to a lower-case slug', () => {
    expect(validateSelfName('Claude')).toBe('claude')
    expect(error(() => validateSelfName('my bot'))).toMatch(/^invalid-name/)
  })
})

describe('resolveInside', () => {
  const root = join('/tmp', 'palace-root')
  it('resolves plain relative paths inside the root', () => {
    expect(resolveInside(root, '2026-11/work/a.md')).toBe(join(root, '2026-11/work/a.md'))
    expect(resolveInside(root, './2026-11//work/a.md')).toBe(join(root, '2026-11/work/a.md'))
  })

  it('refuses every way out', () => {
    for (const attempt of ['../x', 'a/../../x', '/etc/passwd', '\\\\server\\share', 'C:/Windows', 'c:\\x', '~/x', 'a/\0/b', '', '.', './']) {
      expect([attempt, error(() => resolveInside(root, attempt))]).toEqual([attempt, expect.stringMatching(/^path-refused/)])
    }
  })
})
