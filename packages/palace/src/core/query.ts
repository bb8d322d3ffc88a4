/**
 * Search semantics of `palace_search`.
 *
 * A query is space-separated keywords that must ALL occur in a turn; quotes (`"…"`, `“…”`,
 * `「…」`, `『…』`) make a phrase that must occur as written. Matching is CJK-aware through
 * the store's tokenizer, so Chinese and Japanese work without spaces:
 *
 * - a keyword occurs when every one of its terms (from `tokenize`) occurs among the turn's
 *   terms — a Latin term of 4+ characters also matches longer terms it begins (`deploy` →
 *   `deployment`), and a CJK word of 3+ characters matches when all its character bigrams
 *   occur (the segmenter may cut `数据库` differently in a short query than in a long text);
 *   a keyword with CJK characters also occurs when it is a substring of the turn, and a
 *   keyword without any term (punctuation, a stop word) occurs as a substring;
 * - a phrase occurs when its normalised text (whitespace collapsed) is a substring.
 *
 * These rules are chosen so that the store index can never miss a match: every matching
 * turn contains at least one "anchor" term of each keyword (see {@link Keyword.anchors}).
 *
 * Normalisation is NFKC + lower case, so full-width and half-width forms match each other.
 */
import { tokenize } from '@dsh-memory/store'
import { CJK_CLASS } from '@dsh-memory/store/kit'

/** One keyword or phrase of a query. */
export interface Keyword {
  /** As the user typed it (without quotes). */
  readonly raw: string
  readonly phrase: boolean
  /** Normalised form used for substring matching. */
  readonly norm: string
  /** Terms from the store's tokenizer. */
  readonly terms: readonly string[]
  /**
   * Terms that every matching text is guaranteed to contain (so an index lookup on them
   * cannot miss a match), or undefined when no such term exists (then the index cannot be
   * used as a filter and the archive is scanned).
   */
  readonly anchors: readonly string[] | undefined
}

/** A parsed query. */
export interface ParsedQuery {
  readonly text: string
  readonly keywords: readonly Keyword[]
}

const QUOTES: Record<string, string> = { '"': '"', '“': '”', '「': '」', '『': '』', '«': '»' }
const CJK_CHAR = new RegExp(`[${CJK_CLASS}]`, 'u')
const CJK_ONLY = /^[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\u30fc\u3006]+$/u
const WORD_CHAR = /[\p{L}\p{N}_]/u
const CJK_RUN = new RegExp(`${CJK_CHAR.source}+`, 'gu')
// Characters that continue a word for the tokenizer (a surrogate half counts, to be safe).
const WORD_LIKE = /[\p{L}\p{N}\p{M}\uD800-\uDFFF]/u

/** NFKC, lower case, whitespace collapsed. */
export function normalize(text: string): string {
  return text.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ')
}

/**
 * Split a query into keywords and phrases.
 * @returns undefined-free keywords; an empty list for a blank query.
 */
export function parseQuery(text: string): ParsedQuery {
  const keywords: Keyword[] = []
  let i = 0
  const chars = [...text]
  while (i < chars.length) {
    const ch = chars[i]!
    if (/\s/.test(ch)) {
      i++
      continue
    }
    const close = QUOTES[ch]
    if (close !== undefined) {
      const end = chars.indexOf(close, i + 1)
      const raw = chars.slice(i + 1, end === -1 ? chars.length : end).join('').trim()
      if (raw.length > 0) keywords.push(keyword(raw, true))
      i = end === -1 ? chars.length : end + 1
      continue
    }
    let j = i
    while (j < chars.length && !/\s/.test(chars[j]!) && QUOTES[chars[j]!] === undefined) j++
    keywords.push(keyword(chars.slice(i, j).join(''), false))
    i = j
  }
  // The same keyword twice adds nothing to an AND query.
  const seen = new Set<string>()
  return { text, keywords: keywords.filter((k) => (seen.has(`${k.phrase}:${k.norm}`) ? false : (seen.add(`${k.phrase}:${k.norm}`), true))) }
}

function keyword(raw: string, phrase: boolean): Keyword {
  const norm = normalize(raw).trim()
  const terms = tokenize(raw)
  return { raw, phrase, norm, terms, anchors: phrase ? phraseAnchors(raw) : keywordAnchors(norm, terms) }
}

function keywordAnchors(norm: string, terms: readonly string[]): string[] | undefined {
  const runs = norm.match(CJK_RUN) ?? []
  if (runs.length === 0) return terms.length > 0 ? [...new Set(terms)] : undefined
  // A CJK keyword may match as a substring, cut anywhere at its edges: only its inner
  // character bigrams are sure to be terms of a matching text.
  const anchors = [...new Set(runs.filter((run) => [...run].length >= 2).flatMap(bigrams))]
  return anchors.length > 0 ? anchors : undefined
}

function phraseAnchors(raw: string): string[] | undefined {
  // Only terms strictly inside the phrase are guaranteed: the first and last word may be
  // cut mid-word in the text ("eploy th" inside "deploy the").
  const text = raw.normalize('NFKC').trim()
  const chars = [...text]
  let start = 0
  let end = chars.length
  if (chars.length > 0 && WORD_CHAR.test(chars[0]!) && !CJK_CHAR.test(chars[0]!)) while (start < end && WORD_CHAR.test(chars[start]!) && !CJK_CHAR.test(chars[start]!)) start++
  if (end > start && WORD_CHAR.test(chars[end - 1]!) && !CJK_CHAR.test(chars[end - 1]!)) while (end > start && WORD_CHAR.test(chars[end - 1]!) && !CJK_CHAR.test(chars[end - 1]!)) end--
  const inner = chars.slice(start, end).join('')
  const anchors = new Set<string>()
  // CJK bigrams inside the phrase are always bigrams of the text too.
  for (const run of inner.match(new RegExp(`${CJK_CHAR.source}+`, 'gu')) ?? []) {
    if ([...run].length >= 2) for (const bigram of bigrams(run)) anchors.add(bigram)
  }
  for (const term of tokenize(inner.replace(new RegExp(CJK_CHAR.source, 'gu'), ' '))) anchors.add(term)
  return anchors.size > 0 ? [...anchors] : undefined
}

function bigrams(run: string): string[] {
  const chars = [...run.toLowerCase()]
  const out: string[] = []
  for (let i = 0; i + 1 < chars.length; i++) out.push(chars[i]! + chars[i + 1]!)
  return out
}

/** A text prepared for matching: normalised once, tokenised lazily. */
export class MatchText {
  readonly norm: string
  private terms: Set<string> | undefined
  private sortedAscii: string[] | undefined

  constructor(readonly text: string) {
    this.norm = normalize(text)
  }

  /** Terms of the text (computed on first use). */
  termSet(): Set<string> {
    this.terms ??= new Set(tokenize(this.text))
    return this.terms
  }

  private hasPrefix(prefix: string): boolean {
    this.sortedAscii ??= [...this.termSet()].filter((term) => /^[a-z0-9]/.test(term)).sort()
    const list = this.sortedAscii
    let lo = 0
    let hi = list.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (list[mid]! < prefix) lo = mid + 1
      else hi = mid
    }
    return lo < list.length && list[lo]!.startsWith(prefix)
  }

  private hasTerm(term: string): boolean {
    // Every term of a text is a substring of its normalised form, so a substring probe
    // rejects most texts, and accepts most of the rest, before the slower tokenizer runs.
    const cjk = CJK_ONLY.test(term)
    const length = [...term].length
    if (cjk && length >= 2) {
      // Bigrams are emitted over every CJK run: a CJK substring is always a term.
      return (length === 2 ? [term] : bigrams(term)).every((bigram) => this.norm.includes(bigram))
    }
    if (!this.norm.includes(term)) return false
    if (!cjk && this.startsTermAt(term)) return true
    const set = this.termSet()
    if (set.has(term)) return true
    if (/^[a-z0-9]/.test(term) && term.length >= 4) return this.hasPrefix(term)
    return false
  }

  /**
   * True when `term` occurs where the tokenizer must start a term: after a character that is
   * not a letter, mark or digit, and (for terms under 4 characters, which match exactly)
   * followed by one too. Only ever answers yes when the tokenizer would.
   */
  private startsTermAt(term: string): boolean {
    for (let at = this.norm.indexOf(term); at !== -1; at = this.norm.indexOf(term, at + 1)) {
      const before = at === 0 ? '' : this.norm[at - 1]!
      const after = this.norm[at + term.length] ?? ''
      if (before !== '' && WORD_LIKE.test(before)) continue
      if (term.length < 4 && after !== '' && WORD_LIKE.test(after)) continue
      return true
    }
    return false
  }

  /** Whether the keyword occurs in this text (the rules are in the module comment). */
  has(keyword: Keyword): boolean {
    if (keyword.phrase || keyword.terms.length === 0) return keyword.norm.length > 0 && this.norm.includes(keyword.norm)
    // The substring route is the cheap one: try it first.
    if (CJK_CHAR.test(keyword.norm) && this.norm.includes(keyword.norm)) return true
    return keyword.terms.every((term) => this.hasTerm(term))
  }
}

/**
 * A window of about `width` characters of `text` around `at` (an index into the normalised
 * text, which has about the same positions), with ellipses where it was cut.
 */
export function snippet(text: string, at: number, width = 220): string {
  const flat = text.replace(/\s+/g, ' ').trim()
  const chars = [...flat]
  if (chars.length <= width) return flat
  const center = Math.max(0, Math.min(at, chars.length - 1))
  let start = Math.max(0, center - Math.floor(width / 3))
  const end = Math.min(chars.length, start + width)
  start = Math.max(0, end - width)
  return `${start > 0 ? '…' : ''}${chars.slice(start, end).join('')}${end < chars.length ? '…' : ''}`
}
