import { randomUUID } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { DistillStateRepository, initialConversationState } from '@dsh-memory/distill'
import { openMemoryStore, type MemoryStore } from '@dsh-memory/store'
import { runCli } from '../src/program.ts'

/** Run the CLI in-process and capture what it prints. */
export async function cli(args: string[], options: { tty?: boolean } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough()
  const stderr = Object.assign(new PassThrough(), { isTTY: options.tty === true, columns: 100 })
  let out = ''
  let err = ''
  stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk))
  stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk))
  const code = await runCli(args, { stdout, stderr })
  return { code, stdout: out, stderr: err }
}

/** A temp folder, removed by `cleanup()`. */
export function scratch(label: string): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `dshm-cli-${label}-`))
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) }
}

/** Ids and facts of the fixture data dir, for assertions. */
export interface Fixture {
  readonly dataDir: string
  readonly shop: string
  readonly blog: string
  readonly conversations: { readonly shop: string; readonly blog: string }
  readonly memories: {
    readonly database: string
    readonly deployDay: string
    readonly deployDayOld: string
    readonly editor: string
    readonly blogHost: string
    readonly session: string
  }
  readonly messages: { readonly zh: string; readonly ja: string }
  readonly scene: string
  /** The `lastRunAt` written into the distill state (epoch ms). */
  readonly lastRunAt: number
}

/**
 * Build a data dir the way the plugins fill one, through the same public APIs: the store's
 * repositories for L0-L3 and `@dsh-memory/distill`'s state repository for its cursor, queue and
 * token ledger. `options.user` writes it as that user (default: the store's default user);
 * `options.t0` moves its times (two users' data dirs do not share a clock).
 */
export async function buildFixture(dataDir: string, options: { user?: string; t0?: number } = {}): Promise<Fixture> {
  mkdirSync(dataDir, { recursive: true })
  const shop = '/work/shop-api'
  const blog = '/work/blog'
  const store: MemoryStore = openMemoryStore({ path: join(dataDir, 'memory.db'), actor: 'fixture', ...(options.user ? { user: options.user } : {}) })
  try {
    const t0 = options.t0 ?? Date.UTC(2025, 10, 1, 9, 0, 0)
    const shopId = `session-${randomUUID()}`
    const blogId = `session-${randomUUID()}`
    await store.conversations.ensure({ id: shopId, workspace: shop, title: 'Shop API database', startedAt: t0 })
    await store.conversations.ensure({ id: blogId, workspace: blog, startedAt: t0 + 60_000 })
    const append = (conversationId: string, seq: number, role: 'user' | 'assistant', text: string) =>
      store.messages.append({ conversationId, hostMessageId: `h-${conversationId}-${seq}`, role, text, turn: Math.floor(seq / 2) + 1, seq, createdAt: t0 + seq * 1000 })
    await append(shopId, 0, 'user', 'We are building the shop API in TypeScript; we decided on PostgreSQL, not MySQL.')
    await append(shopId, 1, 'assistant', 'Got it: PostgreSQL for the shop API.')
    const zh = await append(shopId, 2, 'user', '我们决定使用 PostgreSQL 作为主数据库，部署只在周二进行。')
    await append(shopId, 3, 'assistant', '明白了：主数据库是 PostgreSQL，周二部署。')
    const ja = await append(blogId, 0, 'user', 'ブログは Astro で作って、Cloudflare Pages にデプロイしています。')
    await append(blogId, 1, 'assistant', '了解しました。')

    const database = await store.memories.add({ kind: 'fact', text: '主数据库使用 PostgreSQL（不是 MySQL）。', scope: 'workspace', workspace: shop, sourceMessageIds: [zh.message.id], priority: 3 })
    const deployDayOld = await store.memories.add({ kind: 'instruction', text: 'Deploy the shop API on Mondays.', scope: 'workspace', workspace: shop })
    const deployDay = await store.memories.supersede(deployDayOld.id, { text: 'Deploy the shop API on Tuesdays only.' })
    const editor = await store.memories.add({ kind: 'preference', text: 'The user prefers Helix as their editor.', scope: 'global' })
    const blogHost = await store.memories.add({ kind: 'fact', text: 'ブログは Cloudflare Pages でホストしている。', scope: 'workspace', workspace: blog, sourceMessageIds: [ja.message.id] })
    const session = await store.memories.add({ kind: 'episode', text: 'Debugged a flaky checkout test today.', scope: 'session', workspace: shop, sessionId: shopId })
    const scene = await store.scenes.add({ title: 'Shop API infrastructure', summary: 'Database and deployment decisions of the shop API.', scope: 'workspace', workspace: shop, memoryIds: [database.id, deployDay.id] })
    await store.persona.put({ scope: 'global', text: '# Persona\nA TypeScript developer who writes in English and Chinese.' })

    // Distill bookkeeping: the shop conversation distilled up to seq 1 (two messages pending),
    // the blog conversation failing twice, and a token ledger.
    const lastRunAt = t0 + 3_600_000
    const state = new DistillStateRepository(store)
    await state.putConversation({ ...initialConversationState(shopId), cursorSeq: 1, stage: 1, lastRunAt })
    await state.putConversation({ ...initialConversationState(blogId), attempts: 2, notBefore: lastRunAt + 60_000, lastError: 'model call failed: HTTP 500' })
    await state.updatePending([shopId], [])
    await state.markScan(t0)
    const cost = (layer: 'l1' | 'dedup', inputTokens: number, outputTokens: number, ok = true) =>
      state.recordCost({ at: lastRunAt, provider: 'deepseek-official', model: 'deepseek-v4-flash', layer, ok, inputTokens, outputTokens, cacheReadTokens: ok ? 100 : 0, estimated: false }, 0, lastRunAt)
    await cost('l1', 1200, 300)
    await cost('l1', 800, 200)
    await cost('dedup', 400, 50)
    await cost('l1', 0, 0, false)
    // Search once so the index file exists, as after a host session.
    await store.search.warm()
    return {
      dataDir,
      shop,
      blog,
      conversations: { shop: shopId, blog: blogId },
      memories: { database: database.id, deployDay: deployDay.id, deployDayOld: deployDayOld.id, editor: editor.id, blogHost: blogHost.id, session: session.id },
      messages: { zh: zh.message.id, ja: ja.message.id },
      scene: scene.id,
      lastRunAt,
    }
  } finally {
    await store.close()
  }
}
