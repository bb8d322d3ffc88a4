import { tokenize } from '@dsh-memory/store'
import { describe, expect, it } from 'vitest'
import { candidateTerms, extractKeywords, isStopWord } from '../src/core/keywords.js'

const words = (text: string) => extractKeywords(text).map((keyword) => keyword.word)

describe('keyword extraction', () => {
  it('rebuilds Chinese compounds the dictionary cuts into characters', () => {
    expect(words('我想做一个飞书插件，用来管理跨会话记忆')).toEqual(expect.arrayContaining(['飞书插件', '跨会话', '记忆', '管理']))
    expect(words('我们决定使用 PostgreSQL 作为主数据库。')).toEqual(expect.arrayContaining(['postgresql', '主数据库', '决定']))
    expect(words('形成闭环，这个方案要闭环')).toEqual(expect.arrayContaining(['形成闭环', '闭环', '方案']))
  })

  it('drops Chinese function words and grammar characters', () => {
    const terms = candidateTerms('我们的这个问题就是因为我想要一个东西，然后可以继续')
    expect(terms).toEqual([])
    expect(words('部署到Kubernetes集群的时候遇到了问题')).toEqual(expect.arrayContaining(['部署', 'kubernetes', '集群']))
    expect(words('部署到Kubernetes集群的时候遇到了问题')).not.toContain('部署到')
  })

  it('handles Japanese: joins katakana words, drops particles and auxiliaries', () => {
    const result = words('プラグインを作りたいです。データベースの移行について')
    expect(result).toEqual(expect.arrayContaining(['プラグイン', 'データベース', '移行']))
    for (const stop of ['です', 'たい', 'について', 'を', 'の']) expect(result).not.toContain(stop)
  })

  it('handles English: drops filler, keeps identifiers whole, skips numbers', () => {
    const result = words('Can you help me set up the CI pipeline for our monorepo? The GitHub Actions workflow fails on Node 22 since commit 3f9a2c1d7e.')
    expect(result).toEqual(expect.arrayContaining(['pipeline', 'monorepo', 'github', 'actions', 'workflow', 'node', 'ci']))
    for (const gone of ['can', 'help', 'the', '22', '3f9a2c1d7e', 'git', 'hub']) expect(result).not.toContain(gone)
    expect(words('Fix the useEffect cleanup in memory_store.ts')).toEqual(expect.arrayContaining(['useeffect', 'memory_store.ts']))
  })

  it('handles mixed CJK and English text', () => {
    const result = words('ReactのuseEffectでバグが出ています，帮我看看 Redis 缓存为什么失效')
    expect(result).toEqual(expect.arrayContaining(['react', 'useeffect', 'バグ', 'redis', '缓存', '失效']))
  })

  it('filters emoji and code', () => {
    const result = words('🎉🔥 部署脚本失败了 😅 ```bash\nkubectl apply -f deployment.yaml\n``` `npm run build` https://ci.example.com/job/42')
    expect(result).toEqual(expect.arrayContaining(['部署', '脚本', '失败']))
    for (const gone of ['kubectl', 'deployment.yaml', 'npm', 'build', 'ci.example.com', '🎉', '😅']) expect(result).not.toContain(gone)
    expect(extractKeywords('😀😃😄 🎉')).toEqual([])
    expect(extractKeywords('```\nonly code\n```')).toEqual([])
  })

  it('scores by term frequency, most frequent first', () => {
    const result = extractKeywords('Redis cache. Redis cluster. Redis sentinel.')
    expect(result[0]).toEqual({ word: 'redis', score: 0.5 })
    expect(result.reduce((sum, keyword) => sum + keyword.score, 0)).toBeLessThanOrEqual(1.0001)
    expect(extractKeywords('alpha beta gamma delta', { max: 2 })).toHaveLength(2)
    expect(extractKeywords('ab cd efgh', { minLength: 4 }).map((keyword) => keyword.word)).toEqual(['efgh'])
  })

  it('holds its contract on arbitrary mixed input (property test)', () => {
    const alphabet = ['数据库', '迁移', '飞书', '插件', 'の', 'を', 'データ', 'ベース', 'Redis', 'cache', 'the', ' ', '，', '。', '😀', '`x`', '\n', '123', 'useEffect', '我们', '部署']
    let seed = 42
    const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31)
    for (let run = 0; run < 300; run++) {
      const text = Array.from({ length: 1 + Math.floor(random() * 25) }, () => alphabet[Math.floor(random() * alphabet.length)]).join('')
      const first = extractKeywords(text)
      expect(extractKeywords(text)).toEqual(first) // deterministic
      const lowered = text.normalize('NFKC').toLowerCase()
      const tokens = new Set(tokenize(text))
      for (const { word, score } of first) {
        expect(word.length).toBeGreaterThan(0)
        expect(score).toBeGreaterThan(0)
        expect(isStopWord(word)).toBe(false)
        expect(word).not.toMatch(/\p{Extended_Pictographic}/u)
        // Every keyword is text that occurs in the input (a compound of adjacent tokenizer words, or one of them).
        expect(lowered.includes(word) || tokens.has(word)).toBe(true)
      }
      expect(new Set(first.map((keyword) => keyword.word)).size).toBe(first.length)
    }
  })
})
