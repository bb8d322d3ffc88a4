import { join } from 'node:path'
import { Context, Service, symbols } from '@deepseek-ai/cordis'
import { openMemoryStore } from '@dsh-memory/store'
import MemoryStoreService from '@dsh-memory/store/plugin'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import DistillService, { type Config, type MemoriesUpdatedEvent } from '../src/plugin.js'
import { DistillStateRepository, initialConversationState } from '../src/core/state.js'
import { FakeLlm } from './fake-llm.js'
import { extraction, tempDir } from './fixtures.js'

type DeepPartial<T> = { [K in keyof T]?: T[K] extends object ? DeepPartial<T[K]> : T[K] }

const PINNED: DeepPartial<Config> = { llm: { provider: 'deepseek-official', model: 'deepseek-v4-flash' } }

describe('distill plugin on a real Cordis context', () => {
  let dir: string
  let root: Context
  let llm: FakeLlm
  let seq = 0

  beforeEach(async () => {
    dir = tempDir()
    root = new Context()
    seq = 0
    await root.plugin(MemoryStoreService, { dataDir: dir })
    await root.plugin(FakeLlm)
    llm = root.llm as unknown as FakeLlm
  })
  afterEach(async () => {
    await root.fiber.dispose()
  })

  /** Distill's persisted state of a conversation, read through its own repository. */
  const stateOf = (conversationId: string) => new DistillStateRepository(root.memoryStore).conversation(conversationId)

  const mount = async (config: DeepPartial<Config> = {}) => {
    const fiber = root.plugin(DistillService, { ...PINNED, ...config, extract: { minMessages: 1, ...config.extract }, llm: { ...PINNED.llm, ...config.llm } } as Config)
    await fiber
    return fiber
  }

  /** What capture does: commit the L0 row, then announce it. */
  const capture = async (conversationId: string, text: string, role: 'user' | 'assistant' = 'user', workspace = '/work/alpha') => {
    await root.memoryStore.conversations.ensure({ id: conversationId, workspace })
    const { message } = await root.memoryStore.messages.append({ conversationId, hostMessageId: `h${seq}`, role, text, seq: seq++ })
    root.emit('memory-capture/captured', { conversationId, messageId: message.id, role, workspace, turn: 1 })
    return message
  }
  const agent = (id: string, cwd = '/work/alpha') => ({ id, session: { id, header: { cwd } } })

  it('distills after the agent goes idle and announces memory-distill/memories-updated after the commit', async () => {
    await mount()
    llm.responder = (request) =>
      request.system.startsWith('[dsh-memory:distill/l1]')
        ? { kind: 'text', text: extraction([{ kind: 'preference', text: 'The user prefers Helix.', scope: 'global', src: ['m1'] }]), usage: { inputTokens: 321, outputTokens: 12 } }
        : { kind: 'text', text: '{"decisions":[]}' }
    const seen: Promise<string[]>[] = []
    const events: MemoriesUpdatedEvent[] = []
    const deprecated: MemoriesUpdatedEvent[] = []
    root.on('distill/memories-updated', (event: MemoriesUpdatedEvent) => void deprecated.push(event))
    root.on('memory-distill/memories-updated', (event: MemoriesUpdatedEvent) => {
      events.push(event)
      // Emitted after the commit: a second connection already sees the rows.
      seen.push(
        (async () => {
          const reader = openMemoryStore({ path: join(dir, 'memory.db'), readonly: true })
          try {
            return (await Promise.all(event.added.map((id) => reader.memories.get(id)))).map((memory) => memory?.text ?? 'missing')
          } finally {
            await reader.close()
          }
        })(),
      )
    })
    root.emit('agent/status', { agent: agent('s1'), status: 'running' })
    await capture('s1', 'My favourite editor is Helix.')
    await capture('s1', 'Noted!', 'assistant')
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(llm.requests).toHaveLength(0) // never during the turn
    root.emit('agent/status', { agent: agent('s1'), status: 'idle' })
    await vi.waitFor(() => expect(seen).toHaveLength(1))
    expect(await seen[0]).toEqual(['The user prefers Helix.'])
    // The deprecated name carried the same event, once.
    expect(deprecated).toHaveLength(1)
    expect(deprecated[0]).toBe(events[0])

    const request = llm.requests[0]!
    expect(request.system.startsWith('[dsh-memory:distill/l1]')).toBe(true)
    expect(request.options).toMatchObject({ provider: 'deepseek-official', model: 'deepseek-v4-flash', purpose: 'memory-distill', reasoningEffort: 'off', maxTokens: 8_192, temperature: 0.3 })
    expect(request.options.tools).toBeUndefined()
    expect(request.prompt).toContain('[m1] user: My favourite editor is Helix.')
    expect(request.prompt).toContain('[m2] assistant: Noted!')
    const rows = await root.memoryDistill.costs()
    expect(rows.find((row) => row.layer === 'l1')).toMatchObject({ provider: 'deepseek-official', model: 'deepseek-v4-flash', calls: 1, inputTokens: 321, outputTokens: 12, estimatedCalls: 0 })
  })

  it('follows the agent default model, then the route the session reports', async () => {
    class AgentDefaultModel extends Service {
      constructor(ctx: Context) {
        super(ctx, 'agentDefaultModel')
      }
      currentSelection() {
        return { provider: 'agent-provider', model: 'agent-model' }
      }
    }
    await root.plugin(AgentDefaultModel)
    await mount({ llm: { provider: '', model: '' } })
    await capture('s1', 'hello')
    await vi.waitFor(() => expect(llm.requests).toHaveLength(1))
    expect(llm.requests[0]!.options).toMatchObject({ provider: 'agent-provider', model: 'agent-model' })

    root.emit('session/event', { id: 's2' }, { type: 'request/context', data: { provider: 'session-provider', model: 'session-model', contextWindow: 1000 } })
    await capture('s2', 'hi there')
    await vi.waitFor(() => expect(llm.requests).toHaveLength(2))
    expect(llm.requests[1]!.options).toMatchObject({ provider: 'session-provider', model: 'session-model' })
  })

  it('stores nothing on an HTTP 500 finish, persists the slice, and distills it after a restart', async () => {
    const fiber = await mount()
    llm.responder = () => ({ kind: 'error', code: 'SERVER', message: 'scripted HTTP 500', status: 500 })
    await capture('s1', 'I moved to Osaka.')
    await vi.waitFor(async () => expect((await stateOf('s1')).attempts).toBe(1))
    const state = await stateOf('s1')
    expect(state).toMatchObject({ cursorSeq: -1, lease: null, lastError: expect.stringContaining('HTTP 500') })
    expect(await root.memoryStore.memories.list({})).toHaveLength(0)

    await fiber.dispose()
    llm.responder = (request) =>
      request.system.startsWith('[dsh-memory:distill/l1]') ? { kind: 'text', text: extraction([{ text: 'The user lives in Osaka.', scope: 'global' }]) } : { kind: 'text', text: '{"decisions":[]}' }
    await mount({ extract: { minMessages: 6 } })
    await vi.waitFor(async () => expect((await root.memoryStore.memories.list({})).map((memory) => memory.text)).toEqual(['The user lives in Osaka.']))
    expect(await stateOf('s1')).toMatchObject({ cursorSeq: 0, attempts: 0, lastError: null })
  })

  it('rejects malformed model output twice, stores nothing, and records the skipped range', async () => {
    await mount()
    llm.responder = () => ({ kind: 'text', text: 'Sorry, I cannot help with that.' })
    await capture('s1', 'Remember: my PIN hint is "blue".')
    await vi.waitFor(async () => expect((await stateOf('s1')).skipped).toHaveLength(1))
    expect(llm.requests).toHaveLength(2)
    expect(await root.memoryStore.memories.list({})).toHaveLength(0)
    expect(await root.memoryStore.messages.list({ conversationId: 's1' })).toHaveLength(1)
  })

  it('lets session/flush wait at most extract.flushWaitMs for a stalled model, then leaves the slice pending', async () => {
    const fiber = await mount({ extract: { flushWaitMs: 300 } })
    llm.responder = () => ({ kind: 'stall' })
    await capture('s1', 'The build uses Bazel.')
    await vi.waitFor(() => expect(llm.requests).toHaveLength(1))
    const started = Date.now()
    await root.parallel('session/flush', { id: 's1' })
    const waited = Date.now() - started
    expect(waited).toBeGreaterThanOrEqual(250)
    expect(waited).toBeLessThan(2_000)
    // Disposing (the host exiting) cancels the call; the slice is still pending for the next start.
    await fiber.dispose()
    const state = await stateOf('s1')
    expect(state).toMatchObject({ cursorSeq: -1, lease: null })
    expect(await new DistillStateRepository(root.memoryStore).pendingIds()).toEqual(['s1'])
    expect(llm.requests[0]!.options.signal?.aborted).toBe(true)
  })

  it('never slows a flush that happens mid-turn', async () => {
    // A flush that waited for the stalled call would outlast this test's own timeout.
    await mount({ extract: { flushWaitMs: 600_000 } })
    llm.responder = () => ({ kind: 'stall' })
    await capture('s0', 'an older conversation')
    await vi.waitFor(() => expect(llm.requests).toHaveLength(1))
    root.emit('agent/status', { agent: agent('s1'), status: 'running' })
    await root.parallel('session/flush', { id: 's1' })
    // The stalled call is still in flight: the flush did not end it or wait for it.
    expect(llm.requests).toHaveLength(1)
    expect(llm.requests[0]!.options.signal?.aborted).not.toBe(true)
  })

  it('does no work after it is disposed', async () => {
    const fiber = await mount()
    await fiber.dispose()
    await capture('s1', 'hello')
    root.emit('agent/status', { agent: agent('s1'), status: 'idle' })
    await new Promise((resolve) => setTimeout(resolve, 150))
    expect(llm.requests).toHaveLength(0)
  })

  it('reports status through ctx.memoryDistill', async () => {
    await mount({ extract: { minMessages: 4 } })
    root.emit('agent/status', { agent: agent('s1'), status: 'running' })
    await capture('s1', 'one')
    await vi.waitFor(() => expect(root.memoryDistill.status()?.conversations[0]).toMatchObject({ id: 's1', pending: 1, agentRunning: true, nextThreshold: 1 }))
  })

  it('provides the deprecated ctx.distill as the same instance as ctx.memoryDistill, and unloading removes both', async () => {
    const fiber = await mount()
    // Cordis hands out a fresh proxy of a Service per lookup; compare the instances behind them.
    const original = (value: unknown) => (value as Record<symbol, unknown> | undefined)?.[symbols.original]
    expect(original(root.get('memoryDistill'))).toBeInstanceOf(DistillService)
    expect(original(root.get('distill'))).toBe(original(root.get('memoryDistill')))
    await fiber.dispose()
    expect(root.get('memoryDistill')).toBeUndefined()
    expect(root.get('distill')).toBeUndefined()
  })

  const isLayer = (request: { system: string }, layer: string) => request.system.startsWith(`[dsh-memory:distill/${layer}]`)
  const lines = (prompt: string) => prompt.split('\n').filter((line) => /^\[m\d+\]/.test(line))

  it('ramps the per-session threshold 1 → 2 → 4 → N (extract.minMessages)', async () => {
    await mount({ extract: { minMessages: 4, idleSeconds: 0 } })
    const quiet = () => new Promise((resolve) => setTimeout(resolve, 150))
    await capture('s1', 'one')
    await vi.waitFor(() => expect(llm.requests).toHaveLength(1))
    await capture('s1', 'two')
    await quiet()
    expect(llm.requests).toHaveLength(1)
    await capture('s1', 'three')
    await vi.waitFor(() => expect(llm.requests).toHaveLength(2))
    for (const text of ['four', 'five', 'six']) await capture('s1', text)
    await quiet()
    expect(llm.requests).toHaveLength(2)
    await capture('s1', 'seven')
    await vi.waitFor(() => expect(llm.requests).toHaveLength(3))
    for (const text of ['8', '9', '10']) await capture('s1', text)
    await quiet()
    expect(llm.requests).toHaveLength(3)
    await capture('s1', '11')
    await vi.waitFor(() => expect(llm.requests).toHaveLength(4))
    expect(llm.requests.map((request) => lines(request.prompt).length)).toEqual([1, 2, 4, 4])
  })

  it('extracts a slice below the threshold after extract.idleSeconds of silence', async () => {
    await new DistillStateRepository(root.memoryStore).putConversation({ ...initialConversationState('s1'), stage: 5 })
    await mount({ extract: { minMessages: 6, idleSeconds: 60 } })
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] })
    try {
      await capture('s1', 'The staging host is kiwi.')
      await vi.advanceTimersByTimeAsync(59_000)
      expect(llm.requests).toHaveLength(0)
      await vi.advanceTimersByTimeAsync(1_100)
    } finally {
      vi.useRealTimers()
    }
    await vi.waitFor(() => expect(llm.requests).toHaveLength(1))
    expect(lines(llm.requests[0]!.prompt)).toEqual(['[m1] user: The staging host is kiwi.'])
  })

  it('applies every dedup decision from one batched call, within extract.candidatePool', async () => {
    const store = root.memoryStore
    const vim = await store.memories.add({ kind: 'preference', text: 'The user edits code in Vim.', scope: 'global' })
    const tokyo = await store.memories.add({ kind: 'fact', text: 'The user lives in Tokyo.', scope: 'global' })
    const tea = await store.memories.add({ kind: 'preference', text: 'The user drinks green tea.', scope: 'global' })
    const team = await store.memories.add({ kind: 'fact', text: 'The user leads the payments team.', scope: 'global' })
    await mount({ extract: { candidatePool: 2 } })
    llm.responder = (request) => {
      if (isLayer(request, 'l1')) {
        return {
          kind: 'text',
          text: extraction([
            { text: 'The user now edits code in Helix, not Vim.', scope: 'global' },
            { text: 'The user lives in Tokyo (Nakano).', scope: 'global' },
            { text: 'The user drinks green tea every day.', scope: 'global' },
            { text: 'The payments team the user leads has six people.', scope: 'global' },
            { text: 'Owns one dog named Rex.', scope: 'global' },
          ]),
        }
      }
      if (isLayer(request, 'dedup')) {
        const alias = (text: string) => /^\s+(e\d+) /.exec(request.prompt.split('\n').find((line) => /^\s+e\d+ /.test(line) && line.includes(text)) ?? '')?.[1]
        return {
          kind: 'text',
          text: JSON.stringify({
            decisions: [
              { id: 'n1', action: 'supersede', target: alias('in Vim.') },
              { id: 'n2', action: 'update', target: alias('in Tokyo.'), text: 'The user lives in Nakano, Tokyo.' },
              { id: 'n3', action: 'skip', target: alias('green tea.') },
              { id: 'n4', action: 'merge', target: alias('payments team.'), text: 'The user leads the six-person payments team.' },
            ],
          }),
        }
      }
      return { kind: 'text', text: '{"ops":[]}' }
    }
    await capture('s1', 'a long chat')
    await vi.waitFor(async () => expect((await store.memories.list({ scope: 'global' })).length).toBe(5))
    const dedup = llm.requests.filter((request) => isLayer(request, 'dedup'))
    expect(dedup).toHaveLength(1)
    // Each candidate lists at most candidatePool (2) existing memories.
    const blocks = dedup[0]!.prompt.split(/^(?=n\d+ )/m)
    for (const block of blocks) expect(block.split('\n').filter((line) => /^\s+e\d+/.test(line)).length).toBeLessThanOrEqual(2)
    expect((await store.memories.list({ scope: 'global' })).map((memory) => memory.text).sort()).toEqual(
      ['Owns one dog named Rex.', 'The user drinks green tea.', 'The user leads the six-person payments team.', 'The user lives in Nakano, Tokyo.', 'The user now edits code in Helix, not Vim.'].sort(),
    )
    for (const old of [vim, tokyo, team]) {
      const history = await store.memories.history(old.id)
      expect(history.map((memory) => memory.text)[0]).toBe(old.text)
      expect(history[0]!.supersededBy).toBe(history[1]!.id)
    }
    expect((await store.memories.get(tea.id))!.supersededBy).toBeNull()
  })

  it('moves to llm.fallbacks when a route stalls past llm.timeoutMs', async () => {
    await mount({ llm: { timeoutMs: 1_000, fallbacks: [{ provider: 'backup', model: 'b' }] } })
    llm.responder = (request) =>
      request.options.provider === 'deepseek-official' ? { kind: 'stall' } : { kind: 'text', text: extraction([{ text: 'The user ships on Fridays.', scope: 'global' }]) }
    const started = Date.now()
    await capture('s1', 'We ship on Fridays.')
    await vi.waitFor(async () => expect((await root.memoryStore.memories.list({})).map((memory) => memory.text)).toEqual(['The user ships on Fridays.']), { timeout: 5_000 })
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000)
    expect(llm.requests.map((request) => request.options.provider)).toEqual(['deepseek-official', 'backup'])
    expect(llm.requests[0]!.options.signal?.aborted).toBe(true)
    const rows = await root.memoryDistill.costs({ layer: 'l1' })
    expect(rows.map((row) => [row.provider, row.calls, row.failures]).sort()).toEqual([
      ['backup', 1, 0],
      ['deepseek-official', 0, 1],
    ])
  })

  it('runs L2 scenes after l2.minNewMemories and the L3 persona after l3.interval, announcing both', async () => {
    await mount({ l2: { minNewMemories: 2 }, l3: { interval: 2 } })
    const scenes: unknown[] = []
    const personas: unknown[] = []
    const deprecated: string[] = []
    root.on('memory-distill/scenes-updated', (event) => void scenes.push(event))
    root.on('memory-distill/persona-updated', (event) => void personas.push(event))
    root.on('distill/scenes-updated', () => void deprecated.push('scenes'))
    root.on('distill/persona-updated', () => void deprecated.push('persona'))
    llm.responder = (request) => {
      if (isLayer(request, 'l1')) return { kind: 'text', text: extraction([{ text: 'ユーザーは札幌に住んでいる。', scope: 'global' }, { text: 'ユーザーは深煎りのコーヒーが好き。', kind: 'preference', scope: 'global' }]) }
      if (isLayer(request, 'dedup')) return { kind: 'text', text: '{"decisions":[]}' }
      if (isLayer(request, 'l2')) return { kind: 'text', text: '{"ops":[{"op":"create","title":"暮らし","summary":"札幌在住、深煎りコーヒー派。","memories":["n1","n2"]}]}' }
      return { kind: 'text', text: '# ペルソナ\n- 札幌在住\n- 深煎りコーヒーが好き' }
    }
    await capture('s1', '札幌に住んでいて、深煎りのコーヒーが好きです。')
    await vi.waitFor(() => expect(personas).toHaveLength(1))
    expect(scenes).toEqual([{ scope: 'global', workspace: null, created: [expect.any(String)], updated: [], deleted: [] }])
    expect(deprecated).toEqual(['scenes', 'persona'])
    const [scene] = await root.memoryStore.scenes.list({ scope: 'global' })
    expect(scene).toMatchObject({ title: '暮らし', summary: '札幌在住、深煎りコーヒー派。' })
    expect(scene!.memoryIds).toHaveLength(2)
    expect(await root.memoryStore.persona.get({ scope: 'global' })).toMatchObject({ version: 1, text: '# ペルソナ\n- 札幌在住\n- 深煎りコーヒーが好き' })
    expect(personas).toEqual([{ scope: 'global', workspace: null, version: 1 }])
  })

  it('upgrades a ledger day the old code left in meta, then prunes days beyond tokenCost.retentionDays at start', async () => {
    const old = new Date(Date.now() - 40 * 86_400_000).toISOString().slice(0, 10)
    const kept = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10)
    const row = { provider: 'p', model: 'm', layer: 'l1', calls: 1, failures: 0, inputTokens: 10, outputTokens: 1, cacheReadTokens: 0, estimatedCalls: 0 }
    await root.memoryStore.meta.set('distill.ledger.days', JSON.stringify({ v: 1, days: [old, kept] }))
    await root.memoryStore.meta.set(`distill.ledger.${old}`, JSON.stringify({ v: 1, day: old, rows: [row] }))
    await root.memoryStore.meta.set(`distill.ledger.${kept}`, JSON.stringify({ v: 1, day: kept, rows: [row] }))
    await mount({ tokenCost: { retentionDays: 30 } })
    const state = new DistillStateRepository(root.memoryStore)
    await vi.waitFor(async () => expect((await state.costDays()).map((day) => day.day)).toEqual([kept]))
    expect(await root.memoryStore.meta.list('distill.')).toEqual([])
  })

  const broken: [string, DeepPartial<Config>, RegExp][] = [
    ['a non-numeric threshold', { extract: { minMessages: 'lots' as unknown as number } }, /extract\.minMessages/],
    ['a fallback without model', { llm: { fallbacks: [{ provider: 'x' } as never] } }, /llm\.fallbacks\[0\]\.model/],
    ['a provider without model', { llm: { provider: 'deepseek-official', model: '' } }, /llm\.model/],
  ]
  for (const [label, config, pattern] of broken) {
    it(`fails at load naming the field for ${label}`, async () => {
      const ctx = new Context()
      await ctx.plugin(MemoryStoreService, { dataDir: join(dir, 'other') })
      await ctx.plugin(FakeLlm)
      let error: unknown
      try {
        await ctx.plugin(DistillService, config as Config)
      } catch (caught) {
        error = caught
      }
      await ctx.fiber.dispose()
      expect(String((error as Error)?.message ?? error)).toMatch(pattern)
    })
  }
})
