import { randomUUID } from 'node:crypto'
import { Context, type Plugin } from '@deepseek-ai/cordis'
import MemoryStoreService from '@dsh-memory/store/plugin'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { CueWokenEvent, CueWrittenEvent } from '../src/core/cue-bank-contract.js'
import * as cueBank from '../src/plugin.js'
import { conceptVector, startEmbeddingServer, tempDir } from './fixtures.js'

// The real host services, from the pinned DSH install (apps/playground/host): the system-prompt
// registry that evaluates context providers and renders the runtime-context snapshot, and the
// tool runtime that runs the tool pipeline. Cordis keys its services by global symbols, so
// they mount on this test's Context.
const HOST = new URL('../../../apps/playground/host/node_modules/@deepseek-ai/', import.meta.url)
const { SystemPrompt, renderContextSnapshot } = (await import(new URL('dsh-system-prompt/lib/index.js', HOST).href)) as {
  SystemPrompt: Plugin
  renderContextSnapshot: (assembly: unknown) => string
}
const { ToolRuntime } = (await import(new URL('dsh-tools/lib/index.js', HOST).href)) as { ToolRuntime: Plugin }

interface HostServices {
  systemPrompt: { assemble(context?: unknown): Promise<{ contexts: { name: string; text: string }[] }> }
  tools: {
    get(name: string): unknown
    execute(exec: { callId: string; name: string; arguments: unknown; signal: AbortSignal; agent?: unknown }): Promise<{ isError: boolean; value?: unknown; content: { type: string; text?: string }[] }>
  }
}

class FakeHostSession {
  private seq = 0
  readonly header: { cwd: string }
  constructor(
    readonly id: string,
    cwd: string,
  ) {
    this.header = { cwd }
  }
  event(type: string, data: unknown) {
    return { type, seq: this.seq++, data }
  }
}

const config = (extra: Record<string, unknown> = {}) => ({ ...extra }) as unknown as cueBank.Config

describe('cue-bank plugin on a real Cordis context with the host system-prompt and tools', () => {
  let temp: ReturnType<typeof tempDir>
  let root: Context
  let host: HostServices
  let cueFiber: { dispose(): Promise<unknown> }
  const written: CueWrittenEvent[] = []
  const woken: CueWokenEvent[] = []
  // Under the names published before the naming rule (deprecated aliases, emitted as well).
  const deprecated: { name: string; event: CueWrittenEvent | CueWokenEvent }[] = []

  async function boot(extra: Record<string, unknown> = {}) {
    root = new Context()
    await root.plugin(MemoryStoreService, { dataDir: temp.dir })
    await root.plugin(SystemPrompt, {})
    await root.plugin(ToolRuntime, { mode: 'native' })
    cueFiber = await root.plugin(cueBank, config(extra))
    root.on('memory-cue-bank/written', (event) => void written.push(event))
    root.on('memory-cue-bank/woken', (event) => void woken.push(event))
    root.on('cue-bank/written', (event) => void deprecated.push({ name: 'cue-bank/written', event }))
    root.on('cue-bank/woken', (event) => void deprecated.push({ name: 'cue-bank/woken', event }))
    host = root as unknown as HostServices
  }

  beforeEach(async () => {
    temp = tempDir()
    written.length = 0
    woken.length = 0
    deprecated.length = 0
    await boot()
  })
  afterEach(async () => {
    await root.fiber.dispose()
    temp.remove()
  })

  /** One host turn as the loop produces it: claim (before assembly), events, turn end, flush. */
  async function turn(session: FakeHostSession, turnNumber: number, user: string, reply: string, options: { compact?: boolean } = {}) {
    const agent = { id: session.id, session }
    const userMessage = { id: randomUUID(), role: 'user', content: [{ type: 'text', text: user }], source: { kind: 'user' } }
    root.emit('session/event', session, session.event('turn/start', { turn: turnNumber }))
    if (options.compact) {
      // Pressure compaction runs at the step boundary, before the new prompt is claimed.
      root.emit('session/event', session, session.event('compaction/start', {}))
      root.emit('session/event', session, session.event('compaction/end', {}))
    }
    root.emit('agent/inbox/claimed', { agent, message: userMessage, turn: turnNumber })
    const assembly = await host.systemPrompt.assemble({ agent })
    root.emit('session/event', session, session.event('user/message', userMessage))
    root.emit('session/event', session, session.event('assistant/message', { turn: turnNumber, step: 1, message: { id: randomUUID(), role: 'assistant', content: [{ type: 'text', text: reply }] } }))
    root.emit('session/event', session, session.event('turn/end', { turn: turnNumber, reason: 'completed' }))
    await root.parallel('session/flush', session)
    return { assembly, snapshot: renderContextSnapshot(assembly) }
  }

  it('writes cues from session events at turn end, skipping plugin-made messages, and emits memory-cue-bank/written after the commit', async () => {
    const a = new FakeHostSession('session-A', '/work/alpha')
    root.emit('session/event', a, a.event('turn/start', { turn: 1 }))
    root.emit('session/event', a, a.event('user/message', { id: 'r1', content: [{ type: 'text', text: 'Recalled memory about Kafka consumers' }], source: { kind: 'plugin', plugin: 'memory-recall' } }))
    root.emit('session/event', a, a.event('turn/end', { turn: 1 }))
    await root.parallel('session/flush', a)
    expect(written).toEqual([])

    await turn(a, 2, '我们决定把 PostgreSQL 主数据库迁移到 16 版本', '好的，先做 pg_upgrade 演练。')
    expect(written).toHaveLength(1)
    const cues = root.memoryCueBank.list({ workspace: '/work/alpha' })
    expect(cues.map((cue) => cue.level).sort()).toEqual(['conversation', 'task'])
    expect([...written[0]!.cueIds].sort()).toEqual(cues.map((cue) => cue.id).sort())
    expect(cues.every((cue) => cue.sessionId === 'session-A' && cue.turn === 2)).toBe(true)
    expect(cues.flatMap((cue) => cue.keywords.map((k) => k.word))).not.toContain('kafka')
  })

  it('injects the cue block through ctx.systemPrompt.context on a switch, keeps it unchanged on the same topic, clears it on an unrelated one', async () => {
    const a = new FakeHostSession('session-A', '/work/alpha')
    await turn(a, 1, '我们决定把 PostgreSQL 主数据库迁移到 16 版本，配置里有 {{model}} 占位符', '好的，先做 pg_upgrade 演练。')

    const b = new FakeHostSession('session-B', '/work/alpha')
    const first = await turn(b, 1, 'PostgreSQL 主数据库迁移之后索引要重建吗？', '要重建。')
    expect(first.snapshot).toContain('<memory-cues source="cue-bank">')
    expect(first.snapshot).toContain('session: session-A')
    expect(first.snapshot).toMatch(/matched: .*postgresql/)
    // Remembered braces cannot reach the host's strict template interpolation.
    expect(first.snapshot).toContain('{ {model} }')
    expect(woken).toHaveLength(1)
    expect(root.memoryCueBank.lastDecision('session-B')).toMatchObject({ switched: true, via: 'keyword' })

    const same = await turn(b, 2, 'PostgreSQL 主数据库迁移时扩展怎么处理', '先检查扩展版本。')
    // Identical text: the host's runtime-context projection adds no second snapshot.
    expect(same.snapshot).toBe(first.snapshot)
    expect(root.memoryCueBank.lastDecision('session-B')).toMatchObject({ switched: false, scanned: false })
    expect(woken).toHaveLength(1)

    // Each event also reached the deprecated names' listeners, exactly once.
    const under = (name: string) => deprecated.filter((entry) => entry.name === name).map((entry) => entry.event)
    expect(under('cue-bank/written')).toEqual(written)
    expect(under('cue-bank/woken')).toEqual(woken)

    const unrelated = await turn(b, 3, 'Recommend a pasta recipe for tonight', 'Carbonara.')
    expect(unrelated.assembly.contexts.find((c) => c.name === cueBank.CONTEXT_NAME)?.text).toBe('')
    expect(unrelated.snapshot).not.toContain('memory-cues')
  })

  it('lets a session recall its own earlier turns only after the host compacted them', async () => {
    const a = new FakeHostSession('session-A', '/work/alpha')
    await turn(a, 1, '我们决定把 PostgreSQL 主数据库迁移到 16 版本', '好的。')
    await turn(a, 2, 'Recommend a pasta recipe for tonight', 'Carbonara.')
    const inContext = await turn(a, 3, 'PostgreSQL 主数据库迁移顺利吗？', '顺利。')
    expect(inContext.snapshot).not.toContain('memory-cues')
    await turn(a, 4, 'And a dessert recipe?', 'Tiramisu.', { compact: true })
    const recalled = await turn(a, 5, 'PostgreSQL 主数据库迁移的索引重建完成了吗？', '完成了。')
    expect(recalled.snapshot).toContain('<memory-cues source="cue-bank">')
    expect(recalled.snapshot).toContain('[conversation]')
    expect(recalled.snapshot).toContain('session: session-A')
    expect(recalled.snapshot).not.toContain('[task]')
  })

  it("does not wake another workspace's session", async () => {
    await turn(new FakeHostSession('session-A', '/work/alpha'), 1, '我们决定把 PostgreSQL 主数据库迁移到 16 版本', '好的。')
    const other = await turn(new FakeHostSession('session-C', '/work/beta'), 1, 'PostgreSQL 主数据库迁移之后索引要重建吗？', '要。')
    expect(other.snapshot).not.toContain('memory-cues')
  })

  it('opens the source of an injected cue through the real tool pipeline (cue_bank_open)', async () => {
    await turn(new FakeHostSession('session-A', '/work/alpha'), 1, 'Kubernetes 集群部署用 Helm chart', 'Use helm upgrade --install.')
    const { snapshot } = await turn(new FakeHostSession('session-B', '/work/alpha'), 1, 'Kubernetes 集群 Helm 部署失败', 'Check the values.')
    expect(snapshot).toContain('call cue_bank_open')
    const cueId = /cue: (c-[0-9a-f-]+)/.exec(snapshot)![1]!
    const result = await host.tools.execute({ callId: 'call-1', name: 'cue_bank_open', arguments: { cueId }, signal: new AbortController().signal })
    expect(result.isError).toBe(false)
    const text = result.content.map((block) => block.text ?? '').join('')
    expect(text).toContain(`Cue ${cueId} [conversation] from session session-A, created`)
    expect(text).toContain('Kubernetes 集群部署用 Helm chart')
    const missing = await host.tools.execute({ callId: 'call-2', name: 'cue_bank_open', arguments: { cueId: 'c-nope' }, signal: new AbortController().signal })
    expect(missing.isError).toBe(true)
    expect(missing.content.map((block) => block.text ?? '').join('')).toMatch(/no cue with id/)
    // A session of the same workspace may open it; one of another workspace may not.
    const sameWorkspace = new FakeHostSession('session-D', '/work/alpha')
    const allowed = await host.tools.execute({ callId: 'call-3', name: 'cue_bank_open', arguments: { cueId }, signal: new AbortController().signal, agent: { id: sameWorkspace.id, session: sameWorkspace } })
    expect(allowed.isError).toBe(false)
    const otherWorkspace = new FakeHostSession('session-E', '/work/beta')
    const denied = await host.tools.execute({ callId: 'call-4', name: 'cue_bank_open', arguments: { cueId }, signal: new AbortController().signal, agent: { id: otherWorkspace.id, session: otherWorkspace } })
    expect(denied.isError).toBe(true)
    expect(denied.content.map((block) => block.text ?? '').join('')).toMatch(/no cue with id/)
  })

  it('waits for the query embedding in the assembly waterfall, never in the synchronous provider', async () => {
    await root.fiber.dispose()
    const server = await startEmbeddingServer(conceptVector, () => ({ delayMs: 150 }))
    try {
      await boot({ embedding: { baseURL: server.url, apiKey: 'k', model: 'concept-5', dimensions: 5, timeoutMs: 2000, waitMs: 1500 } })
      await turn(new FakeHostSession('session-A', '/work/alpha'), 1, '我们决定把 PostgreSQL 主库升级到 16', 'OK')
      await root.memoryCueBank.whenIdle()
      const { snapshot } = await turn(new FakeHostSession('session-B', '/work/alpha'), 1, 'How should the schema change next sprint?', 'OK')
      expect(snapshot).toContain('session: session-A')
      expect(snapshot).toContain('(semantic match)')
      expect(root.memoryCueBank.lastDecision('session-B')?.via).toBe('vector')
    } finally {
      await server.close()
    }
  })

  it('fails at load naming the field for a bad config', async () => {
    const ctx = new Context()
    await ctx.plugin(MemoryStoreService, { dataDir: temp.dir })
    await expect((async () => ctx.plugin(cueBank, config({ topic: { switchThreshold: 2 } })))()).rejects.toThrow(/switchThreshold/)
    await expect((async () => ctx.plugin(cueBank, config({ embedding: { timeoutMs: 1000, waitMs: 5000 } })))()).rejects.toThrow(/embedding\.waitMs/)
    await ctx.fiber.dispose()
  })

  it('provides the deprecated ctx.cueBank as the same instance as ctx.memoryCueBank', () => {
    expect(root.get('memoryCueBank')).toBeDefined()
    expect(root.get('cueBank')).toBe(root.get('memoryCueBank'))
  })

  it('leaves nothing behind when unloaded: the tool, the provider and both service keys go', async () => {
    expect(host.tools.get('cue_bank_open')).toBeDefined()
    await cueFiber.dispose()
    expect(host.tools.get('cue_bank_open')).toBeUndefined()
    const assembly = await host.systemPrompt.assemble({ agent: { id: 'x', session: { id: 'x' } } })
    expect(assembly.contexts.find((c) => c.name === cueBank.CONTEXT_NAME)).toBeUndefined()
    expect(root.get('memoryCueBank')).toBeUndefined()
    expect(root.get('cueBank')).toBeUndefined()
  })
})
