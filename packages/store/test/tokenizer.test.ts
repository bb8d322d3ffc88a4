import { describe, expect, it } from 'vitest'
import { ENGLISH_STOP_WORDS, foldScript, searchTokenize, tokenize, TOKENIZER_VERSION } from '../src/index.ts'
import { random } from './random.ts'

describe('tokenize', () => {
  it('segments Chinese into words and bigrams', () => {
    const tokens = tokenize('我们决定使用PostgreSQL作为主数据库')
    expect(tokens).toEqual(expect.arrayContaining(['我们', '决定', 'postgresql', '数据', '据库', '主数']))
    // The query form shares terms with the document form even though ICU cuts them differently.
    const query = tokenize('数据库')
    expect(query.filter((t) => tokens.includes(t)).length).toBeGreaterThanOrEqual(2)
  })

  it('segments Japanese kana and kanji', () => {
    const tokens = tokenize('東京でラーメンを食べるのが好きです')
    expect(tokens).toEqual(expect.arrayContaining(['東京', 'ラーメン', 'ラー', 'メン', '食べる']))
    // Particles alone carry no topic.
    expect(tokens).not.toContain('で')
    expect(tokens).not.toContain('を')
  })

  it('lower-cases, NFKC-normalises, drops stop words and splits identifiers', () => {
    expect(tokenize('The QUICK brown fox')).toEqual(['quick', 'brown', 'fox'])
    expect(tokenize('ＡＢＣ　ｄｅｆ')).toEqual(['abc', 'def'])
    expect(tokenize('ｱｲｳｴｵ')).toEqual(expect.arrayContaining(['アイウエオ']))
    expect(tokenize('getUserName foo_bar user.email task-manager')).toEqual(
      expect.arrayContaining(['getusername', 'get', 'user', 'name', 'foo_bar', 'foo', 'bar', 'user.email', 'email', 'task', 'manager']),
    )
    expect(tokenize('HTTPServer')).toEqual(['httpserver', 'http', 'server'])
    expect(tokenize('')).toEqual([])
    expect(tokenize('!!! ...')).toEqual([])
  })

  it('search terms fold traditional Chinese to simplified; tokenize keeps the script written', () => {
    // Characters and variant forms; words, not (軟體 stays 软体, not 软件: see foldScript).
    expect(foldScript('我用什麼軟體寫程式')).toBe('我用什么软体写程式')
    // Idempotent on simplified text (OpenCC's phrase mode would turn 程序 into 进程).
    expect(foldScript('我用什么软件写程序')).toBe('我用什么软件写程序')
    expect(searchTokenize('用戶的家庭醫生')).toEqual(tokenize('用户的家庭医生'))
    expect(searchTokenize('我們的電腦')).toEqual(expect.arrayContaining(['电脑']))
    expect(tokenize('我們的電腦')).not.toContain('电脑')
    // Simplified and Latin-only text pass through unchanged.
    for (const text of ['用户的电脑是笔记本', 'Deploys go out with Kamal', '']) {
      expect(foldScript(text)).toBe(text)
      expect(searchTokenize(text)).toEqual(tokenize(text))
    }
    // Japanese kanji fold the same way on both sides, so a kanji query still meets kana text.
    expect(foldScript('桜を見に行く')).toBe('桜を见に行く')
    const japanese = searchTokenize('東京でラーメンを食べる')
    expect(searchTokenize('東京').every((term) => japanese.includes(term))).toBe(true)
    // Compatibility ideographs fold like their unified forms (NFKC first).
    expect(foldScript('\uF900')).toBe(foldScript('\u8C48'))
  })

  it('has a version string that indexes record', () => {
    expect(TOKENIZER_VERSION).toMatch(/\S/)
  })

  it('property: tokens are non-empty, lower-cased, NFKC and without spaces; tokenizing is deterministic', () => {
    const rng = random(20250101)
    const alphabet = [
      ...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789',
      ...' \n\t.,;:!?-_/\'"()[]{}@#$%^&*+=<>|~`',
      ...'数据库东京食べる好きですラーメンのをにはが我们决定使用主作为',
      ...'ＡＢＣｱｲｳ１２３ﬁﬀ①㍻',
      ...'éÉüÜßİıçñÅ',
      '\u0301',
      '\u200b',
      '😀',
      '한국어',
      'Привет',
      'مرحبا',
    ]
    for (let i = 0; i < 400; i++) {
      const length = rng.int(0, 60)
      let text = ''
      for (let j = 0; j < length; j++) text += rng.pick(alphabet)
      const tokens = tokenize(text)
      expect(tokenize(text)).toEqual(tokens)
      for (const token of tokens) {
        expect(token.length, JSON.stringify(text)).toBeGreaterThan(0)
        expect(token, JSON.stringify(text)).toBe(token.toLowerCase())
        expect(token, JSON.stringify(text)).toBe(token.normalize('NFKC'))
        expect(/\s/u.test(token), JSON.stringify(token)).toBe(false)
      }
    }
  })

  it('property: every ASCII word of two or more characters that is not a stop word appears', () => {
    const rng = random(7)
    const letters = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'
    const separators = [' ', ', ', '. ', '; ', '-', '_', '/', '(', ') ', '"', ':', '\n', '.', ' 中文 ', 'の', '数据']
    const vocabulary = ['the', 'and', 'use', 'not', 'is', 'postgres', 'TODO', 'x', 'I', 'v2', 'API', 'JSON']
    for (let i = 0; i < 300; i++) {
      const words: string[] = []
      const count = rng.int(1, 12)
      for (let j = 0; j < count; j++) {
        if (rng.next() < 0.3) words.push(rng.pick(vocabulary))
        else {
          let word = ''
          const length = rng.int(1, 10)
          for (let k = 0; k < length; k++) word += rng.pick([...letters])
          words.push(word)
        }
      }
      let text = words[0]!
      for (const word of words.slice(1)) text += rng.pick(separators) + word
      const tokens = new Set(tokenize(text))
      for (const word of words) {
        const term = word.toLowerCase()
        if (term.length < 2 || ENGLISH_STOP_WORDS.has(term)) continue
        expect(tokens.has(term), `${JSON.stringify(term)} missing from tokenize(${JSON.stringify(text)})`).toBe(true)
      }
    }
  })
})
