import { describe, expect, it } from 'vitest'
import { computeIdioms, selectIdiomHints } from '../src/core/idioms.js'
import type { Idiom } from '../src/core/model.js'

describe('user idioms', () => {
  it('keeps words recurring across topic segments, not the keywords of one long topic', () => {
    const window = [
      { segment: 's1#1', terms: ['postgresql', '迁移', '闭环'], at: 1 },
      { segment: 's1#1', terms: ['postgresql', '索引'], at: 2 },
      { segment: 's1#1', terms: ['postgresql', '闭环'], at: 3 },
      { segment: 's2#1', terms: ['飞书插件', '形成闭环', '抓手'], at: 4 },
      { segment: 's3#4', terms: ['部署', '抓手'], at: 5 },
    ]
    const idioms = computeIdioms(window)
    // 闭环 is used in s1 twice and, inside 形成闭环, in s2; 抓手 in s2 and s3. PostgreSQL stays a topic word.
    expect(idioms).toEqual([
      { word: '闭环', turns: 3, score: 0.6, lastUsed: 4 },
      { word: '抓手', turns: 2, score: 0.4, lastUsed: 5 },
    ])
    window.push({ segment: 's4#1', terms: ['回归测试', '闭环'], at: 6 })
    expect(computeIdioms(window).map((idiom) => idiom.word)).toEqual(['闭环', '抓手'])
    expect(computeIdioms(window)[0]!.lastUsed).toBe(6)
    expect(computeIdioms([])).toEqual([])
  })

  it('offers idioms the message uses first, capped', () => {
    const idiom = (word: string, score: number): Idiom => ({ partition: 'p', word, score, turns: 2, firstSeen: 0, lastSeen: 0 })
    const idioms = [idiom('抓手', 0.5), idiom('赋能', 0.4), idiom('闭环', 0.2)]
    expect(selectIdiomHints(idioms, ['形成闭环'], 2)).toEqual(['闭环', '抓手'])
    expect(selectIdiomHints(idioms, [], 5)).toEqual(['抓手', '赋能', '闭环'])
    expect(selectIdiomHints(idioms, [], 0)).toEqual([])
  })
})
