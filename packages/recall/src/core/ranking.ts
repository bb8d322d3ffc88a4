/**
 * The ranking core shared by every recall path and by the LoCoMo benchmark: BM25 over the
 * recall analyzer, then context windows inside a conversation, question → reply pairing, a
 * group (session) prior, a session-document prior, an author prior and a temporal prior. (Pseudo-relevance feedback was
 * measured twice and did not help on held-out conversations, so it is not here; see
 * apps/cli/README.md.) Pure: no I/O,
 * no host import. Parameter presets are data, so the benchmark measures exactly what the
 * plugin runs.
 */
import { analyze, UNIGRAM_MARK } from './analyzer.ts'
import type { Bm25Parameters, RankingCorpus, WeightedQuery } from './corpus.ts'
import { queryPeriod } from './query-period.ts'

/** Context windows: a document borrows score from its neighbours in the same group. */
export interface ContextParameters {
  /** How many positions on each side count as context; 0 disables. */
  readonly span: number
  /** Share of the best neighbour's score added to the document's own. */
  readonly weight: number
  /** Multiplier per extra position of distance (neighbour at distance d counts falloff^(d-1)). */
  readonly falloff: number
}

/** Every knob of {@link rankDocuments}. */
export interface RankingParameters {
  readonly bm25: Bm25Parameters
  readonly context: ContextParameters
  /** Share of the best score in the same group added to every member (a session prior); 0 disables. */
  readonly groupWeight: number
  /** Score multiplier 1 + x for documents written by the one author the query names; 0 disables. */
  readonly authorBoost: number
  /** Score multiplier 1 + x for documents with a time expression when the query asks "when"; 0 disables. */
  readonly temporalBoost: number
  /**
   * Score multiplier 1 + x for documents whose `time` falls in the period the query names
   * ("on 9 November, 2022", "in June 2023", "2023年11月"), see {@link queryPeriod}; 0 (or absent) disables.
   */
  readonly dateBoost?: number
  /**
   * Score multiplier 1 + x × (the group's BM25 score / the best group's), where each group
   * (session) is ranked as one document made of its documents' terms (see
   * {@link groupDocumentScores}); 0 (or absent) disables. Unlike `groupWeight` (the best turn
   * of the session), this rewards a session whose turns together hold many query terms.
   */
  readonly sessionDocumentWeight?: number
  /**
   * Question → reply pairing: a document that answers a question adds x × that question's own
   * BM25 score, on top of its context window. It answers a question when the document right
   * before it in its group (in position order, as the context windows count neighbours; by
   * another author when both are known) ends with a question mark (see
   * {@link endsWithQuestion}): the question names the topic, the reply holds the answer ("How
   * often do you work out?" → "Three times a week"). 0 (or absent) disables.
   */
  readonly replyWeight?: number
}

/** BM25 of a group taken as one document: the usual parameters, as for any document. */
const GROUP_DOCUMENT_BM25: Bm25Parameters = Object.freeze({ k1: 1.2, b: 0.75 })

/**
 * Preset for conversation turns (L0): tuned on the LoCoMo dev split, where it lifts turn
 * recall_any@10 from 65.4 % (plain BM25) to the figure reported in apps/cli/README.md.
 */
export const TURN_RANKING: RankingParameters = Object.freeze({
  bm25: Object.freeze({ k1: 1.0, b: 0.6 }),
  context: Object.freeze({ span: 2, weight: 0.6, falloff: 0.5 }),
  groupWeight: 0.3,
  authorBoost: 1.0,
  temporalBoost: 0.2,
  // Chosen on the tune split (conv-26, conv-30) only; see apps/cli/README.md for the held-out figures.
  dateBoost: 1.0,
  // Chosen the same way (#20, continued): 0.75 and 1 tied best on tune (any@5 + any@10).
  sessionDocumentWeight: 1.0,
  // Chosen the same way (#20, round 5): the best any@5 + any@10 on tune, the smallest of the tied weights.
  replyWeight: 0.6,
})

/**
 * Preset for atomic memories (L1): plain BM25 with the usual parameters. Memories stand
 * alone: no context windows, groups, authors or temporal prior.
 */
export const MEMORY_RANKING: RankingParameters = Object.freeze({
  bm25: Object.freeze({ k1: 1.2, b: 0.75 }),
  context: Object.freeze({ span: 0, weight: 0, falloff: 0 }),
  groupWeight: 0,
  authorBoost: 0,
  temporalBoost: 0,
})

/** One ranked document. */
export interface RankedDocument {
  /** Index in the corpus. */
  readonly index: number
  readonly id: string
  /** Final score (comparable only within one query). */
  readonly score: number
  /**
   * Relevance on a fixed scale in [0, 1): `s / (s + u)` where `s` is the BM25
   * score and `u` the score of one match of a term that occurs in a single document (the
   * corpus's unit of evidence). One such distinctive match gives 0.5, two give about 0.67,
   * a match on a word most documents share stays near 0. Long queries do not dilute it.
   * This is what `scoreThreshold` compares (after decay).
   */
  readonly relevance: number
}

// Questions about time, in English, Chinese and Japanese.
const TIME_QUESTION = /^\s*when\b|\bhow long\b|\bwhat (?:year|month|date|day|time)\b|\bwhich (?:year|month|day)\b|什么时候|何时|哪一?年|几月|多久|いつ|何年|何月|何日|どのくらい/i
// Time expressions a document may carry.
const TIME_EXPRESSION =
  /\b(?:yesterday|today|tonight|tomorrow|last|next|ago|week|weekend|month|year|years|since|recently|monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|april|may|june|july|august|september|october|november|december|(?:19|20)\d\d)\b|昨天|今天|明天|去年|今年|明年|上周|下周|上个月|昨日|今日|明日|先週|来週|先月|来月|\d+月|\d+日/i

// A question mark ending a text, after closing quotes or brackets and before one trailing
// bracketed note (an attachment's caption: "Where was it? [shares an image: …]").
const ENDS_WITH_QUESTION = /[?？][\s"'”’»」』)）]*(?:\[[^\]]*\]\s*)?$/u

/** True when `text` ends with a question (see {@link RankingParameters.replyWeight}). */
export function endsWithQuestion(text: string): boolean {
  return ENDS_WITH_QUESTION.test(text)
}

/** True when the query asks about a time ("when …", "how long …", "いつ", "什么时候"). */
export function asksAboutTime(query: string): boolean {
  return TIME_QUESTION.test(query)
}

/**
 * Weight of a Han-unigram query term against a word or bigram: a shared character is weaker
 * evidence than a shared word (茶 in 红茶 and 乌龙茶), so unigrams rank what words miss without
 * lifting every memory that shares a character over the threshold.
 */
export const UNIGRAM_WEIGHT = 0.3

/** Turn analyzed terms into a weighted query (weight = frequency in the query; Han unigrams {@link UNIGRAM_WEIGHT}). */
export function weightTerms(terms: readonly string[]): Map<string, number> {
  const query = new Map<string, number>()
  for (const term of terms) query.set(term, (query.get(term) ?? 0) + (term.startsWith(UNIGRAM_MARK) ? UNIGRAM_WEIGHT : 1))
  return query
}

/**
 * Rank the corpus for `query`.
 * @param query - free text (a question, a user message).
 * @param options.authors - the authors the corpus knows (speaker names); a query naming
 *   exactly one of them boosts that author's documents.
 * @returns documents with a positive score, best first (ties keep corpus order).
 */
export function rankDocuments(
  corpus: RankingCorpus,
  query: string,
  parameters: RankingParameters,
  options: { authors?: readonly string[]; queryTerms?: readonly string[] } = {},
): RankedDocument[] {
  if (corpus.size === 0) return []
  const queryTerms = options.queryTerms ?? analyze(query)
  const weighted = weightTerms(queryTerms)
  if (weighted.size === 0) return []

  const authorTerms = new Map<string, string>()
  for (const author of options.authors ?? []) {
    for (const term of analyze(author)) authorTerms.set(term, author.toLowerCase())
  }
  const named = new Set<string>()
  for (const term of weighted.keys()) {
    const author = authorTerms.get(term)
    if (author) named.add(author)
  }

  const scores = corpus.bm25(weighted, parameters.bm25)
  const relevance = relevanceOf(corpus, scores)

  let final = scores
  if (parameters.context.span > 0 && parameters.context.weight > 0) {
    final = new Float64Array(scores.length)
    for (let index = 0; index < scores.length; index++) {
      let best = 0
      for (const { index: other, distance } of corpus.neighbours(index, parameters.context.span)) {
        best = Math.max(best, scores[other]! * parameters.context.falloff ** (distance - 1))
      }
      final[index] = scores[index]! + parameters.context.weight * best
    }
  }

  if ((parameters.replyWeight ?? 0) > 0) final = withReplies(corpus, scores, final, parameters.replyWeight!)

  if (parameters.groupWeight > 0) {
    const groupBest = new Map<string, number>()
    corpus.documents.forEach((document, index) => {
      if (document.group === undefined) return
      groupBest.set(document.group, Math.max(groupBest.get(document.group) ?? 0, final[index]!))
    })
    const withGroup = new Float64Array(final.length)
    corpus.documents.forEach((document, index) => {
      const best = document.group === undefined ? 0 : groupBest.get(document.group)!
      withGroup[index] = final[index]! + parameters.groupWeight * best
    })
    final = withGroup
  }

  const sessions = (parameters.sessionDocumentWeight ?? 0) > 0 ? groupDocumentScores(corpus, weighted) : undefined
  const author = named.size === 1 ? [...named][0]! : undefined
  const period = (parameters.dateBoost ?? 0) > 0 ? queryPeriod(query) : undefined
  const temporal = parameters.temporalBoost > 0 && asksAboutTime(query)
  const ranked: RankedDocument[] = []
  corpus.documents.forEach((document, index) => {
    let score = final[index]!
    if (score <= 0) return
    if (author !== undefined && parameters.authorBoost > 0 && document.author?.toLowerCase() === author) score *= 1 + parameters.authorBoost
    if (period && document.time !== undefined && document.time >= period.from && document.time < period.to) score *= 1 + parameters.dateBoost!
    if (temporal && TIME_EXPRESSION.test(document.text)) score *= 1 + parameters.temporalBoost
    if (sessions && document.group !== undefined) score *= 1 + parameters.sessionDocumentWeight! * (sessions.get(document.group) ?? 0)
    ranked.push({ index, id: document.id, score, relevance: relevance[index]! })
  })
  ranked.sort((a, b) => b.score - a.score || a.index - b.index)
  return ranked
}

/**
 * Question → reply pairing (see {@link RankingParameters.replyWeight}): `final` plus, for each
 * document that answers the question right before it, `weight` × that question's own score.
 */
function withReplies(corpus: RankingCorpus, scores: Float64Array, final: Float64Array, weight: number): Float64Array {
  const out = Float64Array.from(final)
  const asks = new Map<number, boolean>()
  // The group order of RankingCorpus: position, then corpus index.
  const before = (a: number, b: number) => ((corpus.documents[a]!.position ?? 0) - (corpus.documents[b]!.position ?? 0) || a - b) < 0
  corpus.documents.forEach((document, index) => {
    for (const { index: other } of corpus.neighbours(index, 1)) {
      const previous = corpus.documents[other]!
      if (!before(other, index) || !(scores[other]! > 0)) continue
      if (previous.author !== undefined && document.author !== undefined && previous.author.toLowerCase() === document.author.toLowerCase()) continue
      let question = asks.get(other)
      if (question === undefined) asks.set(other, (question = endsWithQuestion(previous.text)))
      if (question) out[index]! += weight * scores[other]!
    }
  })
  return out
}

/**
 * BM25 of every group of the corpus taken as one document (the terms of its documents in
 * the corpus, concatenated), divided by the best group's score: 1 for the best session, 0
 * for one that holds no query term. Sessions are the documents here, so idf counts sessions:
 * a term said in few sessions marks the one it was said in.
 */
export function groupDocumentScores(corpus: RankingCorpus, query: WeightedQuery): Map<string, number> {
  // The same BM25 as RankingCorpus.bm25 over one document per group, computed from the
  // documents' own term counts: only the query's terms are counted, so it costs a pass over
  // the documents, not a second analysed corpus.
  const terms = [...query].filter(([, weight]) => weight > 0)
  const groups = new Map<string, { length: number; frequencies: number[] }>()
  corpus.documents.forEach((document, index) => {
    if (document.group === undefined) return
    let group = groups.get(document.group)
    if (!group) groups.set(document.group, (group = { length: 0, frequencies: terms.map(() => 0) }))
    group.length += corpus.length(index)
    const frequencies = corpus.frequencies(index)
    terms.forEach(([term], slot) => (group.frequencies[slot]! += frequencies.get(term) ?? 0))
  })
  const size = groups.size
  let total = 0
  for (const group of groups.values()) total += group.length
  const average = size === 0 ? 1 : total / size || 1
  const idf = terms.map((_, slot) => {
    let documentFrequency = 0
    for (const group of groups.values()) if (group.frequencies[slot]! > 0) documentFrequency++
    return Math.log(1 + (size - documentFrequency + 0.5) / (documentFrequency + 0.5))
  })
  const { k1, b } = GROUP_DOCUMENT_BM25
  const scores = new Map<string, number>()
  let best = 0
  for (const [name, group] of groups) {
    const norm = k1 * (1 - b + (b * group.length) / average)
    let score = 0
    terms.forEach(([, weight], slot) => {
      const frequency = group.frequencies[slot]!
      if (frequency > 0) score += (weight * idf[slot]! * frequency * (k1 + 1)) / (frequency + norm)
    })
    scores.set(name, score)
    best = Math.max(best, score)
  }
  for (const [name, score] of scores) scores.set(name, best > 0 ? score / best : 0)
  return scores
}

/** See {@link RankedDocument.relevance}. */
function relevanceOf(corpus: RankingCorpus, scores: Float64Array): Float64Array {
  // The score one match of a term found in a single document earns (tf 1, average length):
  // the corpus's own unit of evidence, so the scale adapts to the corpus size.
  const unit = corpus.idfForFrequency(1)
  const out = new Float64Array(scores.length)
  for (let index = 0; index < scores.length; index++) {
    const score = scores[index]!
    if (score > 0) out[index] = score / (score + unit)
  }
  return out
}

/**
 * Time-decay weight of a memory: `max(0.5, 0.5^(days/halfLife))`, so a memory never loses
 * more than half its weight to age. `halfLifeDays <= 0` disables decay (weight 1).
 */
export function decayFactor(ageMs: number, halfLifeDays: number): number {
  if (!(halfLifeDays > 0)) return 1
  const days = Math.max(0, ageMs) / 86_400_000
  return Math.max(0.5, 0.5 ** (days / halfLifeDays))
}

/**
 * Reciprocal rank fusion of several rankings (best first): score(id) = Σ 1/(k + rank).
 * @returns ids with their fused score, best first.
 */
export function reciprocalRankFusion(rankings: readonly (readonly string[])[], k = 60): { id: string; score: number }[] {
  const fused = new Map<string, number>()
  for (const ranking of rankings) {
    ranking.forEach((id, rank) => fused.set(id, (fused.get(id) ?? 0) + 1 / (k + rank + 1)))
  }
  return [...fused].map(([id, score]) => ({ id, score })).sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
}
