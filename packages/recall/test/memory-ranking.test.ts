import { describe, expect, it } from 'vitest'
import { clipText, rankMemories, selectForInjection, type ScoredMemory } from '../src/core/memory-ranking.ts'

const DAY = 86_400_000
const NOW = Date.UTC(2025, 0, 1)

function memory(id: string, text: string, ageDays = 0, extra: Partial<{ embedding: Float32Array; embeddingModel: string; kind: string; scope: string }> = {}) {
  const time = NOW - ageDays * DAY
  return { id, text, kind: extra.kind ?? 'fact', scope: extra.scope ?? 'global', createdAt: time, updatedAt: time, embedding: extra.embedding ?? null, embeddingModel: extra.embeddingModel ?? null }
}

const vector = (x: number, y: number) => Float32Array.from([x, y])

/** A fresh memory carrying the embedding [x, y] of `model`. */
const embedded = (id: string, text: string, [x, y]: [number, number], model = 'm@2') => memory(id, text, 0, { embedding: vector(x, y), embeddingModel: model })

describe('rankMemories', () => {
  const base = [memory('new', 'The office printer is on floor three.'), memory('old', 'The office printer is on floor two.', 120), memory('other', 'Lunch is at noon.')]

  it('multiplies relevance by the age decay', () => {
    const ranked = rankMemories('where is the office printer', base, { strategy: 'keyword', decayHalfLifeDays: 30, now: NOW })
    expect(ranked.map((scored) => scored.memory.id)).toEqual(['new', 'old'])
    const [fresh, aged] = ranked
    expect(aged!.decay).toBe(0.5)
    expect(aged!.score).toBeCloseTo(aged!.relevance * 0.5, 10)
    expect(fresh!.decay).toBe(1)
  })

  it('embedding strategy ranks by cosine similarity of the same model only', () => {
    const memories = [embedded('near', 'alpha', [1, 0.1]), embedded('far', 'beta', [0.2, 1]), embedded('other-model', 'gamma', [1, 0], 'x@2')]
    const ranked = rankMemories('anything', memories, { strategy: 'embedding', decayHalfLifeDays: 0, now: NOW, queryEmbedding: vector(1, 0), embeddingModel: 'm@2' })
    expect(ranked.map((scored) => scored.memory.id)).toEqual(['near', 'far'])
    expect(ranked[0]!.vector).toBeGreaterThan(0.99)
  })

  it('hybrid fuses both lists: a memory found by both beats one found by one', () => {
    const memories = [
      embedded('both', 'The printer jams on A3 paper.', [1, 0]),
      embedded('keyword-only', 'Printer toner is in the cupboard.', [0, 1]),
      embedded('vector-only', 'The copier on floor two is broken.', [0.9, 0.1]),
    ]
    const ranked = rankMemories('printer jams', memories, { strategy: 'hybrid', decayHalfLifeDays: 0, now: NOW, queryEmbedding: vector(1, 0), embeddingModel: 'm@2' })
    expect(ranked[0]!.memory.id).toBe('both')
    expect(ranked.map((scored) => scored.memory.id)).toContain('vector-only')
    // Without a query vector, hybrid degrades to keyword.
    const keywordOnly = rankMemories('printer jams', memories, { strategy: 'hybrid', decayHalfLifeDays: 0, now: NOW, queryEmbedding: null, embeddingModel: 'm@2' })
    expect(keywordOnly.map((scored) => scored.memory.id)).not.toContain('vector-only')
    expect(keywordOnly.every((scored) => scored.hybridScore === undefined)).toBe(true)
  })

  it('hybridScore is 1 − (1 − keyword)(1 − cosine) × decay, for memories with a vector of the query model only', () => {
    const memories = [
      embedded('both', 'The printer jams on A3 paper.', [0.8, 0.6]),
      embedded('vector-only', 'The copier on floor two is broken.', [0.6, 0.8]),
      embedded('opposite', 'Printer paper is in the cupboard.', [-1, 0]),
      embedded('other-model', 'The printer jams a lot.', [1, 0], 'x@2'),
      { ...memory('aged', 'The printer jams on Mondays.', 30), embedding: vector(0.8, 0.6), embeddingModel: 'm@2' },
    ]
    const ranked = rankMemories('printer jams', memories, { strategy: 'hybrid', decayHalfLifeDays: 30, now: NOW, queryEmbedding: vector(1, 0), embeddingModel: 'm@2' })
    const byId = new Map(ranked.map((scored) => [scored.memory.id, scored]))
    const both = byId.get('both')!
    expect(both.lexical).toBeGreaterThan(0)
    expect(both.vector).toBeCloseTo(0.8, 6)
    expect(both.hybridScore).toBeCloseTo(1 - (1 - both.lexical) * 0.2, 6)
    expect(both.hybridScore).toBeGreaterThan(Math.max(both.lexical, 0.8))
    expect(byId.get('vector-only')!.hybridScore).toBeCloseTo(0.6, 6)
    // A cosine below 0 counts as 0: the keyword side alone.
    const opposite = byId.get('opposite')!
    expect(opposite.vector).toBeUndefined()
    expect(opposite.lexical).toBeGreaterThan(0)
    expect(opposite.hybridScore).toBeCloseTo(opposite.lexical, 6)
    // Another model's vector is not compared: that memory keeps scoreThreshold on its keyword score.
    expect(byId.get('other-model')!.hybridScore).toBeUndefined()
    const aged = byId.get('aged')!
    expect(aged.decay).toBe(0.5)
    expect(aged.hybridScore).toBeCloseTo((1 - (1 - aged.lexical) * 0.2) * 0.5, 6)
    // The keyword strategy has none.
    const keyword = rankMemories('printer jams', memories, { strategy: 'keyword', decayHalfLifeDays: 30, now: NOW, queryEmbedding: vector(1, 0), embeddingModel: 'm@2' })
    expect(keyword.length).toBeGreaterThan(0)
    expect(keyword.every((scored) => scored.hybridScore === undefined)).toBe(true)
  })

  it('embedding orders by cosine alone but admits like hybrid: hybridScore holds the keyword side too', () => {
    const memories = [
      embedded('words-and-meaning', 'The printer jams on A3 paper.', [0.75, Math.sqrt(1 - 0.75 ** 2)]),
      embedded('meaning-only', 'The copier on floor two is broken.', [0.8, 0.6]),
      embedded('other-model', 'The printer jams a lot.', [1, 0], 'x@2'),
    ]
    const ranked = rankMemories('printer jams', memories, { strategy: 'embedding', decayHalfLifeDays: 0, now: NOW, queryEmbedding: vector(1, 0), embeddingModel: 'm@2' })
    // Order and relevance by cosine: the memory sharing the words comes second (0.75 < 0.8), and
    // a memory without a vector of the model is not ranked.
    expect(ranked.map((scored) => scored.memory.id)).toEqual(['meaning-only', 'words-and-meaning'])
    expect(ranked.map((scored) => scored.relevance)).toEqual([expect.closeTo(0.8, 6), expect.closeTo(0.75, 6)])
    const [meaningOnly, both] = ranked
    expect(meaningOnly!.hybridScore).toBeCloseTo(0.8, 6)
    expect(both!.lexical).toBeGreaterThan(0)
    expect(both!.hybridScore).toBeCloseTo(1 - (1 - both!.lexical) * 0.25, 6)
    // So at the default hybridThreshold (0.85) a middling cosine alone is not injected, words and meaning together are.
    const budget = { maxResults: 5, maxCharsPerMemory: 0, maxTotalRecallChars: 0, scoreThreshold: 0.3, hybridThreshold: 0.85 }
    expect(both!.hybridScore).toBeGreaterThan(0.85)
    const selection = selectForInjection(ranked, budget, new Set())
    expect(selection.selected.map((selected) => selected.scored.memory.id)).toEqual(['words-and-meaning'])
    expect(selection.belowThreshold).toBe(1)
  })
})

describe('selectForInjection', () => {
  const scored = (id: string, score: number, text = `memory ${id}`): ScoredMemory => ({
    memory: memory(id, text),
    lexical: score,
    vector: undefined,
    relevance: score,
    decay: 1,
    feedback: 1,
    score,
    hybridScore: undefined,
  })
  const budget = { maxResults: 3, maxCharsPerMemory: 0, maxTotalRecallChars: 0, scoreThreshold: 0.3, hybridThreshold: 0.85 }

  it('applies the threshold, maxResults and the exclusion of memories already in context', () => {
    const selection = selectForInjection([scored('a', 0.9), scored('b', 0.8), scored('c', 0.7), scored('d', 0.6), scored('e', 0.2)], budget, new Set(['b']))
    expect(selection.selected.map((entry) => entry.scored.memory.id)).toEqual(['a', 'c', 'd'])
    expect(selection).toMatchObject({ alreadyInContext: 1, belowThreshold: 1, overBudget: 0 })
    const capped = selectForInjection([scored('a', 0.9), scored('b', 0.8), scored('c', 0.7), scored('d', 0.6)], budget)
    expect(capped.overBudget).toBe(1)
  })

  it('a memory with a hybridScore is held to hybridThreshold instead of scoreThreshold', () => {
    const hybrid = (id: string, score: number, hybridScore: number): ScoredMemory => ({ ...scored(id, score), hybridScore })
    const selection = selectForInjection(
      [
        hybrid('cosine-only', 0.45, 0.45), // passes 0.3 by its cosine alone, not 0.85
        hybrid('agreed', 0.7, 0.91), // keyword 0.7, cosine 0.7
        scored('keyword-no-vector', 0.35), // no vector (CJK guard): scoreThreshold applies
        hybrid('just-under', 0.8, 0.84),
      ],
      budget,
    )
    expect(selection.selected.map((entry) => entry.scored.memory.id)).toEqual(['agreed', 'keyword-no-vector'])
    expect(selection.belowThreshold).toBe(2)
    // hybridThreshold 0 with scoreThreshold 1: only the memories with a hybridScore pass.
    const open = selectForInjection([hybrid('a', 0.1, 0.05), scored('b', 0.9)], { ...budget, scoreThreshold: 1, hybridThreshold: 0 })
    expect(open.selected.map((entry) => entry.scored.memory.id)).toEqual(['a'])
  })

  it('cuts each memory to maxCharsPerMemory and the total to maxTotalRecallChars', () => {
    const long = 'x'.repeat(100)
    const perMemory = selectForInjection([scored('a', 0.9, long)], { ...budget, maxCharsPerMemory: 30 })
    expect([...perMemory.selected[0]!.text]).toHaveLength(30)
    expect(perMemory.selected[0]!.truncated).toBe(true)
    const total = selectForInjection([scored('a', 0.9, long), scored('b', 0.8, long), scored('c', 0.7, long)], { ...budget, maxCharsPerMemory: 60, maxTotalRecallChars: 100 })
    expect(total.selected.map((entry) => [...entry.text].length)).toEqual([60, 40])
    expect(total.chars).toBe(100)
    expect(total.overBudget).toBe(1)
  })

  it('the total budget never overflows (property over random inputs)', () => {
    let seed = 42
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31)
    for (let round = 0; round < 200; round++) {
      const entries = Array.from({ length: 1 + Math.floor(random() * 10) }, (_, i) => scored(`m${i}`, random(), 'y'.repeat(1 + Math.floor(random() * 300))))
      const limits = { maxResults: 1 + Math.floor(random() * 6), maxCharsPerMemory: Math.floor(random() * 200), maxTotalRecallChars: Math.floor(random() * 500), scoreThreshold: random() * 0.5, hybridThreshold: 0.85 }
      const selection = selectForInjection(entries, limits)
      expect(selection.selected.length).toBeLessThanOrEqual(limits.maxResults)
      if (limits.maxTotalRecallChars > 0) expect(selection.chars).toBeLessThanOrEqual(limits.maxTotalRecallChars)
      for (const entry of selection.selected) {
        expect(entry.scored.score).toBeGreaterThanOrEqual(limits.scoreThreshold)
        if (limits.maxCharsPerMemory > 0) expect([...entry.text].length).toBeLessThanOrEqual(limits.maxCharsPerMemory)
      }
    }
  })

  it('clipText counts code points, so CJK and emoji are never split', () => {
    expect(clipText('東京のオフィスは来月移転します', 5)).toEqual({ text: '東京のオ…', truncated: true })
    expect(clipText('😀😀😀', 2).text).toBe('😀…')
    expect(clipText('short', 0)).toEqual({ text: 'short', truncated: false })
  })
})
