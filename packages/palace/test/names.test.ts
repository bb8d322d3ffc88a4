import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { automaticNamespace, isPalaceError, isValidNamespace, resolveInside, validateCategory, validateNamespace, validateSelfName } from '../src/index.js'

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

describe('automatic memory names', () => {
  const hash = /-[0-9a-f]{8}$/
  it('take the workspace folder as ASCII plus a hash of the session id, and are always valid', () => {
    expect(automaticNamespace('/home/me/shop-api', 'session-1')).toMatch(/^shop-api-[0-9a-f]{8}$/)
    // Accents and full-width letters fold; anything else becomes "-".
    expect(automaticNamespace('/w/Café Ｄｅｍｏ.v2', 's')).toMatch(/^Cafe-Demo-v2-[0-9a-f]{8}$/)
    // A Chinese or Japanese folder name has no ASCII to keep: the name says "session".
    for (const folder of ['/w/项目', '/w/プロジェクト', '/w/데이터', '/']) expect(automaticNamespace(folder, 's')).toMatch(/^session-[0-9a-f]{8}$/)
    expect(automaticNamespace('/w/数据-api', 's')).toMatch(/^api-[0-9a-f]{8}$/)
    // Long folder names are cut so the hash and a clash suffix still fit in 32 characters.
    const long = automaticNamespace(`/w/${'a'.repeat(80)}`, 's', 97)
    expect(long).toMatch(/^a{20}-[0-9a-f]{8}-98$/)
    expect(long.length).toBeLessThanOrEqual(32)
    // A device name or a trailing separator in the folder cannot make the name invalid.
    for (const folder of ['/w/NUL', '/w/con', '/w/--x--', '/w/ a b ', `/w/${'-'.repeat(40)}`]) {
      const name = automaticNamespace(folder, 's')
      expect([folder, isValidNamespace(name), hash.test(name)]).toEqual([folder, true, true])
    }
  })

  it('differ between sessions of one workspace, and between attempts after a clash', () => {
    const a = automaticNamespace('/w/shop', 'session-a')
    const b = automaticNamespace('/w/shop', 'session-b')
    expect(a).not.toBe(b)
    expect(automaticNamespace('/w/shop', 'session-a')).toBe(a)
    expect(automaticNamespace('/w/shop', 'session-a', 1)).toBe(`${a}-2`)
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
