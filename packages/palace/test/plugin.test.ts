import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Context } from '@deepseek-ai/cordis'
import LlmRuntime, { BlockAssembler, type GenerateOptions, type Message } from '@deepseek-ai/dsh-llm'
import MemoryStoreService from '@dsh-memory/store/plugin'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { ArchivedEvent } from '../src/plugin.js'
import * as palace from '../src/plugin.js'
import { automaticNamespace } from '../src/index.js'
import { EventLog, tempDir } from './fixtures.js'
import { hostAgent, ScriptedAdapter, testHost, type HostRecord } from './host.js'

type Agent = ReturnType<typeof hostAgent>

let temp: ReturnType<typeof tempDir>
let root: Context
let record: HostRecord
let adapter: ScriptedAdapter
let onRequest: (options: GenerateOptions) => void | Promise<void>
let workspace: string

const config = (overrides: Partial<palace.Config> = {}): palace.Config => palace.Config({ ...overrides }) as palace.Config

async function boot(overrides: Partial<palace.Config> = {}): Promise<void> {
  root = new Context()
  await root.plugin(MemoryStoreService, { dataDir: join(temp.dir, 'data') })
  await root.plugin(LlmRuntime)
  adapter = new ScriptedAdapter(10_000, (options) => onRequest(options))
  root.llm.registerAdapter(['scripted'], adapter)
  await root.plugin(testHost(record))
  await root.plugin(palace, config(overrides))
}

async function compactionCall(agent: Agent, messages: readonly Message[]): Promise<string> {
  const assembler = new BlockAssembler()
  const instruction = { id: 'instruction', role: 'user', content: [{ type: 'text', text: 'Condense the conversation above.' }], source: { kind: 'plugin', plugin: 'dsh-compaction-basic' } } as Message
  for await (const chunk of root.llm.stream({ provider: 'scripted', model: 'small', messages: [...messages, instruction], sessionId: agent.id as never, purpose: 'compaction' })) assembler.push(chunk)
  return assembler.blocks().map((block) => ('text' in block ? block.text : '')).join('')
}

function messagesOf(log: EventLog, count: number): Message[] {
  return log.events
    .filter((event) => event.surfaceOp)
    .slice(0, count)
    .map((event) => (event.type === 'user/message' ? event.data : (event.data as { message: unknown }).message) as Message)
}

async function preStep(agent: Agent, messages: unknown[] = []): Promise<{ kind: string; messages?: { content: { text: string }[]; source: Record<string, unknown> }[] }> {
  return (root as unknown as { waterfall(name: string, payload: unknown, next: () => Promise<unknown>): Promise<never> }).waterfall(
    'agent/pre-step',
    { agent, messages, turn: 1, step: 1, signal: new AbortController().signal },
    async () => ({ kind: 'enter', messages }),
  )
}

function emit(name: string, ...args: unknown[]): void {
  ;(root as unknown as { emit(name: string, ...args: unknown[]): void }).emit(name, ...args)
}

function volumes(dir: string): string {
  const out: string[] = []
  const walk = (folder: string): void => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(join(folder, entry.name))
      else if (entry.name.endsWith('.md') && entry.name !== '_summary.md') out.push(readFileSync(join(folder, entry.name), 'utf8'))
    }
  }
  if (existsSync(dir)) walk(dir)
  return out.join('\n')
}

beforeEach(() => {
  temp = tempDir('plugin')
  workspace = join(temp.dir, 'work')
  mkdirSync(workspace, { recursive: true })
  record = { tools: new Map(), sections: new Map(), pressure: { totalTokens: 0 } }
  onRequest = () => undefined
})
afterEach(async () => {
  await root?.fiber.dispose()
  temp.remove()
})

describe('memory-palace plugin on a real Cordis context', () => {
  it('registers the six tools and the recall guidance, and removes them when unloaded', async () => {
    await boot({ recallStrength: 'medium' })
    expect([...record.tools.keys()]).toEqual(['palace_archive', 'palace_turns', 'palace_summary', 'palace_search', 'palace_read', 'palace_config'])
    for (const tool of record.tools.values()) expect(tool.output.schema).toMatchObject({ type: 'object', required: ['ok', 'text'] })
    expect(record.sections.get('memory-palace:recall')!.text({})).toContain('palace_summary without month')
    await root.fiber.dispose()
    expect(record.tools.size).toBe(0)
    expect(record.sections.size).toBe(0)
  })

  it('rejects an invalid config at load, naming the field', async () => {
    root = new Context()
    await root.plugin(MemoryStoreService, { dataDir: join(temp.dir, 'data') })
    await root.plugin(testHost(record))
    await expect((async () => root.plugin(palace, { ...config(), recallStrength: 'extreme' } as unknown as palace.Config))()).rejects.toThrow(/recallStrength/)
    await expect((async () => root.plugin(palace, config({ triggerPressure: 0.1 })))()).rejects.toThrow(/retainFraction \(0\.12\) must be below triggerPressure \(0\.1\)/)
    await expect((async () => root.plugin(palace, config({ rootDirName: '../out' })))()).rejects.toThrow(/rootDirName/)
  })

  it('runs tools for the calling agent and renders their text', async () => {
    await boot()
    const log = new EventLog()
    log.exchange('Where is the deploy key?', 'In the vault, rotated monthly.')
    const agent = hostAgent('s1', workspace, log.events)
    const tool = record.tools.get('palace_config')!
    const value = await tool.execute({ action: 'set', namespace: 'Ops' }, { agent })
    expect(tool.output.render({}, value)).toEqual([{ type: 'text', text: expect.stringContaining('This session\'s memory is now named "Ops".') }])
    const refused = await record.tools.get('palace_archive')!.execute({ segments: 'all' }, { agent })
    expect(refused).toMatchObject({ ok: false, code: 'invalid-argument' })
  })

  it('archives what a compaction replays before the summary request reaches the model, and announces it after the commit', async () => {
    await boot()
    const log = new EventLog()
    for (let i = 0; i < 4; i++) log.exchange(`我们讨论了第 ${i} 个部署问题`, `answer ${i}: rollback plan ${i}`)
    const agent = hostAgent('s1', workspace, log.events)
    emit('agent/created', { agent })
    await record.tools.get('palace_config')!.execute({ action: 'set', namespace: 'Ops' }, { agent })
    const announced: boolean[] = []
    const deprecated: ArchivedEvent[] = []
    root.on('memory-palace/archived', (event: ArchivedEvent) => {
      announced.push(existsSync(join(workspace, 'memory-palace', 'Ops', event.outcome.files[0]!.path)))
    })
    root.on('palace/archived', (event: ArchivedEvent) => void deprecated.push(event))
    let seenOnDisk = ''
    onRequest = () => {
      seenOnDisk = volumes(join(workspace, 'memory-palace', 'Ops'))
    }
    const replayed = messagesOf(log, 6)
    expect(await compactionCall(agent, replayed)).toBe('summary')
    for (const message of replayed) expect(seenOnDisk).toContain((message.content[0] as { text: string }).text)
    // The two newest turns were not replayed, so they were not archived.
    expect(seenOnDisk).not.toContain('answer 3')
    expect(announced).toEqual([true])
    // The deprecated name carried the same event, once.
    expect(deprecated.map((event) => event.namespace)).toEqual(['Ops'])
    // An ordinary (non-compaction) call is not delayed or touched.
    await root.llm.stream({ provider: 'scripted', model: 'small', messages: replayed.slice(0, 1) })[Symbol.asyncIterator]().next()
    expect(announced).toEqual([true])
  })

  it('archives a never-named session under an automatic name, and the prompt claims the archive only then', async () => {
    await boot()
    const log = new EventLog()
    for (let i = 0; i < 3; i++) log.exchange(`headless step ${i}`, `tool output ${i}: ${'x'.repeat(200)}`)
    const agent = hostAgent('s1', workspace, log.events)
    emit('agent/created', { agent })
    await preStep(agent)
    const section = (): string => record.sections.get('memory-palace:recall')!.text({ agent })
    expect(section()).toContain('Nothing of this session is archived yet')
    expect(section()).not.toContain('Earlier turns of this session are archived')
    const named: string[] = []
    root.on('memory-palace/archived', (event: ArchivedEvent) => void named.push(event.namespace))
    const replayed = messagesOf(log, 4)
    expect(await compactionCall(agent, replayed)).toBe('summary')
    const automatic = automaticNamespace(workspace, 's1')
    expect(named).toEqual([automatic])
    const onDisk = volumes(join(workspace, 'memory-palace', automatic))
    for (const message of replayed) expect(onDisk).toContain((message.content[0] as { text: string }).text)
    await preStep(agent)
    expect(section()).toContain('Earlier turns of this session are archived verbatim')
  })

  it('lets the compaction go on when the archive is slow or fails', async () => {
    await boot({ archiveTimeoutMs: 200 })
    const log = new EventLog()
    log.exchange('q', 'a')
    const agent = hostAgent('s1', workspace, log.events)
    emit('agent/created', { agent })
    await record.tools.get('palace_config')!.execute({ action: 'set', namespace: 'Ops' }, { agent })
    // Another process holds the palace lock: the archive waits, the summary request does not.
    mkdirSync(join(workspace, 'memory-palace', '.lock'))
    expect(await compactionCall(agent, messagesOf(log, 2))).toBe('summary')
    expect(existsSync(join(workspace, 'memory-palace', 'Ops', '.state.json'))).toBe(false)
    // The lock is released; the host's flush waits for the archive to land.
    rmSync(join(workspace, 'memory-palace', '.lock'), { recursive: true })
    await (root as unknown as { parallel(name: string, ...args: unknown[]): Promise<void> }).parallel('session/flush', agent.session)
    expect(existsSync(join(workspace, 'memory-palace', 'Ops', '.state.json'))).toBe(true)
    // A broken workspace config: the archive fails, the compaction still gets its summary.
    writeFileSync(join(workspace, 'memory-palace', 'config.json'), '{"triggerPressure": "high"}')
    expect(await compactionCall(agent, messagesOf(log, 2))).toBe('summary')
    expect(adapter.requests.filter((request) => request.purpose === 'compaction')).toHaveLength(2)
  })

  it('adds the steering note in pre-step when both gates hold, and the post-compaction guidance once', async () => {
    await boot({ checkEveryTurns: 1, minBatchTurns: 3 })
    const log = new EventLog()
    for (let i = 0; i < 6; i++) log.exchange(`question ${i} ${'q'.repeat(2000)}`, `answer ${i} ${'a'.repeat(2000)}`)
    const agent = hostAgent('s1', workspace, log.events)
    emit('agent/created', { agent })
    await record.tools.get('palace_config')!.execute({ action: 'set', namespace: 'Ops' }, { agent })

    record.pressure.totalTokens = 3000 // 30 % of the scripted 10 000-token window
    expect((await preStep(agent)).messages).toEqual([])
    record.pressure.totalTokens = 7000
    log.exchange('one more', 'ok')
    const steered = await preStep(agent)
    expect(steered.messages).toHaveLength(1)
    expect(steered.messages![0]!.source).toMatchObject({ kind: 'plugin', plugin: 'memory-palace', form: 'notice' })
    expect(steered.messages![0]!.content[0]!.text).toMatch(/^\[memory palace\] Context is at 70% of the window/)
    expect(Object.isFrozen(steered.messages![0])).toBe(true)

    // A compaction ends: the next step gets one note about which summary to read.
    await compactionCall(agent, messagesOf(log, 4))
    emit('session/event', agent.session, { type: 'compaction/end', seq: 999, data: { compactionId: 'c', turn: 1 } })
    await vi.waitFor(async () => {
      const next = await preStep(agent, [])
      expect(next.messages!.map((message) => message.content[0]!.text).join()).toContain('Earlier turns were compacted out of context')
    })
    const after = await preStep(agent, [])
    expect(after.messages!.some((message) => message.content[0]!.text.includes('Earlier turns were compacted'))).toBe(false)
  })

  it('compacts the archived span at the next step when compactAfterArchive is on', async () => {
    const calls: [number, number][] = []
    await boot({ compactAfterArchive: true })
    await root.plugin({
      name: 'compaction-stand-in',
      apply: (ctx: Context) => {
        ctx.provide('compaction', { compactRegion: async (start: number, end: number) => void calls.push([start, end]) })
      },
    })
    const log = new EventLog()
    const seqs: number[] = []
    for (let i = 0; i < 3; i++) seqs.push(...log.exchange(`q${i}`, `a${i}`))
    const agent = hostAgent('s1', workspace, log.events)
    await record.tools.get('palace_config')!.execute({ action: 'set', namespace: 'Ops' }, { agent })
    const reply = await record.tools.get('palace_archive')!.execute({ segments: [{ category: 'talk', fromTurn: seqs[0], toTurn: seqs[3] }], summary: 'small talk' }, { agent })
    expect(reply).toMatchObject({ ok: true })
    await preStep(agent)
    expect(calls).toEqual([[seqs[0], seqs[3]]])
    await preStep(agent)
    expect(calls).toHaveLength(1)
  })

  it('sends the forced-recall instruction after a human message only', async () => {
    await boot({ recallStrength: 'forced' })
    const log = new EventLog()
    const agent = hostAgent('s1', workspace, log.events)
    await record.tools.get('palace_config')!.execute({ action: 'set', namespace: 'Ops' }, { agent })
    const human = { id: 'h1', role: 'user', content: [{ type: 'text', text: 'what did we decide?' }], source: { kind: 'user' } }
    const withHuman = await preStep(agent, [human])
    expect(withHuman.messages!.map((message) => message.content[0]!.text)).toEqual(['what did we decide?', expect.stringContaining('Archived memory is empty (歸檔記憶爲空)')])
    const toolStep = await preStep(agent, [])
    expect(toolStep.messages).toEqual([])
    expect(record.sections.get('memory-palace:recall')!.text({ agent })).toContain('Search the palace before answering every user message')
  })

  it('keeps a pre-step listener failure out of the turn', async () => {
    await boot({ checkEveryTurns: 1 })
    const log = new EventLog()
    log.exchange('q', 'a')
    const agent = hostAgent('s1', workspace, log.events)
    mkdirSync(join(workspace, 'memory-palace'), { recursive: true })
    writeFileSync(join(workspace, 'memory-palace', '.namespaces.json'), 'not json')
    const decision = await preStep(agent, [{ id: 'x', role: 'user', content: [{ type: 'text', text: 'hi' }], source: { kind: 'user' } }])
    expect(decision).toEqual({ kind: 'enter', messages: [expect.objectContaining({ id: 'x' })] })
  })
})
