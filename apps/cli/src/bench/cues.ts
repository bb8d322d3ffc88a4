/**
 * `dsh-memory bench cues`: the cue bank's keyword matcher against a MiniSearch index over the
 * same partition, on a labelled set (src/bench/cue-set.ts) filled up to the partition's cap
 * with distractor cues from the bench corpus. Both sides get the same cues, formed from each
 * exchange with the cue bank's own `turnKeywords`, and the same CJK-aware tokenizer (the
 * store's): only the matcher differs.
 *
 * Quality: a query's top woken cue is its topic (hit@1), its topic is among the woken ones
 * (hit@k), a positive query woke another topic first (wrong top), a negative query woke
 * anything (false wake). Time: per match at the cap, and MiniSearch's index build.
 */
import MiniSearch from 'minisearch'
import { DEFAULT_CUE_BANK_OPTIONS, extractKeywords, rankCues, turnKeywords, type Cue } from '@dsh-memory/cue-bank'
import { tokenize } from '@dsh-memory/store'
import { messageText, seededRandom } from './corpus.ts'
import { CUE_QUERIES, CUE_TOPICS, type LabelledQuery, type QueryKind } from './cue-set.ts'

/** A matcher under test: the cue ids it wakes for a message, best first. */
interface Matcher {
  wake(text: string): string[]
}

/** Quality of one matcher on one kind of query. */
export interface CueQuality {
  readonly queries: number
  readonly hitAt1: number
  readonly hitAtK: number
  readonly wrongTop: number
  readonly falseWakes: number
}

/** Figures of one run (one seed of distractors). */
export interface CueRunReport {
  readonly seed: number
  readonly cues: number
  readonly quality: Record<MatcherName, Record<QueryKind | 'all', CueQuality>>
  /** Queries whose top woken cue was not their topic (or, for a negative, that woke one). */
  readonly misses: Record<MatcherName, string[]>
  /** Mean time of one match at the cap, ms. */
  readonly matchMs: Record<MatcherName, number>
  /** Building the MiniSearch index over the partition, ms. */
  readonly indexBuildMs: number
}

export type MatcherName = 'keyword' | 'minisearch'
export const CUE_MATCHERS: readonly MatcherName[] = ['keyword', 'minisearch']

export interface CueBenchOptions {
  /** Runs, each with other distractors (seed 1..runs). */
  readonly runs: number
  /** Cues in the partition (the cue bank's `maxTopics`). */
  readonly cap?: number
  /** Timed repetitions of the whole query set per run. */
  readonly repeat?: number
  /** MiniSearch: share of the query's distinct tokens a cue must match (its BM25 scores are unbounded). */
  readonly minCoverage?: number
}

const NOW = Date.UTC(2026, 0, 15)
const DAY = 86_400_000
const { inject, extract, decay, maxTopics } = DEFAULT_CUE_BANK_OPTIONS

function cue(id: string, user: string, assistant: string, ageDays: number): Cue {
  const at = NOW - ageDays * DAY
  return {
    id,
    partition: 'workspace:/bench',
    level: 'conversation',
    sessionId: `s-${id}`,
    turn: 1,
    summary: user,
    detail: `User: ${user}\nAssistant: ${assistant}`,
    keywords: turnKeywords(user, assistant, extract.maxKeywordsPerTurn, extract.keywordMinLen),
    dimensions: { trigger: 'keywords', perspective: 'conversation' },
    refSessions: [`s-${id}`],
    sourceMessageIds: [],
    embedding: null,
    embeddingModel: null,
    createdAt: at,
    lastMentionedAt: at,
    lastTouchedAt: at,
    hitCount: 0,
  }
}

/** The labelled topics plus distractors up to `cap`, ages spread over two weeks. */
export function benchCues(seed: number, cap: number): Cue[] {
  const random = seededRandom(seed)
  const cues = CUE_TOPICS.map((topic, index) => cue(topic.id, topic.user, topic.assistant, index % 14))
  for (let i = cues.length; i < cap; i++) cues.push(cue(`d${i}`, messageText(random, 'user', i), messageText(random, 'assistant', i), Math.floor(random() * 14)))
  return cues
}

/** Today's matcher, exactly as the cue bank's wake calls it in keyword mode. */
function keywordMatcher(cues: readonly Cue[]): Matcher {
  return {
    wake: (text) =>
      rankCues({
        query: extractKeywords(text, { max: DEFAULT_CUE_BANK_OPTIONS.topic.maxKeywords, minLength: extract.keywordMinLen }),
        cues,
        now: NOW,
        mode: 'keyword',
        maxCues: inject.maxCues,
        minScore: inject.minScore,
        minVectorScore: inject.minVectorScore,
        halfLifeDays: decay.halfLifeDays,
      }).map((ranked) => ranked.cue.id),
  }
}

const LATIN = /^[a-z0-9_\-.]+$/
const KINDS: readonly (QueryKind | 'all')[] = ['direct', 'paraphrase', 'idiom', 'mixed', 'typo', 'negative', 'all']

/**
 * MiniSearch over the cues' keywords and summary, tokenized by the store's CJK-aware
 * tokenizer (words + CJK bigrams), with typo tolerance and prefix search for Latin terms.
 */
function miniSearchMatcher(cues: readonly Cue[], minCoverage: number): Matcher {
  const index = new MiniSearch<{ id: string; keywords: string; summary: string }>({
    fields: ['keywords', 'summary'],
    tokenize: (text) => tokenize(text),
    processTerm: (term) => term,
    searchOptions: {
      boost: { keywords: 2 },
      fuzzy: (term) => (LATIN.test(term) && term.length >= 5 ? 0.2 : false),
      prefix: (term) => LATIN.test(term) && term.length >= 4,
      combineWith: 'OR',
    },
  })
  index.addAll(cues.map((c) => ({ id: c.id, keywords: c.keywords.map((k) => k.word).join(' '), summary: c.summary })))
  return {
    wake: (text) => {
      const terms = new Set(tokenize(text))
      if (terms.size === 0) return []
      return index
        .search(text)
        .filter((result) => result.queryTerms.length / terms.size >= minCoverage)
        .slice(0, inject.maxCues)
        .map((result) => String(result.id))
    },
  }
}

function emptyQuality(): CueQuality {
  return { queries: 0, hitAt1: 0, hitAtK: 0, wrongTop: 0, falseWakes: 0 }
}

function score(matcher: Matcher, queries: readonly LabelledQuery[]): { quality: Record<QueryKind | 'all', CueQuality>; misses: string[] } {
  const quality = Object.fromEntries(KINDS.map((kind) => [kind, emptyQuality()])) as Record<QueryKind | 'all', { -readonly [K in keyof CueQuality]: number }>
  const misses: string[] = []
  for (const query of queries) {
    const woken = matcher.wake(query.text)
    if (query.expect === null ? woken.length > 0 : woken[0] !== query.expect) misses.push(query.text)
    for (const q of [quality[query.kind], quality.all]) {
      q.queries++
      if (query.expect === null) {
        if (woken.length > 0) q.falseWakes++
        continue
      }
      if (woken[0] === query.expect) q.hitAt1++
      else if (woken.length > 0) q.wrongTop++
      if (woken.includes(query.expect)) q.hitAtK++
    }
  }
  return { quality, misses }
}

function meanMs(matcher: Matcher, repeat: number): number {
  const start = performance.now()
  for (let r = 0; r < repeat; r++) for (const query of CUE_QUERIES) matcher.wake(query.text)
  return (performance.now() - start) / (repeat * CUE_QUERIES.length)
}

/** Run the bench: one report per seed. */
export function runCueBench(options: CueBenchOptions): CueRunReport[] {
  const cap = options.cap ?? maxTopics
  const repeat = options.repeat ?? 20
  const minCoverage = options.minCoverage ?? 0.2
  const reports: CueRunReport[] = []
  for (let seed = 1; seed <= options.runs; seed++) {
    const cues = benchCues(seed, cap)
    const buildStart = performance.now()
    for (let r = 0; r < repeat; r++) miniSearchMatcher(cues, minCoverage)
    const indexBuildMs = (performance.now() - buildStart) / repeat
    const matchers: Record<MatcherName, Matcher> = { keyword: keywordMatcher(cues), minisearch: miniSearchMatcher(cues, minCoverage) }
    const keyword = score(matchers.keyword, CUE_QUERIES)
    const minisearch = score(matchers.minisearch, CUE_QUERIES)
    reports.push({
      seed,
      cues: cues.length,
      quality: { keyword: keyword.quality, minisearch: minisearch.quality },
      misses: { keyword: keyword.misses, minisearch: minisearch.misses },
      matchMs: { keyword: meanMs(matchers.keyword, repeat), minisearch: meanMs(matchers.minisearch, repeat) },
      indexBuildMs,
    })
  }
  return reports
}

function spread(values: readonly number[], digits: number): string {
  const min = Math.min(...values)
  const max = Math.max(...values)
  return min.toFixed(digits) === max.toFixed(digits) ? min.toFixed(digits) : `${min.toFixed(digits)}–${max.toFixed(digits)}`
}

/** A plain-text table: per kind of query, each matcher's figures (min–max over the runs). */
export function formatCueReport(reports: readonly CueRunReport[]): string {
  const first = reports[0]
  if (!first) return 'no runs'
  const lines = [`cue matching: ${first.cues} cues in the partition, ${CUE_QUERIES.length} labelled queries, ${reports.length} run(s) (min–max)`, '']
  lines.push('kind        queries  matcher     hit@1  hit@k  wrong top  false wakes')
  for (const kind of KINDS) {
    for (const name of CUE_MATCHERS) {
      const q = (field: keyof CueQuality) => spread(reports.map((r) => r.quality[name][kind][field]), 0)
      lines.push(`${kind.padEnd(11)} ${q('queries').padStart(7)}  ${name.padEnd(10)} ${q('hitAt1').padStart(6)} ${q('hitAtK').padStart(6)} ${q('wrongTop').padStart(10)} ${q('falseWakes').padStart(12)}`)
    }
  }
  lines.push('')
  for (const name of CUE_MATCHERS) lines.push(`time per match (${name}): ${spread(reports.map((r) => r.matchMs[name]), 3)} ms`)
  lines.push(`minisearch index build over the partition: ${spread(reports.map((r) => r.indexBuildMs), 3)} ms`)
  for (const name of CUE_MATCHERS) {
    const missed = [...new Set(reports.flatMap((r) => r.misses[name]))]
    lines.push(`missed by ${name} (any run): ${missed.length === 0 ? 'none' : missed.map((text) => JSON.stringify(text)).join(', ')}`)
  }
  return lines.join('\n')
}
