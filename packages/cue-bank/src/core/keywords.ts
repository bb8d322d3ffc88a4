/**
 * Keyword extraction for cues, on top of the store's shared tokenizer so a term means the same
 * thing in search and in the cue bank.
 *
 * The tokenizer gives ICU dictionary words plus CJK character bigrams. ICU's dictionary often
 * cuts unknown compounds into single characters ("飞书插件" → 飞|书|插|件, "闭环" → 闭|环), and the
 * bigrams straddle word boundaries ("们决" in "我们决定"). So for CJK text this module re-joins
 * adjacent pieces into compounds of up to four characters (katakana words up to sixteen)
 * instead of keeping raw bigrams: "飞书插件", "闭环", "プラグイン" survive, "们决" does not.
 */
import { normalizeTerm, tokenize } from '@dsh-memory/store'
import { CJK_CLASS, containsCjk } from '@dsh-memory/store/kit'
import { stripNonProse } from './text.js'

/** One keyword with its weight (term frequency among the text's candidate terms). */
export interface Keyword {
  readonly word: string
  readonly score: number
}

/** Options of {@link extractKeywords}. */
export interface ExtractKeywordsOptions {
  /** Keep at most this many keywords (highest score first). Default 12. */
  readonly max?: number
  /** Shortest keyword in code points. Default 2. */
  readonly minLength?: number
}

/** Chinese function words and filler that carry no topic. */
export const CHINESE_STOP_WORDS: ReadonlySet<string> = new Set([
  '我们', '你们', '他们', '她们', '它们', '咱们', '我的', '你的', '他的', '自己', '大家', '别人', '这个', '那个', '这些', '那些',
  '这里', '那里', '哪里', '这样', '那样', '怎样', '怎么', '怎么样', '什么', '为什么', '如何', '哪个', '哪些', '一个', '一些', '一下',
  '一点', '有点', '一起', '可以', '可能', '应该', '需要', '能够', '想要', '我想', '就是', '还是', '但是', '可是', '不过', '只是',
  '因为', '所以', '如果', '虽然', '然后', '而且', '或者', '以及', '并且', '另外', '还有', '已经', '现在', '今天', '刚才', '之前',
  '之后', '以前', '以后', '的话', '时候', '的时候', '没有', '不是', '不要', '不会', '是不是', '有没有', '帮我', '帮忙', '请问',
  '谢谢', '好的', '用来', '比如', '例如', '关于', '对于', '进行', '觉得', '知道', '东西', '事情', '问题', '真的', '非常', '特别',
  '其实', '继续', '开始', '也要', '就要', '都要', '也会', '也能', '就会', '就能', '都会', '一定', '必须', '最好', '是否', '能否',
  '要不要', '能不能', '可不可以', '正在', '将要', '将会', '使用', '作为', '成为', '通过', '根据', '包括', '希望', '告诉', '一样', '有些', '部分', '方面', '情况', '方式', '方法', '我要', '你要', '我们的', '一下子', '这么', '那么', '多少', '怎么办', '看看', '一直', '还要', '也是',
  '都是', '就是说', '然后呢', '所有', '每个', '各种', '比较', '最后', '首先', '其次', '以上', '如下', '下面', '上面',
])

/** Japanese function words, auxiliaries and set phrases that carry no topic. */
export const JAPANESE_STOP_WORDS: ReadonlySet<string> = new Set([
  'です', 'ます', 'でした', 'ました', 'ません', 'ない', 'たい', 'てい', 'ている', 'いる', 'ある', 'する', 'した', 'して', 'される',
  'れる', 'られる', 'なる', 'なり', 'なっ', 'あり', 'おり', 'ござい', 'この', 'その', 'あの', 'どの', 'これ', 'それ', 'あれ', 'どれ',
  'ここ', 'そこ', 'どこ', 'ください', 'について', 'という', 'として', 'ので', 'から', 'まで', 'けど', 'けれど', 'けれども', 'でも',
  'また', 'そして', 'しかし', 'など', 'よう', 'こと', 'もの', 'ため', 'とき', 'ところ', '思い', '思う', 'ありがとう', 'お願い',
  'よろしく', '今日', 'さん', '私', '僕', 'あなた', '皆さん', 'ちょっと', 'どう', 'どうして', 'なぜ', 'なに', '何か', 'すみません',
  'ちゃん', 'くん', 'だけ', 'しか', 'もう', 'まだ', 'すごく', 'とても', 'みたい', 'らしい', 'でしょう', 'だろう', 'いい', 'よい',
  'できる', 'でき', 'ように', 'ような', 'における', 'による', 'によって', 'に関して', 'ほしい', '欲しい', 'いただけ', 'くださ',
  '作り', '作る', '使い', '使う', '出て', '出る', '見て', '見る', '教えて', '教え', '分かり', '分かる', '言う', '行う', 'ござい',
])

/**
 * Conversational English words the store's search stop list keeps (they matter to search,
 * not to topics), and contraction pieces the tokenizer emits.
 */
export const ENGLISH_FILLER_WORDS: ReadonlySet<string> = new Set([
  'please', 'thanks', 'thank', 'hello', 'hi', 'hey', 'ok', 'okay', 'yes', 'yeah', 'yep', 'sure', 'want', 'wants', 'wanted', 'like',
  'let', 'lets', "let's", 'need', 'needs', 'get', 'gets', 'got', 'make', 'makes', 'made', 'help', 'know', 'think', 'use', 'using',
  'used', 'really', 'actually', 'maybe', 'something', 'anything', 'everything', 'nothing', 'thing', 'things', 'way', 'one', 'now',
  'today', 'going', 'go', 'well', 'much', 'many', 'lot', 'lots', 'still', 'even', 'back', 'able', 'via', 'etc', 'e.g', 'i.e',
  "don't", "doesn't", "isn't", "aren't", "didn't", "won't", "can't", "i'm", "it's", "that's", "i've", "you're", "we're",
  "they're", "there's", "what's", "i'd", "i'll", "you'll", "we'll", 'don', 'doesn', 'isn', 'aren', 'didn', 'won', 'll', 've', 're',
  'im', 'ive', 'dont', 'cant', 'look', 'looks', 'tell', 'give', 'try', 'see', 'say', 'said', 'come', 'take', 'put', 'keep', 'show',
  'cool', 'great', 'good', 'nice', 'fine', 'right', 'bit', 'kind', 'sort', 'stuff', 'guess', 'mean', 'question', 'set', 'keeps',
])

// The kit's CJK set, the same the store's tokenizer uses (Han, kana, Hangul, ー and 〆).
const CJK_RUN = new RegExp(`[${CJK_CLASS}]+`, 'gu')
const KATAKANA_WORD = /^[\p{Script=Katakana}\u30fc]+$/u
const NUMBERISH = /^[\d.,:_-]+$|^[0-9a-f]{8,}$|^\d+[a-z]{0,2}$/
const MAX_COMPOUND = 4

/**
 * Single characters that end a word (数据|库, 审批|流, 编译|器). When the dictionary leaves one
 * alone between two words it belongs to the word before it; any other lone character starts
 * the word after it (跨|会话, 主|数据).
 */
const SUFFIX_CHARACTERS: ReadonlySet<string> = new Set([
  '库', '器', '表', '流', '化', '性', '率', '式', '版', '型', '端', '层', '者', '员', '机', '件', '图', '集', '组', '量', '值', '法', '度',
  '点', '区', '源', '栈', '池', '链', '码', '号', '项', '包', '群', '网', '站', '台', '栏', '框', '键', '档', '卡', '树', '块', '段', '页',
  '屏', '域', '址', '词', '题', '案', '务', '品', '稿', '类', '界', '线', '态', '权', '费', '签', '籍', '局', '队', '部', '厂', '店', '馆',
])

/**
 * Single CJK characters that are grammar or generic verbs. They never join a compound; they
 * separate words, so "部署到集群" gives "部署" and "集群", not "部署到".
 */
const STOP_CHARACTERS: ReadonlySet<string> = new Set([
  '的', '了', '是', '在', '和', '与', '也', '就', '都', '而', '及', '着', '把', '被', '吗', '呢', '吧', '啊', '呀', '哦', '嗯', '这', '那', '之', '要',
  '想', '会', '去', '来', '到', '让', '给', '对', '从', '用', '向', '为', '再', '又', '还', '很', '太', '最', '更', '比', '跟', '像', '不', '没',
  '我', '你', '他', '她', '它', '请', '帮', '看', '说', '做', '有', '个', '些', '等', '并', '或', '但', '如', '若', '即', '将', '已', '曾', '才',
  '只', '每', '各', '某', '其', '此', '该', '啥', '咋', '怎', '谁', '哪', '几', '里',
  '过', '得', '地', '所', '以', '于', '由', '往', '同', '可', '应', 'の', 'は', 'が', 'を', 'に', 'で', 'と', 'も', 'へ', 'や', 'か', 'な', 'だ',
  'て', 'た', 'し', 'ね', 'よ', 'ぞ', 'わ', 'さ', 'り', 'る', 'う', 'く', 'い', 'え', 'お', 'き', 'け', 'こ', 'す', 'せ', 'そ', 'ち', 'つ', 'ぬ', 'ば',
  'ま', 'み', 'む', 'め', 'ら', 'れ', 'ろ',
])
const MAX_KATAKANA_COMPOUND = 16
const MAX_TERM = 40

/** True for a word of the stop lists of any language (or the store's English stop words). */
export function isStopWord(word: string): boolean {
  return (
    CHINESE_STOP_WORDS.has(word) || JAPANESE_STOP_WORDS.has(word) || ENGLISH_FILLER_WORDS.has(word) || STOP_CHARACTERS.has(word)
  )
}

/** True when `word` contains a CJK character. */
export function isCjk(word: string): boolean {
  return containsCjk(word)
}

/**
 * The candidate terms of a text in order of appearance, duplicates kept (they are the term
 * frequency): English words and identifier parts from the tokenizer, CJK compounds rebuilt from
 * its dictionary words. Code, URLs and emoji are removed first; stop words of each language,
 * numbers and hashes are dropped.
 */
export function candidateTerms(text: string, minLength = 2): string[] {
  const prose = stripNonProse(text).normalize('NFKC')
  if (prose.trim().length === 0) return []
  const tokens = tokenize(prose)
  const lowered = prose.toLowerCase()
  const words = dropBigramTail(tokens, lowered)
  const terms: { term: string; at: number }[] = []

  const keep = (term: string): boolean => {
    const length = [...term].length
    return length >= minLength && length <= MAX_TERM && !isStopWord(term) && !NUMBERISH.test(term)
  }

  // The tokenizer follows an identifier ("useEffect", "memory_store") with its parts; a part
  // lies inside the span of the word before it. Parts are dropped: the whole identifier is the
  // keyword, and matching compares identifiers by containment instead.
  let whole: Segment | undefined
  const cjkWords: string[] = []
  for (const word of words) {
    if (isCjk(word)) {
      cjkWords.push(word)
      continue
    }
    if (whole && word !== whole.term && word.length < whole.term.length) {
      const inside = lowered.indexOf(word, whole.start)
      if (inside >= 0 && inside + word.length <= whole.end) continue
    }
    const found = lowered.indexOf(word, whole ? whole.end : 0)
    const at = found >= 0 ? found : (whole?.end ?? 0)
    whole = { term: word, start: at, end: at + word.length }
    if (keep(word)) terms.push({ term: word, at })
  }

  for (const piece of cjkCompounds(cjkWords, lowered)) {
    if (keep(piece.term)) terms.push(piece)
  }
  return terms.sort((a, b) => a.at - b.at).map((entry) => entry.term)
}

/**
 * Weighted keywords of a text: candidate terms ({@link candidateTerms}) ranked by term
 * frequency, ties broken by length (longer is more specific), then by first appearance.
 * `score` is the term's share of all candidate occurrences, so scores of one text sum to at
 * most 1.
 */
export function extractKeywords(text: string, options: ExtractKeywordsOptions = {}): Keyword[] {
  const max = options.max ?? 12
  const terms = candidateTerms(text, options.minLength ?? 2)
  if (terms.length === 0 || max <= 0) return []
  const counts = new Map<string, { count: number; first: number }>()
  terms.forEach((term, index) => {
    const entry = counts.get(term)
    if (entry) entry.count++
    else counts.set(term, { count: 1, first: index })
  })
  return [...counts.entries()]
    .sort(([a, x], [b, y]) => y.count - x.count || [...b].length - [...a].length || x.first - y.first)
    .slice(0, max)
    .map(([word, { count }]) => ({ word, score: round(count / terms.length) }))
}

/**
 * The tokenizer appends the CJK bigrams of every CJK run after the words. Remove exactly that
 * tail when it is there; when the tokenizer's layout ever changes the check fails and every
 * token is treated as a word, which only makes compounds coarser.
 */
function dropBigramTail(tokens: string[], lowered: string): string[] {
  const tail: string[] = []
  for (const [run] of lowered.matchAll(CJK_RUN)) {
    const chars = [...run]
    for (let i = 0; i + 1 < chars.length; i++) tail.push(normalizeTerm(chars[i]! + chars[i + 1]!))
  }
  if (tail.length === 0 || tail.length > tokens.length) return tokens
  const start = tokens.length - tail.length
  for (let i = 0; i < tail.length; i++) if (tokens[start + i] !== tail[i]) return tokens
  return tokens.slice(0, start)
}

interface Segment {
  term: string
  start: number
  end: number
}

/**
 * Rebuild CJK compounds: locate each dictionary word in the text and split the words into
 * groups that touch (a dropped particle, punctuation, a Latin word or a stop word in between
 * ends a group). Inside a group, single characters are pieces of a word the dictionary did
 * not know: a run of them joins the following word ("主" + "数据" → "主数据"), a run at the end
 * of the group joins the preceding word ("主数据" + "库" → "主数据库"), a run on its own is one
 * word ("飞|书|插|件" → "飞书插件"). Adjacent katakana words join ("プラグ" + "イン").
 */
function cjkCompounds(words: string[], lowered: string): { term: string; at: number }[] {
  const groups: Segment[][] = []
  let group: Segment[] = []
  let cursor = 0
  for (const word of words) {
    const start = lowered.indexOf(word, cursor)
    if (start < 0) continue
    cursor = start + word.length
    const segment = { term: word, start, end: start + word.length }
    const previous = group[group.length - 1]
    if (isStopWord(word)) {
      if (group.length) groups.push(group)
      group = []
      continue
    }
    if (previous && previous.end !== start) {
      groups.push(group)
      group = []
    }
    group.push(segment)
  }
  if (group.length) groups.push(group)
  return groups.flatMap(compoundsOfGroup)
}

function compoundsOfGroup(group: Segment[]): { term: string; at: number }[] {
  const out: { term: string; at: number }[] = []
  const emit = (segment: Segment | undefined): void => {
    if (segment) out.push({ term: segment.term, at: segment.start })
  }
  const join = (a: Segment, b: Segment): Segment => ({ term: a.term + b.term, start: a.start, end: b.end })
  const isSingle = (segment: Segment): boolean => [...segment.term].length === 1

  let singles: Segment | undefined // a pending run of single characters
  let word: Segment | undefined // the last word, still open to a trailing run
  for (let i = 0; i < group.length; i++) {
    const segment = group[i]!
    if (isSingle(segment)) {
      singles = singles ? join(singles, segment) : segment
      continue
    }
    if (singles) {
      if (word && [...singles.term].length === 1 && SUFFIX_CHARACTERS.has(singles.term) && fits(word.term + singles.term)) {
        // One suffix character between two words closes the word before it.
        emit(join(word, singles))
        word = segment
      } else {
        emit(word)
        if (fits(singles.term + segment.term)) {
          word = join(singles, segment)
        } else {
          emit(singles)
          word = segment
        }
      }
      singles = undefined
      continue
    }
    if (word && KATAKANA_WORD.test(word.term) && KATAKANA_WORD.test(segment.term) && [...word.term + segment.term].length <= MAX_KATAKANA_COMPOUND) {
      word = join(word, segment)
      continue
    }
    emit(word)
    word = segment
  }
  if (singles) {
    // A trailing run: the tail of the last word when it fits ("数据" + "库"), else its own word.
    if (word && fits(word.term + singles.term)) word = join(word, singles)
    else {
      emit(word)
      word = singles
    }
  }
  emit(word)
  return out
}

function fits(term: string): boolean {
  return [...term].length <= MAX_COMPOUND
}

function round(value: number): number {
  return Math.round(value * 10_000) / 10_000
}
