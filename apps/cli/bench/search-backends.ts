/**
 * Message search on SQLite and on PostgreSQL, side by side: the same deterministic messages
 * (the scale bench's corpus) written through each store's bulk path (`importJsonl`), then every
 * bench query timed on both. Prints one JSON object. A command that prints numbers, not a test.
 *
 *   DSHM_BENCH_DATABASE_URL=postgres://user@127.0.0.1:5432/db \
 *     bash ../../scripts/node22.sh node bench/search-backends.ts [messages=100000] [rounds=5]
 *
 * The PostgreSQL store gets a fresh schema (`bench_search_<time>`, printed; drop it after with
 * `DROP SCHEMA … CASCADE`: the CLI does not depend on the driver). Until
 * `dsh-memory bench scale --database-url` exists (phase 2 of issue #18), this is the measure.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { estimateTokens, EXPORT_FORMAT, EXPORT_VERSION, type MemoryStore, openMemoryStore, openPostgresStore } from '@dsh-memory/store'
import { BENCH_QUERIES, messageText, seededRandom } from '../src/bench/corpus.ts'

const databaseUrl = process.env.DSHM_BENCH_DATABASE_URL
if (!databaseUrl) throw new Error('set DSHM_BENCH_DATABASE_URL to a PostgreSQL database the bench may create a schema in')
const messages = Number(process.argv[2] ?? 100_000)
const rounds = Number(process.argv[3] ?? 5)
const BATCH = 5_000
const PER_CONVERSATION = 100

/** The messages as export lines, deterministic (same seed, same rows on both backends). */
function* lines(start: number, end: number, random: () => number): Generator<string> {
  yield JSON.stringify({ type: 'header', format: EXPORT_FORMAT, version: EXPORT_VERSION, exportedAt: 0, schema: 1 })
  for (let i = start; i < end; i++) {
    const conversationId = `bench-conv-${Math.floor(i / PER_CONVERSATION)}`
    const position = i % PER_CONVERSATION
    const createdAt = 1_700_000_000_000 + i * 1_000
    if (position === 0) {
      yield JSON.stringify({ type: 'conversation', data: { id: conversationId, workspace: `/bench/ws${Math.floor(i / PER_CONVERSATION) % 10}`, title: null, startedAt: createdAt, endedAt: null, updatedAt: createdAt, flags: {} } })
    }
    const role = position % 2 === 0 ? 'user' : 'assistant'
    const text = messageText(random, role, i)
    const id = `0190${i.toString(16).padStart(8, '0')}-0000-7000-8000-000000000000`
    yield JSON.stringify({
      type: 'message',
      data: { id, conversationId, hostMessageId: `m${i}`, role, text, turn: Math.floor(position / 2), seq: position, sourceIds: [], tokensEstimate: estimateTokens(text), createdAt, flags: {} },
    })
  }
}

async function fill(store: MemoryStore): Promise<number> {
  const random = seededRandom(20_261_202)
  const started = performance.now()
  for (let start = 0; start < messages; start += BATCH) await store.importJsonl(lines(start, Math.min(messages, start + BATCH), random), { actor: 'bench' })
  return Math.round(performance.now() - started)
}

function stats(samples: number[]): { p50: number; p95: number; max: number } {
  const sorted = [...samples].sort((a, b) => a - b)
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!
  const round = (value: number) => Math.round(value * 100) / 100
  return { p50: round(at(0.5)), p95: round(at(0.95)), max: round(sorted.at(-1)!) }
}

async function measure(store: MemoryStore): Promise<{ search: ReturnType<typeof stats>; workspaceSearch: ReturnType<typeof stats>; hits: number }> {
  // One unmeasured pass: both stores answer from a warm cache, as a long-running host does.
  for (const query of BENCH_QUERIES) await store.search.messages(query)
  const plain: number[] = []
  const scoped: number[] = []
  let hits = 0
  for (let round = 0; round < rounds; round++) {
    for (const query of BENCH_QUERIES) {
      let started = performance.now()
      hits += (await store.search.messages(query)).length
      plain.push(performance.now() - started)
      started = performance.now()
      await store.search.messages(query, { workspace: '/bench/ws3' })
      scoped.push(performance.now() - started)
    }
  }
  return { search: stats(plain), workspaceSearch: stats(scoped), hits }
}

const dir = mkdtempSync(join(tmpdir(), 'dshm-search-bench-'))
const schema = `bench_search_${Date.now()}`
const report: Record<string, unknown> = { messages, queries: BENCH_QUERIES.length, rounds, schema }
try {
  const sqlite = openMemoryStore({ path: join(dir, 'memory.db') })
  report.sqlite = { fillMs: await fill(sqlite), ...(await measure(sqlite)) }
  await sqlite.close()
  const postgres = await openPostgresStore({ databaseUrl, schema })
  try {
    report.postgres = { fillMs: await fill(postgres), ...(await measure(postgres)) }
  } finally {
    await postgres.close()
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
console.log(JSON.stringify(report, null, 2))
