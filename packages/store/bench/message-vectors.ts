/**
 * `messages.missingEmbeddings` benchmark: a store of N messages (10 per conversation, 10
 * workspaces) whose vectors of one model are all there but the newest 50's, as recall's backfill
 * finds it once it has caught up; then each query shape of the backfill timed through the store
 * API, 5 runs each (min / median / max ms), with the plan. SQLite always; PostgreSQL with
 * `--database-url` (a throwaway schema, dropped after), once after ANALYZE only (autovacuum has
 * not come by) and once after VACUUM ANALYZE. `--models 2` is a team store where a second
 * member's embedder (another model) has embedded every message too: twice the vector rows, which
 * a message now keeps side by side (one per model).
 *
 *   bash ../../scripts/node22.sh node bench/message-vectors.ts [--messages 100000] [--models 1|2] [--database-url postgres://…]
 *
 * A command that prints numbers, not a test: timings vary by machine and load.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import Database from 'better-sqlite3'
import pg from 'pg'
import { dropPostgresStore, type MemoryStore, openStore } from '../src/index.ts'

const { values } = parseArgs({ options: { messages: { type: 'string', default: '100000' }, models: { type: 'string', default: '1' }, 'database-url': { type: 'string' } } })
const total = Number(values.messages)
if (!Number.isSafeInteger(total) || total < 1_000 || total % 10 !== 0) throw new Error('--messages must be a multiple of 10, at least 1000')
if (values.models !== '1' && values.models !== '2') throw new Error('--models must be 1 or 2')
const MODEL = 'all-MiniLM-L6-v2@384'
/** The second member's model (`--models 2`), 384-d as well. */
const TEAM_MODEL = 'bge-small-en-v1.5@384'
const MISSING = 50
const T0 = 1_700_000_000_000

/** The query shapes of a backfill: label and filter. */
const CASES: [string, Parameters<MemoryStore['messages']['missingEmbeddings']>[0]][] = [
  [`whole store (${MISSING} missing)`, { model: MODEL, limit: 100 }],
  ['one workspace of 10 (none missing)', { model: MODEL, limit: 100, workspace: '/ws3' }],
  ['until: the older half (none missing)', { model: MODEL, limit: 100, until: T0 + total / 2 }],
  ['one conversation', { model: MODEL, limit: 100, conversationId: 'c7' }],
  ['another model (all missing)', { model: 'bge-m3@1024', limit: 100 }],
]

/** How a backend writes the rows: `rows(name, last)` is 0..last as a table of one column `name`; `pad(i)` is i zero-padded to 8 digits. */
interface Dialect {
  rows(name: string, last: number): string
  pad(expression: string): string
}

/** The rows, written with SQL (the store API would take minutes for a million). */
function populate(d: Dialect, vector: string): string[] {
  return [
    `INSERT INTO store_conversations (id, workspace, started_at, updated_at) SELECT 'c' || c, '/ws' || (c % 10), 0, 0 FROM ${d.rows('c', total / 10 - 1)}`,
    // Ids that sort like the store's UUIDv7 (time first).
    `INSERT INTO store_messages (id, conversation_id, host_message_id, role, text, seq, created_at)
      SELECT '0190' || ${d.pad('i')} || '-0000-7000-8000-000000000000', 'c' || (i / 10), 'h' || (i % 10), 'user', 'message ' || i, i % 10, ${T0} + i FROM ${d.rows('i', total - 1)}`,
    `INSERT INTO store_message_vectors (message_id, embedding_model, embedding_dims, embedding)
      SELECT id, '${MODEL}', 384, ${vector} FROM store_messages WHERE created_at < ${T0 + total - MISSING}`,
    ...(values.models === '2' ? [`INSERT INTO store_message_vectors (message_id, embedding_model, embedding_dims, embedding) SELECT id, '${TEAM_MODEL}', 384, ${vector} FROM store_messages`] : []),
  ]
}

const models = values.models === '2' ? ', every message also holding a second model’s vector' : ''

async function time(store: MemoryStore, label: string, explain: (filter: (typeof CASES)[number][1]) => Promise<string>): Promise<void> {
  console.log(`\n${label}`)
  for (const [name, filter] of CASES) {
    const runs: number[] = []
    let rows = 0
    for (let i = 0; i < 5; i++) {
      const started = performance.now()
      rows = (await store.messages.missingEmbeddings(filter)).length
      runs.push(performance.now() - started)
    }
    runs.sort((a, b) => a - b)
    console.log(`  ${name.padEnd(38)} ${String(rows).padStart(4)} rows  ms ${runs[0]!.toFixed(1)} / ${runs[2]!.toFixed(1)} / ${runs[4]!.toFixed(1)}   ${await explain(filter)}`)
  }
}

async function sqlite(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'dshm-vectors-'))
  try {
    const path = join(dir, 'memory.db')
    await (await openStore({ path })).close()
    const db = new Database(path)
    const dialect: Dialect = {
      rows: (name, last) => `(WITH RECURSIVE r(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM r WHERE n < ${last}) SELECT n AS ${name} FROM r)`,
      pad: (expression) => `printf('%08d', ${expression})`,
    }
    db.transaction(() => {
      const [conversations, messages, ...vectors] = populate(dialect, '?')
      db.exec(conversations!)
      db.exec(messages!)
      for (const statement of vectors) db.prepare(statement).run(Buffer.alloc(384 * 4, 0x3f))
    })()
    db.exec('ANALYZE')
    const store = await openStore({ path })
    try {
      await time(store, `SQLite, ${total.toLocaleString('en-US')} messages${models}`, async () => '')
      // The plan of the whole-store case, from SQLite itself.
      const plan = db
        .prepare(`EXPLAIN QUERY PLAN SELECT * FROM store_messages m WHERE NOT EXISTS (SELECT 1 FROM store_message_vectors v WHERE v.embedding_model = ? AND v.message_id = m.id) ORDER BY created_at DESC, id DESC LIMIT 100`)
        .all(MODEL) as { detail: string }[]
      console.log(`  plan: ${plan.map((row) => row.detail).join(' | ')}`)
    } finally {
      await store.close()
      db.close()
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

async function postgres(databaseUrl: string): Promise<void> {
  const schema = `bench_vectors_${process.pid}`
  const store = await openStore({ databaseUrl, schema })
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    await client.query(`SET search_path TO ${schema}`)
    const dialect: Dialect = { rows: (name, last) => `generate_series(0, ${last}) AS s(${name})`, pad: (expression) => `lpad(${expression}::text, 8, '0')` }
    for (const statement of populate(dialect, 'array_fill(0.5::real, ARRAY[384])')) await client.query(statement)
    // The top of each plan: which scans and joins PostgreSQL chose.
    const explain = async (filter: (typeof CASES)[number][1]): Promise<string> => {
      const where = [
        filter.workspace ? `workspace = '${filter.workspace}'` : '',
        filter.until ? `created_at <= ${filter.until}` : '',
        filter.conversationId ? `conversation_id = '${filter.conversationId}'` : '',
        `NOT EXISTS (SELECT 1 FROM store_message_vectors v WHERE v.embedding_model = '${filter.model}' AND v.message_id = m.id)`,
      ].filter(Boolean)
      const rows = (await client.query(`EXPLAIN SELECT * FROM store_messages m WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT 100`)).rows as { 'QUERY PLAN': string }[]
      return rows
        .map((row) => row['QUERY PLAN'].trim())
        .filter((line) => /Scan|Join/.test(line))
        .map((line) => line.replace(/^->\s*/, '').replace(/\s+\(cost.*$/, ''))
        .join(' | ')
    }
    await client.query('ANALYZE')
    await time(store, `PostgreSQL, ${total.toLocaleString('en-US')} messages${models}, after ANALYZE`, explain)
    await client.query('VACUUM ANALYZE')
    await time(store, `PostgreSQL, ${total.toLocaleString('en-US')} messages${models}, after VACUUM ANALYZE`, explain)
  } finally {
    await client.end()
    await store.close()
    await dropPostgresStore({ databaseUrl, schema })
  }
}

await sqlite()
if (values['database-url']) await postgres(values['database-url'])
