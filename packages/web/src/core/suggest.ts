/**
 * "Did you mean" and prefix completions for a memory search, over a bounded vocabulary: the
 * terms of the memories that search can see (newest first, at most
 * {@link SUGGEST_LIMITS}.memories of them, the {@link SUGGEST_LIMITS}.terms terms found in the
 * most memories kept). Terms are the store's own {@link tokenize} output, so Chinese and Japanese
 * text gives the same ICU words and character bigrams the full-text index matches on.
 *
 * Near terms come from a scan of the vocabulary with a bounded Damerau (optimal string
 * alignment) distance; `dsh-memory bench suggest` measured it against MiniSearch's fuzzy search
 * over the same vocabulary and against a prefix scan (the CLI README has the figures and why the
 * scan stayed). Used by `dsh-memory search`, the memory panel's search box and the memory
 * browser's memories page.
 */
import { containsCjk, CJK_CLASS } from '@dsh-memory/store/kit'
import { normalizeTerm, tokenize, type MemoryScopeFilter, type MemoryStore } from '@dsh-memory/store'

/** The caps that keep a vocabulary small on any store (a 1M-message store included: messages are not read). */
export const SUGGEST_LIMITS = Object.freeze({
  /** Memories read, most recently updated first. */
  memories: 20_000,
  /** Terms kept: those found in the most memories. */
  terms: 5_000,
  /** Suggestions returned. */
  suggestions: 3,
})

/** Memories read per page while building a vocabulary. */
const PAGE = 1_000
/** Longest CJK window tried as one misspelt word. */
const MAX_CJK_WINDOW = 6

// A query's pieces: CJK runs, and words of anything else (identifier punctuation kept inside).
const PIECE = new RegExp(`[${CJK_CLASS}]+|[^\\s${CJK_CLASS}]+`, 'gu')

/** A query word as the tokenizer writes its terms (it NFKC-normalises the text before segmenting). */
function queryTerm(word: string): string {
  return normalizeTerm(word.normalize('NFKC'))
}

/**
 * Edits allowed between a misspelt term and a vocabulary term: one per CJK term of two or more
 * characters (each character carries meaning), for Latin terms none below four characters, one
 * up to five, two from six on (short words have too many neighbours to guess from).
 */
export function editBudget(term: string): number {
  const length = [...term].length
  if (containsCjk(term)) return length >= 2 ? 1 : 0
  return length < 4 ? 0 : length < 6 ? 1 : 2
}

/**
 * Optimal-string-alignment distance (insert, delete, substitute, swap two neighbours) between
 * two code-point arrays, or `max + 1` as soon as it must exceed `max`.
 */
export function boundedEditDistance(a: readonly string[], b: readonly string[], max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1
  // Three rows (two back for a swap), reused: this runs once per vocabulary term per lookup.
  let before = new Int32Array(b.length + 1)
  let previous = new Int32Array(b.length + 1)
  let current = new Int32Array(b.length + 1)
  for (let j = 0; j <= b.length; j++) previous[j] = j
  for (let i = 1; i <= a.length; i++) {
    current[0] = i
    let best = i
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let value = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) value = Math.min(value, before[j - 2]! + 1)
      current[j] = value
      if (value < best) best = value
    }
    if (best > max) return max + 1
    ;[before, previous, current] = [previous, current, before]
  }
  return previous[b.length]!
}

/** A bounded set of terms with the number of memories each occurs in. */
export class Vocabulary {
  /** Terms, most frequent first (ties by term). */
  readonly terms: readonly string[]
  readonly #frequency: ReadonlyMap<string, number>
  /** Terms in code-unit order, for prefix lookups by binary search. */
  readonly #sorted: readonly string[]
  /** Terms by code-point length, each bucket most frequent first, with their code points. */
  readonly #byLength: ReadonlyMap<number, readonly (readonly [string, readonly string[]])[]>

  private constructor(frequency: ReadonlyMap<string, number>) {
    this.#frequency = frequency
    this.terms = [...frequency.keys()]
    this.#sorted = [...this.terms].sort()
    const byLength = new Map<number, [string, string[]][]>()
    for (const term of this.terms) {
      const chars = [...term]
      const bucket = byLength.get(chars.length) ?? []
      bucket.push([term, chars])
      byLength.set(chars.length, bucket)
    }
    this.#byLength = byLength
  }

  /**
   * Count the terms of `texts` (once per text) and keep the `maxTerms` found in the most texts.
   * Memory grows with the distinct terms of the texts read, so callers cap the texts.
   */
  static fromTexts(texts: Iterable<string>, maxTerms: number = SUGGEST_LIMITS.terms): Vocabulary {
    const counter = new TermCounter()
    for (const text of texts) counter.add(text)
    return Vocabulary.fromCounts(counter.counts, maxTerms)
  }

  /** The `maxTerms` terms with the highest counts (ties by term, so the result is deterministic). */
  static fromCounts(counts: ReadonlyMap<string, number>, maxTerms: number = SUGGEST_LIMITS.terms): Vocabulary {
    const kept = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).slice(0, maxTerms)
    return new Vocabulary(new Map(kept))
  }

  get size(): number {
    return this.terms.length
  }

  has(term: string): boolean {
    return this.#frequency.has(term)
  }

  /** Memories holding `term` (0 when it is not in the vocabulary). */
  frequency(term: string): number {
    return this.#frequency.get(term) ?? 0
  }

  /**
   * Vocabulary terms within {@link editBudget} edits of `term` (itself excluded), closest first,
   * then those no shorter than `term` (a typed character is more often wrong than extra); for
   * CJK, longer ones before those of the same length (two-character CJK terms are mostly the
   * index's bigrams, not words: a word holding the typed characters is the better guess); then
   * the most frequent.
   */
  nearest(term: string, limit: number = SUGGEST_LIMITS.suggestions, budget: number = editBudget(term)): string[] {
    if (budget <= 0) return []
    const chars = [...term]
    const cjk = containsCjk(term)
    const found: { term: string; distance: number; shorter: number; longer: number; frequency: number }[] = []
    for (let length = Math.max(1, chars.length - budget); length <= chars.length + budget; length++) {
      for (const [candidate, candidateChars] of this.#byLength.get(length) ?? []) {
        if (candidate === term) continue
        const distance = boundedEditDistance(chars, candidateChars, budget)
        if (distance <= budget) found.push({ term: candidate, distance, shorter: Math.max(0, chars.length - length), longer: cjk ? Math.max(0, length - chars.length) : 0, frequency: this.frequency(candidate) })
      }
    }
    found.sort((a, b) => a.distance - b.distance || a.shorter - b.shorter || b.longer - a.longer || b.frequency - a.frequency || (a.term < b.term ? -1 : 1))
    return found.slice(0, limit).map((entry) => entry.term)
  }

  /** Terms that start with `prefix` (longer than it), most frequent first. */
  startingWith(prefix: string, limit: number = SUGGEST_LIMITS.suggestions): string[] {
    if (prefix === '') return []
    let low = 0
    let high = this.#sorted.length
    while (low < high) {
      const middle = (low + high) >>> 1
      if (this.#sorted[middle]! < prefix) low = middle + 1
      else high = middle
    }
    const found: string[] = []
    for (let i = low; i < this.#sorted.length && this.#sorted[i]!.startsWith(prefix); i++) if (this.#sorted[i] !== prefix) found.push(this.#sorted[i]!)
    return found.sort((a, b) => this.frequency(b) - this.frequency(a) || (a < b ? -1 : 1)).slice(0, limit)
  }
}

/** Counts, per term, the texts it occurs in. */
class TermCounter {
  readonly counts = new Map<string, number>()
  add(text: string): void {
    for (const term of new Set(tokenize(text))) this.counts.set(term, (this.counts.get(term) ?? 0) + 1)
  }
}

/**
 * The vocabulary of the memories a search with `filter` sees: the
 * {@link SUGGEST_LIMITS}.memories most recently updated, their {@link SUGGEST_LIMITS}.terms
 * most frequent terms. Reads a page of memories at a time and keeps only term counts.
 */
export async function loadVocabulary(store: Pick<MemoryStore, 'memories'>, filter: MemoryScopeFilter = {}, limits: { memories?: number; terms?: number } = {}): Promise<Vocabulary> {
  const maxMemories = limits.memories ?? SUGGEST_LIMITS.memories
  const counter = new TermCounter()
  for (let offset = 0; offset < maxMemories; offset += PAGE) {
    const page = await store.memories.list({ ...filter, orderBy: 'updated', limit: Math.min(PAGE, maxMemories - offset), offset })
    for (const memory of page) counter.add(memory.text)
    if (page.length < PAGE) break
  }
  return Vocabulary.fromCounts(counter.counts, limits.terms ?? SUGGEST_LIMITS.terms)
}

/** One replaceable part of a query: where it is and what could stand there instead. */
interface Fix {
  readonly start: number
  readonly end: number
  readonly alternatives: readonly string[]
}

// Chinese and Japanese particles: a CJK term ending in one is a bigram across a word boundary
// (服务的, 库是), not a word to complete to.
const PARTICLE_END = /[的了是在和与也就都而及着把被吗呢吧啊这那之のはがをにでとも]$/u

const bigramsOf = (chars: readonly string[]): string[] => chars.slice(0, -1).map((char, i) => char + chars[i + 1]!)

/**
 * Alternatives for a CJK run the index would not match whole: each window of two to
 * {@link MAX_CJK_WINDOW} characters that covers a bigram unknown to the vocabulary, replaced by a
 * near vocabulary term; the runs that leave the fewest unknown bigrams win, then the closest,
 * then those that drop no character (a typed character is more likely wrong than extra), then
 * the longest window, then the most frequent term.
 */
function fixCjkRun(run: string, vocabulary: Vocabulary, limit: number): string[] {
  const chars = [...run]
  if (chars.length < 2 || vocabulary.has(run)) return []
  const unknown = bigramsOf(chars).map((bigram) => !vocabulary.has(bigram))
  if (!unknown.includes(true)) return []
  const options: { text: string; unknownAfter: number; distance: number; dropped: number; window: number; frequency: number }[] = []
  for (let size = Math.min(MAX_CJK_WINDOW, chars.length); size >= 2; size--) {
    for (let start = 0; start + size <= chars.length; start++) {
      // The window must contain an unknown bigram (bigram i spans characters i and i + 1).
      if (!unknown.slice(start, start + size - 1).includes(true)) continue
      const window = chars.slice(start, start + size).join('')
      // A lone character is no word to suggest (and is near every two-character window).
      for (const term of vocabulary.nearest(window, limit + 2, 1).filter((candidate) => [...candidate].length >= 2).slice(0, limit)) {
        const fixed = [...chars.slice(0, start), ...term, ...chars.slice(start + size)]
        options.push({
          text: fixed.join(''),
          unknownAfter: bigramsOf(fixed).filter((bigram) => !vocabulary.has(bigram)).length,
          distance: boundedEditDistance([...window], [...term], 1),
          dropped: Math.max(0, size - [...term].length),
          window: size,
          frequency: vocabulary.frequency(term),
        })
      }
    }
  }
  options.sort((a, b) => a.unknownAfter - b.unknownAfter || a.distance - b.distance || a.dropped - b.dropped || b.window - a.window || b.frequency - a.frequency)
  // Only runs as well matched as the best: a fix that leaves an unknown bigram is a worse guess.
  const best = options[0]?.unknownAfter ?? 0
  return [...new Set(options.filter((option) => option.unknownAfter === best).map((option) => option.text))].slice(0, limit)
}

/** Alternatives for a non-CJK word whose terms are not all in the vocabulary. */
function fixWord(word: string, vocabulary: Vocabulary, limit: number): string[] {
  const terms = tokenize(word)
  if (terms.length === 0 || terms.every((term) => vocabulary.has(term))) return []
  return vocabulary.nearest(queryTerm(word), limit)
}

/**
 * "Did you mean": up to `limit` corrected forms of `query`, best first, each replacing the
 * words (Latin) and CJK runs the vocabulary does not know by near vocabulary terms. Empty when
 * every part is known or nothing near is found. Text between the corrected parts is kept.
 */
export function didYouMean(query: string, vocabulary: Vocabulary, limit: number = SUGGEST_LIMITS.suggestions): string[] {
  const text = query.normalize('NFKC')
  const fixes: Fix[] = []
  for (const match of text.matchAll(PIECE)) {
    const piece = match[0]
    const alternatives = containsCjk(piece) ? fixCjkRun(piece, vocabulary, limit) : fixWord(piece, vocabulary, limit)
    if (alternatives.length > 0) fixes.push({ start: match.index, end: match.index + piece.length, alternatives })
  }
  if (fixes.length === 0) return []
  const suggestions = new Set<string>()
  // The first suggestion takes every part's best alternative; the next ones its next ones.
  for (let rank = 0; rank < limit && suggestions.size < limit; rank++) {
    let out = ''
    let at = 0
    for (const fix of fixes) {
      out += text.slice(at, fix.start) + fix.alternatives[Math.min(rank, fix.alternatives.length - 1)]!
      at = fix.end
    }
    suggestions.add(out + text.slice(at))
  }
  return [...suggestions]
}

/**
 * Completions of what is being typed: `query` with its last word (a CJK run's longest tail that
 * starts a vocabulary term) completed to the most frequent vocabulary terms starting with it.
 */
export function completeQuery(query: string, vocabulary: Vocabulary, limit: number = SUGGEST_LIMITS.suggestions): string[] {
  const text = query.normalize('NFKC')
  const last = [...text.matchAll(PIECE)].at(-1)
  if (!last || last.index + last[0].length !== text.length) return []
  const head = text.slice(0, last.index)
  if (!containsCjk(last[0])) return vocabulary.startingWith(queryTerm(last[0]), limit).map((term) => head + term)
  const chars = [...last[0]]
  for (let from = Math.max(0, chars.length - MAX_CJK_WINDOW); from < chars.length; from++) {
    const tail = chars.slice(from).join('')
    const terms = vocabulary.startingWith(tail, limit + 5).filter((term) => !PARTICLE_END.test(term)).slice(0, limit)
    if (terms.length > 0) return terms.map((term) => head + chars.slice(0, from).join('') + term)
  }
  return []
}

/**
 * Vocabularies per filter for a process that answers many keystrokes (the memory panel): each
 * is rebuilt after `ttlMs`, so new memories show up within that time; at most `maxEntries`
 * filters are kept (the oldest goes first).
 */
export class VocabularyCache {
  readonly #entries = new Map<string, { at: number; vocabulary: Promise<Vocabulary> }>()

  constructor(
    private readonly store: Pick<MemoryStore, 'memories'>,
    private readonly options: { ttlMs?: number; maxEntries?: number; now?: () => number } = {},
  ) {}

  get(filter: MemoryScopeFilter): Promise<Vocabulary> {
    const key = JSON.stringify(filter)
    const now = (this.options.now ?? Date.now)()
    const cached = this.#entries.get(key)
    if (cached && now - cached.at < (this.options.ttlMs ?? 30_000)) return cached.vocabulary
    const vocabulary = loadVocabulary(this.store, filter)
    // A failed build (a closed store) is not kept.
    vocabulary.catch(() => {
      if (this.#entries.get(key)?.vocabulary === vocabulary) this.#entries.delete(key)
    })
    this.#entries.delete(key)
    this.#entries.set(key, { at: now, vocabulary })
    while (this.#entries.size > (this.options.maxEntries ?? 16)) this.#entries.delete(this.#entries.keys().next().value!)
    return vocabulary
  }
}
