/**
 * Model outages against the real host.
 * - Distillation: the distill requests of a headless run time out on a stalled stream, get
 *   HTTP 429, get HTTP 500. Every run still exits 0 with the chat reply, the pending
 *   distillation is persisted with its backoff, and the next run with a healthy model
 *   distills all of it.
 * - Recall: the embeddings endpoint recall asks during the turn stalls, answers 429, answers
 *   500. On a stall the turn reaches the chat model without recall's block (its budget ended
 *   the wait; the embeddings client alone would wait 10 min), and on an error recall still
 *   injects through its keyword fallback. The gap between the two requests is printed.
 */
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { DistillStateRepository } from '@dsh-memory/distill'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DshHome } from '../src/host.js'
import { lastUserText, requestText, startModelServer, type ModelServer, type ScriptedReply } from '../src/model-server.js'
import { freshHome, tarballs, useHostProfile } from './helpers.js'
import { distillLayer, distillReply, type ScriptedFact } from './support/distill-model.js'
import { withStore } from './support/reliability-data-dir.js'
import { EMBEDDING_DIMENSIONS, startEmbeddingEndpoint, type EmbeddingEndpoint, type EmbeddingOutage } from './support/reliability-embeddings.js'
import { recallTexts } from './support/recall-requests.js'

type Outage = 'ok' | 'stall' | 'http-429' | 'http-500'

/** Whether the process of a distill lease owner (`host:pid:id`) still runs. */
function isAlive(owner: string): boolean {
  const pid = Number(owner.split(':')[1])
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const FACTS: ScriptedFact[] = [
  { match: 'stalled', kind: 'fact', text: 'The user hit a stalled stream on Monday.', scope: 'global' },
  { match: 'rate limit', kind: 'fact', text: 'The user hit a rate limit on Tuesday.', scope: 'global' },
  { match: 'server error', kind: 'fact', text: 'The user hit a server error on Wednesday.', scope: 'global' },
  { match: 'healthy', kind: 'fact', text: 'The model was healthy again on Thursday.', scope: 'global' },
]

// Distill calls time out after 3 s; the headless flush waits at most 4 s for them.
const PATCH = `- id: memory-distill
  config:
    llm:
      timeoutMs: 3000
    extract:
      flushWaitMs: 4000
`

describe('model outages during distillation (real host)', () => {
  let outage: Outage = 'ok'
  const dbPath = () => join(hosted.home.dir, 'memory', 'memory.db')

  const hosted = useHostProfile('reliability-outage', {
    profile: 'outage',
    packages: ['@dsh-memory/store', '@dsh-memory/capture', '@dsh-memory/distill'],
    responder: (request): ScriptedReply | undefined => {
      if (!distillLayer(request)) return { kind: 'text', text: `Reply: ${lastUserText(request.body).slice(0, 60)}` }
      // Longer than a run may take (60 s): a process that waited for the stalled stream would time out.
      if (outage === 'stall') return { kind: 'stall', text: '{"memo', ms: 300_000 }
      if (outage === 'http-429') return { kind: 'http-error', status: 429, body: '{"error":{"message":"rate limited","type":"rate_limit_error"}}' }
      if (outage === 'http-500') return { kind: 'http-error', status: 500 }
      return distillReply(request, FACTS)
    },
  })

  const run = async (mode: Outage, workspace: string, prompt: string) => {
    outage = mode
    const requestsBefore = hosted.server.requests.length
    const started = Date.now()
    const result = await hosted.home.run({ profile: 'outage', cwd: join(hosted.root, 'work', workspace), modelUrl: hosted.server.url, patch: PATCH, args: [prompt] })
    const elapsed = Date.now() - started
    console.log(`outage ${mode}: headless run finished in ${elapsed} ms (exit ${result.code})`)
    console.log(`outage ${mode}: ${hosted.server.requests.slice(requestsBefore).filter((request) => distillLayer(request) === 'l1').length} L1 distill request(s) during the run`)
    return { ...result, elapsed }
  }

  it('completes every turn during a stall, a 429 and a 500, persists the pending work, and resumes it on the next run', async () => {
    const outages: [Outage, string, string][] = [
      ['stall', 'stall', 'Yesterday the stream stalled for a minute.'],
      ['http-429', 'rate', 'Then we hit the rate limit twice.'],
      ['http-500', 'error', 'And finally a server error.'],
    ]
    const failed: string[] = []
    for (const [mode, workspace, prompt] of outages) {
      const before = hosted.server.requests.length
      const result = await run(mode, workspace, prompt)
      expect(result.code, result.stderr).toBe(0)
      expect(result.stdout).toContain(`Reply: ${prompt.slice(0, 40)}`)
      expect(result.stderr).not.toMatch(/unhandled|UnhandledPromiseRejection/i)
      // The distill call was attempted during the run, and failed.
      const ofRun = hosted.server.requests.slice(before)
      // (Earlier runs' pending conversations are retried at start-up too; this is this turn's.)
      const firstL1 = ofRun.find((request) => distillLayer(request) === 'l1' && requestText(request.body).includes(prompt.slice(0, 30)))
      expect(firstL1).toBeDefined()
      // Distillation is background work after the turn: the user's turn reached the chat model
      // first, so it never waited for the failing distill call.
      const chat = ofRun.find((request) => request.purpose === 'chat')!
      expect(chat.at).toBeLessThanOrEqual(firstL1!.at)
      // The process ended (the stall outlasts the run's 60 s timeout): nothing waited for the stalled stream.
      await withStore(dbPath(), async (store) => {
        const [conversation] = await store.conversations.list({ workspace: join(hosted.root, 'work', workspace) })
        expect(await store.messages.list({ conversationId: conversation!.id })).toHaveLength(2)
        const state = await new DistillStateRepository(store).conversation(conversation!.id)
        // Backed off: not distilled, an attempt counted, a retry time in the future, the lease released.
        expect(state.cursorSeq).toBe(-1)
        // A lease may be left by a retry that was still in flight when the process exited; its
        // owner is then dead, and the next start takes it over at once (distill's pid check).
        if (state.lease) expect(isAlive(state.lease.owner), 'lease owner still alive after exit').toBe(false)
        expect(state.attempts).toBeGreaterThanOrEqual(1)
        expect(state.notBefore).toBeGreaterThan(Date.now() - 60_000)
        expect(state.lastError).toBeTruthy()
        console.log(`outage ${mode}: persisted lastError = ${state.lastError!.slice(0, 120)}`)
        expect(await new DistillStateRepository(store).pendingIds()).toContain(conversation!.id)
        expect(await store.memories.list({ includeSuperseded: true })).toEqual([])
        failed.push(conversation!.id)
      })
    }

    // The model is healthy again: the next run distills its own turn and everything left behind.
    const healthy = await run('ok', 'healthy', 'The model is healthy now.')
    expect(healthy.code, healthy.stderr).toBe(0)
    await withStore(dbPath(), async (store) => {
      const texts = (await store.memories.list({ includeSuperseded: true })).map((memory) => memory.text).sort()
      expect(texts).toEqual(FACTS.map((fact) => fact.text).sort())
      const state = new DistillStateRepository(store)
      for (const id of failed) expect(await state.conversation(id)).toMatchObject({ attempts: 0, lastError: null, lease: null })
      expect(await state.pendingIds()).toEqual([])
    })
  })
})

/** The recall budget of the turn; the embeddings client alone would wait 10 min. */
const RECALL_TIMEOUT_MS = 1_500

describe('model outages during recall (real host)', () => {
  let server: ModelServer
  let embeddings: EmbeddingEndpoint
  let home: DshHome
  let root: string
  let cleanup: () => Promise<void>

  beforeAll(async () => {
    server = await startModelServer({ responder: (request) => ({ kind: 'text', text: `Reply: ${lastUserText(request.body).slice(0, 60)}` }) })
    embeddings = await startEmbeddingEndpoint()
    ;({ home, root, cleanup } = await freshHome('reliability-recall-outage'))
    await home.createProfile('recall-outage', tarballs(), ['@dsh-memory/store', '@dsh-memory/capture', '@dsh-memory/recall'])
    // Memories to recall, written before any host runs (as an earlier session would have).
    await mkdir(join(home.dir, 'memory'), { recursive: true })
    await withStore(join(home.dir, 'memory', 'memory.db'), async (store) => {
      await store.memories.add({ kind: 'fact', text: "The user's sailing boat is moored at the lighthouse pier.", scope: 'global' })
      await store.memories.add({ kind: 'fact', text: 'The lighthouse pier closes at nine in the evening.', scope: 'global' })
    })
  })

  afterAll(async () => {
    await server?.close()
    await embeddings?.close()
    await cleanup?.()
  })

  it('never holds the turn for the embeddings endpoint when it stalls, answers 429 or answers 500', async () => {
    const patch = `- id: memory-recall
  config:
    recall:
      strategy: hybrid
      timeoutMs: ${RECALL_TIMEOUT_MS}
    embedding:
      enabled: true
      baseUrl: ${embeddings.url}
      model: reliability-vectors
      dimensions: ${EMBEDDING_DIMENSIONS}
      timeoutMs: 600000
`
    const modes: EmbeddingOutage[] = ['ok', 'stall', 'http-429', 'http-500']
    for (const [index, mode] of modes.entries()) {
      embeddings.mode = mode
      const question = `Where is my sailing boat moored, question ${index}?`
      const requestsBefore = server.requests.length
      const started = Date.now()
      const result = await home.run({ profile: 'recall-outage', cwd: join(root, 'work', 'harbour'), modelUrl: server.url, patch, args: [question] })
      expect(result.code, result.stderr).toBe(0)
      expect(result.stdout).toContain(`Reply: ${question.slice(0, 40)}`)
      expect(result.stderr).not.toMatch(/unhandled|UnhandledPromiseRejection/i)

      // Recall started (it asked for the question's vector) and the chat request followed.
      const embed = embeddings.requests.find((request) => request.input.some((text) => text.includes(`question ${index}`)))
      expect(embed, `${mode}: recall asked the embeddings endpoint for the question`).toBeDefined()
      const chat = server.requests.slice(requestsBefore).find((request) => request.purpose === 'chat')!
      expect(chat).toBeDefined()
      const waited = chat.at - embed!.at
      console.log(`recall outage ${mode}: chat request ${waited} ms after recall asked for embeddings (run ${Date.now() - started} ms)`)
      if (mode === 'stall') {
        // The embeddings client's timeout (10 min) outlasts the run's (60 s), so the turn reaching the
        // model, and the process ending, show that only recall's budget ended the wait: recall was
        // skipped for this turn. Nor did the stalled endpoint hold the process open after the turn.
        expect(recallTexts(chat)).toEqual([])
      } else {
        // A fast answer or a fast failure: recall still injects (keyword ranking as fallback).
        expect(recallTexts(chat).join('\n')).toContain('lighthouse pier')
      }
    }
  })
})
