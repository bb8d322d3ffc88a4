import { afterAll, describe, expect, it } from 'vitest'
import { cosineSimilarity } from '../src/core/embedding.ts'
import { createMiniLmEmbedder, miniLmCanEmbed } from '../src/core/minilm.ts'
import { TURN_RANKING } from '../src/core/ranking.ts'
import { fuseTurnVectors, TURN_VECTOR_WEIGHT, type TurnNeighbour } from '../src/core/turn-vectors.ts'

const alone = (): TurnNeighbour[] => []
const ids = (turns: readonly { id: string }[]) => turns.map((turn) => turn.id)

describe('fuseTurnVectors', () => {
  const ranked = [
    { id: 'a', score: 4 },
    { id: 'b', score: 2 },
    { id: 'c', score: 1 },
  ]

  it('adds weight × the standardised similarity to score / best score', () => {
    const similarity = { a: 0.1, b: 0.9, c: 0.1 } as Record<string, number>
    const fused = fuseTurnVectors(ranked, (id) => similarity[id], alone, 1)
    // mean 0.3667, deviation 0.3771: z = −0.707, 1.414, −0.707
    expect(ids(fused)).toEqual(['b', 'a', 'c'])
    expect(fused[0]!.score).toBeCloseTo(0.5 + 1.4142, 3)
    expect(fused[1]!.score).toBeCloseTo(1 - 0.7071, 3)
    expect(fused[2]!.score).toBeCloseTo(0.25 - 0.7071, 3)
    // The default weight is the tuned one.
    expect(fuseTurnVectors(ranked, (id) => similarity[id], alone).map((turn) => turn.score)).toEqual(
      fuseTurnVectors(ranked, (id) => similarity[id], alone, TURN_VECTOR_WEIGHT).map((turn) => turn.score),
    )
  })

  it("lends a turn its best neighbour's similarity like the turn ranking's context windows", () => {
    const similarity = { a: 0.2, b: 0.8, c: 0.1, far: 0.95 } as Record<string, number>
    const neighbours = (id: string): TurnNeighbour[] => (id === 'c' ? [{ id: 'b', distance: 1 }, { id: 'far', distance: TURN_RANKING.context.span + 1 }] : [])
    // c: 0.1 + 0.6 × 0.8 = 0.58 (the neighbour beyond the span does not count), above a's 0.2.
    const fused = fuseTurnVectors(
      [
        { id: 'a', score: 1 },
        { id: 'c', score: 1 },
        { id: 'b', score: 1 },
      ],
      (id) => similarity[id],
      neighbours,
      1,
    )
    expect(ids(fused)).toEqual(['b', 'c', 'a'])
  })

  it('leaves the order alone without vectors, and a turn without one keeps its keyword share', () => {
    expect(fuseTurnVectors(ranked, () => undefined, alone, 1)).toEqual(ranked)
    expect(fuseTurnVectors([], () => 1, alone)).toEqual([])
    const fused = fuseTurnVectors(ranked, (id) => (id === 'a' ? undefined : id === 'b' ? 0.9 : 0.1), alone, 1)
    expect(fused.find((turn) => turn.id === 'a')!.score).toBe(1)
  })

  it('orders turns without any keyword score by their similarity alone', () => {
    const found = [
      { id: 'x', score: 0 },
      { id: 'y', score: 0 },
    ]
    const fused = fuseTurnVectors(found, (id) => (id === 'y' ? 0.8 : 0.2), alone, 1)
    expect(ids(fused)).toEqual(['y', 'x'])
    // z = ±1 of two values, weight 1, keyword share 0.
    expect(fused[0]!.score).toBeCloseTo(1, 9)
    expect(fused[1]!.score).toBeCloseTo(-1, 9)
  })
})

describe('fuseTurnVectors with the real MiniLM', () => {
  const embedder = createMiniLmEmbedder({ maxInputChars: 5000, timeoutMs: 60_000 })
  afterAll(() => embedder.close())

  it('lifts the turn that answers in other words above keyword matches', async () => {
    const query = 'What pet does Maria have?'
    const turns = {
      car: 'Maria: I have to take the car to the garage on Friday, what a week.',
      weather: 'John: Does Maria have an umbrella? It will rain all week.',
      answer: 'Maria: My cat Mochi slept on my keyboard all afternoon again.',
      work: 'John: The meeting moved to Tuesday, Maria.',
    } as Record<string, string>
    // The keyword ranking's order: the answer shares only the speaker's name with the question.
    const ranked = [
      { id: 'car', score: 3.1 },
      { id: 'weather', score: 2.4 },
      { id: 'work', score: 1.2 },
      { id: 'answer', score: 1.1 },
    ]
    const texts = [query, ...ranked.map((turn) => turns[turn.id]!)]
    expect(texts.every(miniLmCanEmbed)).toBe(true)
    const [queryVector, ...vectors] = await embedder.embed(texts)
    const cosine = new Map(ranked.map((turn, index) => [turn.id, cosineSimilarity(vectors[index]!, queryVector!)]))
    expect(Math.max(...cosine.values())).toBe(cosine.get('answer'))
    const fused = fuseTurnVectors(ranked, (id) => cosine.get(id), alone, 1)
    expect(ids(fused)[0]).toBe('answer')
    // At the tuned weight the keyword ranking still leads: the vectors nudge, they do not replace it.
    expect(ids(fuseTurnVectors(ranked, (id) => cosine.get(id), alone))[0]).toBe('car')
  })
})
