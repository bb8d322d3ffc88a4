import { describe, expect, it } from 'vitest'
import { extractKeywords, type Keyword } from '../src/core/keywords.js'
import { cosineSimilarity, decayFactor, inverseDocumentFrequency, isTopicSwitch, keywordMatch, mergeKeywords, rankCues, termSimilarity, topicOverlap } from '../src/core/matching.js'
import type { Cue } from '../src/core/model.js'
import { cueFixture, DAY, T0 } from './fixtures.js'

const kw = (text: string): Keyword[] => extractKeywords(text)

/** A cue of workspace /w whose summary, detail and keywords all come from `text`. */
const cue = (id: string, text: string, extra: Partial<Cue> = {}): Cue =>
  cueFixture(id, 'workspace:/w', {
    summary: text,
    detail: text,
    keywords: kw(text),
    dimensions: { trigger: 'keywords', perspective: 'conversation' },
    sourceMessageIds: [],
    ...extra,
  })

const rank = (query: string, cues: Cue[], extra: Partial<Parameters<typeof rankCues>[0]> = {}) =>
  rankCues({ query: kw(query), cues, now: T0, mode: 'keyword', maxCues: 3, minScore: 0.15, minVectorScore: 0.3, halfLifeDays: 30, ...extra })

describe('overlap and topic switches', () => {
  it('compares terms exactly, by CJK containment and by Latin stems', () => {
    expect(termSimilarity('闭环', '闭环')).toBe(1)
    expect(termSimilarity('闭环', '形成闭环')).toBe(0.8)
    expect(termSimilarity('plugin', 'plugins')).toBe(0.8)
    expect(termSimilarity('ci', 'cicd')).toBe(0)
    expect(termSimilarity('数据', '缓存')).toBe(0)
  })

  it('measures the share of the new message already in the previous turn', () => {
    const previous = kw('我们在迁移 PostgreSQL 数据库的表结构')
    expect(topicOverlap(previous, kw('PostgreSQL 数据库迁移的索引怎么处理'))).toBeGreaterThan(0.25)
    expect(topicOverlap(previous, kw('周末去哪里吃火锅'))).toBe(0)
  })

  it('detects switches: first message, unrelated message; not: same topic, keyword-less message', () => {
    const previous = kw('Set up the GitHub Actions pipeline for the monorepo')
    expect(isTopicSwitch(undefined, kw('GitHub Actions pipeline'), 0.25)).toBe(true)
    expect(isTopicSwitch(previous, kw('The pipeline fails on the monorepo build step'), 0.25)).toBe(false)
    expect(isTopicSwitch(previous, kw('Recommend a pasta recipe for dinner'), 0.25)).toBe(true)
    expect(isTopicSwitch(previous, kw('ok 好的 继续'), 0.25)).toBe(false)
    // The threshold decides: the same pair is a switch under a strict threshold.
    const pair = [kw('pipeline monorepo cache docker'), kw('pipeline kubernetes helm terraform')] as const
    expect(isTopicSwitch(pair[0], pair[1], 0.2)).toBe(false)
    expect(isTopicSwitch(pair[0], pair[1], 0.5)).toBe(true)
  })
})

describe('scoring', () => {
  it('weights rare words above words every cue has (TF-IDF)', () => {
    const cues = [cue('a', 'plugin feishu calendar'), cue('b', 'plugin feishu approval'), cue('c', 'plugin feishu memory recall')]
    const idf = inverseDocumentFrequency(cues)
    expect(idf('memory')).toBeGreaterThan(idf('plugin'))
    const ranked = rank('feishu plugin memory', cues)
    expect(ranked[0]!.cue.id).toBe('c')
    expect(ranked[0]!.matched).toEqual(expect.arrayContaining(['memory']))
  })

  it('scores a cue in 0..1 and zero without a shared keyword', () => {
    const match = keywordMatch(kw('PostgreSQL 数据库迁移'), kw('PostgreSQL 主数据库 迁移 索引'))
    expect(match.score).toBeGreaterThan(0.5)
    expect(match.score).toBeLessThanOrEqual(1)
    expect(keywordMatch(kw('火锅'), kw('PostgreSQL'))).toEqual({ score: 0, matched: [] })
  })

  it('computes cosine similarity', () => {
    expect(cosineSimilarity([1, 0], [1, 0])).toBeCloseTo(1)
    expect(cosineSimilarity([1, 0], [0, 1])).toBeCloseTo(0)
    expect(cosineSimilarity([1, 1], [1, 0])).toBeCloseTo(Math.SQRT1_2)
    expect(cosineSimilarity([1, 2], [1, 2, 3])).toBe(0)
    expect(cosineSimilarity([0, 0], [1, 1])).toBe(0)
  })

  it('decays untouched cues by half-life', () => {
    expect(decayFactor(T0, T0, 30)).toBe(1)
    expect(decayFactor(T0, T0 + 30 * DAY, 30)).toBeCloseTo(0.5)
    expect(decayFactor(T0, T0 + 60 * DAY, 30)).toBeCloseTo(0.25)
    expect(decayFactor(T0, T0 + 999 * DAY, 0)).toBe(1)
    expect(decayFactor(T0 + DAY, T0, 30)).toBe(1)
  })

  it('ranks a fresh cue above an equally matching stale one, and drops cues decayed below the threshold', () => {
    const fresh = cue('fresh', 'kubernetes helm deploy', { lastTouchedAt: T0 })
    const stale = cue('stale', 'kubernetes helm deploy', { lastTouchedAt: T0 - 60 * DAY })
    expect(rank('kubernetes helm deploy', [stale, fresh]).map((r) => r.cue.id)).toEqual(['fresh', 'stale'])
    const ancient = cue('ancient', 'kubernetes helm deploy', { lastTouchedAt: T0 - 400 * DAY })
    expect(rank('kubernetes helm deploy', [ancient])).toEqual([])
  })

  it('keeps at most maxCues, one per session and level, above minScore', () => {
    const cues = [
      cue('a1', 'redis cache eviction', { sessionId: 'A' }),
      cue('a2', 'redis cache cluster', { sessionId: 'A' }),
      cue('at', 'redis cache eviction cluster', { sessionId: 'A', level: 'task' }),
      cue('b', 'redis cache latency', { sessionId: 'B' }),
      cue('c', 'redis sentinel', { sessionId: 'C' }),
      cue('d', 'pasta recipe', { sessionId: 'D' }),
    ]
    const ranked = rank('redis cache eviction', cues)
    expect(ranked).toHaveLength(3)
    const keys = ranked.map((r) => `${r.cue.sessionId}/${r.cue.level}`)
    expect(new Set(keys).size).toBe(3)
    expect(ranked.map((r) => r.cue.id)).not.toContain('d')
    expect(rank('redis cache', cues, { minScore: 0.99 })).toEqual([])
  })

  it('uses cosine where both sides have vectors of the same model (auto), keywords elsewhere', () => {
    const semantic = cue('sem', 'helm chart rollout', { embedding: Float32Array.from([0, 1, 0]), embeddingModel: 'm' })
    const lexical = cue('lex', 'database migration schema')
    const otherModel = cue('other', 'database backup', { embedding: Float32Array.from([1, 0, 0]), embeddingModel: 'old-model' })
    const ranked = rank('数据库 migration', [semantic, lexical, otherModel], { mode: 'auto', queryVector: Float32Array.from([0.1, 0.99, 0]), vectorModel: 'm' })
    const byId = Object.fromEntries(ranked.map((r) => [r.cue.id, r]))
    expect(byId.sem?.via).toBe('vector')
    expect(byId.sem?.similarity).toBeGreaterThan(0.9)
    expect(byId.lex?.via).toBe('keyword')
    expect(byId.other).toBeUndefined() // other model: keyword fallback, and it shares no keyword
    // 'vector' trusts only vectors once a query vector exists.
    expect(rank('数据库 migration', [semantic, lexical], { mode: 'vector', queryVector: Float32Array.from([0, 1, 0]), vectorModel: 'm' }).map((r) => r.cue.id)).toEqual(['sem'])
    // Without a query vector every mode matches by keywords.
    expect(rank('database migration', [semantic, lexical], { mode: 'vector' }).map((r) => r.cue.id)).toEqual(['lex'])
  })

  it('merges task keywords with fading history and renormalises', () => {
    const merged = mergeKeywords([{ word: 'old', score: 0.5 }, { word: 'shared', score: 0.5 }], [{ word: 'shared', score: 0.5 }, { word: 'new', score: 0.5 }], 2)
    expect(merged.map((k) => k.word)).toEqual(['shared', 'new'])
    expect(merged.reduce((sum, k) => sum + k.score, 0)).toBeCloseTo(1, 3)
  })
})
