/**
 * Tokenizer benchmark: retrieval quality and speed of the candidate tokenizers on a small
 * hand-written CJK / English / mixed set, ranked the way the store ranks: terms encoded into an
 * SQLite FTS5 table (the store's own encoding), OR of the query's terms, bm25(). Prints
 * markdown tables (pasted into the README).
 *
 *   bash ../../scripts/node22.sh node bench/tokenizer.ts
 *
 * A command that prints numbers, not a test: timings vary by machine.
 */
import Database from 'better-sqlite3'
import { encodeTerm } from '../src/core/search-plan.ts'
import { tokenizeWith } from '../src/core/tokenizer.ts'
import { DOCUMENTS, QUERIES } from './tokenizer-corpus.ts'

interface Candidate {
  name: string
  tokenize: (text: string) => string[]
}

// A plain full-text default: split on Unicode space and punctuation.
const SPACE_OR_PUNCTUATION = /[\n\r\p{Z}\p{P}]+/u

const CANDIDATES: Candidate[] = [
  { name: 'space/punctuation split', tokenize: (text) => text.split(SPACE_OR_PUNCTUATION).filter(Boolean).map((t) => t.toLowerCase()) },
  { name: 'ICU words only', tokenize: (text) => tokenizeWith(text, { words: true, bigrams: false }) },
  { name: 'CJK bigrams only', tokenize: (text) => tokenizeWith(text, { words: false, bigrams: true }) },
  { name: 'ICU words + CJK bigrams (chosen)', tokenize: (text) => tokenizeWith(text, { words: true, bigrams: true }) },
]

const K = 5
const groups = ['zh', 'ja', 'en', 'mixed'] as const

function quality(candidate: Candidate) {
  // The store's FTS5 setup (migration 0003) on a private in-memory database.
  const db = new Database(':memory:')
  db.exec(`CREATE VIRTUAL TABLE docs USING fts5(terms, id UNINDEXED, tokenize="ascii tokenchars '_'")`)
  const insert = db.prepare('INSERT INTO docs (terms, id) VALUES (?, ?)')
  for (const [id, text] of Object.entries(DOCUMENTS)) insert.run(candidate.tokenize(text).map(encodeTerm).join(' '), id)
  const search = db.prepare('SELECT id, -bm25(docs) AS score FROM docs WHERE docs MATCH ? ORDER BY score DESC')
  const perGroup = new Map<string, { recall: number; rr: number; hit1: number; n: number }>()
  const misses: string[] = []
  const notFirst: string[] = []
  for (const [group, query, relevant] of QUERIES) {
    const queryTerms = [...new Set(candidate.tokenize(query))]
    const results = queryTerms.length === 0 ? [] : (search.all(queryTerms.map((term) => `"${encodeTerm(term)}"`).join(' OR ')) as { id: string; score: number }[])
    // Ties are broken against the relevant documents: a tie with a distractor is not a win.
    const pessimisticRank = (id: string): number => {
      const score = results.find((result) => String(result.id) === id)?.score
      if (score === undefined) return Infinity
      return results.filter((result) => result.score > score || (result.score === score && !relevant.includes(String(result.id)))).length
    }
    const ranks = relevant.map(pessimisticRank)
    const found = ranks.filter((rank) => rank < K).length
    const best = Math.min(...ranks)
    const firstRelevant = best === Infinity ? -1 : best
    const stats = perGroup.get(group) ?? { recall: 0, rr: 0, hit1: 0, n: 0 }
    stats.recall += found / relevant.length
    stats.rr += firstRelevant === -1 ? 0 : 1 / (firstRelevant + 1)
    stats.hit1 += firstRelevant === 0 ? 1 : 0
    stats.n++
    perGroup.set(group, stats)
    if (found < relevant.length) misses.push(query)
    else if (firstRelevant !== 0) notFirst.push(query)
  }
  const total = [...perGroup.values()].reduce((a, b) => ({ recall: a.recall + b.recall, rr: a.rr + b.rr, hit1: a.hit1 + b.hit1, n: a.n + b.n }))
  db.exec(`CREATE VIRTUAL TABLE vocab USING fts5vocab(docs, row)`)
  const termCount = db.prepare('SELECT count(*) FROM vocab').pluck().get() as number
  db.close()
  return { perGroup, total, misses, notFirst, terms: termCount }
}

function speed(candidate: Candidate) {
  // ~1 MB of text: the corpus repeated, so every script mix is represented.
  const texts = Object.values(DOCUMENTS)
  const batch: string[] = []
  let chars = 0
  while (chars < 1_000_000) {
    for (const text of texts) {
      batch.push(text)
      chars += text.length
    }
  }
  for (const text of batch.slice(0, 2_000)) candidate.tokenize(text) // warm-up
  // Median of five rounds: the machines this runs on are shared and noisy.
  const rounds: number[] = []
  let tokens = 0
  for (let round = 0; round < 5; round++) {
    tokens = 0
    const start = process.hrtime.bigint()
    for (const text of batch) tokens += candidate.tokenize(text).length
    rounds.push(Number(process.hrtime.bigint() - start) / 1e9)
  }
  const seconds = rounds.sort((a, b) => a - b)[2]!
  return { tokensPerSecond: tokens / seconds, charsPerSecond: chars / seconds, tokensPerChar: tokens / chars }
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`
const round = (x: number) => (x >= 1e6 ? `${(x / 1e6).toFixed(2)} M` : `${(x / 1e3).toFixed(0)} k`)

console.log(`Tokenizer benchmark: ${Object.keys(DOCUMENTS).length} documents, ${QUERIES.length} queries, recall@${K}; Node ${process.versions.node}, ICU ${process.versions.icu}\n`)
console.log(`| tokenizer | recall@${K} all | zh | ja | en | mixed | MRR | hit@1 | index terms | tokens/s | chars/s |`)
console.log('|---|---|---|---|---|---|---|---|---|---|---|')
const allMisses: string[] = []
const notFirst: string[] = []
for (const candidate of CANDIDATES) {
  const q = quality(candidate)
  const s = speed(candidate)
  const byGroup = groups.map((g) => {
    const stats = q.perGroup.get(g)!
    return pct(stats.recall / stats.n)
  })
  console.log(
    `| ${candidate.name} | ${pct(q.total.recall / q.total.n)} | ${byGroup.join(' | ')} | ${(q.total.rr / q.total.n).toFixed(3)} | ${pct(q.total.hit1 / q.total.n)} | ${q.terms} | ${round(s.tokensPerSecond)} | ${round(s.charsPerSecond)} |`,
  )
  allMisses.push(`- ${candidate.name}: ${q.misses.length ? q.misses.join(', ') : '(none)'}`)
  notFirst.push(`- ${candidate.name}: ${q.notFirst.length ? q.notFirst.join(', ') : '(none)'}`)
}
console.log(`\nQueries with a relevant document outside the top ${K}:`)
console.log(allMisses.join('\n'))
console.log('\nQueries found, but with an irrelevant document ranked above or tied with the best relevant one:')
console.log(notFirst.join('\n'))
