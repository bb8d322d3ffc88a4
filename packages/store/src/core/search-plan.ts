/**
 * The backend-neutral half of full-text search: what a term looks like in an index, which
 * query terms are looked up and how (exact, prefix, typo variants), the index manifest, and
 * the checks of the search options. SQLite (FTS5, `search-index.ts`) and PostgreSQL
 * (`tsvector`, `pg-search.ts`) index the same terms and plan queries with these functions, so a
 * query means the same thing on both; each backend only counts documents and renders the plan
 * as its own match expression.
 *
 * A query is the OR of its terms (ASCII terms of 4+ characters and lone CJK characters also as
 * prefixes unless a very common query term, or in a large index a very common indexed term,
 * starts with them, ASCII terms of 6+ characters
 * also with typos). Very common terms are dropped while rarer ones exist, and the ranked set is
 * capped to the newest matches, so a search costs about the same on 10 thousand rows as on a
 * million.
 */
import { MemoryStoreError } from './errors.ts'
import { asArray } from './scope-filter.ts'
import { searchTokenize, TOKENIZER_VERSION } from './tokenizer.ts'
import type { MessageRole } from './types-common.ts'
import type { MemoryScopeFilter } from './types-memories.ts'
import type { MemorySearchOptions, MessageSearchOptions } from './types-search.ts'
import { messageFilterOf } from './record-values.ts'
import { pageSize, requireScope, requireTime } from './validate.ts'

// Terms both indexes keep whole: no ASCII character other than a-z and 0-9 (FTS5's ascii
// tokenizer would split on one; PostgreSQL would need quoting).
const PLAIN_TERM = /^[a-z0-9\u0080-\u{10ffff}]+$/u

/**
 * The index form of one tokenizer term (exported for tests): a term holding an ASCII
 * character other than a-z and 0-9 (`foo_bar`, `user.name`, `it's`) is stored hex-encoded
 * behind `_`, so every term reaches the index unchanged and no plain term can collide with an
 * encoded one.
 */
export function encodeTerm(term: string): string {
  return PLAIN_TERM.test(term) ? term : `_${Buffer.from(term, 'utf8').toString('hex')}`
}

/** What an index was built with; a different one means a rebuild. */
export interface IndexManifest {
  /** Version of how terms are written into this backend's index (encoding, columns). */
  format: number
  tokenizer: string
  /** ICU's dictionaries decide CJK word boundaries, so a Node upgrade can change tokens. */
  icu: string
}

/** The recorded state: the manifest plus the backfill cursors (`null` = done). */
export interface IndexState extends IndexManifest {
  /** Last message id backfilled, `''` before the first, `null` once every message is indexed. */
  messagesAfter: string | null
  memoriesAfter: string | null
}

/** The manifest of this code for a backend whose index format is `format`. */
export function currentManifest(format: number): IndexManifest {
  return { format, tokenizer: TOKENIZER_VERSION, icu: process.versions.icu ?? 'none' }
}

/** Parse the recorded state; `undefined` when absent or unreadable. */
export function parseIndexState(value: string | undefined): IndexState | undefined {
  if (value === undefined) return undefined
  try {
    const parsed = JSON.parse(value) as Partial<IndexState>
    if (typeof parsed.format !== 'number' || typeof parsed.tokenizer !== 'string' || typeof parsed.icu !== 'string') return undefined
    const cursor = (v: unknown) => (typeof v === 'string' ? v : null)
    return { format: parsed.format, tokenizer: parsed.tokenizer, icu: parsed.icu, messagesAfter: cursor(parsed.messagesAfter), memoriesAfter: cursor(parsed.memoriesAfter) }
  } catch {
    return undefined
  }
}

/** True when `state` was built with `manifest`. */
export function sameManifest(state: IndexManifest, manifest: IndexManifest): boolean {
  return state.format === manifest.format && state.tokenizer === manifest.tokenizer && state.icu === manifest.icu
}

/** True when `state` is current and no backfill is pending. */
export function indexBuilt(state: IndexState | undefined, manifest: IndexManifest): boolean {
  return state !== undefined && sameManifest(state, manifest) && state.messagesAfter === null && state.memoriesAfter === null
}

// Prefix matching for Latin-ish terms of four or more characters, and for a lone CJK
// character (a one-character query such as 猫 has no bigram of its own, so it matches as the
// prefix of the bigrams and words that start with it).
const isAsciiTerm = (term: string): boolean => /^[a-z0-9]/.test(term)
const isLoneCjk = (term: string): boolean => term.length === 1 && /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u.test(term)
const isPrefixTerm = (term: string): boolean => (isAsciiTerm(term) && term.length >= 4) || isLoneCjk(term)

/**
 * From this many documents on, an ASCII prefix that a very common indexed term starts with is
 * not expanded ({@link CountedTerm.prefixCommon}; recall's stem "cach" of "caching" next to a
 * very common "caches"): merging that term's document list costs what dropping very common
 * terms saves, and its matches would fill the newest-matches cap. Smaller indexes expand every
 * prefix as before (cheap there, and LoCoMo-sized conversations never reach it).
 */
export const PREFIX_CHECK_MIN_DOCS = 100_000

/** True when a backend should tell {@link planQuery} whether a very common indexed term starts with `term`. */
export function needsPrefixCheck(term: CountedTerm, common: number, total: number): boolean {
  return total >= PREFIX_CHECK_MIN_DOCS && /^[a-z0-9]{4,}$/.test(term.term) && term.docs <= common
}

/** The exclusive upper bound of the index terms that start with `prefix`. */
export function prefixUpperBound(prefix: string): string {
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1)
}

/** A term is "very common" above this share of the documents (and {@link COMMON_MIN_DOCS}). */
export const COMMON_SHARE = 0.005
export const COMMON_MIN_DOCS = 500
/** Matches ranked per query at most: the newest ones when a query matches more. */
export const RANK_CAP = 1_000
/** Typo tolerance for ASCII terms of six or more characters: edit distance ≤ 15 % of the length. */
const FUZZY_MIN_LENGTH = 6
const FUZZY_SHARE = 0.15
/**
 * Vocabulary entries (sharing the term's first three characters) compared per fuzzy term.
 * Reading an entry's document count is the costly part on both backends, so this stays small.
 */
export const FUZZY_VOCAB_SCAN = 64

/** Documents holding more than this many matches of a term make it "very common" among `total` documents. */
export function commonThreshold(total: number): number {
  return Math.ceil(Math.max(COMMON_MIN_DOCS, total * COMMON_SHARE))
}

/** The distinct search terms of a query, with their index form. */
export function queryTerms(query: string): { term: string; encoded: string }[] {
  return [...new Set(searchTokenize(query))].map((term) => ({ term, encoded: encodeTerm(term) }))
}

/** A query term and how many documents hold it exactly (counted up to just past "very common"). */
export interface CountedTerm {
  term: string
  encoded: string
  docs: number
  /** A very common indexed term (other than itself) starts with it: not expanded as a prefix (see {@link needsPrefixCheck}). */
  prefixCommon?: boolean
}

/** An indexed term and its document count, from the backend's vocabulary. */
export interface VocabularyEntry {
  term: string
  docs: number
}

/** One alternative of a planned query: an index term, matched exactly or as a prefix. */
export interface QueryForm {
  term: string
  prefix: boolean
  /** The documents holding it as counted while planning (prefix matches not counted). */
  docs: number
}

/** A planned query: the OR of `forms` (none: nothing can match). */
export interface QueryPlan {
  forms: QueryForm[]
  /** Terms kept and dropped (for tests and diagnostics). */
  kept: string[]
  dropped: string[]
}

/**
 * A term no document has may be a typo worth looking up in the vocabulary. Not when the query
 * itself holds the word it varies: another term is a prefix of it ("databas" for "database":
 * recall adds stems), or an indexed query term differs from it only from its last letter on
 * ("gateway" for the stem "gatewai"). The vocabulary scan is the costliest step of planning.
 */
function wantsVariants(entry: CountedTerm, counted: readonly CountedTerm[]): boolean {
  if (entry.docs !== 0 || entry.term.length < FUZZY_MIN_LENGTH || !/^[a-z0-9]+$/.test(entry.term)) return false
  return !counted.some(
    (other) => other.term !== entry.term && ((isPrefixTerm(other.term) && entry.term.startsWith(other.term)) || (other.docs > 0 && other.term.startsWith(entry.term.slice(0, -1)))),
  )
}

/** The vocabulary heads (first three characters) {@link planQuery} needs the neighbours of. */
export function vocabularyHeads(counted: readonly CountedTerm[]): string[] {
  return [...new Set(counted.filter((entry) => wantsVariants(entry, counted)).map((entry) => entry.term.slice(0, 3)))]
}

/** The exclusive upper bound of the vocabulary range of a head. */
export function headUpperBound(head: string): string {
  return head.slice(0, 2) + String.fromCharCode(head.charCodeAt(2) + 1)
}

/**
 * Plan a query from its counted terms: drop very common terms while rarer ones exist and terms
 * no document has, add typo variants from `vocabulary` (up to {@link FUZZY_VOCAB_SCAN}
 * entries per head of {@link vocabularyHeads}, as the backend read them).
 */
export function planQuery(counted: readonly CountedTerm[], common: number, vocabulary: ReadonlyMap<string, readonly VocabularyEntry[]>): QueryPlan {
  if (counted.length === 0) return { forms: [], kept: [], dropped: [] }
  const entries = counted.map((entry) => {
    const { term, encoded, docs } = entry
    const variants = wantsVariants(entry, counted) ? fuzzyVariants(term, vocabulary.get(term.slice(0, 3)) ?? []) : []
    // Prefix expansion only for terms that are not very common themselves, nor start a very
    // common query term ("kubernet*" is as common as "kubernetes", 猫* as 猫カフェ; the longer
    // term stands for it) or, in a large index, a very common indexed term: the index merges the
    // document lists of every term with the prefix, which is what makes common ones slow.
    const prefix = isPrefixTerm(term) && docs <= common && entry.prefixCommon !== true && !counted.some((other) => other.term !== term && other.term.startsWith(term) && other.docs > common)
    const forms: QueryForm[] = [{ term: encoded, prefix, docs }, ...variants.map((variant) => ({ term: variant.term, prefix: false, docs: variant.docs }))]
    return { term, docs: docs + variants.reduce((sum, variant) => sum + variant.docs, 0), forms, prefix }
  })
  // A prefix term with no exact match may still match longer terms (猫 in 猫カフェ, deploy in deployment).
  const present = entries.filter((entry) => entry.docs > 0 || entry.prefix)
  const rare = present.filter((entry) => entry.docs <= common)
  // No rare term that surely matches (only prefixes without an exact match, which may match
  // nothing): keep the rarest common term too; the newest-matches cap bounds the work.
  const chosen = rare.some((entry) => entry.docs > 0)
    ? rare
    : [...rare, ...present.filter((entry) => entry.docs > common).sort((a, b) => a.docs - b.docs).slice(0, 1)]
  // A term another kept prefix term already covers ("database" under "databas*") adds only
  // another pass over the same document lists.
  const kept = chosen.filter((entry) => !chosen.some((other) => other !== entry && other.prefix && entry.term !== other.term && entry.term.startsWith(other.term)))
  const keptTerms = new Set(kept.map((entry) => entry.term))
  return {
    forms: kept.flatMap((entry) => entry.forms),
    kept: [...keptTerms],
    dropped: counted.map((entry) => entry.term).filter((term) => !keptTerms.has(term)),
  }
}

/** Indexed terms within the typo distance of a long ASCII term (not the term itself). */
function fuzzyVariants(term: string, rows: readonly VocabularyEntry[]): VocabularyEntry[] {
  return rows.filter((row) => row.docs > 0 && isTypoOf(term, row.term))
}

/** True when `candidate` is another term within the typo distance of the query term `term`. */
export function isTypoOf(term: string, candidate: string): boolean {
  const distance = Math.round(term.length * FUZZY_SHARE)
  return candidate !== term && Math.abs(candidate.length - term.length) <= distance && withinDistance(term, candidate, distance)
}

/** True when the Levenshtein distance of `a` and `b` is at most `max`. */
export function withinDistance(a: string, b: string, max: number): boolean {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    let best = i
    for (let j = 1; j <= b.length; j++) {
      const value = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
      current.push(value)
      best = Math.min(best, value)
    }
    if (best > max) return false
    previous = current
  }
  return previous[b.length]! <= max
}

const DEFAULT_HITS = 20
const MAX_HITS = 1_000

/** The query argument of a search: a string, else `invalid-argument`. */
export function queryText(value: unknown): string {
  if (typeof value !== 'string') throw new MemoryStoreError('invalid-argument', 'query must be a string')
  return value
}

/** The checked options of a memory search. */
export function memorySearchOptions(options: MemorySearchOptions): { limit: number; filter: MemoryScopeFilter } {
  const limit = pageSize(options.limit, DEFAULT_HITS, MAX_HITS)
  const filter: MemoryScopeFilter = { ...options }
  if (filter.scope !== undefined) asArray(filter.scope).forEach((scope) => requireScope(scope))
  if (filter.since !== undefined) requireTime(filter.since, 'since')
  if (filter.until !== undefined) requireTime(filter.until, 'until')
  return { limit, filter }
}

/** The checked options of a message search. */
export interface MessageSearchFilter {
  limit: number
  workspace: string | undefined
  conversationId: string | undefined
  role: MessageRole | undefined
  since: number | undefined
  until: number | undefined
}

/** Check the options of a message search (the filter as message reads check it). */
export function messageSearchOptions(options: MessageSearchOptions): MessageSearchFilter {
  const { workspace, conversationId, role, since, until } = messageFilterOf(options)
  return { limit: pageSize(options.limit, DEFAULT_HITS, MAX_HITS), workspace: workspace === undefined ? undefined : String(workspace), conversationId, role, since, until }
}

/** Map ranked ids to loaded rows in rank order, skipping ids whose row is gone. */
export function inRankOrder<Row extends { id: string }, R>(hits: readonly { id: string; score: number }[], rows: readonly Row[], map: (row: Row, score: number) => R): R[] {
  const byId = new Map(rows.map((row) => [row.id, row]))
  return hits.flatMap((hit) => {
    const row = byId.get(hit.id)
    return row ? [map(row, hit.score)] : []
  })
}
