import { describe, expect, it } from 'vitest'
import { tokenize } from '@dsh-memory/store'
import { analyze, searchText, UNIGRAM_MARK } from '../src/core/analyzer.ts'
import { RankingCorpus } from '../src/core/corpus.ts'
import { queryTermProbe } from '../src/core/recall-engine.ts'
import { asksAboutTime, decayFactor, endsWithQuestion, groupDocumentScores, MEMORY_RANKING, rankDocuments, reciprocalRankFusion, TURN_RANKING, UNIGRAM_WEIGHT, weightTerms } from '../src/core/ranking.ts'
import { queryPeriod } from '../src/core/query-period.ts'

const DAY = 86_400_000

describe('analyze', () => {
  it('stems English inflections so painting, painted and paints meet', () => {
    const [a, b, c] = [analyze('painting'), analyze('painted'), analyze('paints')]
    expect(a).toEqual(b)
    expect(b).toEqual(c)
  })

  it('folds possessives without counting the word twice', () => {
    expect(analyze("Caroline's dog")).toEqual(['carolin', 'dog'])
  })

  it('keeps CJK words and bigrams from the store tokenizer, and mixed text', () => {
    const terms = analyze('我们决定使用 PostgreSQL 作为主数据库')
    expect(terms).toContain('postgresql')
    expect(terms).toContain('数据')
    const japanese = analyze('東京のオフィスは来月移転します')
    // The store's search terms: Han folded to simplified (東京 → 东京) on every side.
    expect(japanese).toContain('东京')
    expect(analyze('東京').every((term) => japanese.includes(term))).toBe(true)
    expect(japanese.some((term) => term.includes('オフィス') || term === 'オフ')).toBe(true)
  })

  it('analyzes traditional and simplified Chinese to the same terms, unigrams included', () => {
    expect(analyze('我用什麼軟體寫程式')).toEqual(analyze('我用什么软体写程式'))
    expect(analyze('用戶的家庭醫生')).toEqual(analyze('用户的家庭医生'))
  })

  it('keeps a lone Han character as a word and adds marked Han unigrams, without grammar characters', () => {
    const terms = analyze('我平时喝什么茶？')
    expect(terms).toContain('茶')
    expect(terms).toContain(`${UNIGRAM_MARK}茶`)
    expect(terms).toContain(`${UNIGRAM_MARK}喝`)
    // Question words and grammar characters are neither words nor unigrams.
    expect(terms).not.toContain('什么')
    expect(terms).not.toContain(`${UNIGRAM_MARK}么`)
    expect(terms).not.toContain(`${UNIGRAM_MARK}我`)
    expect(analyze('I drink oolong').some((term) => term.startsWith(UNIGRAM_MARK))).toBe(false)
  })

  it('a shared character ranks a compound (茶 / 乌龙茶), weighed below a shared word', () => {
    const memories = RankingCorpus.from([
      { id: 'oolong', text: '用户最喜欢的饮料是乌龙茶' },
      { id: 'car', text: '用户开一辆白色的电动汽车' },
      { id: 'word', text: '晚饭后喝一杯茶' },
    ])
    const ranked = rankDocuments(memories, '我爱喝什么茶', MEMORY_RANKING).map((hit) => hit.id)
    expect(ranked).toEqual(['word', 'oolong'])
    expect(weightTerms([`${UNIGRAM_MARK}茶`, '茶']).get(`${UNIGRAM_MARK}茶`)).toBe(UNIGRAM_WEIGHT)
  })

  it('drops conversational fillers and is deterministic', () => {
    expect(analyze('Hey, yeah thanks!')).toEqual([])
    expect(analyze('The deploy runs nightly')).toEqual(analyze('The deploy runs nightly'))
  })
})

describe('searchText', () => {
  it('adds the English stems the store tokenizer lacks, and nothing for CJK', () => {
    expect(searchText('painting cats')).toBe('painting cats paint cat')
    expect(searchText('search index')).toBe('search index')
    // Re-tokenizing CJK terms space-separated would cut bigrams into lone characters, which
    // the store expands as prefixes over every word starting with them.
    for (const query of ['デプロイ手順 Kubernetes', '数据库迁移 PostgreSQL 的进度', 'キャッシュの設定を見直す']) {
      const lone = (text: string) => tokenize(text).filter((term) => [...term].length === 1)
      expect(lone(searchText(query)), query).toEqual(lone(query))
    }
    expect(searchText('デプロイ手順 Kubernetes')).toBe('デプロイ手順 Kubernetes kubernet')
  })
})

describe('queryTermProbe', () => {
  it('passes every text that shares an analyzer term with the query, and skips unrelated ones', () => {
    const pairs: [string, string][] = [
      ['happy', 'what happiness'], ['durability', 'a durable bag'], ['flexibility', 'flexible hours'], ['painting', 'she painted'],
      ['relational', 'how they relate'], ['hoping', 'we hope so'], ['tabs', 'tabbed panes'], ['ponies', 'a pony'], ['eyed', 'an eye'],
      ["rock'n'roll", "loves rock'n'roll"], ["Caroline's dog", 'Caroline said'], ['generalization', 'in general'], ['ties', 'it tied'],
      ['studies', 'she studied'], ['running', 'he runs'], ['controlling', 'control it'], ['数据库', '新的数据库'], ['キャッシュ', 'キャッシュを消す'],
    ]
    const shared = pairs.filter(([query, text]) => analyze(query).some((term) => analyze(text).includes(term)))
    expect(shared.length).toBeGreaterThanOrEqual(15)
    for (const [query, text] of shared) expect(queryTermProbe(query)(text), `${query} / ${text}`).toBe(true)
    expect(queryTermProbe('kubernetes deployment')('the data pipeline uses Redis')).toBe(false)
    expect(queryTermProbe('数据库')('キャッシュの設定')).toBe(false)
  })
})

describe('rankDocuments', () => {
  const memories = RankingCorpus.from([
    { id: 'editor', text: 'The user prefers the Helix editor over Vim.' },
    { id: 'deploy', text: 'Deploys go to Fly.io every Friday.' },
    { id: 'db', text: '主数据库是 PostgreSQL 16。' },
    { id: 'coffee', text: 'The user drinks espresso in the morning.' },
  ])

  it('ranks by BM25 over analyzed terms, in every language', () => {
    expect(rankDocuments(memories, 'which editor do I prefer?', MEMORY_RANKING)[0]!.id).toBe('editor')
    expect(rankDocuments(memories, '数据库用的是什么', MEMORY_RANKING)[0]!.id).toBe('db')
    expect(rankDocuments(memories, 'when do we deploy', MEMORY_RANKING)[0]!.id).toBe('deploy')
  })

  it('returns nothing for a query without matching terms', () => {
    expect(rankDocuments(memories, 'quantum chromodynamics', MEMORY_RANKING)).toEqual([])
    expect(rankDocuments(memories, '   ', MEMORY_RANKING)).toEqual([])
    expect(rankDocuments(RankingCorpus.from([]), 'editor', MEMORY_RANKING)).toEqual([])
  })

  it('relevance is on a fixed scale: one distinctive match is 0.5, more matches are higher, long queries do not dilute it', () => {
    const [hit] = rankDocuments(memories, 'helix', MEMORY_RANKING)
    expect(hit!.relevance).toBeGreaterThan(0.4)
    expect(hit!.relevance).toBeLessThan(0.6)
    const [two] = rankDocuments(memories, 'helix vim', MEMORY_RANKING)
    expect(two!.relevance).toBeGreaterThan(hit!.relevance)
    const long = rankDocuments(memories, `helix ${'unrelated words about many other things '.repeat(10)}`, MEMORY_RANKING)
    expect(long.find((ranked) => ranked.id === 'editor')!.relevance).toBeCloseTo(hit!.relevance, 5)
    for (const ranked of rankDocuments(memories, 'the user editor espresso', MEMORY_RANKING)) {
      expect(ranked.relevance).toBeGreaterThan(0)
      expect(ranked.relevance).toBeLessThan(1)
    }
  })

  it('context windows: a turn borrows score from its neighbours in the same conversation only', () => {
    const turns = RankingCorpus.from([
      { id: 'a1', text: 'A: what did you paint last weekend?', group: 'a', position: 1 },
      { id: 'a2', text: 'B: a sunrise over the lake', group: 'a', position: 2 },
      { id: 'b1', text: 'B: a sunrise photo', group: 'b', position: 1 },
      { id: 'b0', text: 'A: nothing relevant', group: 'b', position: 0 },
    ])
    const plain = rankDocuments(turns, 'what did B paint, a sunrise?', { ...TURN_RANKING, context: { span: 0, weight: 0, falloff: 0 }, groupWeight: 0, temporalBoost: 0 })
    const withContext = rankDocuments(turns, 'what did B paint, a sunrise?', { ...TURN_RANKING, groupWeight: 0, temporalBoost: 0 })
    const score = (list: typeof plain, id: string) => list.find((ranked) => ranked.id === id)?.score ?? 0
    expect(score(withContext, 'a2') - score(plain, 'a2')).toBeGreaterThan(0)
    // b0 has no matching term and its neighbour b1 matches: it gains; across groups nothing leaks.
    expect(score(withContext, 'b0')).toBeGreaterThan(0)
    expect(score(withContext, 'a2')).toBeGreaterThan(score(withContext, 'b1'))
  })

  it('the author prior boosts the one speaker a question names', () => {
    const turns = RankingCorpus.from([
      { id: 'm', text: 'Melanie: I went camping with the kids', author: 'Melanie', group: 's', position: 0 },
      { id: 'c', text: 'Caroline: I went camping alone', author: 'Caroline', group: 's', position: 5 },
    ])
    const parameters = { ...TURN_RANKING, context: { span: 0, weight: 0, falloff: 0 }, groupWeight: 0 }
    expect(rankDocuments(turns, 'Where did Caroline go camping?', parameters, { authors: ['Caroline', 'Melanie'] })[0]!.id).toBe('c')
    expect(rankDocuments(turns, 'Where did Melanie go camping?', parameters, { authors: ['Caroline', 'Melanie'] })[0]!.id).toBe('m')
  })

  it('the date prior favours what was said in the period the query names', () => {
    const day = (year: number, month: number, date: number) => Date.UTC(year, month - 1, date, 14)
    const turns = RankingCorpus.from([
      { id: 'march', text: 'I painted a lake at sunrise', time: day(2023, 3, 2) },
      { id: 'november', text: 'I painted a lake at sunrise', time: day(2022, 11, 9) },
    ])
    const parameters = { ...MEMORY_RANKING, dateBoost: 1 }
    expect(rankDocuments(turns, 'What did I paint on 9 November, 2022?', parameters)[0]!.id).toBe('november')
    expect(rankDocuments(turns, 'What did I paint in March 2023?', parameters)[0]!.id).toBe('march')
    expect(rankDocuments(turns, '2022年11月9日 painted 什么？', parameters)[0]!.id).toBe('november')
    // No period named: corpus order, equal scores.
    const plain = rankDocuments(turns, 'What did I paint?', parameters)
    expect(plain[0]!.score).toBe(plain[1]!.score)
  })

  it('queryPeriod reads English, ISO, Chinese and Japanese dates, most specific first', () => {
    const DAY = 86_400_000
    expect(queryPeriod('What did Tim say on 8th December, 2023?')).toEqual({ from: Date.UTC(2023, 11, 8) - DAY, to: Date.UTC(2023, 11, 10) })
    expect(queryPeriod('forest picture shared on December 1,2023')).toEqual({ from: Date.UTC(2023, 11, 1) - DAY, to: Date.UTC(2023, 11, 3) })
    expect(queryPeriod('What is Tim learning in December 2023?')).toEqual({ from: Date.UTC(2023, 11, 1) - DAY, to: Date.UTC(2024, 0, 1) + DAY })
    expect(queryPeriod('2024-01-05 的会议')).toEqual({ from: Date.UTC(2024, 0, 5) - DAY, to: Date.UTC(2024, 0, 7) })
    expect(queryPeriod('2023年11月に何を買った？')).toEqual({ from: Date.UTC(2023, 10, 1) - DAY, to: Date.UTC(2023, 11, 1) + DAY })
    expect(queryPeriod('What charity event did John organize in 2024?')).toEqual({ from: Date.UTC(2024, 0, 1) - DAY, to: Date.UTC(2025, 0, 1) + DAY })
    // A month without a year, or a number that is not a year, names no period.
    expect(queryPeriod('When did Melanie go camping in June?')).toBeUndefined()
    expect(queryPeriod('How many of the 2000 users?')).toBeUndefined()
  })

  it('question → reply pairing: the reply to a matching question of the other speaker borrows its score', () => {
    const turn = (group: string, position: number, author: string, text: string) => ({ id: `${group}/${position}`, text, group, position, author })
    const corpus = RankingCorpus.from([
      turn('asked', 0, 'Ann', 'Ann: How often do you go swimming?'),
      turn('asked', 1, 'Bo', 'Bo: Three times a week.'),
      // The same speaker goes on after her own question: not a reply.
      turn('self', 0, 'Ann', 'Ann: Did you go swimming? Anyway.'),
      turn('self', 1, 'Ann', 'Ann: I stayed home.'),
      // The question comes after: nothing to answer.
      turn('after', 0, 'Bo', 'Bo: Maybe.'),
      turn('after', 1, 'Ann', 'Ann: Going swimming later?'),
    ])
    const parameters = { ...TURN_RANKING, groupWeight: 0, sessionDocumentWeight: 0 }
    const score = (ranking: { id: string; score: number }[], id: string) => ranking.find((ranked) => ranked.id === id)!.score
    const without = rankDocuments(corpus, 'swimming', { ...parameters, replyWeight: 0 })
    const paired = rankDocuments(corpus, 'swimming', parameters)
    // Without pairing a reply has only the context window (0.6 × its question): below its question.
    expect(score(without, 'asked/1')).toBeLessThan(score(without, 'asked/0'))
    // Its question's score is its own BM25 (its reply matches nothing): the reply adds replyWeight × it.
    expect(score(paired, 'asked/1')).toBeCloseTo(score(without, 'asked/1') + TURN_RANKING.replyWeight! * score(without, 'asked/0'), 10)
    expect(paired.map((ranked) => ranked.id)[0]).toBe('asked/1')
    expect(score(paired, 'self/1')).toBe(score(without, 'self/1'))
    expect(score(paired, 'after/0')).toBe(score(without, 'after/0'))
    // The question itself gains nothing.
    expect(score(paired, 'asked/0')).toBe(score(without, 'asked/0'))
    expect(TURN_RANKING.replyWeight).toBeGreaterThan(0)
    expect(MEMORY_RANKING.replyWeight ?? 0).toBe(0)
  })

  it('endsWithQuestion reads a closing question mark, full-width too, before quotes or one bracketed note', () => {
    for (const text of ['Where did you go?', 'Where did you go? ', 'Did he say "why?"', '你去哪儿了？', 'どこに行きましたか？」', 'Like it? [shares an image: a photo of a lake]']) {
      expect(endsWithQuestion(text), text).toBe(true)
    }
    for (const text of ['Is it? Yes, it is.', 'I went to Paris.', 'What? [a] [b]', '']) expect(endsWithQuestion(text), text).toBe(false)
  })

  it('the session-document prior lifts a turn whose session, taken as a whole, holds the other query terms', () => {
    // Both first turns ('trip/0', 'home/0') match the question alike; only the trip's session
    // also holds the question's other words (in other turns), so it comes first with the prior.
    const session = (group: string, texts: string[]) => texts.map((text, turn) => ({ id: `${group}/${turn}`, text, group, position: turn * 4 }))
    const turns = RankingCorpus.from([
      ...session('trip', ['B: we went to the mountains', 'A: the hiking trail was steep', 'A: we slept in a tent by the lake']),
      ...session('home', ['B: we went to the mountains', 'A: the kitchen needs paint']),
      ...session('cn', ['我们去了山里', '徒步的路很陡，晚上在湖边搭帐篷']),
      ...session('cn2', ['我们去了山里']),
    ])
    const parameters = { ...TURN_RANKING, context: { span: 0, weight: 0, falloff: 0 }, groupWeight: 0 }
    const question = 'Where did they go hiking and camping with a tent in the mountains?'
    const without = rankDocuments(turns, question, { ...parameters, sessionDocumentWeight: 0 })
    expect(without.find((ranked) => ranked.id === 'trip/0')!.score).toBe(without.find((ranked) => ranked.id === 'home/0')!.score)
    const withPrior = rankDocuments(turns, question, parameters)
    const order = withPrior.map((ranked) => ranked.id)
    expect(order.indexOf('trip/0')).toBeLessThan(order.indexOf('home/0'))
    const chinese = rankDocuments(turns, '他们去山里徒步、搭帐篷了吗？', parameters).map((ranked) => ranked.id)
    expect(chinese.indexOf('cn/0')).toBeLessThan(chinese.indexOf('cn2/0'))
    expect(TURN_RANKING.sessionDocumentWeight).toBeGreaterThan(0)
    expect(MEMORY_RANKING.sessionDocumentWeight ?? 0).toBe(0)
    // The session scores are BM25 (k1 1.2, b 0.75) over one document per session, the best = 1.
    const query = weightTerms(analyze(question))
    const sessions = ['trip', 'home', 'cn', 'cn2']
    const asDocuments = RankingCorpus.from(sessions.map((group) => ({ id: group, text: turns.documents.filter((turn) => turn.group === group).map((turn) => turn.text).join('\n') })))
    const expected = asDocuments.bm25(query, { k1: 1.2, b: 0.75 })
    const scores = groupDocumentScores(turns, query)
    sessions.forEach((group, index) => expect(scores.get(group)).toBeCloseTo(expected[index]! / Math.max(...expected), 10))
    expect(scores.get('trip')).toBe(1)
  })

  it('the temporal prior favours turns with time expressions for "when" questions only', () => {
    expect(asksAboutTime('When did she move?')).toBe(true)
    expect(asksAboutTime('什么时候搬家的？')).toBe(true)
    expect(asksAboutTime('いつ引っ越しましたか')).toBe(true)
    expect(asksAboutTime('Where did she move?')).toBe(false)
    const turns = RankingCorpus.from([
      { id: 'plain', text: 'She moved to Berlin with her cat' },
      { id: 'dated', text: 'She moved last year to Berlin' },
    ])
    const parameters = { ...MEMORY_RANKING, temporalBoost: 1 }
    expect(rankDocuments(turns, 'When did she move to Berlin?', parameters)[0]!.id).toBe('dated')
  })
})

describe('decayFactor', () => {
  it('is max(0.5, 0.5^(days/halfLife)) and 1 when disabled', () => {
    expect(decayFactor(0, 30)).toBe(1)
    expect(decayFactor(30 * DAY, 30)).toBeCloseTo(0.5, 10)
    expect(decayFactor(15 * DAY, 30)).toBeCloseTo(Math.SQRT1_2, 10)
    expect(decayFactor(365 * DAY, 30)).toBe(0.5)
    expect(decayFactor(365 * DAY, 0)).toBe(1)
    expect(decayFactor(-5 * DAY, 30)).toBe(1)
  })

  it('never increases with age (property over a grid)', () => {
    for (const halfLife of [1, 7, 30, 365]) {
      let previous = Number.POSITIVE_INFINITY
      for (let days = 0; days <= 1000; days += 13) {
        const value = decayFactor(days * DAY, halfLife)
        expect(value).toBeLessThanOrEqual(previous)
        expect(value).toBeGreaterThanOrEqual(0.5)
        previous = value
      }
    }
  })
})

describe('reciprocalRankFusion', () => {
  it('rewards ids ranked high in several lists', () => {
    const fused = reciprocalRankFusion([
      ['a', 'b', 'c'],
      ['b', 'd'],
    ])
    expect(fused[0]!.id).toBe('b')
    expect(fused.map((entry) => entry.id).sort()).toEqual(['a', 'b', 'c', 'd'])
    expect(fused[0]!.score).toBeCloseTo(1 / 62 + 1 / 61, 10)
  })
})
