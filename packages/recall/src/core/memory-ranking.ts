/**
 * Ranking and selection of L1 memories for injection and for the `memory_search` tool:
 * keyword relevance (the shared ranking core), optional embedding similarity, hybrid fusion
 * by reciprocal rank, time decay, the score threshold and the character budgets.
 */
import { RankingCorpus } from './corpus.ts'
import { cosineSimilarity } from './embedding.ts'
import { feedbackWeight } from './feedback.ts'
import { decayFactor, MEMORY_RANKING, rankDocuments, reciprocalRankFusion } from './ranking.ts'
import type { RecallStrategy } from './options.ts'

/** The fields of a stored memory that ranking reads. */
export interface RankableMemory {
  readonly id: string
  readonly text: string
  readonly kind: string
  readonly scope: string
  readonly createdAt: number
  readonly updatedAt: number
  readonly embedding?: Float32Array | null
  readonly embeddingModel?: string | null
  /** Feedback from sessions (`memory_feedback`) weighs the score; see `feedbackWeight`. */
  readonly flags?: Readonly<Record<string, unknown>> | null
}

/** A memory with its scores. */
export interface ScoredMemory<M extends RankableMemory = RankableMemory> {
  readonly memory: M
  /** Keyword relevance in [0, 1] (see `RankedDocument.relevance`); 0 when it did not match. */
  readonly lexical: number
  /** Cosine similarity with the query, when both have comparable embeddings. */
  readonly vector: number | undefined
  /** max(lexical, vector) in [0, 1]; under embedding (with a query vector) the vector alone, which orders. */
  readonly relevance: number
  /** Age weight `max(0.5, 0.5^(days/halfLife))`. */
  readonly decay: number
  /** Feedback weight (1 without feedback; see `feedbackWeight`). */
  readonly feedback: number
  /** relevance × decay × feedback: what `scoreThreshold` is compared with. */
  readonly score: number
  /**
   * With a query vector (strategy hybrid or embedding), for a memory with a vector of the query's
   * model: the probabilistic OR of both sides, `1 − (1 − lexical)(1 − cosine)` × decay × feedback
   * (a cosine below 0 counts as 0), what `hybridThreshold` is compared with instead of `score`:
   * strong evidence on one side passes alone, moderate evidence must come from both. The strategy
   * only orders; this admits. Undefined otherwise (keyword, no query vector, no memory vector).
   */
  readonly hybridScore: number | undefined
}

/** Options of {@link rankMemories}. */
export interface RankMemoriesOptions<M extends RankableMemory> {
  /** The strategy to run; `embedding`/`hybrid` degrade to keyword without a query vector. */
  readonly strategy: RecallStrategy
  readonly decayHalfLifeDays: number
  /** Epoch ms "now" for the age. */
  readonly now: number
  /** The query's embedding, when the embeddings source answered in time. */
  readonly queryEmbedding?: Float32Array | null
  /** Only memory embeddings of this model are compared with the query. */
  readonly embeddingModel?: string | null
  /** Memoised analyzer terms of a memory (keyed by the caller, e.g. id + revision). */
  readonly termsOf?: (memory: M) => readonly string[]
  /**
   * Size of the collection `memories` were drawn from when they are search candidates
   * (see `CorpusOptions.collectionSize`); default: `memories.length`.
   */
  readonly collectionSize?: number
}

/**
 * Rank memories for `query`, best first. Ordering: keyword → relevance × decay; embedding →
 * similarity × decay; hybrid → reciprocal rank fusion of both lists × decay. Memories the
 * strategy's lists did not match are dropped. With a query vector the keyword side is scored
 * under embedding too: the ordering ignores it, the admission (`hybridScore`) does not.
 */
export function rankMemories<M extends RankableMemory>(query: string, memories: readonly M[], options: RankMemoriesOptions<M>): ScoredMemory<M>[] {
  if (memories.length === 0) return []
  const useVectors = options.strategy !== 'keyword' && !!options.queryEmbedding && !!options.embeddingModel
  // Under embedding the keyword side only admits (hybridScore); it orders under keyword and hybrid.
  const byMeaningOnly = options.strategy === 'embedding' && useVectors

  const lexical = new Map<string, number>()
  const keywordOrder: string[] = []
  const corpus = RankingCorpus.from(
    memories.map((memory) => ({ id: memory.id, text: memory.text, terms: options.termsOf?.(memory), time: memory.updatedAt })),
    { collectionSize: options.collectionSize },
  )
  for (const ranked of rankDocuments(corpus, query, MEMORY_RANKING)) {
    lexical.set(ranked.id, ranked.relevance)
    keywordOrder.push(ranked.id)
  }

  const vectors = new Map<string, number>()
  const vectorOrder: string[] = []
  // Memories whose vector was compared with the query's (their cosine may be ≤ 0).
  const compared = new Set<string>()
  if (useVectors) {
    for (const memory of memories) {
      if (!memory.embedding || memory.embeddingModel !== options.embeddingModel) continue
      compared.add(memory.id)
      const similarity = cosineSimilarity(options.queryEmbedding!, memory.embedding)
      if (similarity > 0) vectors.set(memory.id, similarity)
    }
    vectorOrder.push(...[...vectors].sort((a, b) => b[1] - a[1]).map(([id]) => id))
  }

  const hybrid = useVectors && !byMeaningOnly
  const byId = new Map(memories.map((memory) => [memory.id, memory]))
  const score = (id: string): ScoredMemory<M> => {
    const memory = byId.get(id)!
    const lexicalScore = lexical.get(id) ?? 0
    const vector = vectors.get(id)
    const relevance = byMeaningOnly ? Math.min(1, vector ?? 0) : Math.min(1, Math.max(lexicalScore, vector ?? 0))
    const decay = decayFactor(options.now - memory.updatedAt, options.decayHalfLifeDays)
    const feedback = feedbackWeight(memory.flags as Record<string, unknown> | null | undefined)
    const either = useVectors && compared.has(id) ? 1 - (1 - Math.min(1, lexicalScore)) * (1 - Math.min(1, vector ?? 0)) : undefined
    return {
      memory,
      lexical: lexicalScore,
      vector,
      relevance,
      decay,
      feedback,
      score: relevance * decay * feedback,
      hybridScore: either === undefined ? undefined : either * decay * feedback,
    }
  }

  if (hybrid) {
    const fused = reciprocalRankFusion([keywordOrder, vectorOrder])
    return fused
      .map(({ id, score: fusedScore }) => ({ scored: score(id), key: fusedScore }))
      .map(({ scored, key }) => ({ scored, key: key * scored.decay * scored.feedback }))
      .sort((a, b) => b.key - a.key || b.scored.score - a.scored.score)
      .map(({ scored }) => scored)
  }
  const order = useVectors ? vectorOrder : keywordOrder
  return order.map(score).sort((a, b) => b.score - a.score)
}

/** Budgets of one injection. */
export interface InjectionBudget {
  readonly maxResults: number
  /** 0 = unlimited. */
  readonly maxCharsPerMemory: number
  /** 0 = unlimited. */
  readonly maxTotalRecallChars: number
  readonly scoreThreshold: number
  /** What {@link ScoredMemory.hybridScore} is compared with, when a memory has one (instead of `scoreThreshold`). */
  readonly hybridThreshold: number
}

/** One memory chosen for injection, with the text that will be shown. */
export interface SelectedMemory<M extends RankableMemory = RankableMemory> {
  readonly scored: ScoredMemory<M>
  /** The memory text after the per-memory and total caps. */
  readonly text: string
  readonly truncated: boolean
}

/** Result of {@link selectForInjection}. */
export interface InjectionSelection<M extends RankableMemory = RankableMemory> {
  readonly selected: SelectedMemory<M>[]
  /** Ranked memories skipped because they are already in the session's context. */
  readonly alreadyInContext: number
  /** Ranked memories below `scoreThreshold` (or `hybridThreshold`, see {@link ScoredMemory.hybridScore}). */
  readonly belowThreshold: number
  /** Memories that passed the threshold but did not fit `maxResults` or the character budget. */
  readonly overBudget: number
  /** Characters of memory text selected. */
  readonly chars: number
}

const MIN_TAIL_CHARS = 20

/** Cut `text` to `limit` characters (code points), marking the cut with an ellipsis. 0 = no limit. */
export function clipText(text: string, limit: number): { text: string; truncated: boolean } {
  if (limit <= 0) return { text, truncated: false }
  const chars = [...text]
  if (chars.length <= limit) return { text, truncated: false }
  return { text: chars.slice(0, limit - 1).join('') + '…', truncated: true }
}

/**
 * Choose what to inject: ranked order, skipping memories already in context and those
 * under the threshold (`hybridThreshold` on `hybridScore` for a memory that has one, else
 * `scoreThreshold` on `score`), within `maxResults`, `maxCharsPerMemory` and `maxTotalRecallChars`
 * (the last memory is cut to the remaining room when at least a few characters remain).
 */
export function selectForInjection<M extends RankableMemory>(
  ranked: readonly ScoredMemory<M>[],
  budget: InjectionBudget,
  exclude: ReadonlySet<string> = new Set(),
): InjectionSelection<M> {
  const selected: SelectedMemory<M>[] = []
  let alreadyInContext = 0
  let belowThreshold = 0
  let overBudget = 0
  let chars = 0
  for (const scored of ranked) {
    if (exclude.has(scored.memory.id)) {
      alreadyInContext++
      continue
    }
    const [value, threshold] = scored.hybridScore === undefined ? [scored.score, budget.scoreThreshold] : [scored.hybridScore, budget.hybridThreshold]
    if (value < threshold || value <= 0) {
      belowThreshold++
      continue
    }
    if (selected.length >= budget.maxResults) {
      overBudget++
      continue
    }
    let clipped = clipText(scored.memory.text, budget.maxCharsPerMemory)
    const length = [...clipped.text].length
    if (budget.maxTotalRecallChars > 0 && chars + length > budget.maxTotalRecallChars) {
      const room = budget.maxTotalRecallChars - chars
      if (room < MIN_TAIL_CHARS) {
        overBudget++
        continue
      }
      clipped = clipText(scored.memory.text, room)
    }
    chars += [...clipped.text].length
    selected.push({ scored, text: clipped.text, truncated: clipped.truncated })
  }
  return { selected, alreadyInContext, belowThreshold, overBudget, chars }
}
