import { describe, expect, it, onTestFinished } from 'vitest'
import { cosineSimilarity, createEmbedder } from '../src/core/embedding.ts'
import { resolveRecallOptions } from '../src/core/options.ts'
import { conceptVector, startEmbeddingServer } from './support/loopback.ts'
import { modePolicy } from '../src/core/session-modes.ts'
import { RecallEngine } from '../src/core/recall-engine.ts'
import { tempStoreEachTest } from './support/store.ts'

describe('the OpenAI-compatible embeddings client (loopback server)', () => {
  const options = (url: string, extra: Record<string, unknown> = {}) =>
    resolveRecallOptions({ embedding: { enabled: true, baseUrl: url, apiKey: 'sk-local', model: 'concepts', dimensions: 8, timeoutMs: 2000, maxInputChars: 20, ...extra } }).embedding

  it('posts model, input and dimensions with the bearer key, and returns vectors in input order', async () => {
    const server = await startEmbeddingServer()
    onTestFinished(() => server.close())
    const embedder = createEmbedder(options(server.url))
    const [editor, database] = await embedder.embed(['my editor is helix', 'postgres database'])
    expect(embedder.modelKey).toBe('concepts@8')
    expect(editor![0]).toBe(1)
    expect(database![1]).toBe(1)
    expect(cosineSimilarity(editor!, database!)).toBeLessThan(0.1)
    const request = server.requests[0]!
    expect(request.headers.authorization).toBe('Bearer sk-local')
    // Inputs longer than maxInputChars are cut before they leave the process.
    expect(request.body).toEqual({ model: 'concepts', input: ['my editor is helix', 'postgres database'], dimensions: 8, encoding_format: 'float' })
    await embedder.embed(['x'.repeat(100)])
    expect(server.requests[1]!.body.input![0]).toHaveLength(20)
  })

  it.each([
    ['http-500', /HTTP 500/],
    ['garbage', /unexpected shape/],
    ['wrong-dimensions', /2 dimensions, expected 8/],
  ] as const)('turns a %s answer into embedding-unavailable', async (behaviour, message) => {
    const server = await startEmbeddingServer(behaviour)
    onTestFinished(() => server.close())
    await expect(createEmbedder(options(server.url)).embed(['a'])).rejects.toMatchObject({ code: 'embedding-unavailable', message: expect.stringMatching(message) })
  })

  it('times out a stalled server', async () => {
    const server = await startEmbeddingServer('stall')
    onTestFinished(() => server.close())
    // The stalled server never answers: only the embedder's own timeout can end this call.
    await expect(createEmbedder(options(server.url, { timeoutMs: 200 })).embed(['a'])).rejects.toMatchObject({ code: 'embedding-unavailable', message: expect.stringMatching(/no answer within 200 ms/) })
  })

  it('reports an unreachable endpoint', async () => {
    await expect(createEmbedder(options('http://127.0.0.1:9/v1')).embed(['a'])).rejects.toMatchObject({ code: 'embedding-unavailable' })
  })
})

describe('hybrid recall with a local OpenAI-compatible server (scripted, 127.0.0.1)', () => {
  const openStore = tempStoreEachTest()

  it('finds a Chinese paraphrase that keyword search misses (咖啡 / 拿铁), as with Ollama or llama.cpp on /v1', async () => {
    const server = await startEmbeddingServer()
    onTestFinished(() => server.close())
    const { store } = openStore()
    const scope = { sessionId: 's', workspace: '/w' }
    const latte = await store.memories.add({ kind: 'preference', text: '用户每天早上来一杯拿铁', scope: 'workspace', workspace: '/w' })
    await store.memories.add({ kind: 'fact', text: '用户开一辆白色的电动汽车', scope: 'workspace', workspace: '/w' })
    const keyword = new RecallEngine(store, resolveRecallOptions({ recall: { strategy: 'keyword', scoreThreshold: 0 } }))
    expect(await keyword.searchMemories('我平时喝什么咖啡', scope)).toEqual([])
    // The documented local-server config: baseUrl ends in /v1, the client posts to <baseUrl>/embeddings.
    const options = resolveRecallOptions({ recall: { strategy: 'hybrid' }, embedding: { enabled: true, baseUrl: server.url, model: 'concepts', dimensions: 8 } })
    const hybrid = new RecallEngine(store, options, { embedder: createEmbedder(options.embedding) })
    await hybrid.searchMemories('我平时喝什么咖啡', scope)
    await hybrid.whenIdle() // the first search embedded the memories in the background
    const hits = await hybrid.searchMemories('我平时喝什么咖啡', scope)
    expect(hits[0]!.memory.id).toBe(latte.id)
    expect(hits[0]!.vector).toBeGreaterThan(0.9)
    expect(server.requests.every((request) => request.body.model === 'concepts')).toBe(true)
  })

  it('the automatic recall holds memories with a vector to hybridThreshold: a strong cosine passes alone, one shared word with an unrelated vector does not', async () => {
    const server = await startEmbeddingServer()
    onTestFinished(() => server.close())
    const { store } = openStore()
    const scope = { sessionId: 's', workspace: '/w' }
    const latte = await store.memories.add({ kind: 'preference', text: 'The user drinks a latte every morning.', scope: 'workspace', workspace: '/w' })
    const chair = await store.memories.add({ kind: 'fact', text: 'The user bought a new office chair.', scope: 'workspace', workspace: '/w' })
    const query = 'Which chair goes with my espresso?'
    const injected = async (engine: RecallEngine) => (await engine.recallForTurn(query, scope, modePolicy('auto'), new Set())).selection.selected.map((entry) => entry.scored.memory.id)
    // Keywords alone: "chair" is one distinctive shared word (relevance 0.5 ≥ scoreThreshold 0.3).
    const keyword = new RecallEngine(store, resolveRecallOptions({ recall: { strategy: 'keyword' } }))
    expect(await injected(keyword)).toEqual([chair.id])
    const hybridWith = (extra: Record<string, number>) => {
      const options = resolveRecallOptions({ recall: { strategy: 'hybrid', ...extra }, embedding: { enabled: true, baseUrl: server.url, model: 'concepts', dimensions: 8 } })
      return new RecallEngine(store, options, { embedder: createEmbedder(options.embedding) })
    }
    const hybrid = hybridWith({})
    expect(hybrid.options.recall.hybridThreshold).toBe(0.85)
    await injected(hybrid)
    await hybrid.whenIdle() // the first turn embedded the memories in the background
    const turn = await hybrid.recallForTurn(query, scope, modePolicy('auto'), new Set())
    const byId = new Map(turn.selection.selected.map((entry) => [entry.scored.memory.id, entry.scored]))
    // The latte shares no word but its vector is the query's concept (cosine ≈ 1): in. The chair's
    // vector is unrelated (cosine ≈ 0.01), so 1 − (1 − 0.5)(1 − 0.01) ≈ 0.5 < 0.85: out, although
    // its max(keyword, cosine) passes scoreThreshold.
    expect([...byId.keys()]).toEqual([latte.id])
    expect(byId.get(latte.id)!.hybridScore).toBeGreaterThan(0.99)
    expect(turn.selection.belowThreshold).toBeGreaterThanOrEqual(1)
    // A lower hybridThreshold lets the keyword match back in.
    const loose = hybridWith({ hybridThreshold: 0.45 })
    expect((await injected(loose)).sort()).toEqual([latte.id, chair.id].sort())
  })
})

describe('conversation search with a local OpenAI-compatible server (scripted, 127.0.0.1)', () => {
  const openStore = tempStoreEachTest()
  const scope = { sessionId: 'now', workspace: '/w' }
  const hybridOptions = (url: string) => resolveRecallOptions({ recall: { strategy: 'hybrid' }, embedding: { enabled: true, baseUrl: url, model: 'concepts', dimensions: 8 } })

  /** Two past turns that match "tell … pet" by one word each (the shorter one ranks first by keywords); only the second is about a pet. */
  async function seed(store: ReturnType<typeof openStore>['store']): Promise<{ build: string; cat: string }> {
    const ids: Record<string, string> = {}
    for (const [conversationId, text] of [
      ['build', 'Tell me when the build ends.'],
      ['cat', 'Tell me when the cat wakes up from her long nap.'],
    ] as const) {
      await store.conversations.ensure({ id: conversationId, workspace: '/w' })
      ids[conversationId] = (await store.messages.append({ conversationId, hostMessageId: `${conversationId}-1`, role: 'user', text })).message.id
    }
    return { build: ids.build!, cat: ids.cat! }
  }

  it('embeds the log in the background and ranks the turn that means the query first, as keyword search does not', async () => {
    const server = await startEmbeddingServer()
    onTestFinished(() => server.close())
    const { store } = openStore()
    const { build, cat } = await seed(store)
    const query = 'tell me about my pet'
    const keyword = new RecallEngine(store, resolveRecallOptions({ recall: { strategy: 'keyword' } }))
    expect((await keyword.searchConversations(query, scope)).map((hit) => hit.message.id)).toEqual([build, cat])

    const options = hybridOptions(server.url)
    const hybrid = new RecallEngine(store, options, { embedder: createEmbedder(options.embedding) })
    // Before the log has vectors the keyword order stands; the search starts the backfill.
    expect((await hybrid.searchConversations(query, scope)).map((hit) => hit.message.id)).toEqual([build, cat])
    await hybrid.whenIdle()
    const stored = await store.messages.embeddings([build, cat], 'concepts@8')
    expect([...stored.keys()].sort()).toEqual([build, cat].sort())
    expect(Array.from(stored.get(cat)!)).toEqual(conceptVector('Tell me when the cat wakes up from her long nap.').map(Math.fround))
    expect((await hybrid.searchConversations(query, scope)).map((hit) => hit.message.id)).toEqual([cat, build])
    // Nothing left to embed: the later searches asked only for the query's vector.
    const inputs = server.requests.map((request) => request.body.input ?? [])
    expect(inputs.filter((input) => input.length === 2)).toHaveLength(1)
    expect(await store.messages.missingEmbeddings({ workspace: '/w', model: 'concepts@8', limit: 10 })).toEqual([])
  })

  it('two members with different embedders on one store keep both models’ vectors: after both backfilled, a further turn of each embeds only its query', async () => {
    // A team store: one member's recall embeds with one model, another's with another (say MiniLM
    // and a local Ollama), each through its own server.
    const first = await startEmbeddingServer()
    const second = await startEmbeddingServer()
    onTestFinished(async () => {
      await Promise.all([first.close(), second.close()])
    })
    const { store } = openStore()
    const { build, cat } = await seed(store)
    const query = 'tell me about my pet'
    const engines = [
      { server: first, key: 'concepts@8', options: hybridOptions(first.url) },
      { server: second, key: 'other-concepts@6', options: resolveRecallOptions({ recall: { strategy: 'hybrid' }, embedding: { enabled: true, baseUrl: second.url, model: 'other-concepts', dimensions: 6 } }) },
    ].map((member) => ({ ...member, engine: new RecallEngine(store, member.options, { embedder: createEmbedder(member.options.embedding) }) }))
    for (const { engine } of engines) {
      await engine.searchConversations(query, scope)
      await engine.whenIdle()
    }
    for (const { server, key } of engines) {
      // Each backfilled the log once, under its own key, and the other's backfill left it alone.
      expect(server.requests.filter((request) => request.body.input?.length === 2)).toHaveLength(1)
      expect([...(await store.messages.embeddings([build, cat], key)).keys()].sort()).toEqual([build, cat].sort())
    }
    for (const { engine, server } of [...engines, ...engines]) {
      const before = server.requests.length
      expect((await engine.searchConversations(query, scope)).map((hit) => hit.message.id)).toEqual([cat, build])
      await engine.whenIdle()
      expect(server.requests.slice(before).map((request) => request.body.input)).toEqual([[query]])
    }
    for (const { key } of engines) expect(await store.messages.missingEmbeddings({ workspace: '/w', model: key, limit: 10 })).toEqual([])
  })

  it('finds a turn that shares no word with the query by its vector (我平时喝什么咖啡 / 拿铁), which keyword search cannot', async () => {
    const server = await startEmbeddingServer()
    onTestFinished(() => server.close())
    const { store } = openStore()
    await store.conversations.ensure({ id: 'past', workspace: '/w' })
    const latte = (await store.messages.append({ conversationId: 'past', hostMessageId: 'p-1', role: 'user', text: '我每天早上来一杯拿铁' })).message
    await store.messages.append({ conversationId: 'past', hostMessageId: 'p-2', role: 'assistant', text: '好的，记住了。' })
    await store.conversations.ensure({ id: 'other', workspace: '/w' })
    await store.messages.append({ conversationId: 'other', hostMessageId: 'o-1', role: 'user', text: '周末下雨，我们在家听爵士乐。' })
    const query = '我平时喝什么咖啡'
    const keyword = new RecallEngine(store, resolveRecallOptions({ recall: { strategy: 'keyword' } }))
    expect(await keyword.searchConversations(query, scope)).toEqual([])

    const options = hybridOptions(server.url)
    const hybrid = new RecallEngine(store, options, { embedder: createEmbedder(options.embedding) })
    await hybrid.searchConversations(query, scope)
    await hybrid.whenIdle() // the first search gave the log its vectors
    const hits = await hybrid.searchConversations(query, scope)
    expect(hits[0]!.message.id).toBe(latte.id)
    // The vector candidate brings its context turn, as a full-text hit does.
    expect(hits.map((hit) => hit.message.hostMessageId)).toContain('p-2')
  })

  it('a failing server leaves the keyword order, warns, and stores no vector', async () => {
    const server = await startEmbeddingServer('http-500')
    onTestFinished(() => server.close())
    const { store } = openStore()
    const { build, cat } = await seed(store)
    const warnings: string[] = []
    const options = hybridOptions(server.url)
    const hybrid = new RecallEngine(store, options, { embedder: createEmbedder(options.embedding), onWarning: (message) => warnings.push(message) })
    expect((await hybrid.searchConversations('tell me about my pet', scope)).map((hit) => hit.message.id)).toEqual([build, cat])
    await hybrid.whenIdle()
    expect(warnings.some((message) => message.includes('falling back to keyword search'))).toBe(true)
    expect((await store.messages.embeddings([build, cat], 'concepts@8')).size).toBe(0)
  })

  it('the automatic recall of a turn embeds the newest turns of the workspace first', async () => {
    const server = await startEmbeddingServer()
    onTestFinished(() => server.close())
    const { store } = openStore()
    await store.conversations.ensure({ id: 'past', workspace: '/w' })
    const at = Date.UTC(2026, 0, 1)
    for (let i = 0; i < 40; i++) await store.messages.append({ conversationId: 'past', hostMessageId: `m${i}`, role: 'user', text: `turn number ${i} about the database`, createdAt: at + i * 1000 })
    await store.memories.add({ kind: 'fact', text: 'The project stores its data in PostgreSQL.', scope: 'workspace', workspace: '/w' })
    const options = hybridOptions(server.url)
    const hybrid = new RecallEngine(store, options, { embedder: createEmbedder(options.embedding) })
    await hybrid.recallForTurn('which database do we use', scope, modePolicy('auto'), new Set())
    await hybrid.whenIdle()
    const missing = await store.messages.missingEmbeddings({ workspace: '/w', model: 'concepts@8', limit: 100 })
    // One batch of 32, newest first: the 8 oldest turns are left for the next turns.
    expect(missing.map((message) => message.hostMessageId)).toEqual(['m7', 'm6', 'm5', 'm4', 'm3', 'm2', 'm1', 'm0'])

    // A new turn arrives: the next pass embeds it first, then goes on with the backlog where it stopped.
    await store.messages.append({ conversationId: 'past', hostMessageId: 'new', role: 'user', text: 'the newest turn about the database', createdAt: at + 60_000 })
    await hybrid.recallForTurn('which database do we use', scope, modePolicy('auto'), new Set())
    await hybrid.whenIdle()
    const second = server.requests.at(-1)!.body.input ?? []
    expect(second[0]).toBe('the newest turn about the database')
    expect(second.slice(1)).toEqual(['m7', 'm6', 'm5', 'm4', 'm3', 'm2', 'm1', 'm0'].map((id) => `turn number ${id.slice(1)} about the database`))
    expect(await store.messages.missingEmbeddings({ workspace: '/w', model: 'concepts@8', limit: 100 })).toEqual([])
    // Nothing left: a further turn asks the server only for its query's vector.
    const before = server.requests.length
    await hybrid.recallForTurn('which database do we use', scope, modePolicy('auto'), new Set())
    await hybrid.whenIdle()
    expect(server.requests.slice(before).map((request) => request.body.input)).toEqual([['which database do we use']])
  })
})

describe('cosineSimilarity', () => {
  it('is 1 for parallel, 0 for orthogonal or mismatched vectors', () => {
    expect(cosineSimilarity(Float32Array.from([1, 2]), Float32Array.from([2, 4]))).toBeCloseTo(1, 6)
    expect(cosineSimilarity(Float32Array.from([1, 0]), Float32Array.from([0, 1]))).toBe(0)
    expect(cosineSimilarity(Float32Array.from([1]), Float32Array.from([1, 0]))).toBe(0)
    expect(cosineSimilarity(Float32Array.from([0, 0]), Float32Array.from([1, 0]))).toBe(0)
  })
})
