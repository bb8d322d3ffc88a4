/**
 * `dsh-memory bench palace`: search within one workspace's memory-palace archive, the palace's
 * own index (its tables + MiniSearch over them) against what it replaced (the archive indexed
 * as fake L0 conversations and searched with the store's FTS5).
 *
 * Each run writes a real archive to disk (a seeded mix of English, Chinese, Japanese and mixed
 * turns, tool output included, with labelled facts planted in a few turns), indexes it both
 * ways in real stores, and asks a labelled query set: exact keywords, CJK words, mixed text, a
 * prefix, and misspellings. Quality is recall@k and MRR of the ranked turns; time is the index
 * build (writing the rows, loading the in-memory index) and the per-query lookup of each
 * engine (FTS5 in SQLite; MiniSearch in memory, as `palace_search` asks it once its index is
 * loaded). Several runs (other seeds) give the spread.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { ArchiveIndex, buildTurns, PalaceWorkspace, parseQuery, planArchive, resolvePalaceOptions, type SessionEventLike } from '@dsh-memory/palace'
import { openMemoryStore, type MemoryStore } from '@dsh-memory/store'
import type { Command } from 'commander'
import type { CliIO } from '../io.ts'
import { parseCount } from '../commands/records.ts'

/** Options of {@link runPalaceBench}. */
export interface PalaceBenchOptions {
  /** Archived turns per run (default 600). */
  readonly turns?: number
  /** Runs, each with its own seed (default 3). */
  readonly runs?: number
  /** Ranks scored (default [1, 5]). */
  readonly ks?: readonly number[]
  readonly log?: (line: string) => void
}

/** One labelled query: the facts it must find. */
interface LabelledQuery {
  readonly kind: 'exact' | 'cjk' | 'mixed' | 'prefix' | 'typo'
  readonly query: string
  readonly fact: string
}

/** Facts planted in a few turns each; the query set asks for them. */
const FACTS: Record<string, string> = {
  pg: 'We moved the PostgreSQL migration window to Saturday 02:00 after the load test.',
  rollback: 'The rollback window for the billing release is 42 minutes, agreed with ops.',
  cert: 'The TLS certificate expiry on the gateway is 2027-03-14; renew it a week before.',
  k8s: 'Kubernetes node pool upgrade is blocked by the ingress controller version.',
  zhDb: '我们决定周六凌晨进行数据库迁移，回滚预案由小王负责。',
  zhCodename: '发布代号定为蓝鲸，对外不要提。',
  jaOffice: '東京のオフィス移転は来月で、新しい住所は渋谷です。',
  jaReview: 'コードレビューは毎週月曜日の午前に行います。',
  mixed: 'the launch codename is 蓝鲸-Orion and the freeze starts Friday',
  mixedJa: 'Vitest でテストを書く方針、CI は GitHub Actions のまま。',
  deploy: 'The deployment of the orders service failed because the signing key had expired.',
}

const QUERIES: readonly LabelledQuery[] = [
  { kind: 'exact', query: 'PostgreSQL migration window', fact: 'pg' },
  { kind: 'exact', query: 'rollback window billing', fact: 'rollback' },
  { kind: 'exact', query: 'certificate expiry gateway', fact: 'cert' },
  { kind: 'exact', query: 'ingress controller', fact: 'k8s' },
  { kind: 'cjk', query: '数据库迁移', fact: 'zhDb' },
  { kind: 'cjk', query: '发布代号', fact: 'zhCodename' },
  { kind: 'cjk', query: 'オフィス移転', fact: 'jaOffice' },
  { kind: 'cjk', query: 'コードレビュー', fact: 'jaReview' },
  { kind: 'mixed', query: '蓝鲸 Orion', fact: 'mixed' },
  { kind: 'mixed', query: 'Vitest テスト', fact: 'mixedJa' },
  { kind: 'prefix', query: 'deploy signing', fact: 'deploy' },
  { kind: 'typo', query: 'PostgreSQL migraton windw', fact: 'pg' },
  { kind: 'typo', query: 'rollbak window', fact: 'rollback' },
  { kind: 'typo', query: 'certficate expirey', fact: 'cert' },
  { kind: 'typo', query: 'kubernets ingres', fact: 'k8s' },
  { kind: 'typo', query: 'deploymnet signing', fact: 'deploy' },
  // Misspelt short words (4-5 characters) next to words the filler shares.
  { kind: 'typo', query: 'renw gatway', fact: 'cert' },
  { kind: 'typo', query: 'freze startz', fact: 'mixed' },
  { kind: 'typo', query: 'loadd testt', fact: 'pg' },
  { kind: 'typo', query: 'expird signng', fact: 'deploy' },
]

/** Filler: near misses share words with the facts, so ranking has something to do. */
const NOISE = [
  'The database backup finished; the migration scripts are in the repo.',
  'Window sizes for the dashboard charts are configurable.',
  'Billing emails go out on the first of the month.',
  'We reviewed the gateway logs and found nothing unusual.',
  'The controller tests are flaky on CI again.',
  'The signing ceremony for the contract is next week.',
  '今天的会议讨论了预算和招聘计划。',
  '数据库的备份策略需要重新评估。',
  '周末值班表已经更新。',
  '新しいメンバーが来週から参加します。',
  '東京は雨で、会議はオンラインに変更しました。',
  'テスト環境のメモリが足りません。',
  'Lunch was ramen again, 拉面真好吃。',
  'Release notes draft: fixed typos, bumped dependencies.',
]

/** A seeded generator, so each run is reproducible. */
function rng(seed: number): () => number {
  let state = seed >>> 0
  return () => (state = (state * 1664525 + 1013904223) >>> 0) / 2 ** 32
}

/** A turn's text: a few noise lines, sometimes tool output, sometimes a planted fact. */
function corpus(turns: number, seed: number): { texts: string[]; facts: Map<string, Set<number>> } {
  const random = rng(seed)
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!
  const texts: string[] = []
  for (let i = 0; i < turns; i++) {
    const lines = Array.from({ length: 2 + Math.floor(random() * 4) }, () => pick(NOISE))
    if (random() < 0.3) lines.push(Array.from({ length: 20 }, (_, n) => `log ${n} id=${Math.floor(random() * 1e9).toString(16)} status=ok`).join('\n'))
    texts.push(lines.join('\n'))
  }
  const facts = new Map<string, Set<number>>()
  for (const key of Object.keys(FACTS)) {
    const at = new Set<number>()
    while (at.size < 2) at.add(Math.floor(random() * turns))
    for (const index of at) texts[index] = `${texts[index]}\n${FACTS[key]}`
    facts.set(key, at)
  }
  return { texts, facts }
}

/** Write the texts as a real archive (alternating user / assistant turns) under `workspace`. */
async function writeArchive(workspace: string, texts: readonly string[]): Promise<PalaceWorkspace> {
  const palace = new PalaceWorkspace(workspace, resolvePalaceOptions({}), { now: () => new Date(Date.UTC(2026, 10, 30, 12)) })
  await palace.setNamespace('bench-session', 'Bench')
  let seq = 0
  const events = texts.map((text, index) => {
    seq++
    const at = Date.UTC(2026, 10, 30, 8) + seq * 1000
    return index % 2 === 0
      ? { type: 'user/message', seq, time: at, surfaceOp: { op: 'append' }, data: { id: `u${seq}`, role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' } } }
      : { type: 'assistant/message', seq, time: at, surfaceOp: { op: 'append' }, data: { turn: seq, step: 1, message: { id: `a${seq}`, role: 'assistant', content: [{ type: 'text', text }], source: { kind: 'model' } } } }
  }) as unknown as SessionEventLike[]
  const turns = buildTurns(events, { includeReasoning: true })
  const plan = planArchive({ segments: [{ category: 'bench', fromTurn: turns[0]!.turn, toTurn: turns[turns.length - 1]!.turn }], summary: 'Bench archive.', selfName: 'assistant' }, turns, () => false, {
    maxFileBytes: 5_000_000,
  })
  await palace.archive('Bench', 'bench-session', plan)
  return palace
}

/** One engine's figures for one run. */
export interface EngineRun {
  readonly buildMs: number
  readonly queryMs: readonly number[]
  /** Per query kind and k: mean recall@k; `mrr` per kind. */
  readonly recall: Record<string, Record<number, number>>
  readonly mrr: Record<string, number>
}

type Ranker = (query: string, k: number) => Promise<number[]>

async function score(rank: Ranker, facts: Map<string, Set<number>>, ks: readonly number[]): Promise<Omit<EngineRun, 'buildMs'>> {
  const depth = Math.max(...ks, 10)
  const queryMs: number[] = []
  const sums: Record<string, { n: number; rr: number; at: Record<number, number> }> = {}
  for (const labelled of QUERIES) {
    const started = performance.now()
    const ranked = await rank(labelled.query, depth)
    queryMs.push(performance.now() - started)
    const relevant = facts.get(labelled.fact)!
    for (const kind of [labelled.kind, 'all']) {
      const sum = (sums[kind] ??= { n: 0, rr: 0, at: {} })
      sum.n++
      const first = ranked.findIndex((turn) => relevant.has(turn))
      sum.rr += first === -1 ? 0 : 1 / (first + 1)
      for (const k of ks) sum.at[k] = (sum.at[k] ?? 0) + ranked.slice(0, k).filter((turn) => relevant.has(turn)).length / Math.min(k, relevant.size)
    }
  }
  const recall: Record<string, Record<number, number>> = {}
  const mrr: Record<string, number> = {}
  for (const [kind, sum] of Object.entries(sums)) {
    recall[kind] = Object.fromEntries(ks.map((k) => [k, (sum.at[k] ?? 0) / sum.n]))
    mrr[kind] = sum.rr / sum.n
  }
  return { queryMs, recall, mrr }
}

/** What the palace index replaced: every turn a message of one fake conversation, FTS5-searched. */
async function runFts(store: MemoryStore, palace: PalaceWorkspace, facts: Map<string, Set<number>>, ks: readonly number[]): Promise<EngineRun> {
  const archive = await palace.openArchive('Bench')
  const entries = await archive.entries()
  const started = performance.now()
  await store.conversations.ensure({ id: 'bench-fake-conversation', workspace: 'bench-fake-workspace' })
  for (const entry of entries) {
    await store.messages.append({ conversationId: 'bench-fake-conversation', hostMessageId: `t${entry.turn}`, role: entry.speaker === 'user' ? 'user' : 'assistant', text: await archive.turnText(entry), turn: entry.turn })
  }
  const buildMs = performance.now() - started
  const toIndex = new Map(entries.map((entry, index) => [entry.turn, index]))
  const rank: Ranker = async (query, k) =>
    (await store.search.messages(query, { conversationId: 'bench-fake-conversation', limit: k })).map((hit) => toIndex.get(hit.message.turn) ?? -1)
  return { buildMs, ...(await score(rank, facts, ks)) }
}

/** The palace's own index: its tables on the store's session, MiniSearch over one workspace. */
async function runMiniSearch(store: MemoryStore, palace: PalaceWorkspace, facts: Map<string, Set<number>>, ks: readonly number[]): Promise<EngineRun> {
  const archive = await palace.openArchive('Bench')
  const entries = await archive.entries()
  const index = new ArchiveIndex(store)
  const target = { namespace: 'Bench', archive }
  const started = performance.now()
  await index.sync(palace.workspace, target)
  // The first lookup loads the rows into MiniSearch: part of the build.
  await index.suggest(palace.workspace, parseQuery('warmup'), [target], 1)
  const buildMs = performance.now() - started
  const toIndex = new Map(entries.map((entry, position) => [entry.turn, position]))
  const namespaces = new Set(['Bench'])
  const rank: Ranker = async (query, k) => index.nearest(palace.workspace, parseQuery(query), namespaces, k).map((hit) => toIndex.get(hit.turn) ?? -1)
  return { buildMs, ...(await score(rank, facts, ks)) }
}

/** The report of {@link runPalaceBench}. */
export interface PalaceBenchReport {
  readonly turns: number
  readonly queries: number
  readonly ks: readonly number[]
  readonly runs: readonly { readonly seed: number; readonly fts: EngineRun; readonly minisearch: EngineRun }[]
}

/** Run the benchmark (real archives, real stores in a temp folder, removed afterwards). */
export async function runPalaceBench(options: PalaceBenchOptions = {}): Promise<PalaceBenchReport> {
  const turns = options.turns ?? 600
  const ks = options.ks ?? [1, 5]
  const runs: { seed: number; fts: EngineRun; minisearch: EngineRun }[] = []
  const root = mkdtempSync(join(tmpdir(), 'dshm-bench-palace-'))
  try {
    for (let run = 0; run < (options.runs ?? 3); run++) {
      const seed = 20261201 + run
      const dir = join(root, `run-${run}`)
      mkdirSync(join(dir, 'work'), { recursive: true })
      const { texts, facts } = corpus(turns, seed)
      const palace = await writeArchive(join(dir, 'work'), texts)
      const ftsStore = openMemoryStore({ path: join(dir, 'fts.db') })
      const miniStore = openMemoryStore({ path: join(dir, 'palace.db') })
      try {
        const fts = await runFts(ftsStore, palace, facts, ks)
        const minisearch = await runMiniSearch(miniStore, palace, facts, ks)
        runs.push({ seed, fts, minisearch })
        options.log?.(`run ${run + 1}: fts build ${fts.buildMs.toFixed(0)} ms, minisearch build ${minisearch.buildMs.toFixed(0)} ms`)
      } finally {
        await ftsStore.close()
        await miniStore.close()
      }
    }
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
  return { turns, queries: QUERIES.length, ks, runs }
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0
}

/** `mean (min–max)` over runs. */
function spread(values: readonly number[], digits: number): string {
  const mean = values.reduce((sum, value) => sum + value, 0) / values.length
  return `${mean.toFixed(digits)} (${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)})`
}

/** The text form: one row per engine and figure, mean and min–max over the runs. */
export function formatPalaceReport(report: PalaceBenchReport): string {
  const kinds = ['exact', 'cjk', 'mixed', 'prefix', 'typo', 'all']
  const lines = [`bench palace: ${report.turns} archived turns, ${report.queries} labelled queries, ${report.runs.length} runs (mean, min–max over runs)`]
  for (const engine of ['fts', 'minisearch'] as const) {
    const runs = report.runs.map((run) => run[engine])
    lines.push('', engine === 'fts' ? 'store FTS5 over fake L0 conversations (before):' : 'palace tables + MiniSearch (now):')
    lines.push(`  index build        ${spread(runs.map((run) => run.buildMs), 0)} ms`)
    lines.push(`  query p50 / p95    ${spread(runs.map((run) => percentile(run.queryMs, 50)), 2)} / ${spread(runs.map((run) => percentile(run.queryMs, 95)), 2)} ms`)
    for (const kind of kinds) {
      const recall = report.ks.map((k) => `recall@${k} ${spread(runs.map((run) => run.recall[kind]?.[k] ?? 0), 2)}`).join('  ')
      lines.push(`  ${kind.padEnd(8)} ${recall}  MRR ${spread(runs.map((run) => run.mrr[kind] ?? 0), 2)}`)
    }
  }
  return lines.join('\n')
}

/** `dsh-memory bench palace` (registered by commands/bench.ts). */
export function registerPalaceBench(bench: Command, io: CliIO): void {
  bench
    .command('palace')
    .description("Search within one workspace's memory-palace archive: the palace's own index (its tables + MiniSearch) against the store FTS5 over fake conversations it replaced; recall@k and MRR on labelled English, Chinese, Japanese, mixed, prefix and misspelled queries, index build and query time.")
    .option('--turns <n>', 'archived turns per run', '600')
    .option('--runs <n>', 'runs, each with its own seed', '3')
    .option('--json', 'print one JSON object {turns, queries, ks, runs[]} and nothing else on stdout')
    .option('--quiet', 'no progress output')
    .action(async (options: { turns: string; runs: string; json?: boolean; quiet?: boolean }) => {
      const report = await runPalaceBench({
        turns: parseCount('--turns', options.turns),
        runs: parseCount('--runs', options.runs),
        ...(options.quiet ? {} : { log: (line: string) => io.stderr.write(`${line}\n`) }),
      })
      io.stdout.write(options.json ? `${JSON.stringify(report)}\n` : `${formatPalaceReport(report)}\n`)
    })
}
