/**
 * `dsh-memory bench cjk`: the Chinese / Japanese paraphrase benchmark. The memories of the
 * hand-written pairs (cjk-pairs.ts) are stored among thousands of seeded distractor memories
 * (colleagues' and friends' tastes, plans and work notes in Chinese, Japanese and English, so
 * near misses exist), then every query runs through three paths of the real code:
 * - `store`: the store's own full-text search (`search.memories`, what `dsh-memory search` uses);
 * - `recall`: the recall ranking (`RecallEngine.searchMemories`, the `memory_search` tool);
 * - `injection`: the automatic recall (`RecallInjector.prepare` with the default budgets and
 *   threshold), where every injected memory other than the pair's own is a false match.
 * Unanswerable queries (no right memory stored) count the false matches alone.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openMemoryStore } from '@dsh-memory/store'
import { createEmbedder, type EmbeddingOptions, RecallEngine, RecallInjector, resolveRecallOptions } from '@dsh-memory/recall'
import { memoryText, seededRandom } from './corpus.ts'
import { embedTexts } from './embed.ts'
import { PARAPHRASE_PAIRS, type ParaphrasePair, UNANSWERABLE_QUERIES } from './cjk-pairs.ts'

/** Cut-offs reported for the search paths. */
export const CJK_KS = [1, 3, 10] as const

/** Figures of one kind of pair (or all of them). */
export interface CjkKindMetrics {
  readonly pairs: number
  /** recall@k of the store's full-text search (keys "1", "3", "10"). */
  readonly store: Record<string, number>
  /** recall@k of the recall ranking. */
  readonly recall: Record<string, number>
  /** Share of pairs whose memory the automatic recall injected. */
  readonly injected: number
  /** Wrong memories injected per query (false matches). */
  readonly false_per_query: number
  /** Share of queries with at least one wrong memory injected. */
  readonly false_query_rate: number
}

/** The `--json` object. */
export interface CjkReport {
  readonly distractors: number
  readonly overall: CjkKindMetrics
  readonly by_kind: Record<string, CjkKindMetrics>
  readonly unanswerable: { readonly queries: number; readonly injected_queries: number; readonly false_per_query: number }
  /** With an embedder only: the key (`model@dimensions`) of the memories' vectors, and the `recall.hybridThreshold` the injection ran with. */
  readonly embedding_model?: string
  readonly hybrid_threshold?: number
}

const PEOPLE_ZH = ['同事小王', '朋友阿杰', '邻居张阿姨', '表妹', '老板', '室友', '大学同学陈伟', '客户刘总', '组长', '健身教练']
const VERBS_ZH = ['喜欢', '常去', '最近买了', '打算学', '不太喜欢', '推荐过', '提到过', '每周都去', '刚换了', '想试试']
const OBJECTS_ZH = ['红茶', '绿茶', '火锅', '川菜', '羽毛球', '网球', '登山', '摄影课', '日语', '二手车', '新手机', '上海', '成都', '东京', '健身房', '咖啡馆', '书店', '钢琴', '吉他', '猫粮', '跑鞋', '拉面', '海鲜', '电动车', '瑜伽']
const TAILS_ZH = ['，上周聊天时说的。', '，说效果不错。', '，周末会去。', '，价格有点贵。', '，还在考虑。', '。', '，已经坚持半年了。', '，让大家一起参加。']
const PEOPLE_JA = ['同僚の山田さん', '友人の鈴木さん', '上司の高橋さん', '隣の田中さん', '妹', '後輩の伊藤さん', '取引先の中村さん', '大学時代の友達']
const OBJECTS_JA = ['紅茶', '緑茶', 'カレー', '焼き鳥', 'テニス', 'ゴルフ', '写真', '英会話', '新しい車', '京都', '福岡', 'ジム', '本屋', 'ギター', 'ワイン', 'ヨガ', '温泉', 'キャンプ']
const PREDICATES_JA = ['が好きらしい。', 'に行ったそうだ。', 'を始めたと言っていた。', 'を勧めてくれた。', 'は苦手だと言う。', 'について話していた。', 'に夢中だ。', 'を来月試すつもりだ。']

function pick<T>(random: () => number, list: readonly T[]): T {
  return list[Math.floor(random() * list.length)]!
}

/**
 * `count` deterministic distractor memories: about a third other people's tastes and plans in
 * Chinese, a sixth in Japanese, the rest the scale benchmark's mixed work notes.
 */
export function cjkDistractors(count: number, seed = 20_261_201): string[] {
  const random = seededRandom(seed)
  const out: string[] = []
  for (let index = 0; index < count; index++) {
    const roll = random()
    if (roll < 0.35) out.push(`${pick(random, PEOPLE_ZH)}${pick(random, VERBS_ZH)}${pick(random, OBJECTS_ZH)}${pick(random, TAILS_ZH)}`)
    else if (roll < 0.5) out.push(`${pick(random, PEOPLE_JA)}は${pick(random, OBJECTS_JA)}${pick(random, PREDICATES_JA)}`)
    else out.push(memoryText(random, index))
  }
  return out
}

interface KindTally {
  pairs: number
  store: number[]
  recall: number[]
  injected: number
  falseMatches: number
  falseQueries: number
}

const newTally = (): KindTally => ({ pairs: 0, store: CJK_KS.map(() => 0), recall: CJK_KS.map(() => 0), injected: 0, falseMatches: 0, falseQueries: 0 })

function metricsOf(tally: KindTally): CjkKindMetrics {
  const share = (part: number) => (tally.pairs === 0 ? 0 : part / tally.pairs)
  const atK = (hits: number[]) => Object.fromEntries(CJK_KS.map((k, i) => [String(k), share(hits[i]!)]))
  return {
    pairs: tally.pairs,
    store: atK(tally.store),
    recall: atK(tally.recall),
    injected: share(tally.injected),
    false_per_query: share(tally.falseMatches),
    false_query_rate: share(tally.falseQueries),
  }
}

/** Options of {@link runCjkBench}. */
export interface CjkBenchOptions {
  /** Distractor memories (default 3000). */
  readonly distractors?: number
  /** The pairs (default: the shipped set). */
  readonly pairs?: readonly ParaphrasePair[]
  /** Directory for the temporary store (default: a fresh OS temp dir, removed afterwards). */
  readonly workDir?: string
  /**
   * Recall's `embedding` options (a local OpenAI-compatible server): every memory gets its vector
   * first, and the recall ranking and the injection run hybrid, as the plugin does with
   * `recall.strategy: hybrid`. The store's full-text search is the same either way.
   */
  readonly embedding?: EmbeddingOptions
  /** `recall.hybridThreshold` with `embedding` (default: recall's default). */
  readonly hybridThreshold?: number
}

const WORKSPACE = '/bench/cjk'
const NOW = Date.UTC(2026, 0, 15)

/** Build the store, run every query through the three paths and tally the figures. */
export async function runCjkBench(options: CjkBenchOptions = {}): Promise<CjkReport> {
  const pairs = options.pairs ?? PARAPHRASE_PAIRS
  const distractors = cjkDistractors(options.distractors ?? 3000)
  const embedding = options.embedding
  const recallOptions = resolveRecallOptions(
    embedding ? { recall: { strategy: 'hybrid', ...(options.hybridThreshold === undefined ? {} : { hybridThreshold: options.hybridThreshold }) }, embedding: { ...embedding, enabled: true } } : {},
  )
  const embedder = embedding ? createEmbedder(recallOptions.embedding) : null
  const dir = mkdtempSync(join(options.workDir ?? tmpdir(), 'dsh-memory-cjk-'))
  const store = openMemoryStore({ path: join(dir, 'memory.db') })
  try {
    const targets: string[] = []
    const stored: { id: string; text: string }[] = []
    await store.transaction(async (tx) => {
      const add = async (text: string) => (await tx.memories.add({ kind: 'fact', text, scope: 'workspace', workspace: WORKSPACE, createdAt: NOW - 86_400_000 })).id
      // Distractors first and targets interleaved after them: ids never hint at the answer.
      for (const text of distractors) stored.push({ id: await add(text), text })
      for (const { memory } of pairs) {
        targets.push(await add(memory))
        stored.push({ id: targets.at(-1)!, text: memory })
      }
    })
    if (embedder) {
      // Every memory's vector first, as recall's backfill or `dsh-memory reembed` leaves a store.
      const vectors = await embedTexts(embedder, stored.map((memory) => memory.text))
      await store.transaction(async (tx) => {
        for (const memory of stored) {
          const vector = vectors.get(memory.text)
          if (vector) await tx.memories.update(memory.id, { embedding: vector, embeddingModel: embedder.modelKey }, { actor: 'bench' })
        }
      })
    }
    const engine = new RecallEngine(store, recallOptions, { now: () => NOW, embedder })
    const injector = new RecallInjector(engine, { now: () => NOW })
    const inject = async (query: string, session: string) =>
      (await injector.prepare({ sessionId: session, workspace: WORKSPACE }, [{ role: 'user', source: { kind: 'user' }, content: [{ type: 'text', text: query }] }], [])).plan?.memoryIds ?? []

    const overall = newTally()
    const byKind = new Map<string, KindTally>()
    for (const [index, { kind, query }] of pairs.entries()) {
      const target = targets[index]!
      const storeIds = (await store.search.memories(query, { workspace: WORKSPACE, limit: 10 })).map((hit) => hit.memory.id)
      const recallIds = (await engine.searchMemories(query, { sessionId: `cjk-${index}`, workspace: WORKSPACE }, { limit: 10 })).map((scored) => scored.memory.id)
      const injected = await inject(query, `cjk-${index}`)
      const wrong = injected.filter((id) => id !== target).length
      const tally = byKind.get(kind) ?? newTally()
      byKind.set(kind, tally)
      for (const t of [overall, tally]) {
        t.pairs++
        CJK_KS.forEach((k, i) => {
          if (storeIds.slice(0, k).includes(target)) t.store[i]!++
          if (recallIds.slice(0, k).includes(target)) t.recall[i]!++
        })
        if (injected.includes(target)) t.injected++
        t.falseMatches += wrong
        if (wrong > 0) t.falseQueries++
      }
    }
    let injectedQueries = 0
    let falseMatches = 0
    for (const [index, query] of UNANSWERABLE_QUERIES.entries()) {
      const injected = await inject(query, `cjk-none-${index}`)
      if (injected.length > 0) injectedQueries++
      falseMatches += injected.length
    }
    const by_kind: Record<string, CjkKindMetrics> = {}
    for (const [kind, tally] of byKind) by_kind[kind] = metricsOf(tally)
    return {
      distractors: distractors.length,
      overall: metricsOf(overall),
      by_kind,
      unanswerable: { queries: UNANSWERABLE_QUERIES.length, injected_queries: injectedQueries, false_per_query: UNANSWERABLE_QUERIES.length === 0 ? 0 : falseMatches / UNANSWERABLE_QUERIES.length },
      ...(embedder ? { embedding_model: embedder.modelKey, hybrid_threshold: recallOptions.recall.hybridThreshold } : {}),
    }
  } finally {
    await embedder?.close?.()
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

/** A plain-text table of a report. */
export function formatCjkReport(report: CjkReport): string {
  const pct = (value: number) => `${(value * 100).toFixed(1)}%`.padStart(9)
  const atK = (values: Record<string, number>) => CJK_KS.map((k) => pct(values[String(k)]!)).join('')
  const lines = [
    `CJK paraphrase set: ${report.overall.pairs} pairs among ${report.distractors} distractor memories${report.embedding_model ? ` (hybrid with ${report.embedding_model}, hybrid threshold ${report.hybrid_threshold})` : ''}`,
    `  ${'kind'.padEnd(18)}${['store@1', '@3', '@10', 'recall@1', '@3', '@10', 'injected', 'false/q', 'false q'].map((label) => label.padStart(9)).join('')}`,
  ]
  const row = (label: string, m: CjkKindMetrics) =>
    `  ${label.padEnd(18)}${atK(m.store)}${atK(m.recall)}${pct(m.injected)}${m.false_per_query.toFixed(2).padStart(9)}${pct(m.false_query_rate)}`
  lines.push(row('overall', report.overall))
  for (const [kind, m] of Object.entries(report.by_kind)) lines.push(row(`${kind} (${m.pairs})`, m))
  const { queries, injected_queries, false_per_query } = report.unanswerable
  lines.push(`  unanswerable queries: ${injected_queries} of ${queries} got an injection (${false_per_query.toFixed(2)} wrong memories per query)`)
  lines.push('  (store = the store\'s full-text search; recall = the recall ranking (memory_search); injected = the automatic recall with the default budgets and threshold;')
  lines.push('   false/q = wrong memories injected per query; false q = share of queries with at least one wrong memory injected)')
  return lines.join('\n')
}
