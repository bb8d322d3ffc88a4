import { join } from 'node:path'
import { DistillStateRepository, initialConversationState } from '@dsh-memory/distill'
import { Lifecycle, resolveRecallOptions } from '@dsh-memory/recall'
import { coordinatedStore, openMemoryStore, type CoordinatedMemoryStore } from '@dsh-memory/store'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DshHome } from '../src/host.js'
import { lastUserText, requestText, startModelServer, type LoggedRequest, type ModelServer, type ScriptedReply } from '../src/model-server.js'
import { freshHome, tarballs } from './helpers.js'
import { distillLayer, distillReply, type ScriptedFact } from './support/distill-model.js'
import { driverOverlay, readReport, startHost, writeLayersDriver } from './support/layers-driver.js'

const CONVERSATIONS = 8
const FACTS: ScriptedFact[] = [
  ...Array.from({ length: CONVERSATIONS }, (_, n) => ({
    match: `Fact-${n}:`,
    kind: 'fact' as const,
    text: `The user keeps spare part number ${n} in drawer ${n}.`,
    scope: 'global' as const,
  })),
  { match: 'blue box', kind: 'fact', text: 'The user keeps the spare key in the blue box.', scope: 'global' },
  { match: 'red box', kind: 'fact', text: 'The user keeps the fuses in the red box.', scope: 'global' },
]

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('two DSH processes distilling concurrently on one data dir', () => {
  let servers: ModelServer[] = []
  let home: DshHome
  let root: string
  let cleanup: () => Promise<void>

  const withStore = async <T>(fn: (store: CoordinatedMemoryStore) => Promise<T>): Promise<T> => {
    const store = coordinatedStore(openMemoryStore({ path: join(home.dir, 'memory', 'memory.db') }))
    try {
      return await fn(store)
    } finally {
      await store.close()
    }
  }

  beforeAll(async () => {
    // One scripted model per process, so the test can tell which process paid for what. Each
    // extraction takes a while, so the two processes' work overlaps.
    const responder = async (request: LoggedRequest): Promise<ScriptedReply> => {
      if (distillLayer(request) === 'l1') await sleep(700)
      return distillReply(request, FACTS) ?? { kind: 'text', text: `Noted: ${lastUserText(request.body).slice(0, 30)}` }
    }
    servers = [await startModelServer({ responder }), await startModelServer({ responder })]
    ;({ home, root, cleanup } = await freshHome('layers-concurrent'))
    await home.createProfile('concurrent', tarballs(), ['@dsh-memory/store', '@dsh-memory/capture', '@dsh-memory/distill', '@dsh-memory/recall'])
    // Conversations captured earlier and not distilled yet (as capture stores them).
    await withStore(async (store) => {
      for (let n = 0; n < CONVERSATIONS; n++) {
        const id = `captured-${n}`
        await store.conversations.ensure({ id, workspace: join(root, 'work', `w${n}`) })
        await store.messages.append({ conversationId: id, hostMessageId: `${id}-0`, role: 'user', text: `Fact-${n}: I keep spare part number ${n} in drawer ${n}.`, seq: 0 })
        await store.messages.append({ conversationId: id, hostMessageId: `${id}-1`, role: 'assistant', text: 'Noted.', seq: 1 })
      }
    })
  }, 600_000)

  afterAll(async () => {
    for (const server of servers) await server.close()
    await cleanup?.()
  })

  it('every slice is distilled by one of them and every memory is stored once', async () => {
    // Both hosts resume the pending conversations at start and wait for their queue at exit.
    const patch = '- id: memory-distill\n  config:\n    extract:\n      flushWaitMs: 40000\n'
    const runs = await Promise.all(
      servers.map((server, index) =>
        home.run({ profile: 'concurrent', cwd: join(root, 'work', `host-${index}`), modelUrl: server.url, patch, args: [`hello from host ${index}`], timeoutMs: 120_000 }),
      ),
    )
    for (const run of runs) {
      expect(run.stderr).not.toMatch(/Error:/)
      expect(run.code).toBe(0)
    }

    const seededCalls = servers.map((server) => server.requests.filter((request) => distillLayer(request) === 'l1' && /Fact-\d+:/.test(requestText(request.body))))
    // Each slice was paid for once in total, and both processes did some of the work.
    expect(seededCalls[0]!.length + seededCalls[1]!.length).toBe(CONVERSATIONS)
    expect(seededCalls[0]!.length).toBeGreaterThan(0)
    expect(seededCalls[1]!.length).toBeGreaterThan(0)
    const paidFor = seededCalls.flat().map((request) => /Fact-(\d+):/.exec(requestText(request.body))![1])
    expect(new Set(paidFor).size).toBe(CONVERSATIONS)

    await withStore(async (store) => {
      const texts = (await store.memories.list({ scope: 'global', limit: 1_000 })).map((memory) => memory.text)
      for (const fact of FACTS.slice(0, CONVERSATIONS)) expect(texts.filter((text) => text === fact.text)).toHaveLength(1)
      expect(texts).toHaveLength(CONVERSATIONS)
      // Every job ran under a store lease with a fencing token; both processes took some.
      const leases = await store.audit.list({ entity: 'lease', limit: 1_000 })
      const acquired = leases.filter((entry) => entry.op === 'lease.acquire' || entry.op === 'lease.takeover')
      expect(acquired.length).toBeGreaterThanOrEqual(CONVERSATIONS)
      expect(leases.filter((entry) => entry.op === 'lease.release').length).toBe(acquired.length)
      // The global layer's revision counted every stored memory.
      expect((await store.layers.revision({ scope: 'global' })).revision).toBeGreaterThanOrEqual(CONVERSATIONS)
      const state = new DistillStateRepository(store)
      for (let n = 0; n < CONVERSATIONS; n++) expect(await state.conversation(`captured-${n}`)).toMatchObject({ cursorSeq: 1, lease: null })
    })
  }, 180_000)

  it('recall counts completed user turns and asks distill for a review after reviewEveryUserTurns (and not before)', async () => {
    const driver = await writeLayersDriver(join(root, 'plugins'))
    // Sessions far along distill's ramp: distill itself waits for 50 new messages and never idles out.
    const distillPatch = '- id: memory-distill\n  config:\n    extract:\n      minMessages: 50\n      maxBatchMessages: 50\n      idleSeconds: 0\n      flushWaitMs: 20000\n'
    const reviewPatch = (every: number) => `- id: memory-recall\n  config:\n    lifecycle:\n      reviewEveryUserTurns: ${every}\n`
    const drive = async (sessionId: string, fact: string, every: number) => {
      await withStore((store) => new DistillStateRepository(store).putConversation({ ...initialConversationState(sessionId), stage: 10 }))
      const reportFile = join(root, `report-${sessionId}.json`)
      const running = await startHost(home, {
        profile: 'concurrent',
        cwd: join(root, 'work', sessionId),
        modelUrl: servers[0]!.url,
        name: sessionId,
        patch: distillPatch + reviewPatch(every) + driverOverlay(driver, { sessionId, resume: false, reportFile, steps: [{ say: fact }] }),
      })
      const result = await running.done
      expect(result.code).toBe(0)
      expect((await readReport(reportFile)).error).toBeUndefined()
    }
    const l1For = (needle: string) => servers[0]!.requests.filter((request) => distillLayer(request) === 'l1' && requestText(request.body).includes(needle))

    // Default (a review every 15 turns): one turn distils nothing.
    await drive('session-no-review', 'I keep the fuses in the red box.', 15)
    expect(l1For('red box')).toHaveLength(0)
    expect(await withStore(async (store) => (await store.memories.list({ scope: 'global', limit: 1_000 })).map((memory) => memory.text))).not.toContain('The user keeps the fuses in the red box.')
    // One turn is enough when reviewEveryUserTurns is 1: recall's review makes distill run.
    await drive('session-review', 'I keep the spare key in the blue box.', 1)
    expect(l1For('blue box')).toHaveLength(1)
    await withStore(async (store) => {
      const texts = (await store.memories.list({ scope: 'global', limit: 1_000 })).map((memory) => memory.text)
      expect(texts).toContain('The user keeps the spare key in the blue box.')
      // A review distils everything pending, so the earlier session's slice is done now too, once.
      expect(texts.filter((text) => text === 'The user keeps the fuses in the red box.')).toHaveLength(1)
      const lifecycle = new Lifecycle({ store: () => store, options: resolveRecallOptions({}), holder: 'e2e-reader' })
      expect(await lifecycle.turns()).toMatchObject({ sinceReview: 0, lastReviewAt: expect.any(Number) })
    })
  }, 180_000)
})
