/**
 * The search tokenizer, shared by the index and by other packages (cue-bank keyword
 * extraction), so a term means the same thing everywhere.
 *
 * Pipeline: NFKC → ICU word segmentation (`Intl.Segmenter`, which uses ICU's CJK
 * dictionaries for Chinese and Japanese) → per word: sub-words of identifiers
 * (`snake_case`, `camelCase`, `a.b`) → lower-case → English stop words dropped; plus
 * overlapping character bigrams over every CJK run, because the segmenter often cuts a
 * compound differently in a short query than in a long document ("数据库" vs "数据|库").
 * The choice is measured in `bench/tokenizer.ts` (see the README). Redaction markers
 * (`[REDACTED:api-key]`) produce no terms: the store writes them in place of secrets, and
 * their words would make a question about "our API" find every redacted key.
 */
import { Converter } from 'opencc-js/t2cn'
import { CJK_CLASS, containsCjk } from '../kit/text.ts'
import { withoutRedactionMarkers } from './redact.ts'

/**
 * Changes whenever the tokens produced for some input change ({@link tokenize}, or the
 * script-folded {@link searchTokenize} the full-text index holds). Persisted indexes record it
 * and are rebuilt when it differs. The ICU version is recorded separately (it changes
 * segmentation of CJK text too).
 */
export const TOKENIZER_VERSION = 'icu-words+cjk-bigrams+no-redaction-markers+search-t2s/3'

/** Which token sources to emit; the default tokenizer emits both. Used by the benchmark. */
export interface TokenizerVariant {
  /** ICU dictionary words (CJK words included). */
  words: boolean
  /** Overlapping CJK character bigrams (a lone CJK character is emitted as itself). */
  bigrams: boolean
}

const DEFAULT_VARIANT: TokenizerVariant = { words: true, bigrams: true }

// 'und' rather than the machine's locale: tokens must not depend on where the process runs.
const SEGMENTER = new Intl.Segmenter('und', { granularity: 'word' })

// Han/Kana/Hangul plus the kana length mark and 〆, which Unicode files under "Common"
// although they only occur inside Japanese words.
const CJK_RUN = new RegExp(`[${CJK_CLASS}]+`, 'gu')

// Separators ICU keeps inside one word (MidLetter/MidNum/ExtendNumLet) that in code and
// paths separate meaningful parts: foo_bar, user.name, it's, key:value.
const SUBWORD_SEPARATORS = /[_.:'’‘·@-]+/
// camelCase and ACRONYMWord boundaries.
const CAMEL_BOUNDARY = /(?<=[\p{Ll}\d])(?=\p{Lu})|(?<=\p{Lu})(?=\p{Lu}\p{Ll})/u

/**
 * English function words that carry no topic. Negations ("not", "no", "never") are
 * deliberately absent: they flip the meaning of preferences. Single letters are dropped
 * by length anyway.
 */
export const ENGLISH_STOP_WORDS: ReadonlySet<string> = new Set([
  'a', 'about', 'above', 'after', 'again', 'all', 'also', 'am', 'an', 'and', 'any', 'are', 'as', 'at',
  'be', 'because', 'been', 'before', 'being', 'below', 'between', 'both', 'but', 'by',
  'can', 'could', 'did', 'do', 'does', 'doing', 'down', 'during', 'each', 'few', 'for', 'from', 'further',
  'had', 'has', 'have', 'having', 'he', 'her', 'here', 'hers', 'herself', 'him', 'himself', 'his', 'how',
  'if', 'in', 'into', 'is', 'it', 'its', 'itself', 'just', 'me', 'more', 'most', 'my', 'myself',
  'of', 'off', 'on', 'once', 'only', 'or', 'other', 'our', 'ours', 'ourselves', 'out', 'over', 'own',
  'same', 'she', 'should', 'so', 'some', 'such', 'than', 'that', 'the', 'their', 'theirs', 'them',
  'themselves', 'then', 'there', 'these', 'they', 'this', 'those', 'through', 'to', 'too', 'under',
  'until', 'up', 'very', 'was', 'we', 'were', 'what', 'when', 'where', 'which', 'while', 'who', 'whom',
  'why', 'will', 'with', 'would', 'you', 'your', 'yours', 'yourself', 'yourselves',
])

/**
 * CJK grammar words, not topic: Chinese particles and Japanese particles/copula pieces
 * (single characters plus から and まで). Only dropped when the segmenter returns them as a
 * word of their own; inside bigrams they stay, so phrases still match.
 */
const CJK_STOP_CHARACTERS: ReadonlySet<string> = new Set([
  '的', '了', '是', '在', '和', '与', '也', '就', '都', '而', '及', '着', '把', '被', '吗', '呢', '吧', '啊', '这', '那', '之',
  'の', 'は', 'が', 'を', 'に', 'で', 'と', 'も', 'へ', 'や', 'か', 'な', 'だ', 'て', 'た', 'し', 'ね', 'よ', 'から', 'まで',
])

/**
 * Split `text` into normalised search terms.
 *
 * Contract: deterministic (same input, same output, on any machine with the same ICU);
 * every term is non-empty, NFKC-normalised and lower-cased; every ASCII word of two or more
 * characters that is not an English stop word nor inside a redaction marker appears (whole and, for identifiers, by
 * parts); duplicates are kept because term frequency matters to ranking.
 */
export function tokenize(text: string): string[] {
  return tokenizeWith(text, DEFAULT_VARIANT)
}

/**
 * {@link tokenize} with a chosen mix of token sources; exists for the benchmark that
 * justifies the default. Not part of the stable API.
 */
export function tokenizeWith(text: string, variant: TokenizerVariant): string[] {
  if (typeof text !== 'string' || text.length === 0) return []
  // Markers are matched before NFKC, exactly as the store writes them (ASCII).
  const normalized = withoutRedactionMarkers(text).normalize('NFKC')
  const tokens: string[] = []

  for (const { segment, isWordLike } of SEGMENTER.segment(normalized)) {
    if (!isWordLike) continue
    if (containsCjk(segment)) {
      // CJK words: the segmenter's dictionary word. Lone characters only when topical.
      if (!variant.words) continue
      const word = normalizeTerm(segment)
      if (CJK_STOP_CHARACTERS.has(word)) continue
      tokens.push(word)
      continue
    }
    pushWord(segment, tokens)
  }

  if (variant.bigrams) {
    for (const [run] of normalized.matchAll(CJK_RUN)) {
      const chars = [...run]
      if (chars.length === 1) {
        // A lone character has no bigram; the word pass already emitted it when enabled.
        if (!variant.words && !CJK_STOP_CHARACTERS.has(chars[0]!)) tokens.push(normalizeTerm(chars[0]!))
        continue
      }
      for (let i = 0; i + 1 < chars.length; i++) tokens.push(normalizeTerm(chars[i]! + chars[i + 1]!))
    }
  }
  return tokens
}

/**
 * {@link tokenize} after folding traditional Chinese to simplified ({@link foldScript}): what
 * the store's full-text index holds and what its queries and recall's analyzer look for, so
 * 醫生 finds 医生 and 電腦 finds 电脑. `tokenize` itself stays unfolded: keyword extraction shows
 * its terms to people, in the script they wrote.
 */
export function searchTokenize(text: string): string[] {
  return tokenize(foldScript(text))
}

// OpenCC's traditional (Taiwan standard) to simplified conversion of characters and variant
// forms (醫 → 医, 軟體 → 软体), from `opencc-js/t2cn` (its dictionaries ship in the package,
// ~110 KB). Not OpenCC's phrase mode (軟體 → 软件): its table rewrites simplified text too
// (mainland 程序 "program" → 进程, as Taiwan's 程序 means "process"), so folding would no
// longer be idempotent on simplified text. Built on first use: a process that never sees Han
// text never pays for it.
let toSimplified: ((text: string) => string) | undefined
const HAN_RUN = /\p{Script=Han}+/gu
const HAN = /\p{Script=Han}/u

/**
 * Traditional Chinese → simplified, applied to Han runs only (text without Han characters is
 * returned as is, at the cost of one regex test). Japanese kanji go through the same table
 * (見 → 见): every text is folded the same way on the index and the query side, so two texts
 * that share a word still share it (skipping text with kana was measured and dropped: a
 * kanji-only query such as 東京 then no longer met the unfolded Japanese text). NFKC first,
 * so compatibility ideographs fold like their unified forms.
 */
export function foldScript(text: string): string {
  if (typeof text !== 'string' || !HAN.test(text)) return text
  toSimplified ??= Converter({ from: 'tw', to: 'cn' })
  const convert = toSimplified
  return text.normalize('NFKC').replace(HAN_RUN, (run) => convert(run))
}

function pushWord(segment: string, tokens: string[]): void {
  const whole = normalizeTerm(segment)
  if (isKeptWord(whole)) tokens.push(whole)
  // Both levels: `foo_barBaz` → foo_barbaz, foo, barbaz, bar, baz.
  const parts = segment.split(SUBWORD_SEPARATORS)
  const pieces: string[] = []
  for (const part of parts) {
    if (parts.length > 1) pieces.push(part)
    const camel = part.split(CAMEL_BOUNDARY)
    if (camel.length > 1) pieces.push(...camel)
  }
  for (const piece of pieces) {
    const term = normalizeTerm(piece)
    if (term !== whole && isKeptWord(term)) tokens.push(term)
  }
}

function isKeptWord(term: string): boolean {
  return [...term].length >= 2 && !ENGLISH_STOP_WORDS.has(term)
}

/**
 * A term as {@link tokenize} writes it: lower-case and NFKC. Lower-casing can leave text that is
 * no longer NFKC (and NFKC can re-introduce capitals for a few compatibility characters), so
 * both are applied on each side. Code that compares its own terms with the tokenizer's uses this.
 */
export function normalizeTerm(term: string): string {
  return term.toLowerCase().normalize('NFKC').toLowerCase()
}
