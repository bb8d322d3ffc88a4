/**
 * The recall analyzer: the store's search tokenizer (so CJK and mixed text split exactly as the
 * store indexes them, traditional Chinese folded to simplified), then English inflection folding with the Porter stemmer, so
 * "painting", "painted" and "paints" meet. CJK terms pass through unchanged: the tokenizer's
 * dictionary words and bigrams already are the right units there.
 */
import { foldScript, tokenize } from '@dsh-memory/store'
import { stemmer } from 'stemmer'

/**
 * Changes whenever the terms produced for some input change. Caches of analyzed text key on
 * it, so a new analyzer never compares against stale terms.
 */
export const ANALYZER_VERSION = 'store-search-tokenize+porter+han-unigrams/4'

// Words the store keeps (it drops classic function words only) that carry no topic in
// questions and chat turns; measured on the LoCoMo dev split (see apps/cli/README.md).
const EXTRA_STOP_WORDS: ReadonlySet<string> = new Set([
  'did', 'does', 'do', 'has', 'have', 'had', 'was', 'were', 'is', 'are', 'be',
  'hey', 'hi', 'hello', 'yeah', 'yes', 'oh', 'wow', 'ok', 'okay', 'lol', 'haha',
  'thanks', 'thank', 'really', 'sure', 'well', 'got', 'get', 'gonna', 'let', 'lets',
  'im', 'ive', 'youre', 'thats', 'its', 'dont', 'didnt', 'doesnt', 've', 're', 'll',
  // Chinese and Japanese question words and fillers: every question has them, no memory is about them.
  '什么', '哪里', '哪儿', '哪个', '哪些', '哪天', '怎么', '怎样', '为什么', '多少', '是不是', '有没有', '我的', '我们',
  'どこ', 'いつ', 'どの', 'どんな', '何だ', 'っけ', '私の', '私は', '私が',
])

const ASCII_WORD = /^[a-z][a-z0-9]*$/
const HAN = /\p{Script=Han}/u
const HAN_CHARACTER = /\p{Script=Han}/gu
// Han characters that are grammar, pronouns or question words rather than topic: as unigrams
// they would match nearly every Chinese memory. (Inside words and bigrams they still count.)
const HAN_STOP_CHARACTERS: ReadonlySet<string> = new Set([...'的了是在和与也就都而及着把被吗呢吧啊这那之我你他她它们个有不一么什哪谁几多要会能对说到去来上下中里为以所其或又还很最'])
// Possessive and contraction tails the tokenizer keeps on the whole word ("caroline's").
const APOSTROPHE_TAIL = /['’](s|re|ve|ll|d|m|t)$/

/**
 * Turn text into ranking terms: the store's {@link tokenize} terms, possessives folded,
 * a few conversational fillers dropped, English words stemmed. Deterministic; duplicates
 * are kept because term frequency matters.
 */
export function analyze(text: string): string[] {
  const out: string[] = []
  // The tokenizer emits "caroline's" and then its part "caroline"; after folding the
  // possessive both are "caroline", which would count the word twice.
  let folded: string | undefined
  // The store's search terms (`searchTokenize`): traditional Chinese folded to simplified, as
  // its index holds them, so 軟體 and 软件 are one term here too.
  const simplified = foldScript(text)
  for (const raw of tokenize(simplified)) {
    if (folded !== undefined && raw === folded) {
      folded = undefined
      continue
    }
    folded = undefined
    let term = raw
    if (/['’]/.test(raw)) {
      term = raw.replace(APOSTROPHE_TAIL, '').replace(/['’]/g, '')
      folded = term
    }
    // A lone Han character is often a whole word (茶 tea, 猫 cat): kept, unlike a lone letter.
    if ((term.length < 2 && !HAN.test(term)) || EXTRA_STOP_WORDS.has(term) || HAN_STOP_CHARACTERS.has(term)) continue
    out.push(ASCII_WORD.test(term) ? stem(term) : term)
  }
  // Han unigrams: the words and bigrams above miss a character shared by a word and its
  // compound (茶 / 乌龙茶) or by near synonyms (爱喝 / 喜欢喝, 考试 / 考驾照). BM25's idf keeps
  // common characters weak; measured with `dsh-memory bench cjk` (apps/cli/README.md).
  // They are their own terms (marked with UNIGRAM_MARK), so the ranking can weigh a shared
  // character below a shared word (see weightTerms).
  for (const [character] of simplified.normalize('NFKC').matchAll(HAN_CHARACTER)) {
    if (!HAN_STOP_CHARACTERS.has(character)) out.push(UNIGRAM_MARK + character)
  }
  return out
}

/** Prefix of the Han-unigram terms {@link analyze} adds; never produced by the tokenizer (a control character). */
export const UNIGRAM_MARK = '\u0001'

/**
 * The text recall hands to the store's full-text search for `query`: the query plus those of
 * its English stems the store's tokenizer does not produce itself ("paint" for "painting",
 * which the store matches as a prefix), so inflections the ranking folds are candidates too.
 * CJK terms are left out: they are the tokenizer's own terms already, and re-tokenizing them
 * space-separated cuts bigrams ("イ手") into lone characters, which the store expands as
 * prefixes over every word starting with them (slow, and matching nothing the query meant).
 */
export function searchText(query: string): string {
  const own = new Set(tokenize(query))
  const stems = [...new Set(analyze(query))].filter((term) => ASCII_WORD.test(term) && !own.has(term))
  return stems.length === 0 ? query : `${query} ${stems.join(' ')}`
}

const STEM_CACHE = new Map<string, string>()
const STEM_CACHE_LIMIT = 50_000

function stem(word: string): string {
  const cached = STEM_CACHE.get(word)
  if (cached !== undefined) return cached
  const stemmed = stemmer(word)
  if (STEM_CACHE.size >= STEM_CACHE_LIMIT) STEM_CACHE.clear()
  STEM_CACHE.set(word, stemmed)
  return stemmed
}
