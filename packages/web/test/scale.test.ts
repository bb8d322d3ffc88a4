/**
 * The browser on a store with 100 000 memories: the memories page and a search must answer
 * with one page of rows (server-side paging and search), not the whole table. Times are
 * measured and printed (`[web scale] …`), never asserted: they depend on the machine.
 *
 * The fixture: a twentieth of the rows go through the store's bulk path (`importJsonl`); the rest
 * are copies of those rows under new ids and later dates, made by SQL behind the store's back,
 * and the store then rebuilds its search index from all rows (`search.rebuild()`, the API for
 * rows written that way). Importing all 100 000 took about a minute of CI time per run; the
 * import path's own speed at this size is `dsh-memory bench scale`'s job (`insert_ms`).
 */
import { randomUUID } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { EXPORT_FORMAT, EXPORT_VERSION, openMemoryStore } from '@dsh-memory/store'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { withRawDatabase } from '../../store/test/support/raw-database.ts'
import { PAGE_SIZE, type RunningMemoryBrowser, startMemoryBrowser } from '../src/index.ts'
import { launchChromium, SCREENSHOTS } from './support/chromium.ts'
import { scratch } from './fixture.ts'

const COUNT = Number(process.env.DSHM_WEB_SCALE ?? 100_000)
/** Copies of the imported rows that make up the store (the first is the import itself). */
const COPIES = 20
/** Rows imported through the store; the other COUNT − SEED are copies of them. */
const SEED = COUNT / COPIES
const DAY = 86_400_000
const topics = ['checkout', 'search', 'billing', 'auth', 'deploy', 'logging', 'cache', 'queue']
const zhTopics = ['支付', '搜索', '账单', '登录', '部署', '日志', '缓存', '队列']
const techs = ['PostgreSQL', 'Redis', 'Kafka', 'SQLite', 'Go', 'TypeScript', 'Rust', 'nginx']

/** Memory text number `i`: English, Chinese or Japanese; one in 200 mentions 数据库迁移. */
function textOf(i: number): string {
  const topic = i % topics.length
  const tech = techs[(i >> 3) % techs.length]!
  if (i % 200 === 7) return `第 ${i} 条：${zhTopics[topic]}服务的数据库迁移改用 ${tech}，需要在周二之前完成。`
  if (i % 3 === 1) return `第 ${i} 条记忆：${zhTopics[topic]}模块使用 ${tech}，团队约定每周复查一次。`
  if (i % 3 === 2) return `メモ ${i}: ${topics[topic]} の処理は ${tech} で実装し、ログは一週間保存する。`
  return `Fact ${i}: the ${topics[topic]} service runs on ${tech}; owner team ${i % 17}, reviewed every sprint.`
}

let temp: { dir: string; cleanup: () => void }
let app: RunningMemoryBrowser
const numbers: Record<string, string> = {}

const timed = async <T>(label: string, fn: () => Promise<T>): Promise<T> => {
  const start = performance.now()
  const value = await fn()
  numbers[label] = `${(performance.now() - start).toFixed(0)} ms`
  return value
}

beforeAll(async () => {
  if (!Number.isInteger(SEED) || SEED < 1) throw new Error(`DSHM_WEB_SCALE must be a positive multiple of ${COPIES}, got ${COUNT}`)
  temp = scratch('scale')
  const dataDir = join(temp.dir, 'data')
  mkdirSync(dataDir, { recursive: true })
  const dbPath = join(dataDir, 'memory.db')
  const t0 = Date.now() - 400 * DAY
  /** The imported rows span the first 1/COPIES of the 400 days; copy k of them is shifted k spans later. */
  const span = (400 * DAY) / COPIES
  let store = openMemoryStore({ path: dbPath, actor: 'fixture' })
  try {
    const workspaces = Array.from({ length: 20 }, (_, index) => `/work/project-${index}`)
    const header = JSON.stringify({ type: 'header', format: EXPORT_FORMAT, version: EXPORT_VERSION, exportedAt: Date.now(), schema: 1 })
    function* lines(from: number, to: number): Generator<string> {
      yield header
      for (let i = from; i < to; i++) {
        const scope = i % 10 === 0 ? 'global' : 'workspace'
        const at = t0 + Math.floor((i / SEED) * span)
        // A fresh row: importJsonl fills revision, embedding, flags and the rest.
        yield JSON.stringify({
          type: 'memory',
          data: {
            id: randomUUID(),
            kind: ['fact', 'preference', 'instruction', 'episode'][i % 4],
            text: textOf(i),
            scope,
            workspace: scope === 'global' ? null : workspaces[i % workspaces.length],
            sessionId: null,
            sourceMessageIds: [],
            priority: i % 5,
            createdAt: at,
            updatedAt: at,
          },
        })
      }
    }
    // Batches, with a pause between them, so the test worker keeps answering the runner.
    const BATCH = 5_000
    await timed(`import ${SEED} memories (store.importJsonl, batches of 5 000)`, async () => {
      for (let from = 0; from < SEED; from += BATCH) {
        await store.importJsonl(lines(from, Math.min(SEED, from + BATCH)))
        await new Promise((resolve) => setImmediate(resolve))
      }
    })
  } finally {
    await store.close()
  }
  await timed(`copy them to ${COUNT} rows (SQL, new ids and dates)`, async () =>
    withRawDatabase(dbPath, (db) => {
      // Every column as the store wrote it, whatever the schema holds, except the id and the dates.
      const columns = (db.pragma('table_info(store_memories)') as { name: string }[]).map((column) => column.name)
      const shifted: Record<string, string> = {
        id: "lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-a' || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))",
        created_at: 'created_at + @shift',
        updated_at: 'updated_at + @shift',
      }
      const copy = db.prepare(`INSERT INTO store_memories (${columns.join(', ')}) SELECT ${columns.map((name) => shifted[name] ?? name).join(', ')} FROM store_memories WHERE created_at < @end`)
      db.transaction(() => {
        for (let k = 1; k < COPIES; k++) copy.run({ shift: k * span, end: t0 + span })
      })()
    }),
  )
  store = openMemoryStore({ path: dbPath, actor: 'fixture' })
  try {
    const status = await timed('rebuild the search index from every row (store.search.rebuild)', () => store.search.rebuild())
    // The fixture is what the tests say it is: COUNT current memories, every one indexed.
    expect(status.documents.memories).toBe(COUNT)
    expect((await store.stats.counts()).memories.current).toBe(COUNT)
  } finally {
    await store.close()
  }
  app = await startMemoryBrowser({ dataDir, port: 0 })
}, 900_000)

afterAll(async () => {
  console.log(`[web scale] ${COUNT} memories:\n${Object.entries(numbers).map(([label, value]) => `  ${label}: ${value}`).join('\n')}`)
  await app?.close()
  temp?.cleanup()
})

const get = (path: string) => fetch(`${app.origin}${path}`, { headers: { 'x-dshm-token': app.token } })

describe(`a store with ${COUNT} memories`, () => {
  it('pages memories on the server', async () => {
    const first = await timed('GET /memories (page 1, HTML)', () => get('/memories'))
    expect(first.status).toBe(200)
    const html = await first.text()
    expect(html.match(/<tr data-memory-id=/g)?.length).toBe(PAGE_SIZE)
    const deep = await timed('GET /memories?page=1000 (offset 50 000, HTML)', () => get('/memories?page=1000'))
    expect((await deep.text()).match(/<tr data-memory-id=/g)?.length).toBe(PAGE_SIZE)
    const api = (await (await timed('GET /api/memories?scope=global&sort=priority', () => get('/api/memories?scope=global&sort=priority'))).json()) as { items: unknown[]; hasNext: boolean }
    expect(api.items).toHaveLength(PAGE_SIZE)
    expect(api.hasNext).toBe(true)
  })

  it('searches (Chinese) on the server and returns one page', async () => {
    const cold = await timed('search 数据库迁移, first (index build or load)', () => get(`/api/memories?q=${encodeURIComponent('数据库迁移')}`))
    const body = (await cold.json()) as { items: { memory: { text: string } }[]; hasNext: boolean }
    expect(body.items).toHaveLength(PAGE_SIZE)
    expect(body.hasNext).toBe(true)
    expect(body.items[0]!.memory.text).toContain('数据库迁移')
    const warm = await timed('search 数据库迁移, warm (HTML page 1)', () => get(`/memories?q=${encodeURIComponent('数据库迁移')}`))
    expect((await warm.text()).match(/<tr data-memory-id=/g)?.length).toBe(PAGE_SIZE)
    await timed('search PostgreSQL, warm (HTML page 3)', () => get('/memories?q=PostgreSQL&page=2'))
  })

  it('draws the overview from grouped counts', async () => {
    const res = await timed('GET / (overview with counts and charts)', () => get('/'))
    const html = await res.text()
    expect(html).toContain(COUNT.toLocaleString('en-US'))
    expect(html).toContain('polygon class="area')
  })

  it('renders only one page of rows in Chromium', async () => {
    const chromium = await launchChromium()
    try {
      const page = await (await chromium.newContext({ viewport: { width: 1360, height: 900 } })).newPage()
      await page.goto(app.url)
      const start = performance.now()
      await page.goto(`${app.origin}/memories`)
      numbers['Chromium: load /memories until load event'] = `${(performance.now() - start).toFixed(0)} ms`
      expect(await page.locator('table.memories tbody tr').count()).toBe(PAGE_SIZE)
      const searchStart = performance.now()
      await page.goto(`${app.origin}/memories?q=${encodeURIComponent('数据库迁移')}`)
      numbers['Chromium: load a Chinese search'] = `${(performance.now() - searchStart).toFixed(0)} ms`
      expect(await page.locator('table.memories tbody tr').count()).toBe(PAGE_SIZE)
      await page.screenshot({ path: join(SCREENSHOTS, 'memories-100k-light.png'), fullPage: false })
      await page.goto(`${app.origin}/`)
      await page.screenshot({ path: join(SCREENSHOTS, 'overview-100k-light.png'), fullPage: true })
    } finally {
      await chromium.close()
    }
  })
})
