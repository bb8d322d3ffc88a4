import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { type Cue, embeddingText, openCueRepository } from '@dsh-memory/cue-bank'
import { type Memory, openMemoryStore } from '@dsh-memory/store'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { cueFixture } from '../../../packages/cue-bank/test/fixtures.ts'
import { startLoopback } from '../../../packages/recall/test/support/loopback.ts'
import { createMiniLmEmbedder, MINILM_MODEL_KEY, miniLmCanEmbed } from '@dsh-memory/recall'
import { REEMBED_CHECKPOINT_KEY } from '../src/commands/reembed.ts'
import { buildFixture, cli, type Fixture, scratch } from './helpers.ts'

const DIMENSIONS = 4

/** The deterministic vector the loopback endpoint returns for a text: code points bucketed by value. */
function vectorOf(text: string): number[] {
  const vector = new Array<number>(DIMENSIONS).fill(0)
  for (const char of text) vector[char.codePointAt(0)! % DIMENSIONS]! += 1
  return vector
}

interface EmbeddingRequest {
  readonly headers: IncomingMessage['headers']
  readonly body: { model: string; input: string[]; dimensions?: number }
}

/**
 * A real OpenAI-compatible `/embeddings` server on 127.0.0.1 (the remote model stand-in).
 * `plan(n)` is asked before answering the n-th request (1-based): it may fail it or run
 * something first.
 */
async function startEmbeddings(plan: (n: number, body: EmbeddingRequest['body']) => Promise<{ status?: number } | void> | { status?: number } | void = () => {}) {
  const requests: EmbeddingRequest[] = []
  const loopback = await startLoopback(async (request, response) => {
    const body = JSON.parse(request.body) as EmbeddingRequest['body']
    requests.push({ headers: request.headers, body })
    if (request.url !== '/v1/embeddings') return void response.writeHead(404).end('not found')
    const step = await plan(requests.length, body)
    if (step && step.status) return void response.writeHead(step.status, { 'content-type': 'application/json' }).end('{"error":{"message":"scripted outage"}}')
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', model: body.model, data: body.input.map((text, index) => ({ object: 'embedding', index, embedding: vectorOf(text) })) }))
  })
  return { url: loopback.url, requests, close: loopback.close }
}

/** A cue of one user line (the cue bank's own test fixture, with that line as its text). */
const cue = (id: string, partition: string, summary: string, extra: Partial<Cue> = {}): Cue => cueFixture(id, partition, { summary, detail: `User: ${summary}`, ...extra })

describe('dsh-memory reembed', () => {
  let temp: ReturnType<typeof scratch>
  let fixture: Fixture
  let endpoint: Awaited<ReturnType<typeof startEmbeddings>> | undefined
  const dataDir = () => fixture.dataDir
  const open = () => openMemoryStore({ path: join(dataDir(), 'memory.db') })

  /** Current memories and cues as the DB holds them now. */
  async function snapshot(): Promise<{ memories: Memory[]; superseded: Memory; cues: Cue[] }> {
    const store = open()
    try {
      const memories = await store.memories.list({ limit: 100 })
      const superseded = (await store.memories.get(fixture.memories.deployDayOld))!
      const repository = await openCueRepository(store)
      const cues = repository.listCues(undefined)
      repository.close()
      return { memories, superseded, cues }
    } finally {
      await store.close()
    }
  }

  beforeEach(async () => {
    temp = scratch('reembed')
    fixture = await buildFixture(join(temp.dir, 'data'))
    // Cues written through the cue bank's own repository, as the cue-bank plugin writes them.
    const store = open()
    const repository = await openCueRepository(store)
    await repository.insertCue(cue('c-shop-db', `workspace:${fixture.shop}`, 'PostgreSQL migration of the shop API'))
    await repository.insertCue(cue('c-shop-deploy', `workspace:${fixture.shop}`, '周二部署 shop API'))
    await repository.insertCue(cue('c-global', 'global', 'Helix editor keymap', { embedding: Float32Array.from([9, 9, 9, 9]), embeddingModel: 'old-model' }))
    repository.close()
    await store.close()
  })

  afterEach(async () => {
    await endpoint?.close()
    endpoint = undefined
    temp.cleanup()
  })

  const args = (extra: string[] = []) => ['reembed', '--data-dir', dataDir(), '--url', endpoint!.url, '--model', 'concepts', '--dimensions', String(DIMENSIONS), ...extra]

  it('writes every memory and cue vector with the key the plugins compare, then has nothing left to do', async () => {
    endpoint = await startEmbeddings()
    const result = await cli(args(['--api-key-env', 'REEMBED_TEST_KEY']))
    // The key variable is unset: a clear usage error before anything is sent.
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('error: --api-key-env REEMBED_TEST_KEY: the environment variable REEMBED_TEST_KEY is not set')
    expect(endpoint.requests).toHaveLength(0)

    process.env.REEMBED_TEST_KEY = 'sk-local'
    try {
      const ok = await cli(args(['--api-key-env', 'REEMBED_TEST_KEY', '--batch', '2']))
      expect(ok.stderr).not.toContain('error')
      expect(ok.code).toBe(0)
      expect(ok.stdout).toContain('memories: embedded 5 of 5 pending (5 in total, stored as concepts@4)')
      expect(ok.stdout).toContain('cues: embedded 3 of 3 pending (3 in total, stored as concepts)')
    } finally {
      delete process.env.REEMBED_TEST_KEY
    }
    const { memories, superseded, cues } = await snapshot()
    expect(memories).toHaveLength(5)
    for (const memory of memories) {
      expect(memory.embeddingModel).toBe('concepts@4')
      expect([...memory.embedding!]).toEqual(vectorOf(memory.text))
    }
    // History is not re-embedded: recall never ranks superseded versions.
    expect(superseded.embedding).toBeNull()
    for (const row of cues) {
      expect(row.embeddingModel).toBe('concepts')
      expect([...row.embedding!]).toEqual(vectorOf(embeddingText(row)))
    }
    // 5 memories in batches of 2 (3 requests, recall's form: dimensions sent), 3 cues (2 requests, the cue bank's form: not sent).
    expect(endpoint.requests.map((request) => request.body.input.length)).toEqual([2, 2, 1, 2, 1])
    expect(endpoint.requests.slice(0, 3).every((request) => request.body.dimensions === DIMENSIONS)).toBe(true)
    expect(endpoint.requests.slice(3).every((request) => request.body.dimensions === undefined)).toBe(true)
    expect(endpoint.requests.every((request) => request.headers.authorization === 'Bearer sk-local' && request.body.model === 'concepts')).toBe(true)
    expect(endpoint.requests.flatMap((request) => request.body.input)).toContain('主数据库使用 PostgreSQL（不是 MySQL）。')

    const again = await cli(args(['--json']))
    expect(again.code).toBe(0)
    const report = JSON.parse(again.stdout) as Record<string, any>
    expect(report).toMatchObject({ completed: true, batches: 0, memories: { total: 5, pending: 0, embedded: 0 }, cues: { total: 3, pending: 0, embedded: 0, cueBank: true } })
    expect(endpoint.requests).toHaveLength(5)
  })

  it('--provider minilm writes recall\'s in-process vectors of the English memories and none for Chinese or Japanese ones', async () => {
    const refused = await cli(['reembed', '--data-dir', dataDir(), '--provider', 'minilm', '--only', 'cues'])
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain('--provider minilm embeds memories and messages only')
    expect((await cli(['reembed', '--data-dir', dataDir(), '--provider', 'minilm', '--model', 'x'])).stderr).toContain('--model does not apply to --provider minilm')

    const run = await cli(['reembed', '--data-dir', dataDir(), '--provider', 'minilm', '--batch', '2'])
    expect(run.stderr).not.toContain('error')
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('memories: embedded 3 of 3 pending (5 in total, stored as local:minilm-l6-v2@384)')
    expect(run.stdout).toContain('memories: 2 mostly Chinese/Japanese/Korean, not embedded')
    const { memories, cues } = await snapshot()
    // The vectors recall itself computes for these texts (same model, same key).
    const embedder = createMiniLmEmbedder({ maxInputChars: 5000, timeoutMs: 30_000 })
    try {
      for (const memory of memories) {
        if (!miniLmCanEmbed(memory.text)) {
          expect(memory.embedding, memory.text).toBeNull()
          continue
        }
        expect(memory.embeddingModel).toBe(MINILM_MODEL_KEY)
        const [expected] = await embedder.embed([memory.text])
        expect([...memory.embedding!]).toEqual([...expected!])
      }
    } finally {
      await embedder.close()
    }
    expect(memories.filter((memory) => memory.embedding === null).map((memory) => memory.text).sort()).toEqual(['ブログは Cloudflare Pages でホストしている。', '主数据库使用 PostgreSQL（不是 MySQL）。'])
    // Cues are the cue bank's (an endpoint model): untouched.
    expect(cues.find((row) => row.id === 'c-global')!.embeddingModel).toBe('old-model')
    const again = await cli(['reembed', '--data-dir', dataDir(), '--provider', 'minilm', '--json'])
    expect(JSON.parse(again.stdout)).toMatchObject({ provider: 'minilm', completed: true, batches: 0, memories: { total: 5, pending: 0, notEmbeddable: 2 }, messages: null, cues: null })
    // The conversation log: the two English turns get recall's vectors, the Chinese and Japanese ones none.
    const log = await cli(['reembed', '--data-dir', dataDir(), '--provider', 'minilm', '--only', 'messages', '--json'])
    expect(JSON.parse(log.stdout)).toMatchObject({ completed: true, memories: null, messages: { modelKey: MINILM_MODEL_KEY, total: 6, pending: 2, embedded: 2, notEmbeddable: 4 } })
  })

  it('--dry-run prints the counts and sends and writes nothing; --json prints one result object', async () => {
    endpoint = await startEmbeddings()
    const dry = await cli(args(['--dry-run']))
    expect(dry.code).toBe(0)
    expect(dry.stdout).toContain('memories: would embed 5 of 5 (stored as concepts@4)')
    expect(dry.stdout).toContain('cues: would embed 3 of 3 (stored as concepts)')
    expect(dry.stdout).toContain('nothing written')
    const dryJson = await cli(args(['--dry-run', '--json', '--workspace', fixture.shop]))
    expect(dryJson.code).toBe(0)
    expect(dryJson.stdout.trim().split('\n')).toHaveLength(1)
    expect(JSON.parse(dryJson.stdout)).toMatchObject({
      dryRun: true,
      endpoint: `${endpoint.url}/embeddings`,
      model: 'concepts',
      dimensions: 4,
      memories: { modelKey: 'concepts@4', total: 3, pending: 3, embedded: 0 },
      cues: { modelKey: 'concepts', total: 2, pending: 2, embedded: 0 },
      batches: 0,
    })
    expect(endpoint.requests).toHaveLength(0)
    const { memories, cues } = await snapshot()
    expect(memories.every((memory) => memory.embedding === null)).toBe(true)
    expect(cues.find((row) => row.id === 'c-global')!.embeddingModel).toBe('old-model')

    const run = await cli(args(['--json', '--scope', 'global']))
    expect(run.code).toBe(0)
    const report = JSON.parse(run.stdout) as Record<string, any>
    expect(report).toMatchObject({
      dryRun: false,
      completed: true,
      error: null,
      resumed: false,
      memories: { total: 1, pending: 1, embedded: 1, skipped: 0 },
      cues: { total: 1, pending: 1, embedded: 1, skipped: 0 },
      batches: 2,
    })
    expect(report.durationMs).toEqual(expect.any(Number))
    const after = await snapshot()
    expect(after.memories.filter((memory) => memory.embedding).map((memory) => memory.id)).toEqual([fixture.memories.editor])
    expect(after.cues.filter((row) => row.embeddingModel === 'concepts').map((row) => row.id)).toEqual(['c-global'])
  })

  it('keeps the batches done when the endpoint fails mid-way, exits 1, and a re-run completes', async () => {
    let failSecond = true
    endpoint = await startEmbeddings((n) => (failSecond && n === 2 ? { status: 503 } : undefined))
    const failed = await cli(args(['--batch', '2', '--only', 'memories', '--json']))
    expect(failed.code).toBe(1)
    expect(failed.stderr).toMatch(/\nerror: embedding request to http:\/\/127\.0\.0\.1:\d+\/v1\/embeddings failed: HTTP 503: \{"error".*\(http-error\); 2 memories were embedded and kept — run the same command again to continue\n$/)
    expect(JSON.parse(failed.stdout)).toMatchObject({ completed: false, error: { code: 'http-error' }, memories: { pending: 5, embedded: 2 }, cues: null, batches: 2 })
    const partial = await snapshot()
    const done = partial.memories.filter((memory) => memory.embeddingModel === 'concepts@4')
    expect(done).toHaveLength(2)
    // Exactly the first batch's rows (the work list is in id order), with the right vectors.
    expect(done.map((memory) => memory.text).sort()).toEqual([...endpoint.requests[0]!.body.input].sort())
    for (const memory of done) expect([...memory.embedding!]).toEqual(vectorOf(memory.text))

    failSecond = false
    const before = endpoint.requests.length
    const resumed = await cli(args(['--batch', '2', '--only', 'memories']))
    expect(resumed.code).toBe(0)
    expect(resumed.stdout).toContain('memories: embedded 3 of 3 pending (5 in total, stored as concepts@4)')
    // Only the rows still missing were sent.
    expect(endpoint.requests.slice(before).flatMap((request) => request.body.input)).toHaveLength(3)
    const final = await snapshot()
    expect(final.memories.every((memory) => memory.embeddingModel === 'concepts@4' && [...memory.embedding!].join() === vectorOf(memory.text).join())).toBe(true)
  })

  it('--all re-embeds rows that have the current key, and an interrupted --all continues from its checkpoint', async () => {
    endpoint = await startEmbeddings()
    expect((await cli(args(['--quiet']))).code).toBe(0)
    expect(endpoint.requests).toHaveLength(2)
    await endpoint.close()

    let failAt = 3
    endpoint = await startEmbeddings((n) => (n === failAt ? { status: 500 } : undefined))
    const failed = await cli(args(['--all', '--batch', '2']))
    expect(failed.code).toBe(1)
    expect(failed.stdout).toContain('memories: embedded 4 of 5 pending')
    const store = open()
    expect(JSON.parse((await store.meta.get(REEMBED_CHECKPOINT_KEY))!)).toMatchObject({ v: 1, cuesAfter: null, memoriesAfter: expect.any(String) })
    await store.close()

    failAt = 0
    const before = endpoint.requests.length
    const resumed = await cli(args(['--all', '--batch', '2', '--json']))
    expect(resumed.code).toBe(0)
    const report = JSON.parse(resumed.stdout) as Record<string, any>
    // The 4 memories of the first two batches are not sent again; the last one and every cue are.
    expect(report).toMatchObject({ all: true, resumed: true, memories: { total: 5, pending: 1, embedded: 1 }, cues: { total: 3, pending: 3, embedded: 3 } })
    expect(endpoint.requests.slice(before).flatMap((request) => request.body.input)).toHaveLength(4)
    const check = open()
    expect(await check.meta.get(REEMBED_CHECKPOINT_KEY)).toBeUndefined()
    await check.close()

    // Finished: the next --all starts over.
    const fresh = await cli(args(['--all', '--json', '--only', 'cues']))
    expect(JSON.parse(fresh.stdout)).toMatchObject({ resumed: false, memories: null, cues: { pending: 3, embedded: 3 } })
  })

  it('skips a row whose text changed while its vector was computed, and leaves it for the next run', async () => {
    endpoint = await startEmbeddings(async (n) => {
      if (n !== 1) return
      // Another process (the host) edits a memory of this batch before the answer arrives.
      const other = open()
      await other.memories.update(fixture.memories.editor, { text: 'The user prefers Zed as their editor now.' })
      await other.close()
    })
    const first = await cli(args(['--only', 'memories', '--json']))
    expect(first.code).toBe(0)
    expect(JSON.parse(first.stdout)).toMatchObject({ memories: { pending: 5, embedded: 4, skipped: 1 } })
    const store = open()
    expect((await store.memories.get(fixture.memories.editor))!.embedding).toBeNull()
    await store.close()
    const second = await cli(args(['--only', 'memories', '--json']))
    expect(JSON.parse(second.stdout)).toMatchObject({ memories: { pending: 1, embedded: 1, skipped: 0 } })
    const edited = await snapshot()
    const editor = edited.memories.find((memory) => memory.id === fixture.memories.editor)!
    expect([...editor.embedding!]).toEqual(vectorOf('The user prefers Zed as their editor now.'))
  })

  it('--only messages embeds the conversation log under recall\'s key, a workspace at a time, then has nothing left to do', async () => {
    endpoint = await startEmbeddings()
    const shopRun = await cli(args(['--only', 'messages', '--workspace', fixture.shop, '--batch', '3', '--json']))
    expect(shopRun.stderr).not.toContain('error')
    expect(JSON.parse(shopRun.stdout)).toMatchObject({ completed: true, memories: null, cues: null, messages: { modelKey: 'concepts@4', total: 4, pending: 4, embedded: 4, skipped: 0 }, batches: 2 })
    // Recall's request form (dimensions sent), one batch of 3 and one of 1.
    expect(endpoint.requests.map((request) => [request.body.input.length, request.body.dimensions])).toEqual([
      [3, DIMENSIONS],
      [1, DIMENSIONS],
    ])
    const run = await cli(args(['--only', 'messages']))
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('messages: embedded 2 of 2 pending (6 in total, stored as concepts@4)')
    const store = open()
    try {
      const messages = await store.messages.list({ limit: 100 })
      const vectors = await store.messages.embeddings(
        messages.map((message) => message.id),
        'concepts@4',
      )
      expect(vectors.size).toBe(6)
      for (const message of messages) expect([...vectors.get(message.id)!]).toEqual(vectorOf(message.text))
      // Memories are another target: untouched.
      expect((await store.memories.list({ limit: 100 })).every((memory) => memory.embedding === null)).toBe(true)
    } finally {
      await store.close()
    }
    const again = await cli(args(['--only', 'messages', '--json']))
    expect(JSON.parse(again.stdout)).toMatchObject({ batches: 0, messages: { total: 6, pending: 0, embedded: 0 } })

    for (const [extra, message] of [
      [['--all'], '--all does not apply to --only messages'],
      [['--scope', 'global'], '--scope does not apply to --only messages'],
    ] as const) {
      const refused = await cli(args(['--only', 'messages', ...extra]))
      expect(refused.code).toBe(2)
      expect(refused.stderr).toContain(message)
    }
    const noDimensions = await cli(['reembed', '--data-dir', dataDir(), '--url', endpoint.url, '--model', 'concepts', '--only', 'messages'])
    expect(noDimensions.stderr).toContain('error: --dimensions is required for messages')
  })

  it('--drop-other-models drops the messages\' vectors of other models once the log is embedded, of --workspace\'s messages with it', async () => {
    // The log holds vectors of an embedder given up (a message keeps one per model).
    const OLD = 'old-model@3'
    const store = open()
    const all = (await store.messages.list({ limit: 100 })).map((message) => message.id)
    await store.messages.setEmbeddings(all.map((id) => ({ messageId: id, embedding: Float32Array.from([1, 2, 3]), embeddingModel: OLD })))
    await store.close()
    const held = async (model: string) => {
      const reader = open()
      try {
        return (await reader.messages.embeddings(all, model)).size
      } finally {
        await reader.close()
      }
    }

    // An endpoint that fails: nothing is embedded, so nothing is dropped.
    endpoint = await startEmbeddings(() => ({ status: 503 }))
    const failed = await cli(args(['--only', 'messages', '--drop-other-models', '--json']))
    expect(failed.code).toBe(1)
    expect(JSON.parse(failed.stdout)).toMatchObject({ completed: false, droppedOtherModels: null })
    expect(await held(OLD)).toBe(6)
    await endpoint.close()

    endpoint = await startEmbeddings()
    const dry = await cli(args(['--only', 'messages', '--drop-other-models', '--dry-run', '--json']))
    expect(JSON.parse(dry.stdout)).toMatchObject({ dryRun: true, droppedOtherModels: null })
    expect(await held(OLD)).toBe(6)

    const shop = await cli(args(['--only', 'messages', '--workspace', fixture.shop, '--drop-other-models', '--json']))
    expect(shop.code).toBe(0)
    expect(JSON.parse(shop.stdout)).toMatchObject({ completed: true, messages: { total: 4, embedded: 4 }, droppedOtherModels: 4 })
    expect(await held(OLD)).toBe(2)
    expect(await held('concepts@4')).toBe(4)

    const rest = await cli(args(['--only', 'messages', '--drop-other-models']))
    expect(rest.code).toBe(0)
    expect(rest.stdout).toContain('messages: embedded 2 of 2 pending (6 in total, stored as concepts@4)')
    expect(rest.stdout).toContain('messages: dropped 2 vectors of other models')
    expect(await held(OLD)).toBe(0)
    expect(await held('concepts@4')).toBe(6)

    for (const extra of [[], ['--only', 'memories'], ['--only', 'cues']]) {
      const refused = await cli(args([...extra, '--drop-other-models']))
      expect(refused.code).toBe(2)
      expect(refused.stderr).toContain('--drop-other-models only applies with --only messages')
    }
  })

  it('reports bad and unreachable URLs and other bad input clearly, writing nothing', async () => {
    const bad = await cli(['reembed', '--data-dir', dataDir(), '--url', 'not a url', '--model', 'm', '--dimensions', '4'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toBe('error: --url must be an http(s) URL, got "not a url"\n')

    // A port nothing listens on: connection refused.
    const probe = createServer()
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
    const port = (probe.address() as AddressInfo).port
    await new Promise<void>((resolve) => probe.close(() => resolve()))
    const unreachable = await cli(['reembed', '--data-dir', dataDir(), '--url', `http://127.0.0.1:${port}/v1`, '--model', 'm', '--dimensions', '4'])
    expect(unreachable.code).toBe(1)
    expect(unreachable.stderr).toMatch(/\nerror: embedding request to http:\/\/127\.0\.0\.1:\d+\/v1\/embeddings failed: fetch failed \(.*ECONNREFUSED.*\) \(unreachable\); 0 memories and 0 cues were embedded and kept — run the same command again to continue\n$/)

    const usage = async (extra: string[], message: string) => {
      const result = await cli(['reembed', '--data-dir', dataDir(), ...extra])
      expect(result.code).toBe(2)
      expect(result.stderr).toContain(message)
    }
    const saved = { url: process.env.DSH_MEMORY_EMBEDDING_URL, model: process.env.DSH_MEMORY_EMBEDDING_MODEL, dims: process.env.DSH_MEMORY_EMBEDDING_DIMENSIONS }
    delete process.env.DSH_MEMORY_EMBEDDING_URL
    delete process.env.DSH_MEMORY_EMBEDDING_MODEL
    delete process.env.DSH_MEMORY_EMBEDDING_DIMENSIONS
    try {
      await usage([], 'error: --url is required (or set DSH_MEMORY_EMBEDDING_URL)')
      await usage(['--url', 'http://127.0.0.1:9/v1'], 'error: --model is required')
      await usage(['--url', 'http://127.0.0.1:9/v1', '--model', 'm'], 'error: --dimensions is required for memories')
      await usage(['--url', 'http://127.0.0.1:9/v1', '--model', 'm', '--dimensions', 'four'], 'error: --dimensions expects a positive integer, got "four"')
      await usage(['--url', 'http://127.0.0.1:9/v1', '--model', 'm', '--dimensions', '4', '--batch', '0'], 'error: --batch expects a positive integer, got "0"')
      await usage(['--url', 'http://127.0.0.1:9/v1', '--model', 'm', '--dimensions', '4', '--scope', 'global', '--workspace', '/x'], 'exclude each other')
      await usage(['--url', 'http://127.0.0.1:9/v1', '--model', 'm', '--dimensions', '4', '--scope', 'planet'], "argument 'planet' is invalid")

      // The environment stands in for the flags; --only cues needs no dimensions.
      endpoint = await startEmbeddings()
      process.env.DSH_MEMORY_EMBEDDING_URL = endpoint.url
      process.env.DSH_MEMORY_EMBEDDING_MODEL = 'concepts'
      const fromEnv = await cli(['reembed', '--data-dir', dataDir(), '--only', 'cues', '--json'])
      expect(fromEnv.code).toBe(0)
      expect(JSON.parse(fromEnv.stdout)).toMatchObject({ dimensions: 0, cues: { modelKey: 'concepts', embedded: 3 } })
    } finally {
      for (const [name, value] of [
        ['DSH_MEMORY_EMBEDDING_URL', saved.url],
        ['DSH_MEMORY_EMBEDDING_MODEL', saved.model],
        ['DSH_MEMORY_EMBEDDING_DIMENSIONS', saved.dims],
      ] as const) {
        if (value === undefined) delete process.env[name]
        else process.env[name] = value
      }
    }

    const missing = await cli(['reembed', '--data-dir', join(temp.dir, 'nowhere'), '--url', 'http://127.0.0.1:9/v1', '--model', 'm', '--dimensions', '4'])
    expect(missing.code).toBe(3)
    expect(missing.stderr).toContain('no dsh-memory database at')
    const { memories } = await snapshot()
    expect(memories.every((memory) => memory.embedding === null)).toBe(true)
  })

  it('never creates cue tables in a data dir where the cue bank has not run', async () => {
    endpoint = await startEmbeddings()
    const plain = await buildFixture(join(temp.dir, 'plain'))
    const result = await cli(['reembed', '--data-dir', plain.dataDir, '--url', endpoint.url, '--model', 'concepts', '--dimensions', '4', '--json'])
    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout)).toMatchObject({ memories: { embedded: 5 }, cues: { cueBank: false, total: 0, pending: 0, embedded: 0 } })
    const store = openMemoryStore({ path: join(plain.dataDir, 'memory.db') })
    try {
      expect((await store.meta.migrations()).map((migration) => migration.owner)).not.toContain('cue-bank')
    } finally {
      await store.close()
    }
    expect((await cli(['reembed', '--data-dir', plain.dataDir, '--url', endpoint.url, '--model', 'concepts', '--dimensions', '4'])).stdout).toContain('cues: embedded 0 of 0 pending (0 in total, stored as concepts) — no cue bank in this data dir')
  })

  it('shows plain progress lines off a terminal and a bar on one', async () => {
    endpoint = await startEmbeddings()
    const plain = await cli(args(['--only', 'memories']))
    expect(plain.code).toBe(0)
    expect(plain.stderr).toContain('reembed memories: 0/5\n')
    expect(plain.stderr).toContain('reembed memories: 5/5\n')
    expect(plain.stderr).not.toContain('█')

    const tty = await cli(args(['--only', 'cues']), { tty: true })
    expect(tty.code).toBe(0)
    expect(tty.stderr).toContain('reembed cues')
    expect(tty.stderr).toMatch(/\[[█░]+\] 3\/3/)

    const quiet = await cli(args(['--all', '--quiet']))
    expect(quiet.code).toBe(0)
    expect(quiet.stderr).toBe('')
  })
})
