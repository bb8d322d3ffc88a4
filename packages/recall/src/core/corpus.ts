/**
 * An in-memory BM25 corpus over analyzed documents. Built per query scope from rows read out
 * of the store (the store stays the source of truth); analysis results are memoised by the
 * caller so rebuilding the statistics is cheap.
 */
import { analyze } from './analyzer.ts'

/** One document to rank. Only `id` and `text` are required. */
export interface CorpusDocument {
  /** Stable id (a memory id, a message id, a LoCoMo dia_id). */
  readonly id: string
  readonly text: string
  /** Pre-analyzed terms of `text` (from a memo); computed with {@link analyze} when absent. */
  readonly terms?: readonly string[]
  /**
   * Documents of one group form a sequence (the messages of one conversation): neighbours in
   * the group lend each other context. Absent = the document stands alone.
   */
  readonly group?: string
  /** Order inside the group (message seq). */
  readonly position?: number
  /** Who wrote it (a speaker name), lower-cased when compared. */
  readonly author?: string
  /** Epoch ms the document refers to (creation or last update). */
  readonly time?: number
}

/** Options of {@link RankingCorpus.from}. */
export interface CorpusOptions {
  /**
   * Size of the collection the documents were drawn from, when they are a candidate set
   * (the store's full-text matches) rather than the whole collection. Used for idf, so the
   * candidates score as they would among all documents. Default: the number of documents.
   */
  readonly collectionSize?: number
  /**
   * Average document length (terms) of that collection, for BM25's length normalisation;
   * default: the average over `documents`. Needed when some documents are given without
   * terms (context-only neighbours of the candidates).
   */
  readonly averageLength?: number
}

/** BM25 saturation (`k1`) and length normalisation (`b`). */
export interface Bm25Parameters {
  readonly k1: number
  readonly b: number
}

/** Query terms with their weights (term frequency in the query). */
export type WeightedQuery = ReadonlyMap<string, number>

/**
 * A corpus with BM25 statistics. Immutable once built; `neighbours` lists, per document, the
 * indexes of documents of the same group ordered by distance.
 */
export class RankingCorpus {
  readonly documents: readonly CorpusDocument[]
  readonly #terms: (readonly string[])[]
  readonly #frequencies: Map<string, number>[]
  readonly #lengths: Float64Array
  readonly #documentFrequency = new Map<string, number>()
  readonly #averageLength: number
  readonly #groupOrder: Map<string, number[]>
  readonly #groupSlot: Int32Array

  readonly #collectionSize: number

  private constructor(documents: readonly CorpusDocument[], options: CorpusOptions) {
    this.documents = documents
    // A candidate set stands for a larger collection: idf must count that collection's
    // documents, or a term every candidate shares would weigh nothing.
    this.#collectionSize = Math.max(documents.length, options.collectionSize ?? 0)
    this.#terms = documents.map((document) => document.terms ?? analyze(document.text))
    this.#lengths = new Float64Array(documents.length)
    this.#frequencies = this.#terms.map((terms, index) => {
      const frequencies = new Map<string, number>()
      for (const term of terms) frequencies.set(term, (frequencies.get(term) ?? 0) + 1)
      for (const term of frequencies.keys()) this.#documentFrequency.set(term, (this.#documentFrequency.get(term) ?? 0) + 1)
      this.#lengths[index] = terms.length
      return frequencies
    })
    let total = 0
    for (const length of this.#lengths) total += length
    this.#averageLength = options.averageLength ?? (documents.length === 0 ? 0 : total / documents.length)
    // Sequence order inside each group, so context windows are positions, not ids.
    this.#groupOrder = new Map()
    this.#groupSlot = new Int32Array(documents.length).fill(-1)
    documents.forEach((document, index) => {
      if (document.group === undefined) return
      let order = this.#groupOrder.get(document.group)
      if (!order) this.#groupOrder.set(document.group, (order = []))
      order.push(index)
    })
    for (const order of this.#groupOrder.values()) {
      order.sort((a, b) => (documents[a]!.position ?? 0) - (documents[b]!.position ?? 0) || a - b)
      order.forEach((index, slot) => (this.#groupSlot[index] = slot))
    }
  }

  /** Build a corpus (analyzing documents that carry no `terms`). */
  static from(documents: readonly CorpusDocument[], options: CorpusOptions = {}): RankingCorpus {
    return new RankingCorpus(documents, options)
  }

  get size(): number {
    return this.documents.length
  }

  /** Analyzed terms of document `index`. */
  terms(index: number): readonly string[] {
    return this.#terms[index] ?? []
  }

  /** Term frequencies of document `index`. */
  frequencies(index: number): ReadonlyMap<string, number> {
    return this.#frequencies[index] ?? new Map()
  }

  /** Number of terms of document `index`. */
  length(index: number): number {
    return this.#lengths[index] ?? 0
  }

  /** BM25 inverse document frequency (the non-negative "plus one" variant). */
  idf(term: string): number {
    return this.idfForFrequency(this.#documentFrequency.get(term) ?? 0)
  }

  /** The idf of a term that occurs in `documentFrequency` documents of this corpus. */
  idfForFrequency(documentFrequency: number): number {
    return Math.log(1 + (this.#collectionSize - documentFrequency + 0.5) / (documentFrequency + 0.5))
  }

  /** How many documents contain `term`. */
  documentFrequency(term: string): number {
    return this.#documentFrequency.get(term) ?? 0
  }

  /** BM25 score of every document for `query` (0 where nothing matches). */
  bm25(query: WeightedQuery, parameters: Bm25Parameters): Float64Array {
    const scores = new Float64Array(this.documents.length)
    if (this.documents.length === 0 || query.size === 0) return scores
    const { k1, b } = parameters
    const average = this.#averageLength || 1
    const weights: [string, number, number][] = []
    for (const [term, weight] of query) {
      if (weight <= 0 || !this.#documentFrequency.has(term)) continue
      weights.push([term, weight, this.idf(term)])
    }
    if (weights.length === 0) return scores
    for (let index = 0; index < this.documents.length; index++) {
      const frequencies = this.#frequencies[index]!
      const norm = k1 * (1 - b + (b * this.#lengths[index]!) / average)
      let score = 0
      for (const [term, weight, idf] of weights) {
        const frequency = frequencies.get(term)
        if (!frequency) continue
        score += (weight * idf * frequency * (k1 + 1)) / (frequency + norm)
      }
      scores[index] = score
    }
    return scores
  }

  /**
   * Indexes of the documents within `span` positions of document `index` in its group,
   * with their distance. Empty for documents without a group.
   */
  neighbours(index: number, span: number): { index: number; distance: number }[] {
    const document = this.documents[index]
    if (!document || document.group === undefined || span <= 0) return []
    const order = this.#groupOrder.get(document.group)!
    const slot = this.#groupSlot[index]!
    const out: { index: number; distance: number }[] = []
    for (let distance = 1; distance <= span; distance++) {
      const before = order[slot - distance]
      const after = order[slot + distance]
      if (before !== undefined) out.push({ index: before, distance })
      if (after !== undefined) out.push({ index: after, distance })
    }
    return out
  }
}
