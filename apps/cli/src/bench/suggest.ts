/**
 * `dsh-memory bench suggest`: "did you mean" for a misspelt search term, over the bounded
 * vocabulary `dsh-memory search` and the memory panel build (`@dsh-memory/web`'s
 * `Vocabulary`: the most frequent terms of the newest memories, the store's tokenizer).
 *
 * The vocabulary comes from the deterministic bench corpus (src/bench/corpus.ts, English,
 * Chinese and Japanese memory sentences) plus the memories of the CJK paraphrase set. Typo'd
 * queries are made from its words with a seeded generator: a deleted, substituted or swapped
 * letter in Latin words, a substituted or missing character in Chinese and Japanese words;
 * a typo that is itself a vocabulary term is not a typo and is skipped. Each engine returns
 * its top three terms; the score is the share whose top three hold the intended word.
 *
 * Engines: a prefix scan of the vocabulary (the nearest thing to a suggestion that exists
 * today, which is nothing), MiniSearch's fuzzy search with every term indexed as a document
 * (boosted by its frequency), and a plain bounded-distance scan (Damerau / optimal string
 * alignment) over the same terms, the honest baseline. MiniSearch and the scan get the same
 * edit budget per term (`editBudget`).
 */
import { runInNewContext } from 'node:vm'
import { setFlagsFromString } from 'node:v8'
import { performance } from 'node:perf_hooks'
import MiniSearch from 'minisearch'
import { editBudget, SUGGEST_LIMITS, Vocabulary } from '@dsh-memory/web'
import { containsCjk } from '@dsh-memory/store/kit'
import type { Command } from 'commander'
import type { CliIO } from '../io.ts'
import { parseCount } from '../commands/records.ts'
import { memoryText, seededRandom } from './corpus.ts'
import { PARAPHRASE_PAIRS } from './cjk-pairs.ts'

/** How a query was misspelt. */
export type TypoKind = 'deletion' | 'substitution' | 'transposition' | 'cjk-substitution' | 'cjk-deletion'
export const TYPO_KINDS: readonly TypoKind[] = ['deletion', 'substitution', 'transposition', 'cjk-substitution', 'cjk-deletion']

export type EngineName = 'prefix' | 'minisearch' | 'scan'
export const SUGGEST_ENGINES: readonly EngineName[] = ['prefix', 'minisearch', 'scan']

/** One misspelt query and the word it stands for. */
export interface TypoQuery {
  readonly kind: TypoKind
  readonly typo: string
  readonly intended: string
}

/** One engine's figures. */
export interface EngineReport {
  /** Per typo kind and overall: queries, and how many had the intended word in the top three. */
  readonly hits: Record<TypoKind | 'all', { readonly queries: number; readonly top1: number; readonly top3: number }>
  readonly p50Ms: number
  readonly p95Ms: number
  /** Building the engine's structure from the term counts, ms. */
  readonly buildMs: number
  /** Heap the built structure holds, bytes (after a full collection on both sides). */
  readonly heapBytes: number
}

/** The report of {@link runSuggestBench}. */
export interface SuggestBenchReport {
  readonly memories: number
  readonly vocabulary: number
  readonly termCap: number
  /** Building the vocabulary every engine shares (tokenizing the corpus, keeping the top terms), ms. */
  readonly vocabularyBuildMs: number
  /** Heap the vocabulary holds, bytes. */
  readonly vocabularyHeapBytes: number
  readonly queries: number
  readonly seed: number
  readonly engines: Record<EngineName, EngineReport>
  /** A few queries each engine missed (for reading, not scoring). */
  readonly missed: Record<EngineName, readonly string[]>
}

/** Options of {@link runSuggestBench}. */
export interface SuggestBenchOptions {
  /** Corpus memories the vocabulary is built from (default {@link SUGGEST_LIMITS}.memories). */
  readonly memories?: number
  /** Typo'd queries (default 400). */
  readonly queries?: number
  readonly seed?: number
}

interface Engine {
  suggest(typo: string): string[]
}

/** Today's nearest thing: vocabulary terms starting with the longest prefix of the typo that starts any. */
function prefixEngine(vocabulary: Vocabulary): Engine {
  return {
    suggest: (typo) => {
      const chars = [...typo]
      for (let length = chars.length - 1; length >= 1; length--) {
        const found = vocabulary.startingWith(chars.slice(0, length).join(''), 3)
        if (found.length > 0) return found
      }
      return []
    },
  }
}

/** MiniSearch over the vocabulary: one document per term, boosted by how many memories hold it. */
function miniSearchEngine(vocabulary: Vocabulary): Engine {
  const index = new MiniSearch<{ id: number; term: string }>({ fields: ['term'], tokenize: (text) => [text], processTerm: (term) => term })
  index.addAll(vocabulary.terms.map((term, id) => ({ id, term })))
  const boost = vocabulary.terms.map((term) => 1 + Math.log(vocabulary.frequency(term)))
  return {
    suggest: (typo) =>
      index
        .search(typo, { fuzzy: editBudget(typo) || false, prefix: false, boostDocument: (id) => boost[id as number]! })
        .slice(0, 3)
        .map((result) => vocabulary.terms[result.id as number]!),
  }
}

const scanEngine = (vocabulary: Vocabulary): Engine => ({ suggest: (typo) => vocabulary.nearest(typo, 3) })

const BUILDERS: Record<EngineName, (vocabulary: Vocabulary) => Engine> = { prefix: prefixEngine, minisearch: miniSearchEngine, scan: scanEngine }

/** The corpus: bench memory sentences plus the CJK paraphrase memories. */
export function suggestCorpus(memories: number, seed: number): string[] {
  const random = seededRandom(seed)
  const texts = Array.from({ length: memories }, (_, index) => memoryText(random, index))
  return [...texts, ...PARAPHRASE_PAIRS.map((pair) => pair.memory)]
}

const LETTERS = 'abcdefghijklmnopqrstuvwxyz'

/** Misspell `word` the way `kind` says; `undefined` when the kind does not apply. */
function misspell(word: string, kind: TypoKind, random: () => number, cjkChars: readonly string[]): string | undefined {
  const chars = [...word]
  const at = Math.floor(random() * chars.length)
  switch (kind) {
    case 'deletion':
    case 'cjk-deletion':
      return [...chars.slice(0, at), ...chars.slice(at + 1)].join('')
    case 'substitution': {
      const letters = LETTERS.replace(chars[at]!, '')
      return [...chars.slice(0, at), letters[Math.floor(random() * letters.length)]!, ...chars.slice(at + 1)].join('')
    }
    case 'cjk-substitution': {
      const other = cjkChars[Math.floor(random() * cjkChars.length)]!
      return other === chars[at] ? undefined : [...chars.slice(0, at), other, ...chars.slice(at + 1)].join('')
    }
    case 'transposition': {
      const i = Math.min(at, chars.length - 2)
      if (chars[i] === chars[i + 1]) return undefined
      return [...chars.slice(0, i), chars[i + 1]!, chars[i]!, ...chars.slice(i + 2)].join('')
    }
  }
}

/**
 * Typo'd queries from the vocabulary's words: Latin words of five or more letters (no digits),
 * CJK terms of three or more characters (two-character ones are mostly the index's bigrams,
 * not words a user types). Kinds alternate so each gets about the same share.
 */
export function typoQueries(vocabulary: Vocabulary, count: number, seed: number): TypoQuery[] {
  const random = seededRandom(seed)
  const latin = vocabulary.terms.filter((term) => /^[a-z]{5,}$/.test(term))
  const cjk = vocabulary.terms.filter((term) => containsCjk(term) && [...term].length >= 3)
  const cjkChars = [...new Set(cjk.flatMap((term) => [...term]))]
  const queries: TypoQuery[] = []
  for (let attempt = 0; queries.length < count && attempt < count * 20; attempt++) {
    const kind = TYPO_KINDS[attempt % TYPO_KINDS.length]!
    const words = kind.startsWith('cjk') ? cjk : latin
    if (words.length === 0) continue
    const intended = words[Math.floor(random() * words.length)]!
    const typo = misspell(intended, kind, random, cjkChars)
    if (typo === undefined || typo === intended || vocabulary.has(typo) || editBudget(typo) === 0) continue
    queries.push({ kind, typo, intended })
  }
  return queries
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0
}

/** A full collection, so heap figures measure what is held (V8's `gc`, enabled for this process). */
function collect(): void {
  setFlagsFromString('--expose-gc')
  ;(runInNewContext('gc') as () => void)()
}

/** Copies built and held to measure heap: one structure's few KiB drown in the noise of a collection. */
const HEAP_COPIES = 5

/** Build something; the time of one build and the heap one copy holds (mean over {@link HEAP_COPIES} held at once). */
function built<T>(build: () => T): { value: T; ms: number; heapBytes: number } {
  const started = performance.now()
  const value = build()
  const ms = performance.now() - started
  collect()
  const heapBefore = process.memoryUsage().heapUsed
  const copies = Array.from({ length: HEAP_COPIES }, build)
  collect()
  const heapBytes = Math.max(0, process.memoryUsage().heapUsed - heapBefore) / copies.length
  return { value, ms, heapBytes }
}

function measure(name: EngineName, vocabulary: Vocabulary, queries: readonly TypoQuery[]): { report: EngineReport; missed: string[] } {
  const { value: engine, ms: buildMs, heapBytes } = built(() => BUILDERS[name](vocabulary))
  const hits = Object.fromEntries([...TYPO_KINDS, 'all'].map((kind) => [kind, { queries: 0, top1: 0, top3: 0 }])) as Record<TypoKind | 'all', { queries: number; top1: number; top3: number }>
  const times: number[] = []
  const missed: string[] = []
  for (const query of queries) {
    const started = performance.now()
    const suggestions = engine.suggest(query.typo)
    times.push(performance.now() - started)
    for (const tally of [hits[query.kind], hits.all]) {
      tally.queries++
      if (suggestions[0] === query.intended) tally.top1++
      if (suggestions.includes(query.intended)) tally.top3++
    }
    if (!suggestions.includes(query.intended) && missed.length < 8) missed.push(`${query.typo} → ${query.intended} (got ${suggestions.join(', ') || 'nothing'})`)
  }
  return { report: { hits, p50Ms: percentile(times, 50), p95Ms: percentile(times, 95), buildMs, heapBytes }, missed }
}

/** Run the bench. The vocabulary build is the one `search` uses; each engine is built on it. */
export function runSuggestBench(options: SuggestBenchOptions = {}): SuggestBenchReport {
  const memories = options.memories ?? SUGGEST_LIMITS.memories
  const seed = options.seed ?? 17
  const corpus = suggestCorpus(memories, seed)
  const buildStart = performance.now()
  const vocabulary = Vocabulary.fromTexts(corpus, SUGGEST_LIMITS.terms)
  const vocabularyBuildMs = performance.now() - buildStart
  // What a vocabulary holds once built (its terms, counts and lookup tables), from the kept counts.
  const counts = new Map(vocabulary.terms.map((term) => [term, vocabulary.frequency(term)]))
  const { heapBytes: vocabularyHeapBytes } = built(() => Vocabulary.fromCounts(counts, SUGGEST_LIMITS.terms))
  const queries = typoQueries(vocabulary, options.queries ?? 400, seed)
  const engines = {} as Record<EngineName, EngineReport>
  const missed = {} as Record<EngineName, string[]>
  for (const name of SUGGEST_ENGINES) ({ report: engines[name], missed: missed[name] } = measure(name, vocabulary, queries))
  return { memories, vocabulary: vocabulary.size, termCap: SUGGEST_LIMITS.terms, vocabularyBuildMs, vocabularyHeapBytes, queries: queries.length, seed, engines, missed }
}

const share = (part: number, whole: number): string => (whole === 0 ? '—' : `${((100 * part) / whole).toFixed(1)} %`)

/** A plain-text table: per engine and typo kind, top-1 and top-3 shares; latency, build, heap. */
export function formatSuggestReport(report: SuggestBenchReport): string {
  const lines = [
    `did-you-mean over ${report.vocabulary} vocabulary terms (cap ${report.termCap}) of ${report.memories} corpus memories + ${PARAPHRASE_PAIRS.length} CJK memories; ${report.queries} typo queries (seed ${report.seed})`,
    'today: `search` suggests nothing (0 % of typo queries)',
    '',
    `engine     ${[...TYPO_KINDS, 'all'].map((kind) => kind.padStart(17)).join('')}`,
  ]
  for (const name of SUGGEST_ENGINES) {
    const { hits } = report.engines[name]
    for (const [label, field] of [['top-3', 'top3'], ['top-1', 'top1']] as const) {
      lines.push(`${(label === 'top-3' ? name : '').padEnd(10)} ${[...TYPO_KINDS, 'all' as const].map((kind) => share(hits[kind][field], hits[kind].queries).padStart(17)).join('')}   (${label})`)
    }
  }
  lines.push('', `vocabulary (shared): build ${report.vocabularyBuildMs.toFixed(0)} ms, heap ${(report.vocabularyHeapBytes / 1024).toFixed(0)} KiB`)
  lines.push('engine      p50 ms   p95 ms   build ms   heap KiB (on top of the vocabulary)')
  for (const name of SUGGEST_ENGINES) {
    const e = report.engines[name]
    lines.push(`${name.padEnd(11)} ${e.p50Ms.toFixed(3).padStart(6)}   ${e.p95Ms.toFixed(3).padStart(6)}   ${e.buildMs.toFixed(1).padStart(8)}   ${(e.heapBytes / 1024).toFixed(0).padStart(8)}`)
  }
  lines.push('')
  for (const name of SUGGEST_ENGINES) lines.push(`missed by ${name} (first ${report.missed[name].length}): ${report.missed[name].join('; ') || 'none'}`)
  return lines.join('\n')
}

/** Register `bench suggest` on the `bench` command. */
export function registerSuggestBench(bench: Command, io: CliIO): void {
  bench
    .command('suggest')
    .description('"Did you mean" for misspelt search terms over the bounded memory vocabulary: a prefix scan, MiniSearch fuzzy and a bounded edit-distance scan (top-3 share per typo kind, latency, build time, heap).')
    .option('--memories <n>', 'corpus memories the vocabulary is built from', String(SUGGEST_LIMITS.memories))
    .option('--queries <n>', 'typo queries', '400')
    .option('--seed <n>', 'seed of the corpus and the typos', '17')
    .option('--json', 'print the report as one JSON object and nothing else on stdout')
    .action((options: { memories: string; queries: string; seed: string; json?: boolean }) => {
      const report = runSuggestBench({
        memories: parseCount('--memories', options.memories, 1_000_000),
        queries: parseCount('--queries', options.queries, 100_000),
        seed: parseCount('--seed', options.seed),
      })
      io.stdout.write(options.json ? `${JSON.stringify(report)}\n` : `${formatSuggestReport(report)}\n`)
    })
}
