/**
 * Pure scoring: topic overlap between turns, keyword (TF-IDF weighted) and vector (cosine)
 * matching of a message against cues, decay of untouched cues, and the final ranking.
 */
import { cosineSimilarity } from '@dsh-memory/store'
import { isCjk, type Keyword } from './keywords.js'
import type { Cue } from './model.js'

const DAY_MS = 86_400_000

/**
 * How well two keywords denote the same thing: 1 when equal; 0.8 when one contains the other
 * (CJK: at least two characters, e.g. "闭环" in "形成闭环"; Latin: at least four letters, e.g.
 * "plugin" in "plugins" or "memory" in "memory_store"); otherwise 0.
 */
export function termSimilarity(a: string, b: string): number {
  if (a === b) return 1
  const [short, long] = a.length <= b.length ? [a, b] : [b, a]
  if (!long.includes(short)) return 0
  const minimum = isCjk(short) ? 2 : 4
  return [...short].length >= minimum ? 0.8 : 0
}

/** Result of {@link coverage}. */
export interface Coverage {
  /** Weighted share of `from` found in `to` (0..1). */
  readonly value: number
  /** The words of `to` that matched, strongest first, without duplicates. */
  readonly matched: readonly string[]
}

/**
 * The weighted share of `from`'s keywords that `to` contains (by {@link termSimilarity}).
 * Each keyword weighs its score times `weight(word)` (default 1).
 */
export function coverage(from: readonly Keyword[], to: readonly Keyword[], weight: (word: string) => number = () => 1): Coverage {
  let total = 0
  let found = 0
  const matched = new Map<string, number>()
  for (const keyword of from) {
    const w = keyword.score * weight(keyword.word)
    if (!(w > 0)) continue
    total += w
    let best = 0
    let bestWord: string | undefined
    for (const other of to) {
      const similarity = termSimilarity(keyword.word, other.word)
      if (similarity > best) {
        best = similarity
        bestWord = other.word
      }
    }
    if (bestWord !== undefined) {
      found += w * best
      matched.set(bestWord, Math.max(matched.get(bestWord) ?? 0, w * best))
    }
  }
  const ordered = [...matched.entries()].sort((a, b) => b[1] - a[1]).map(([word]) => word)
  return { value: total > 0 ? Math.min(1, found / total) : 0, matched: ordered }
}

/**
 * Keyword overlap of a new message with the previous turn: the share of the new message's
 * keyword weight already present in the previous turn (0..1).
 */
export function topicOverlap(previous: readonly Keyword[], next: readonly Keyword[]): number {
  return coverage(next, previous).value
}

/**
 * Whether a new message switches topic. A session's first message (no previous turn) is a
 * switch; a message without keywords ("ok", "继续") continues the topic.
 */
export function isTopicSwitch(previous: readonly Keyword[] | undefined, next: readonly Keyword[], threshold: number): boolean {
  if (next.length === 0) return false
  if (!previous || previous.length === 0) return true
  return topicOverlap(previous, next) < threshold
}

/**
 * Inverse document frequency over a set of cues, `ln(1 + N / (1 + df))`: a word every cue
 * carries says little about which cue is meant.
 */
export function inverseDocumentFrequency(cues: readonly { readonly keywords: readonly Keyword[] }[]): (word: string) => number {
  const df = new Map<string, number>()
  for (const cue of cues) for (const word of new Set(cue.keywords.map((keyword) => keyword.word))) df.set(word, (df.get(word) ?? 0) + 1)
  const n = cues.length
  return (word) => Math.log(1 + n / (1 + (df.get(word) ?? 0)))
}

/** Result of {@link keywordMatch}. */
export interface KeywordMatch {
  /** 0..1 */
  readonly score: number
  /** Cue keywords the message hit. */
  readonly matched: readonly string[]
}

/**
 * TF-IDF weighted keyword match of a message against one cue: mostly how much of the message
 * the cue covers (70 %), partly how much of the cue the message covers (30 %), so a cue
 * whose main keywords the message names beats one that shares a side word.
 */
export function keywordMatch(query: readonly Keyword[], cueKeywords: readonly Keyword[], idf: (word: string) => number = () => 1): KeywordMatch {
  const forward = coverage(query, cueKeywords, idf)
  if (forward.matched.length === 0) return { score: 0, matched: [] }
  const backward = coverage(cueKeywords, query, idf)
  return { score: 0.7 * forward.value + 0.3 * backward.value, matched: forward.matched }
}

/** Cosine similarity in [-1, 1] (the store's, shared with recall); 0 for empty, zero or differently sized vectors. */
export { cosineSimilarity }

/**
 * How much an untouched cue still counts: `0.5 ^ (days since last touched / halfLifeDays)`,
 * 1 for a cue touched now (or in the future, clock skew) and always 1 when `halfLifeDays` is 0.
 */
export function decayFactor(lastTouchedAt: number, now: number, halfLifeDays: number): number {
  if (!(halfLifeDays > 0)) return 1
  const days = Math.max(0, now - lastTouchedAt) / DAY_MS
  return Math.pow(0.5, days / halfLifeDays)
}

/** A cue chosen to wake, with why. */
export interface RankedCue {
  readonly cue: Cue
  /** Final score: similarity × decay × hit bonus. */
  readonly score: number
  /** `'vector'` when cosine decided, `'keyword'` otherwise. */
  readonly via: 'keyword' | 'vector'
  /** Raw keyword score or cosine, before decay. */
  readonly similarity: number
  /** Cue keywords the message hit (may be empty for a purely semantic vector match). */
  readonly matched: readonly string[]
}

/** Input of {@link rankCues}. */
export interface RankInput {
  readonly query: readonly Keyword[]
  readonly cues: readonly Cue[]
  readonly now: number
  /** `keyword` ignores vectors; `vector` scores only cues with vectors; `auto` uses vectors where both sides have one. */
  readonly mode: 'keyword' | 'vector' | 'auto'
  readonly queryVector?: Float32Array | null
  /** The model of `queryVector`; cue vectors of other models are not comparable. */
  readonly vectorModel?: string | null
  readonly maxCues: number
  readonly minScore: number
  readonly minVectorScore: number
  readonly halfLifeDays: number
}

/**
 * Rank cues for a message and keep the best `maxCues` above their thresholds, at most one per
 * (session, level) and never two with the same detail, so one old conversation cannot fill
 * every slot. Scores from the two
 * methods are compared by how far they clear their own threshold.
 */
export function rankCues(input: RankInput): RankedCue[] {
  const idf = inverseDocumentFrequency(input.cues)
  const useVectors = input.mode !== 'keyword' && !!input.queryVector && !!input.vectorModel
  const candidates: { ranked: RankedCue; strength: number }[] = []
  for (const cue of input.cues) {
    const decay = decayFactor(cue.lastTouchedAt, input.now, input.halfLifeDays)
    const bonus = 1 + 0.05 * Math.log1p(cue.hitCount)
    const keyword = keywordMatch(input.query, cue.keywords, idf)
    const comparable = useVectors && cue.embedding !== null && cue.embeddingModel === input.vectorModel && cue.embedding.length === input.queryVector!.length
    let ranked: RankedCue
    let threshold: number
    if (comparable) {
      const similarity = cosineSimilarity(input.queryVector!, cue.embedding!)
      ranked = { cue, score: similarity * decay * bonus, via: 'vector', similarity, matched: keyword.matched }
      threshold = input.minVectorScore
    } else {
      // 'vector' mode with a query vector only trusts vectors; without one it falls back to keywords.
      if (input.mode === 'vector' && useVectors) continue
      if (keyword.matched.length === 0) continue
      ranked = { cue, score: keyword.score * decay * bonus, via: 'keyword', similarity: keyword.score, matched: keyword.matched }
      threshold = input.minScore
    }
    if (ranked.score < threshold || ranked.score <= 0) continue
    candidates.push({ ranked, strength: threshold < 1 ? (ranked.score - threshold) / (1 - threshold) : ranked.score })
  }
  candidates.sort((a, b) => b.strength - a.strength || b.ranked.cue.lastMentionedAt - a.ranked.cue.lastMentionedAt)
  const out: RankedCue[] = []
  const seen = new Set<string>()
  for (const { ranked } of candidates) {
    const key = `${ranked.cue.sessionId}\u0000${ranked.cue.level}`
    // A one-turn session's task cue says exactly what its conversation cue says: show it once.
    const content = `${ranked.cue.sessionId}\u0000${ranked.cue.detail}`
    if (seen.has(key) || seen.has(content)) continue
    seen.add(key)
    seen.add(content)
    out.push(ranked)
    if (out.length >= input.maxCues) break
  }
  return out
}

/**
 * Merge a turn's keywords into a task cue's aggregate: older weight fades (×0.85 per merged
 * turn) so the task follows where the session went, the top `max` are kept and the scores are
 * renormalised to sum to 1.
 */
export function mergeKeywords(previous: readonly Keyword[], turn: readonly Keyword[], max: number): Keyword[] {
  const merged = new Map<string, number>()
  for (const keyword of previous) merged.set(keyword.word, keyword.score * 0.85)
  for (const keyword of turn) merged.set(keyword.word, (merged.get(keyword.word) ?? 0) + keyword.score)
  const top = [...merged.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, max)
  const sum = top.reduce((total, [, score]) => total + score, 0)
  return top.map(([word, score]) => ({ word, score: sum > 0 ? Math.round((score / sum) * 10_000) / 10_000 : 0 }))
}
