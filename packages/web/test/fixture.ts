/**
 * A data dir filled the way the plugins fill one, through their public APIs: the store's
 * repositories (L0-L3), recall's feedback flags, distill's state repository (cursor, queue,
 * cost ledger), the cue-bank repository, a palace folder written by the palace core, and the
 * memory tree over the same database.
 */
import { randomUUID } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openCueRepository } from '@dsh-memory/cue-bank'
import { DistillStateRepository, initialConversationState } from '@dsh-memory/distill'
import { buildTurns, type SessionEventLike, Palace, planArchive, resolvePalaceOptions } from '@dsh-memory/palace'
import { applyFeedback } from '@dsh-memory/recall'
import { type MemoryStore, openMemoryStore, openStore, type PostgresStoreOptions } from '@dsh-memory/store'
import { openMemoryTree } from '@dsh-memory/tree'
import { afterAll, beforeAll } from 'vitest'
import { type RunningMemoryBrowser, startMemoryBrowser } from '../src/index.ts'

/** A temp folder removed by `cleanup()`. */
export function scratch(label: string): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `dshm-web-${label}-`))
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) }
}

/**
 * For the calling test file: the fixture data dir built in a scratch folder and a memory
 * browser serving it, started once before all tests and closed after them. Read `fixture`
 * and `app` inside the tests (they are set by then). With `postgres` (called when the tests
 * start) the fixture is written to that PostgreSQL store and the browser serves it there.
 */
export function servedFixture(label: string, postgres?: () => PostgresStoreOptions): { readonly fixture: WebFixture; readonly app: RunningMemoryBrowser } {
  const served = {} as { fixture: WebFixture; app: RunningMemoryBrowser; temp?: ReturnType<typeof scratch> }
  beforeAll(async () => {
    served.temp = scratch(label)
    const database = postgres?.()
    served.fixture = await buildWebFixture(served.temp.dir, database && (() => openStore({ ...database, actor: 'fixture' })))
    const store = database && (await openStore({ ...database, actor: 'web' }))
    served.app = await startMemoryBrowser({ dataDir: served.fixture.dataDir, ...(store ? { store } : {}), port: 0 })
  })
  afterAll(async () => {
    await served.app?.close()
    served.temp?.cleanup()
  })
  return served
}

/** Ids of the fixture, for assertions. */
export interface WebFixture {
  readonly dataDir: string
  readonly shop: string
  readonly blog: string
  readonly conversations: { readonly shop: string; readonly blog: string }
  readonly memories: {
    /** Chinese text, distilled from a Chinese message; target of the search test. */
    readonly database: string
    /** Edited through the UI. */
    readonly deployDay: string
    /** Forgotten through the UI. */
    readonly flaky: string
    /** Promoted to global through the UI. */
    readonly style: string
    /** Holds `<script>`: must render escaped. */
    readonly hostile: string
    readonly editor: string
    readonly blogHost: string
  }
  readonly scene: string
  readonly projectId: string
  readonly palaceWorkspace: string
}

const HOUR = 3_600_000
const DAY = 24 * HOUR

/**
 * Build the fixture under `root` (data dir `root/data`, workspaces `root/shop-api` and
 * `root/blog`), in `root/data/memory.db` or the store `open` opens.
 */
export async function buildWebFixture(root: string, open?: () => Promise<MemoryStore>): Promise<WebFixture> {
  const dataDir = join(root, 'data')
  const shop = join(root, 'shop-api')
  const blog = join(root, 'blog')
  for (const dir of [dataDir, shop, blog]) mkdirSync(dir, { recursive: true })
  const store = open ? await open() : openMemoryStore({ path: join(dataDir, 'memory.db'), actor: 'fixture' })
  try {
    const t0 = Date.now() - 20 * DAY
    const shopId = `session-${randomUUID()}`
    const blogId = `session-${randomUUID()}`
    await store.conversations.ensure({ id: shopId, workspace: shop, title: 'Shop API database', startedAt: t0 })
    await store.conversations.ensure({ id: blogId, workspace: blog, title: 'ブログの移行', startedAt: t0 + 5 * DAY })
    const append = (conversationId: string, seq: number, role: 'user' | 'assistant', text: string, at: number) =>
      store.messages.append({ conversationId, hostMessageId: `h-${conversationId}-${seq}`, role, text, turn: Math.floor(seq / 2) + 1, seq, createdAt: at })
    await append(shopId, 0, 'user', 'We are building the shop API in TypeScript; we decided on PostgreSQL, not MySQL.', t0)
    await append(shopId, 1, 'assistant', 'Got it: PostgreSQL for the shop API.', t0 + 1000)
    const zh = await append(shopId, 2, 'user', '我们决定使用 PostgreSQL 作为主数据库，部署只在周二进行。', t0 + 2 * DAY)
    await append(shopId, 3, 'assistant', '明白了：主数据库是 PostgreSQL，周二部署。', t0 + 2 * DAY + 1000)
    const ja = await append(blogId, 0, 'user', 'ブログは Astro で作って、Cloudflare Pages にデプロイしています。', t0 + 5 * DAY)
    await append(blogId, 1, 'assistant', '了解しました。', t0 + 5 * DAY + 1000)

    const distill = { actor: 'distill' }
    const database = await store.memories.add({ kind: 'fact', text: '主数据库使用 PostgreSQL（不是 MySQL）。', scope: 'workspace', workspace: shop, sourceMessageIds: [zh.message.id], priority: 3, createdAt: t0 + 2 * DAY }, distill)
    const deployDay = await store.memories.add({ kind: 'instruction', text: 'Deploy the shop API on Mondays.', scope: 'workspace', workspace: shop, createdAt: t0 + 3 * DAY }, distill)
    const flaky = await store.memories.add({ kind: 'episode', text: 'Debugged a flaky checkout test today.', scope: 'session', workspace: shop, sessionId: shopId, createdAt: t0 + 4 * DAY }, distill)
    const style = await store.memories.add({ kind: 'preference', text: 'Prefers small pull requests with one concern each.', scope: 'workspace', workspace: shop, createdAt: t0 + 6 * DAY }, distill)
    const hostile = await store.memories.add({ kind: 'fact', text: 'The page said <script>window.__pwned = true</script> and <img src=x onerror="window.__pwned=true">.', scope: 'global', createdAt: t0 + 7 * DAY }, distill)
    const editor = await store.memories.add({ kind: 'preference', text: 'The user prefers Helix as their editor.', scope: 'global', createdAt: t0 + 8 * DAY }, distill)
    const blogHost = await store.memories.add({ kind: 'fact', text: 'ブログは Cloudflare Pages でホストしている。', scope: 'workspace', workspace: blog, sourceMessageIds: [ja.message.id], createdAt: t0 + 9 * DAY }, distill)
    // Feedback from two sessions, as recall's memory_feedback tool records it.
    let flags = applyFeedback(editor.flags, shopId, 'helpful', t0 + 10 * DAY)
    flags = applyFeedback(flags, blogId, 'unhelpful', t0 + 11 * DAY)
    await store.memories.update(editor.id, { flags }, { actor: 'recall' })
    for (let i = 0; i < 12; i++) {
      await store.memories.add({ kind: i % 2 ? 'fact' : 'preference', text: `Filler fact number ${i} about the shop API.`, scope: i % 3 === 0 ? 'global' : 'workspace', ...(i % 3 === 0 ? {} : { workspace: shop }), createdAt: t0 + (i + 1) * DAY }, distill)
    }
    const scene = await store.scenes.add({ title: 'Shop API infrastructure', summary: 'Database and deployment decisions of the shop API: PostgreSQL, Tuesday deploys.', scope: 'workspace', workspace: shop, memoryIds: [database.id, deployDay.id], createdAt: t0 + 10 * DAY }, distill)
    await store.persona.put({ scope: 'global', text: '# Persona\nA TypeScript developer who writes in English and Chinese (中文).' }, distill)

    const state = new DistillStateRepository(store)
    const lastRunAt = t0 + 12 * DAY
    await state.putConversation({ ...initialConversationState(shopId), cursorSeq: 3, stage: 1, lastRunAt })
    await state.putConversation({ ...initialConversationState(blogId), attempts: 2, notBefore: lastRunAt + 60_000, lastError: 'model call failed: HTTP 500' })
    await state.updatePending([blogId], [])
    await state.markScan(t0)
    const cost = (at: number, layer: 'l1' | 'dedup' | 'l2' | 'l3', model: string, inputTokens: number, outputTokens: number, ok = true) =>
      state.recordCost({ at, provider: 'deepseek-official', model, layer, ok, inputTokens, outputTokens, cacheReadTokens: ok ? 100 : 0, estimated: false }, 0, at)
    for (let day = 0; day < 8; day++) await cost(t0 + (day + 2) * DAY, 'l1', 'deepseek-v4-flash', 800 + day * 150, 200 + day * 20)
    await cost(lastRunAt, 'dedup', 'deepseek-v4-flash', 400, 50)
    await cost(lastRunAt, 'l2', 'deepseek-v4-pro', 1500, 400)
    await cost(lastRunAt, 'l3', 'deepseek-v4-pro', 900, 300)
    await cost(lastRunAt, 'l1', 'deepseek-v4-flash', 0, 0, false)

    // Cue bank: two topic cues and idioms, through its repository.
    const cues = await openCueRepository(store)
    try {
      const partition = `workspace:${shop}`
      const cue = (id: string, level: 'conversation' | 'task', summary: string, words: string[], hits: number, at: number) =>
        cues.insertCue({
          id,
          partition,
          level,
          sessionId: shopId,
          turn: level === 'task' ? 2 : 1,
          summary,
          detail: summary,
          keywords: words.map((word, index) => ({ word, score: 1 - index * 0.1 })),
          dimensions: { trigger: 'keywords', perspective: level, workspace: shop },
          refSessions: [shopId],
          sourceMessageIds: [`h-${shopId}-0`],
          embedding: null,
          embeddingModel: null,
          createdAt: at,
          lastMentionedAt: at,
          lastTouchedAt: at,
          hitCount: hits,
        })
      await cue(`c-${randomUUID()}`, 'conversation', '选择主数据库：PostgreSQL 而不是 MySQL', ['PostgreSQL', '数据库', 'MySQL'], 3, t0 + 2 * DAY)
      await cue(`c-${randomUUID()}`, 'task', 'Shop API deployment schedule', ['deploy', 'Tuesday', 'shop'], 1, t0 + 3 * DAY)
      await cues.upsertIdioms(partition, [
        { word: '搞定', score: 0.4, turns: 4, lastUsed: t0 + 3 * DAY },
        { word: 'ship it', score: 0.25, turns: 2, lastUsed: t0 + 4 * DAY },
      ])
    } finally {
      cues.close()
    }

    // Palace: one named session archived by the palace core into <shop>/memory-palace/.
    const palace = new Palace(resolvePalaceOptions({}), { now: () => new Date(t0 + 4 * DAY) })
    const workspace = palace.workspace(shop)
    await workspace.setNamespace(shopId, 'Shop Alpha')
    const events: SessionEventLike[] = []
    let seq = 0
    const push = (type: string, data: unknown) => events.push({ type, seq: ++seq, time: t0 + seq * 1000, data, surfaceOp: { op: 'append' } })
    const exchange = (question: string, answer: string) => {
      push('user/message', { id: randomUUID(), role: 'user', content: [{ type: 'text', text: question }], source: { kind: 'user' } })
      push('assistant/message', { turn: 1, step: 1, message: { id: randomUUID(), role: 'assistant', content: [{ type: 'text', text: answer }], source: { kind: 'model', provider: 'p', model: 'm' } } })
    }
    exchange('Set up the PostgreSQL schema for orders.', 'Created tables orders and order_items.')
    exchange('为订单表加索引。', '已经在 orders(created_at) 上加了索引。')
    exchange('Why is checkout flaky?', 'A race in the payment mock; fixed with an await.')
    const turns = buildTurns(events, { includeReasoning: false })
    const plan = planArchive(
      {
        segments: [
          { category: 'database', fromTurn: turns[0]!.turn, toTurn: turns[3]!.turn },
          { category: 'debugging', fromTurn: turns[4]!.turn, toTurn: turns[5]!.turn },
        ],
        summaries: [
          { category: 'database', text: 'Orders schema and its index (订单索引).' },
          { category: 'debugging', text: 'Flaky checkout fixed.' },
        ],
        selfName: 'assistant',
      },
      turns,
      () => false,
      { maxFileBytes: 5_000_000 },
    )
    await workspace.archive('Shop Alpha', shopId, plan)

    // Memory tree: a project with mainline items, a merged branch, an open branch and a checkpoint.
    const opened = await openMemoryTree({ store, now: () => t0 + 6 * DAY })
    let projectId: string
    try {
      const tree = opened.tree
      const caller = { workspace: shop, sessionId: shopId, source: 'user' }
      const { project } = await tree.setProject('Shop API', caller)
      projectId = project.id
      await tree.note({ kind: 'constraint', text: 'Deploy only on Tuesdays.' }, caller)
      await tree.note({ kind: 'decision', text: 'Use PostgreSQL as the primary database.' }, caller)
      const { branch } = await tree.openBranch({ title: 'Try a read replica', checkout: true }, caller)
      await tree.logToBranch({ branchId: branch.id, text: 'Measured replica lag: 40 ms.' }, caller)
      await tree.merge({ branchId: branch.id, decisions: ['Add one read replica for reports.'] }, caller)
      await tree.checkpoint({ title: 'Stage 1: storage settled', review: 'Database and replica decided.' }, caller)
      await tree.note({ kind: 'question', text: 'Which CDN for static assets?' }, caller)
      await tree.openBranch({ title: 'Evaluate CDNs', checkout: true }, caller)
    } finally {
      await opened.close()
    }

    await store.search.warm()
    return {
      dataDir,
      shop,
      blog,
      conversations: { shop: shopId, blog: blogId },
      memories: { database: database.id, deployDay: deployDay.id, flaky: flaky.id, style: style.id, hostile: hostile.id, editor: editor.id, blogHost: blogHost.id },
      scene: scene.id,
      projectId,
      palaceWorkspace: shop,
    }
  } finally {
    await store.close()
  }
}
