import { join } from 'node:path'
import { DistillStateRepository } from '@dsh-memory/distill'
import type { MemoryStore } from '@dsh-memory/store'
import { describe, expect, it } from 'vitest'
import { lastUserText, requestText, type ScriptedReply } from '../src/model-server.js'
import { expectBootRejects, useHostProfile, withHomeStore } from './helpers.js'
import { distillLayer, distillReply, type ScriptedFact } from './support/distill-model.js'

const FACTS: ScriptedFact[] = [
  { match: 'Sapporo', kind: 'fact', text: 'The user lives in Sapporo.', scope: 'global' },
  { match: 'dark roast', kind: 'preference', text: 'The user prefers dark roast coffee.', scope: 'global' },
  { match: 'Zig', kind: 'fact', text: 'The user writes the build tool in Zig.', scope: 'workspace' },
  { match: '猫', kind: 'fact', text: 'ユーザーは猫を二匹飼っている。', scope: 'global' },
]

/** Distill calls get the scripted extraction, everything else a chat reply. */
const chat = (request: Parameters<typeof distillReply>[0]): ScriptedReply => ({ kind: 'text', text: `Noted: ${lastUserText(request.body).slice(0, 40)}` })

describe('distill in the real DSH host', () => {
  let mode: 'ok' | 'http-500' | 'garbage' = 'ok'

  const hosted = useHostProfile('distill', {
    packages: ['@dsh-memory/store', '@dsh-memory/capture', '@dsh-memory/distill'],
    responder: (request) => {
      if (!distillLayer(request)) return chat(request)
      if (mode === 'http-500') return { kind: 'http-error', status: 500 }
      if (mode === 'garbage') return { kind: 'garbage', body: '<html>502 Bad Gateway</html>' }
      return distillReply(request, FACTS)
    },
  })

  const withStore = <T>(fn: (store: MemoryStore) => Promise<T>): Promise<T> => withHomeStore(hosted.home, fn)
  const distillRequests = () => hosted.server.requests.filter((request) => distillLayer(request))
  const run = (cwd: string, prompt: string, patch = '') => hosted.home.run({ profile: 'distill', cwd, modelUrl: hosted.server.url, patch, args: [prompt] })

  it('distills what the user said into L1 memories during the headless run', async () => {
    const workspace = join(hosted.root, 'work', 'alpha')
    const before = hosted.server.requests.length
    const result = await run(workspace, 'I live in Sapporo and I prefer dark roast coffee.')
    expect(result.stderr).not.toMatch(/Error:/)
    expect(result.code).toBe(0)
    expect(result.stdout).toContain('Noted: I live in Sapporo')

    const requests = hosted.server.requests.slice(before).filter((request) => distillLayer(request) === 'l1')
    expect(requests).toHaveLength(1)
    // A background call: no tools, no session header, our marker first in the system prompt.
    expect(requests[0]!.body.tools ?? []).toHaveLength(0)
    expect(requests[0]!.purpose).toBe('background')
    // The agent's default route, and only after the turn: the reply is part of the slice.
    expect(requests[0]!.body.model).toBe('deepseek-v4-flash')
    expect(requestText(requests[0]!.body)).toMatch(/\[m1\] user: I live in Sapporo/)
    expect(requestText(requests[0]!.body)).toMatch(/\[m2\] assistant: Noted: I live in Sapporo/)

    await withStore(async (store) => {
      const [conversation] = await store.conversations.list({ workspace })
      const messages = await store.messages.list({ conversationId: conversation!.id })
      const userMessage = messages.find((message) => message.role === 'user')!
      const memories = await store.memories.list({ scope: 'global' })
      expect(memories.map((memory) => memory.text).sort()).toEqual(['The user lives in Sapporo.', 'The user prefers dark roast coffee.'])
      for (const memory of memories) expect(memory.sourceMessageIds).toEqual([userMessage.id])
      const state = new DistillStateRepository(store)
      expect(await state.conversation(conversation!.id)).toMatchObject({ cursorSeq: messages.at(-1)!.seq, attempts: 0, lease: null })
      expect((await state.costDays()).length).toBe(1)
      // The cost ledger has one row per model call the model server received, of the same layer.
      const calls = await state.calls({ limit: 10_000 })
      expect(calls.map((call) => call.layer).sort()).toEqual(distillRequests().map((request) => distillLayer(request)).sort())
      expect(calls.every((call) => call.outcome === 'ok' && call.model === 'deepseek-v4-flash')).toBe(true)
      expect(calls.find((call) => call.layer === 'l1')).toMatchObject({ conversationId: conversation!.id })
    })
  })

  it('keeps the turn working when distillation gets HTTP 500 or garbage, stores nothing invalid, and retries on the next run', async () => {
    const beta = join(hosted.root, 'work', 'beta')
    const gamma = join(hosted.root, 'work', 'gamma')
    const delta = join(hosted.root, 'work', 'delta')

    mode = 'http-500'
    let started = Date.now()
    const first = await run(beta, 'Our build tool is written in Zig.')
    const firstMs = Date.now() - started
    expect(first.code).toBe(0)
    expect(first.stdout).toContain('Noted: Our build tool is written in Zig.')
    expect(firstMs).toBeLessThan(30_000)

    mode = 'garbage'
    started = Date.now()
    const second = await run(gamma, '我家有两只猫 (猫 x2).')
    expect(second.code).toBe(0)
    expect(second.stdout).toContain('Noted:')
    expect(Date.now() - started).toBeLessThan(30_000)

    const failedIds = await withStore(async (store) => {
      const ids: string[] = []
      for (const workspace of [beta, gamma]) {
        const [conversation] = await store.conversations.list({ workspace })
        ids.push(conversation!.id)
        const state = await new DistillStateRepository(store).conversation(conversation!.id)
        expect(state).toMatchObject({ cursorSeq: -1, lease: null })
        expect(state.attempts).toBeGreaterThanOrEqual(1)
        expect(state.lastError).toBeTruthy()
      }
      // Nothing but the two memories of the first test exists: no invalid row was stored.
      expect((await store.memories.list({ includeSuperseded: true })).map((memory) => memory.text).sort()).toEqual(['The user lives in Sapporo.', 'The user prefers dark roast coffee.'])
      const pending = await new DistillStateRepository(store).pendingIds()
      expect(pending).toEqual(expect.arrayContaining(ids))
      return ids
    })
    const failedAttempts = distillRequests().filter((request) => request.body.messages.some((message) => String(message.content).includes('Zig')))
    expect(failedAttempts.length).toBeGreaterThanOrEqual(1)

    // The model is fixed: the next run (another workspace) distills the slices left behind.
    mode = 'ok'
    const third = await run(delta, 'Nothing new today.')
    expect(third.code).toBe(0)
    await withStore(async (store) => {
      const texts = (await store.memories.list({ includeSuperseded: true })).map((memory) => memory.text).sort()
      expect(texts).toEqual(['The user lives in Sapporo.', 'The user prefers dark roast coffee.', 'The user writes the build tool in Zig.', 'ユーザーは猫を二匹飼っている。'].sort())
      const zig = (await store.memories.list({ workspace: beta, includeGlobal: false }))[0]!
      expect(zig).toMatchObject({ scope: 'workspace', workspace: beta })
      const state = new DistillStateRepository(store)
      for (const id of failedIds) expect(await state.conversation(id)).toMatchObject({ attempts: 0, lastError: null, lease: null })
      expect(await state.pendingIds()).not.toEqual(expect.arrayContaining(failedIds))
      // Every model call the server received is one ledger row: the failed attempts (HTTP 500,
      // garbage) as `failed` rows with zero tokens, the retries that worked as `ok` rows.
      const calls = await state.calls({ limit: 10_000 })
      expect(calls.map((call) => call.layer).sort()).toEqual(distillRequests().map((request) => distillLayer(request)).sort())
      expect(calls.filter((call) => call.outcome === 'failed').every((call) => call.inputTokens === 0 && call.outputTokens === 0)).toBe(true)
      expect(calls.some((call) => call.outcome === 'failed')).toBe(true)
    })
  })

  it('fails boot with a message naming the field when distill config is broken', async () => {
    await expectBootRejects(hosted, '- id: memory-distill\n  config:\n    extract:\n      minMessages: lots\n', [/memory-distill/, /minMessages/])
  })
})
