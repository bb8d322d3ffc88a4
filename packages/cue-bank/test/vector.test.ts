import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest'
import { createEmbeddingClient } from '../src/core/embedding.js'
import { isCueBankError } from '../src/core/errors.js'
import { Clock, conceptVector, openHarness, session, startEmbeddingServer, talk, tempDir, type EmbeddingServer, type Harness } from './fixtures.js'

const vectorOptions = (url: string, extra: { waitMs?: number; timeoutMs?: number } = {}) => ({
  matchMode: 'auto' as const,
  embedding: { baseURL: url, apiKey: 'test-key', model: 'concept-5', dimensions: 5, timeoutMs: extra.timeoutMs ?? 3000, waitMs: extra.waitMs ?? 2000 },
})

describe('the embedding client', () => {
  it('posts an OpenAI-compatible request with the bearer key and returns vectors in input order', async () => {
    const server = await startEmbeddingServer(conceptVector)
    onTestFinished(() => server.close())
    const client = createEmbeddingClient({ baseURL: `${server.url}/`, apiKey: 'sk-test', model: 'concept-5', dimensions: 5, timeoutMs: 2000 })
    const [db, cooking] = await client.embed(['PostgreSQL migration', '今晚的菜谱'])
    expect([...db!]).toEqual([1, 0, 0, 0, expect.closeTo(0.05, 5)])
    expect([...cooking!]).toEqual([0, 0, 1, 0, expect.closeTo(0.05, 5)])
    expect(server.requests[0]!.headers.authorization).toBe('Bearer sk-test')
    expect(server.requests[0]!.body).toMatchObject({ model: 'concept-5', input: ['PostgreSQL migration', '今晚的菜谱'] })
  })

  it('rejects malformed answers, HTTP errors and timeouts with embedding-failed, then cools down', async () => {
    let plan: { delayMs?: number; status?: number; raw?: string } = { raw: '{"data":[{"embedding":[1,2]}]}' }
    const server = await startEmbeddingServer(conceptVector, () => plan)
    onTestFinished(() => server.close())
    const clock = new Clock()
    const client = createEmbeddingClient({ baseURL: server.url, apiKey: 'k', model: 'm', dimensions: 5, timeoutMs: 300, cooldownMs: 1000, now: clock.now })
    const failure = async () => {
      try {
        await client.embed(['x'])
      } catch (error) {
        expect(isCueBankError(error, 'embedding-failed')).toBe(true)
        return (error as Error).message
      }
      throw new Error('expected a failure')
    }
    expect(await failure()).toMatch(/2 dimensions, expected 5/)
    expect(client.available).toBe(false)
    const requests = server.requests.length
    expect(await failure()).toMatch(/cooling down/)
    expect(server.requests.length).toBe(requests) // no request during the cool-down
    clock.advance(1000)
    plan = { status: 500 }
    expect(await failure()).toMatch(/HTTP 500/)
    clock.advance(1000)
    plan = { raw: 'not json' }
    expect(await failure()).toMatch(/not JSON/)
    clock.advance(1000)
    plan = { raw: '{"data":[{"embedding":[1,"x",0,0,0]}]}' }
    expect(await failure()).toMatch(/finite numbers/)
    clock.advance(1000)
    plan = { delayMs: 2000 }
    expect(await failure()).toMatch(/no answer within 300 ms/)
    clock.advance(1000)
    plan = {}
    expect(await client.embed(['deploy to the cluster'])).toHaveLength(1)
  })
})

describe('vector matching through the cue bank', () => {
  let temp: ReturnType<typeof tempDir>
  let server: EmbeddingServer
  let h: Harness
  let plan: { delayMs?: number; status?: number } = {}

  beforeEach(async () => {
    temp = tempDir()
    plan = {}
    server = await startEmbeddingServer(conceptVector, () => plan)
  })
  afterEach(async () => {
    await h.close()
    await server.close()
    temp.remove()
  })

  async function open(extra: { waitMs?: number; timeoutMs?: number } = {}) {
    const options = vectorOptions(server.url, extra)
    const embedder = createEmbeddingClient({ ...options.embedding, apiKey: 'test-key' })
    h = await openHarness(temp.dir, options, { embedder })
  }

  it('embeds cues at write time and wakes a semantically related cue that shares no keyword', async () => {
    await open()
    const a = session()
    await talk(h.bank, a, 1, '我们决定把 PostgreSQL 主库升级到 16', '先做 pg_upgrade 演练。')
    await h.bank.whenIdle()
    const stored = h.bank.list()
    expect(stored.every((cue) => cue.embeddingModel === 'concept-5' && cue.embedding?.length === 5)).toBe(true)

    const b = session()
    const text = 'How should the schema change next sprint?'
    const provisional = h.bank.observeUserMessage(b, { id: 'q', text }, 1)!
    // Keywords alone find nothing; the query embedding is still in flight.
    expect(provisional.cues).toEqual([])
    expect(h.bank.injection(b.id)).toBe('')
    const settled = (await h.bank.settle(b.id))!
    expect(settled.via).toBe('vector')
    expect(settled.cues.map((c) => c.cue.sessionId)).toEqual([a.id])
    expect(settled.cues[0]!.similarity).toBeGreaterThan(0.9)
    expect(h.bank.injection(b.id)).toContain('matched: (semantic match)')
    expect(server.requests.at(-1)!.body.input).toEqual([text])
  })

  it('flush (what a headless exit waits for) lets the cue vectors land, and gives a stalled endpoint only its bound', async () => {
    await open({ waitMs: 2000, timeoutMs: 3000 })
    const a = session()
    await talk(h.bank, a, 1, '我们决定把 PostgreSQL 主库升级到 16', '先做 pg_upgrade 演练。')
    await h.bank.flush(2000)
    expect(h.bank.list().every((cue) => cue.embeddingModel === 'concept-5' && cue.embedding?.length === 5)).toBe(true)

    plan = { delayMs: 2500 }
    await talk(h.bank, session(), 1, 'Deploy to the cluster on Friday', 'OK')
    await h.bank.flush(50)
    // The flush returned while the endpoint was still silent: the new cues are committed, without vectors yet.
    expect(h.bank.list().filter((cue) => cue.embedding === null).length).toBeGreaterThan(0)
    plan = {}
  })

  it('never sends a secret to the embedding endpoint', async () => {
    await open()
    await talk(h.bank, session(), 1, 'Deploy to the cluster with key sk-abcdefghijklmnopqrstuvwxyz0123', 'OK')
    await h.bank.whenIdle()
    const asking = session()
    h.bank.observeUserMessage(asking, { id: 'q', text: 'Cluster deploy again, token sk-zyxwvutsrqponmlkjihgfedcba9876' }, 1)
    await h.bank.settle(asking.id)
    const sent = JSON.stringify(server.requests.map((request) => request.body.input))
    expect(sent).toContain('Cluster deploy again, token')
    expect(sent).not.toMatch(/sk-[a-z0-9]{20,}/)
    expect(sent).toContain('[REDACTED:api-key]')
  })

  it('keeps the keyword decision when the query embedding misses the wait, and ignores the late answer', async () => {
    await open({ waitMs: 100, timeoutMs: 3000 })
    const a = session()
    await talk(h.bank, a, 1, 'Kubernetes 集群部署用 Helm', 'OK')
    await h.bank.whenIdle()
    plan = { delayMs: 600 }
    const b = session()
    h.bank.observeUserMessage(b, { id: 'q', text: 'Kubernetes Helm 部署又失败了' }, 1)
    const keywordText = h.bank.injection(b.id)
    expect(keywordText).toContain(a.id)
    const settled = (await h.bank.settle(b.id))!
    // Settled on keywords: it did not wait for the (600 ms late) query vector.
    expect(settled.via).toBe('keyword')
    await new Promise((resolve) => setTimeout(resolve, 800))
    expect(h.bank.injection(b.id)).toBe(keywordText)
  })

  it('falls back to keywords when the endpoint fails, stores no vector and reports the failure', async () => {
    await open()
    plan = { status: 503 }
    const a = session()
    await talk(h.bank, a, 1, 'Kubernetes 集群部署用 Helm', 'OK')
    await h.bank.whenIdle()
    expect(h.bank.list().every((cue) => cue.embedding === null)).toBe(true)
    expect(h.errors.some((e) => e.where === 'cue embedding' && isCueBankError(e.error, 'embedding-failed'))).toBe(true)
    const b = session()
    h.bank.observeUserMessage(b, { id: 'q', text: 'Kubernetes Helm 部署' }, 1)
    const settled = (await h.bank.settle(b.id))!
    expect(settled.via).toBe('keyword')
    expect(settled.cues.length).toBeGreaterThan(0)
  })

  it('backfills vectors of cues written while the endpoint was down', async () => {
    await open()
    plan = { status: 503 }
    await talk(h.bank, session(), 1, 'Kubernetes 集群部署用 Helm', 'OK')
    await h.bank.whenIdle()
    expect(h.bank.list().filter((cue) => cue.embedding)).toHaveLength(0)
    await h.close()
    plan = {}
    await open()
    await talk(h.bank, session(), 1, 'Redis 缓存雪崩', 'OK')
    await h.bank.whenIdle()
    expect(h.bank.list().filter((cue) => cue.embedding)).toHaveLength(4)
  })
})
