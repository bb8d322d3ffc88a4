import { describe, expect, it } from 'vitest'
import { searchTokenize, TOKENIZER_VERSION } from '../../src/index.ts'
import type { MemoryStore } from '../../src/index.ts'
import { encodeTerm } from '../../src/core/search-plan.ts'
import { fakeClock, type OpenedStore, rejectionOf } from '../helpers.ts'
import { backends } from './backends.ts'
import { searchIndexOf } from './search-index.ts'

async function say(store: MemoryStore, conversationId: string, text: string, role: 'user' | 'assistant' = 'user') {
  const count = (await store.messages.list({ conversationId, limit: 10_000 })).length
  return (await store.messages.append({ conversationId, hostMessageId: `h${count + 1}`, role, text })).message
}

const memoryIds = (hits: { memory: { id: string } }[]) => hits.map((h) => h.memory.id)
const messageIds = (hits: { message: { id: string } }[]) => hits.map((h) => h.message.id)

describe.each(backends)('search ($name)', (backend) => {
  const index = searchIndexOf(backend)

  it('finds English, Chinese, Japanese and mixed text in messages', async () => {
    const store = await backend.open()
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

  it('matches traditional and simplified Chinese both ways, in memories and messages', async () => {
    const store = await backend.open()
    const traditional = await store.memories.add({ kind: 'fact', text: '用戶的家庭醫生是王醫師，在社區診所看診。', scope: 'global' })
    const simplified = await store.memories.add({ kind: 'fact', text: '项目的数据库用的是 PostgreSQL。', scope: 'global' })
    await store.memories.add({ kind: 'fact', text: '用户每天早上喝一杯拿铁。', scope: 'global' })
    expect(memoryIds(await store.search.memories('医生'))).toEqual([traditional.id])
    expect(memoryIds(await store.search.memories('醫生'))).toEqual([traditional.id])
    expect(memoryIds(await store.search.memories('專案的數據庫'))).toEqual([simplified.id])
    await store.conversations.ensure({ id: 's', workspace: '/w' })
    const message = await say(store, 's', '這台電腦的設定檔在哪裡')
    expect(messageIds(await store.search.messages('电脑'))).toEqual([message.id])
  })

  it('filters messages by workspace, conversation, role and time', async () => {
    const clock = fakeClock(1_000, 1_000)
    const store = await backend.open({ now: clock.now })
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
    // A conversation that moves to another workspace takes its messages along, and what it says next.
    await store.conversations.ensure({ id: 'b', workspace: '/one' })
    const b2 = await say(store, 'b', 'kubernetes cluster upgraded')
    expect(messageIds(await store.search.messages('kubernetes', { workspace: '/one' })).sort()).toEqual([a1.id, a2.id, b1.id, b2.id].sort())
    expect(await store.search.messages('kubernetes', { workspace: '/two' })).toEqual([])
    // Rows of the bulk path (export, then import into an empty store) are found by workspace too.
    const copy = await backend.open()
    await copy.importJsonl(store.exportJsonl())
    expect(messageIds(await copy.search.messages('kubernetes', { workspace: '/one' })).sort()).toEqual([a1.id, a2.id, b1.id, b2.id].sort())
    expect(await copy.search.messages('kubernetes', { workspace: '/two' })).toEqual([])
  })

  it('scopes memory search: own workspace plus global, never another workspace', async () => {
    const clock = fakeClock(1_000, 1_000)
    const store = await backend.open({ now: clock.now })
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
    const store = await backend.open()
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

  it('keeps the index in the database: searchable at once and after a restart', async () => {
    const store = await backend.open()
    await store.conversations.ensure({ id: 's', workspace: '' })
    const message = await say(store, 's', '東京でラーメンを食べるのが好きです')
    const memory = await store.memories.add({ kind: 'preference', text: 'Loves ramen in Tokyo', scope: 'global' })
    expect(memoryIds(await store.search.memories('ramen'))).toEqual([memory.id])
    expect(await store.search.status()).toMatchObject({ built: true, documents: { messages: 1, memories: 1 }, tokenizerVersion: TOKENIZER_VERSION })
    const later = await store.memories.add({ kind: 'fact', text: 'Ramen shop closes at nine', scope: 'global' })
    await store.close()

    const again = await backend.reopen(store)
    // Current already: opening did no index work.
    expect(await again.search.status()).toMatchObject({ built: true, reason: null, documents: { messages: 1, memories: 2 } })
    expect(memoryIds(await again.search.memories('ramen')).sort()).toEqual([memory.id, later.id].sort())
    expect(messageIds(await again.search.messages('ラーメン'))).toEqual([message.id])
  })

  it('rebuilds when the recorded tokenizer version differs, and backfills rows after an upgrade', async () => {
    const store = await backend.open()
    await store.conversations.ensure({ id: 's', workspace: '/w' })
    const message = await say(store, 's', 'Vitest 跑单元测试')
    const memory = await store.memories.add({ kind: 'fact', text: 'Vitest runs the unit tests', scope: 'global' })
    await store.close()
    expect(await index.state(store)).toMatchObject({ tokenizer: TOKENIZER_VERSION, messagesAfter: null, memoriesAfter: null })

    // Built by another tokenizer: stale terms are dropped and every row is indexed again.
    await index.setState(store, { ...(await index.state(store)), tokenizer: 'ancient/0' })
    await index.addMemoryTerms(store, memory.id, ['stale'])
    let next = await backend.reopen(store)
    expect(await next.search.status()).toMatchObject({ built: true, reason: 'tokenizer-changed', documents: { messages: 1, memories: 1 } })
    expect(memoryIds(await next.search.memories('vitest'))).toEqual([memory.id])
    expect(await next.search.memories('stale')).toEqual([])
    expect((await index.state(store)).tokenizer).toBe(TOKENIZER_VERSION)
    await next.close()

    // A database from before the index (what the search migration starts from): rows backfilled at open.
    await index.drop(store)
    // Read-only: reports the pending backfill, does not write.
    const readonly = await backend.reopen(store, { readonly: true })
    expect(await readonly.search.status()).toMatchObject({ built: false, documents: { messages: 0, memories: 0 } })
    await readonly.close()
    next = await backend.reopen(store)
    expect(await next.search.status()).toMatchObject({ built: true, reason: 'backfill', documents: { messages: 1, memories: 1 } })
    expect(messageIds(await next.search.messages('单元测试'))).toEqual([message.id])
    expect(memoryIds(await next.search.memories('unit tests'))).toEqual([memory.id])
  })

  it('resumes a backfill interrupted part-way and never indexes a row twice', async () => {
    const store = await backend.open()
    await store.conversations.ensure({ id: 's', workspace: '/w' })
    for (let i = 0; i < 12; i++) await say(store, 's', `backfill probe number ${i}`)
    const ids = (await store.messages.list({ limit: 100 })).map((m) => m.id).sort()
    await store.close()
    // As if a backfill had indexed the first five rows and then the process died.
    await index.dropMessagesAfter(store, ids[4]!)
    await index.setState(store, { ...(await index.state(store)), messagesAfter: ids[4] })
    const next = await backend.reopen(store)
    // 12 documents, not 17: the rows before the cursor were not indexed again.
    expect(await next.search.status()).toMatchObject({ built: true, reason: 'resumed', documents: { messages: 12 } })
    // Rows after the cursor are searchable again. SQLite's planted damage ('delete-all') also
    // emptied the terms of the first five, which the resumed backfill skips: rebuild() exists for that.
    const expected = backend.name === 'sqlite' ? ids.slice(5) : ids
    expect((await next.search.messages('number', { limit: 100 })).map((hit) => hit.message.id).sort()).toEqual(expected)
    expect(await next.search.rebuild()).toMatchObject({ built: true, reason: 'manual', documents: { messages: 12 } })
    expect(await next.search.messages('number', { limit: 100 })).toHaveLength(12)
  })

  it('indexes every tokenizer term unchanged, punctuation and CJK included', async () => {
    const store = await backend.open()
    const text = "user_name it's a.b key:value foo-bar café Straße 数据库迁移 資料庫遷移 ラーメン 한국어 ①②"
    const memory = await store.memories.add({ kind: 'fact', text, scope: 'global' })
    await store.close()
    const terms = await index.memoryTerms(store)
    // The search terms: tokenize over the script-folded text (資料庫遷移 is held as 资料库迁移).
    expect(terms).toEqual([...new Set(searchTokenize(text).map(encodeTerm))].sort())
    expect(terms).toContain('迁移')
    expect(terms).not.toContain('遷移')
    const next = await backend.reopen(store)
    for (const query of ['user_name', "it's", 'a.b', 'key:value', 'foo-bar', 'café', 'straße', '数据库', '資料庫', 'ラーメン', '한국어', 'user', 'name']) {
      expect(memoryIds(await next.search.memories(query)), query).toEqual([memory.id])
    }
  })

  /** 1 200 messages (over the floor of "very common") saying `common`; row 7 also says "zeppelin". Returns their ids. */
  async function commonRows(store: OpenedStore, common: string): Promise<string[]> {
    await store.conversations.ensure({ id: 's', workspace: '/w' })
    const ids: string[] = []
    await store.transaction(async (tx) => {
      for (let i = 0; i < 1_200; i++) {
        const text = `${common} row ${i}${i === 7 ? ' plus a zeppelin' : ''}`
        ids.push((await tx.messages.append({ conversationId: 's', hostMessageId: `h${i}`, role: 'user', text })).message.id)
      }
    })
    return ids
  }

  it('drops very common terms while rarer ones exist', async () => {
    const store = await backend.open()
    const ids = await commonRows(store, 'common words everywhere')
    // "common" matches every row: only the rare term decides, so row 7 is the only hit.
    expect(messageIds(await store.search.messages('common zeppelin', { limit: 5 }))).toEqual([ids[7]])
    // Only common terms: still answers (ties go to the newest matches).
    expect(await store.search.messages('common everywhere', { limit: 5 })).toHaveLength(5)
  }, 60_000)

  it('does not expand a prefix over a very common query term, and answers when only such prefixes are rare', async () => {
    const store = await backend.open()
    const ids = await commonRows(store, 'kubernetes cluster')
    // "kubernet" (a stem recall adds) would expand to every "kubernetes" row: it stays exact
    // (and matches nothing), so the rare term alone decides.
    expect(messageIds(await store.search.messages('kubernetes kubernet zeppelin', { limit: 5 }))).toEqual([ids[7]])
    // A prefix with no exact match may match nothing at all: the rarest common term still answers.
    expect(await store.search.messages('kubernetes kubernet', { limit: 5 })).toHaveLength(5)
    expect(await store.search.messages('nonexistent cluster', { limit: 5 })).toHaveLength(5)
  }, 60_000)

  it('in an index of 100 000 documents or more, does not expand a prefix that a very common indexed term starts with', async () => {
    const store = await backend.open()
    // 120 000 memories written behind the store's back (the store's own path would take minutes):
    // every one says "alpha caches", one "alpha cachet zeppelin".
    const rows = 120_000
    const text = (i: string) => `CASE WHEN ${i} = 7 THEN 'alpha cachet zeppelin' ELSE 'alpha caches ' || ${i} END`
    if (backend.name === 'sqlite') {
      await backend.sql(
        store,
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${rows})
         INSERT INTO store_memories (id, kind, text, scope, created_at, updated_at) SELECT printf('m%06d', i), 'fact', ${text('i')}, 'global', 1000 + i, 1000 + i FROM n`,
      )
      await backend.sql(store, `INSERT INTO store_search_memories (memory_id) SELECT id FROM store_memories ORDER BY id`)
      await backend.sql(store, `INSERT INTO store_search_memories_fts (rowid, terms) SELECT d.doc, m.text FROM store_search_memories d JOIN store_memories m ON m.id = d.memory_id`)
    } else {
      await backend.sql(
        store,
        `INSERT INTO store_memories (id, kind, text, scope, created_at, updated_at, search_terms)
         SELECT 'm' || lpad(i::text, 6, '0'), 'fact', ${text('i')}, 'global', 1000 + i, 1000 + i, to_tsvector('simple', ${text('i')}) FROM generate_series(1, ${rows}) AS i`,
      )
      // PostgreSQL's statistics (autovacuum's ANALYZE on a live server) tell which terms are very common.
      await backend.sql(store, 'ANALYZE store_memories')
    }
    const ids = async (query: string) => memoryIds(await store.search.memories(query, { limit: 5 }))
    // "cach" (recall's stem of "caching") and "cache" match no term exactly; expanded, they
    // would merge the document list of "caches" (every row): they stay exact and match nothing.
    expect(await ids('cach')).toEqual([])
    expect(await ids('cache')).toEqual([])
    // The rare term is found as it is, and a prefix whose terms are all rare still expands.
    expect(await ids('cachet')).toEqual(['m000007'])
    expect(await ids('zeppel')).toEqual(['m000007'])
  }, 120_000)

  it('sees writes made by another store on the same database before the next search', async () => {
    const first = await backend.open()
    const second = await backend.reopen(first)
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

  it('returns embeddings bit-exact with hits, so vector ranking over them is the same on both backends', async () => {
    const store = await backend.open()
    // float32 edge values: the largest finite, the smallest subnormal, a negative zero, a CJK-labelled model.
    const embedding = new Float32Array([0.1, -2.5, 3.4028234663852886e38, 1e-45, -0])
    const memory = await store.memories.add({ kind: 'fact', text: 'Vectors ride along with 向量 hits', scope: 'global', embedding, embeddingModel: 'bge-m3@5' })
    const [hit] = await store.search.memories('向量 vectors')
    expect(hit!.memory.id).toBe(memory.id)
    expect(hit!.memory.embedding).toEqual(embedding)
    expect(Object.is(hit!.memory.embedding![4], -0)).toBe(true)
    expect(hit!.memory.embeddingModel).toBe('bge-m3@5')
  })

  it('rebuild() and warm() report status', async () => {
    const store = await backend.open()
    await store.memories.add({ kind: 'fact', text: 'one', scope: 'global' })
    expect(await store.search.warm()).toMatchObject({ built: true, documents: { memories: 1, messages: 0 } })
    expect(await store.search.rebuild()).toMatchObject({ built: true, reason: 'manual' })
  })
})
