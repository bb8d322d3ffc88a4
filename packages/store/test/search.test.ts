import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { TOKENIZER_VERSION } from '../src/index.ts'
import type { MemoryStore } from '../src/index.ts'
import { fakeClock, openTemp, rejectionOf, reopen } from './helpers.ts'

async function say(store: MemoryStore, conversationId: string, text: string, role: 'user' | 'assistant' = 'user') {
  const count = (await store.messages.list({ conversationId, limit: 10_000 })).length
  return (await store.messages.append({ conversationId, hostMessageId: `h${count + 1}`, role, text })).message
}

const memoryIds = (hits: { memory: { id: string } }[]) => hits.map((h) => h.memory.id)
const messageIds = (hits: { message: { id: string } }[]) => hits.map((h) => h.message.id)

describe('search', () => {
  it('finds English, Chinese, Japanese and mixed text in messages', async () => {
    const { store } = openTemp()
    await store.conversations.ensure({ id: 's', workspace: '/w' })
    const zh = await say(store, 's', '我们决定使用PostgreSQL作为主数据库')
    const ja = await say(store, 's', '東京でラーメンを食べるのが好きです')
    const en = await say(store, 's', 'The deployment pipeline builds Docker images nightly')
    const mixed = await say(store, 's', '下周把API网关从Nginx迁移到Envoy，别忘了更新TLS证书', 'assistant')
    await say(store, 's', 'Unrelated chatter about the weather')

    expect(await store.messages.list()).toHaveLength(5)
    expect(messageIds(await store.search.messages('数据库'))).toEqual([zh.id])
    expect(messageIds(await store.search.messages('PostgreSQL'))).toEqual([zh.id])
    expect(messageIds(await store.search.messages('postgresql 数据库'))[0]).toBe(zh.id)
    expect(messageIds(await store.search.messages('ラーメン'))).toEqual([ja.id])
    expect(messageIds(await store.search.messages('東京'))).toEqual([ja.id])
    expect(messageIds(await store.search.messages('docker image'))).toEqual([en.id])
    expect(messageIds(await store.search.messages('deployments'))).toEqual([en.id])
    expect(messageIds(await store.search.messages('网关'))).toEqual([mixed.id])
    expect(messageIds(await store.search.messages('envoy'))).toEqual([mixed.id])
    expect(messageIds(await store.search.messages('TLS证书'))).toEqual([mixed.id])
    // Only stop words or nothing: no hits rather than everything.
    expect(await store.search.messages('the of and')).toEqual([])
    expect(await store.search.messages('   ')).toEqual([])
    expect((await rejectionOf(store.search.messages(42 as never))).code).toBe('invalid-argument')
  })

  it('filters messages by workspace, conversation, role and time', async () => {
    const clock = fakeClock(1_000, 1_000)
    const { store } = openTemp({ now: clock.now })
    await store.conversations.ensure({ id: 'a', workspace: '/one' })
    await store.conversations.ensure({ id: 'b', workspace: '/two' })
    const a1 = await say(store, 'a', 'kubernetes rollout stuck')
    const a2 = await say(store, 'a', 'kubernetes rollout fixed', 'assistant')
    const b1 = await say(store, 'b', 'kubernetes cluster upgrade')
    const all = messageIds(await store.search.messages('kubernetes'))
    expect(all.sort()).toEqual([a1.id, a2.id, b1.id].sort())
    expect(messageIds(await store.search.messages('kubernetes', { workspace: '/one' })).sort()).toEqual([a1.id, a2.id].sort())
    expect(messageIds(await store.search.messages('kubernetes', { conversationId: 'b' }))).toEqual([b1.id])
    expect(messageIds(await store.search.messages('kubernetes', { role: 'assistant' }))).toEqual([a2.id])
    expect(messageIds(await store.search.messages('kubernetes', { since: a2.createdAt, until: a2.createdAt }))).toEqual([a2.id])
    expect(await store.search.messages('kubernetes', { limit: 1 })).toHaveLength(1)
    // A conversation that moves to another workspace takes its messages along.
    await store.conversations.ensure({ id: 'b', workspace: '/one' })
    expect(messageIds(await store.search.messages('kubernetes', { workspace: '/one' })).sort()).toEqual([a1.id, a2.id, b1.id].sort())
    expect(await store.search.messages('kubernetes', { workspace: '/two' })).toEqual([])
  })

  it('scopes memory search: own workspace plus global, never another workspace', async () => {
    const clock = fakeClock(1_000, 1_000)
    const { store } = openTemp({ now: clock.now })
    const global = await store.memories.add({ kind: 'preference', text: 'Prefers pnpm for every project', scope: 'global' })
    const one = await store.memories.add({ kind: 'fact', text: 'Project one builds with pnpm workspaces', scope: 'workspace', workspace: '/one' })
    const two = await store.memories.add({ kind: 'fact', text: 'Project two builds with pnpm too', scope: 'workspace', workspace: '/two' })
    const sessionOne = await store.memories.add({ kind: 'episode', text: 'pnpm install failed in this session', scope: 'session', sessionId: 's1', workspace: '/one' })
    const sessionOther = await store.memories.add({ kind: 'episode', text: 'pnpm cache cleared in another session', scope: 'session', sessionId: 's2', workspace: '/one' })
    const instruction = await store.memories.add({ kind: 'instruction', text: 'Run pnpm lint before committing', scope: 'workspace', workspace: '/one' })

    const found = async (options: Parameters<MemoryStore['search']['memories']>[1]) => memoryIds(await store.search.memories('pnpm', options)).sort()
    expect(await found({})).toEqual([global, one, two, sessionOne, sessionOther, instruction].map((m) => m.id).sort())
    expect(await found({ workspace: '/one' })).toEqual([global, one, sessionOne, sessionOther, instruction].map((m) => m.id).sort())
    expect(await found({ workspace: '/two' })).toEqual([global, two].map((m) => m.id).sort())
    expect(await found({ workspace: '/one', includeGlobal: false })).toEqual([one, sessionOne, sessionOther, instruction].map((m) => m.id).sort())
    expect(await found({ workspace: '/one', sessionId: 's1' })).toEqual([global, one, sessionOne, instruction].map((m) => m.id).sort())
    expect(await found({ scope: 'global' })).toEqual([global.id])
    expect(await found({ workspace: '/one', kind: 'instruction' })).toEqual([instruction.id])
    expect(await found({ workspace: '/one', kind: ['fact', 'episode'], includeGlobal: false })).toEqual([one, sessionOne, sessionOther].map((m) => m.id).sort())
    expect(await found({ since: two.createdAt, until: sessionOne.createdAt })).toEqual([two, sessionOne].map((m) => m.id).sort())
    expect(await found({ workspace: '/three' })).toEqual([global.id])

    // Many workspaces sharing the same words: a workspace-filtered search never leaks.
    for (let i = 0; i < 30; i++) await store.memories.add({ kind: 'fact', text: `pnpm secret layout number ${i}`, scope: 'workspace', workspace: `/repo-${i}` })
    for (let i = 0; i < 30; i++) {
      const hits = await store.search.memories('pnpm secret layout', { workspace: `/repo-${i}`, limit: 100 })
      for (const { memory } of hits) expect(memory.scope === 'global' || memory.workspace === `/repo-${i}`).toBe(true)
      expect(hits.some((h) => h.memory.workspace === `/repo-${i}`)).toBe(true)
    }
  })

  it('ranks better matches higher and sees updates and deletes', async () => {
    const { store } = openTemp()
    const strong = await store.memories.add({ kind: 'fact', text: 'Postgres is the primary database; Postgres replicas are read-only', scope: 'global' })
    const weak = await store.memories.add({ kind: 'fact', text: 'The analytics team sometimes exports data from the database', scope: 'global' })
    const hits = await store.search.memories('postgres database')
    expect(memoryIds(hits)).toEqual([strong.id, weak.id])
    expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score)
    await store.memories.update(weak.id, { text: 'The analytics team exports parquet files' })
    expect(memoryIds(await store.search.memories('database'))).toEqual([strong.id])
    expect(memoryIds(await store.search.memories('parquet'))).toEqual([weak.id])
    await store.memories.delete(strong.id)
    expect(await store.search.memories('postgres')).toEqual([])
  })

  it('builds lazily, persists the index and reloads it after a restart', async () => {
    const { store, path } = openTemp()
    await store.conversations.ensure({ id: 's', workspace: '' })
    const message = await say(store, 's', '東京でラーメンを食べるのが好きです')
    const memory = await store.memories.add({ kind: 'preference', text: 'Loves ramen in Tokyo', scope: 'global' })
    expect((await store.search.status()).built).toBe(false)
    expect(memoryIds(await store.search.memories('ramen'))).toEqual([memory.id])
    expect(await store.search.status()).toMatchObject({ built: true, reason: 'fresh', documents: { messages: 1, memories: 1 }, tokenizerVersion: TOKENIZER_VERSION })
    const later = await store.memories.add({ kind: 'fact', text: 'Ramen shop closes at nine', scope: 'global' })
    await store.close()
    expect(existsSync(`${path}.search-index`)).toBe(true)

    const again = reopen(path)
    expect((await again.search.status()).built).toBe(false)
    expect(memoryIds(await again.search.memories('ramen')).sort()).toEqual([memory.id, later.id].sort())
    expect(messageIds(await again.search.messages('ラーメン'))).toEqual([message.id])
    expect((await again.search.status()).reason).toBe('loaded')
  })

  it('rebuilds when the recorded tokenizer version differs, the file is corrupt or belongs to another database', async () => {
    const { store, path } = openTemp()
    const memory = await store.memories.add({ kind: 'fact', text: 'Vitest runs the unit tests', scope: 'global' })
    await store.search.warm()
    await store.close()

    const raw = new Database(path)
    const manifest = JSON.parse((raw.prepare(`SELECT value FROM store_meta WHERE key = 'store.search-index'`).get() as { value: string }).value)
    expect(manifest.tokenizer).toBe(TOKENIZER_VERSION)
    raw.prepare(`UPDATE store_meta SET value = ? WHERE key = 'store.search-index'`).run(JSON.stringify({ ...manifest, tokenizer: 'ancient/0' }))
    raw.close()
    let next = reopen(path)
    expect(memoryIds(await next.search.memories('vitest'))).toEqual([memory.id])
    expect((await next.search.status()).reason).toBe('tokenizer-changed')
    expect(JSON.parse((await (async () => {
      const db = new Database(path, { readonly: true })
      try {
        return (db.prepare(`SELECT value FROM store_meta WHERE key = 'store.search-index'`).get() as { value: string }).value
      } finally {
        db.close()
      }
    })())).tokenizer).toBe(TOKENIZER_VERSION)
    await next.close()

    // A file header from another tokenizer.
    const file = `${path}.search-index`
    const content = readFileSync(file, 'utf8')
    const newline = content.indexOf('\n')
    const header = JSON.parse(content.slice(0, newline))
    writeFileSync(file, JSON.stringify({ ...header, tokenizer: 'ancient/0' }) + content.slice(newline))
    next = reopen(path)
    expect(memoryIds(await next.search.memories('vitest'))).toEqual([memory.id])
    expect((await next.search.status()).reason).toBe('tokenizer-changed')
    await next.close()

    writeFileSync(file, 'garbage')
    next = reopen(path)
    expect(memoryIds(await next.search.memories('vitest'))).toEqual([memory.id])
    expect((await next.search.status()).reason).toBe('corrupt-file')
    await next.close()

    // An index file copied from another database is not trusted.
    const { store: otherStore, path: otherPath } = openTemp()
    await otherStore.memories.add({ kind: 'fact', text: 'Jest runs the unit tests', scope: 'global' })
    await otherStore.search.warm()
    await otherStore.close()
    writeFileSync(file, readFileSync(`${otherPath}.search-index`))
    next = reopen(path)
    expect(memoryIds(await next.search.memories('unit tests'))).toEqual([memory.id])
    expect((await next.search.status()).reason).toBe('other-database')
  })

  it('sees writes made by another store on the same file before the next search', async () => {
    const { store: first, path } = openTemp()
    const second = reopen(path)
    await first.conversations.ensure({ id: 's', workspace: '/w' })
    const mine = await first.memories.add({ kind: 'fact', text: 'The staging cluster runs in Frankfurt', scope: 'global' })
    expect(memoryIds(await first.search.memories('frankfurt'))).toEqual([mine.id])

    const theirs = await second.memories.add({ kind: 'fact', text: 'Production also runs in Frankfurt', scope: 'global' })
    const theirMessage = (await second.messages.append({ conversationId: 's', hostMessageId: 'x', role: 'user', text: 'Frankfurt latency is fine' })).message
    expect(memoryIds(await first.search.memories('frankfurt')).sort()).toEqual([mine.id, theirs.id].sort())
    expect(messageIds(await first.search.messages('frankfurt'))).toEqual([theirMessage.id])

    await second.memories.update(mine.id, { text: 'The staging cluster moved to Dublin' })
    await second.memories.delete(theirs.id)
    expect(await first.search.memories('frankfurt')).toEqual([])
    expect(memoryIds(await first.search.memories('dublin'))).toEqual([mine.id])
  })

  it('searches while another process holds the write lock', async () => {
    const { store, path } = openTemp({ busyTimeoutMs: 10_000 })
    const memory = await store.memories.add({ kind: 'fact', text: 'Lock holders never block readers', scope: 'global' })
    const other = new Database(path)
    other.exec('BEGIN IMMEDIATE')
    try {
      const started = Date.now()
      // The first search would record the index manifest; it skips that rather than wait.
      expect(memoryIds(await store.search.memories('readers'))).toEqual([memory.id])
      // Far below the 10 s busy timeout: the search did not wait for the lock.
      expect(Date.now() - started).toBeLessThan(5_000)
    } finally {
      other.exec('ROLLBACK')
      other.close()
    }
  })

  it('rebuild() and warm() report status', async () => {
    const { store } = openTemp()
    await store.memories.add({ kind: 'fact', text: 'one', scope: 'global' })
    expect(await store.search.warm()).toMatchObject({ built: true, documents: { memories: 1, messages: 0 } })
    expect(await store.search.rebuild()).toMatchObject({ built: true, reason: 'manual' })
  })

  it('works on an in-memory database without an index file', async () => {
    const { store } = openTemp({ path: ':memory:' })
    const memory = await store.memories.add({ kind: 'fact', text: '喜欢喝乌龙茶', scope: 'global' })
    expect(memoryIds(await store.search.memories('乌龙茶'))).toEqual([memory.id])
  })
})
