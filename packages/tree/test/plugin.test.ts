import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Context } from '@deepseek-ai/cordis'
import MemoryStoreService from '@dsh-memory/store/plugin'
// The real registries of the pinned host (see vitest.config.ts for how they share our cordis).
import { SystemPrompt, renderPrompt } from '@deepseek-ai/dsh-system-prompt'
import { ToolRuntime } from '@deepseek-ai/dsh-tools'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import MemoryTreeService, { Config, SECTION_NAME } from '../src/plugin.js'
import { TREE_GUIDE, TREE_TOOL_NAMES } from '../src/core/tools.js'
import { tempDir } from './helpers.js'

interface ToolOutcome {
  isError: boolean
  value?: { ok: boolean; text: string; data?: Record<string, unknown>; error?: { code: string } }
  content: Array<{ type: string; text?: string }>
}

const workspace = '/work/shop'

/** A host agent as the tool registry and the prompt assembly see it. */
function agent(id: string, cwd = workspace) {
  return { id, session: { id, header: { cwd, version: 1, id, createdAt: 0 } } }
}

let callCounter = 0
async function call(root: Context, name: string, args: unknown, who = agent('session-a')): Promise<ToolOutcome> {
  const tools = (root as unknown as { tools: { execute(input: unknown): Promise<ToolOutcome> } }).tools
  return tools.execute({ callId: `call-${++callCounter}`, name, arguments: args, signal: new AbortController().signal, agent: who })
}

async function prompt(root: Context, who: ReturnType<typeof agent>): Promise<string> {
  const assembly = await (root as unknown as { systemPrompt: { assemble(context: unknown): Promise<unknown> } }).systemPrompt.assemble({ agent: who })
  return renderPrompt(assembly as never)
}

function userMessage(id: string, text: string, kind = 'user') {
  return { type: 'user/message', seq: 0, data: { id, role: 'user', content: [{ type: 'text', text }], source: { kind } } }
}
function assistantMessage(text: string) {
  return { type: 'assistant/message', seq: 0, data: { turn: 1, step: 1, message: { role: 'assistant', content: [{ type: 'text', text }] } } }
}

describe('memory-tree plugin on a real Cordis context with the host registries', () => {
  let temp: ReturnType<typeof tempDir>
  let root: Context

  beforeEach(async () => {
    temp = tempDir('tree-plugin')
    root = new Context()
    await root.plugin(SystemPrompt, {})
    await root.plugin(ToolRuntime, {})
    await root.plugin(MemoryStoreService, { dataDir: temp.dir })
    await root.plugin(MemoryTreeService, Config({} as Config))
  })
  afterEach(async () => {
    await root.fiber.dispose()
    temp.remove()
  })

  it('registers every mt_* tool with a JSON schema and a declared output', () => {
    const schemas = (root as unknown as { tools: { schemas(): Array<{ name: string; parameters: Record<string, unknown> }> } }).tools.schemas()
    const ours = schemas.filter((schema) => schema.name.startsWith('mt_'))
    expect(ours.map((schema) => schema.name).sort()).toEqual([...TREE_TOOL_NAMES].sort())
    const merge = ours.find((schema) => schema.name === 'mt_merge')!
    expect(merge.parameters).toMatchObject({ type: 'object', properties: { branchId: { type: 'string' }, summary: { type: 'string' }, decisions: { type: 'array' } } })
    expect(merge.parameters).not.toHaveProperty('$schema')
  })

  it('routes user messages automatically: chit-chat to the chat partition, work to the mainline', async () => {
    const session = { id: 'session-a', header: { cwd: workspace } }
    root.emit('session/event', session, userMessage('m1', 'Hello! Thanks, how is the weather today?'))
    root.emit('session/event', session, assistantMessage('Sunny and warm!'))
    root.emit('session/event', session, userMessage('m2', 'The checkout API must never double-charge. Please fix the refund bug.'))
    root.emit('session/event', session, assistantMessage('Fixed the refund bug in refunds.ts.'))
    root.emit('session/event', session, userMessage('m3', '[memory] injected context', 'plugin'))
    await root.memoryTree.whenIdle()

    const tree = await root.memoryTree.ready()
    const chat = await tree.repository.listChat(workspace, 10)
    expect(chat.map((row) => row.text)).toEqual(['Hello! Thanks, how is the weather today?', 'Sunny and warm!'])
    const project = (await tree.resolveProject({ workspace }, { create: false }))!
    const turns = await tree.repository.recentTurns(project.id, { limit: 10 })
    expect(turns.map((turn) => [turn.role, turn.text])).toEqual([
      ['user', 'The checkout API must never double-charge. Please fix the refund bug.'],
      ['assistant', 'Fixed the refund bug in refunds.ts.'],
    ])
    expect((await tree.repository.listItems(project.id)).map((item) => [item.kind, item.text])).toEqual([['constraint', 'The checkout API must never double-charge.']])
  })

  it('branch → merge through the real tool registry; the next session sees the decision, not the branch or chit-chat', async () => {
    const session = { id: 'session-a', header: { cwd: workspace } }
    root.emit('session/event', session, userMessage('m1', '你好,今天天气怎么样?'))
    await root.memoryTree.whenIdle()

    const opened = await call(root, 'mt_branch', { title: 'payment provider', note: 'Stripe vs Adyen' })
    expect(opened.isError).toBe(false)
    expect(opened.value).toMatchObject({ ok: true, data: { title: 'payment provider' } })
    const branchId = opened.value!.data!.branchId as string
    expect(opened.content[0]!.text).toContain(branchId)

    root.emit('session/event', session, userMessage('m2', 'Compare the refund API of both providers for the checkout service.'))
    root.emit('session/event', session, assistantMessage('Adyen refunds are async webhooks; Stripe returns synchronously.'))
    await root.memoryTree.whenIdle()

    const merged = await call(root, 'mt_merge', { branchId, summary: 'Decision: use Stripe for card payments\nOutcome: Stripe refunds are synchronous' })
    expect(merged.value).toMatchObject({ ok: true, data: { branch: { id: branchId, status: 'merged' } } })
    expect(merged.content[0]!.text).toContain('use Stripe for card payments')

    const later = await prompt(root, agent('session-b'))
    expect(later).toContain('<memory-tree-mainline')
    expect(later).toContain('use Stripe for card payments')
    expect(later).not.toContain('天气')
    expect(later).not.toContain('async webhooks')

    const again = await call(root, 'mt_merge', { branchId, summary: 'Decision: x' })
    expect(again.isError).toBe(false)
    expect(again.value).toMatchObject({ ok: false, error: { code: 'conflict' } })
    expect(again.content[0]!.text).toMatch(/^mt_merge failed \(conflict\)/)
  })

  it('answers bad arguments with a clear error result, never an exception', async () => {
    const missing = await call(root, 'mt_checkpoint', {})
    expect(missing.value).toMatchObject({ ok: false, error: { code: 'invalid-argument' } })
    expect(missing.content[0]!.text).toContain('title')
    const both = await call(root, 'mt_branch', { title: 'a', branchId: 'br-1' })
    expect(both.value?.text).toContain('exactly one of title')
    const extra = await call(root, 'mt_status', { verbose: true })
    expect(extra.value).toMatchObject({ ok: false, error: { code: 'invalid-argument' } })
    const unknown = await call(root, 'mt_list_branches', { branchId: 'br-nothere' })
    expect(unknown.value).toMatchObject({ ok: false, error: { code: 'not-found' } })
  })

  it('keeps the section byte-stable within a session and fresh for a new one (refresh: session)', async () => {
    await call(root, 'mt_note', { kind: 'constraint', text: 'All prices are stored in cents' })
    const first = await prompt(root, agent('session-c'))
    expect(first).toContain('All prices are stored in cents')
    // What the user says in the session (and what is auto-extracted from it) is already in the
    // conversation: the section does not move for it.
    root.emit('session/event', { id: 'session-c', header: { cwd: workspace } }, userMessage('m1', 'We decided that invoices are generated nightly. Please update the billing module.'))
    await root.memoryTree.whenIdle()
    expect(await prompt(root, agent('session-c'))).toBe(first)
    expect(await prompt(root, agent('session-d'))).toContain('invoices are generated nightly')
    // Another workspace has its own (empty) mainline: no section at all.
    expect(await prompt(root, agent('session-e', '/work/other'))).not.toContain('memory-tree-mainline')
    root.emit('agent/disposed', { id: 'session-c' })
    expect(await prompt(root, agent('session-c'))).toContain('invoices are generated nightly')
  })

  it('shows a merge, a checkpoint or an explicit note on the next request of the same session', async () => {
    const who = agent('session-m')
    const first = await prompt(root, who)
    expect(first).not.toContain('memory-tree-mainline')
    const opened = await call(root, 'mt_branch', { title: '缓存方案' }, who)
    const branchId = opened.value!.data!.branchId as string
    expect(await prompt(root, who)).toContain(`(${branchId}, current)`)
    await call(root, 'mt_merge', { branchId, decisions: ['订单缓存用 Redis'] }, who)
    const merged = await prompt(root, who)
    expect(merged).toContain('订单缓存用 Redis')
    expect(merged).not.toContain(`(${branchId}, current)`)
    // Stable again until the next change; a change by another client (an MCP server) counts too.
    expect(await prompt(root, who)).toBe(merged)
    await root.memoryTree.runTool('mt_note', { kind: 'constraint', text: 'Cache entries expire after 5 minutes' }, { workspace, sessionId: 'mcp-1', source: 'mcp' })
    expect(await prompt(root, who)).toContain('Cache entries expire after 5 minutes')
    await call(root, 'mt_checkpoint', { title: '阶段1复盘' }, who)
    expect(await prompt(root, who)).toContain('Baseline: checkpoint "阶段1复盘"')
  })

  it('gives the model the guide on when to branch, merge and checkpoint', async () => {
    expect(await prompt(root, agent('session-g'))).toContain(TREE_GUIDE)
  })

  it('emits memory-tree events after the write committed', async () => {
    const seen: Array<[string, unknown]> = []
    root.on('memory-tree/branched', (change) => seen.push(['branched', change.branch.title]))
    root.on('memory-tree/merged', (change) => seen.push(['merged', change.items.map((item) => item.text)]))
    const opened = await call(root, 'mt_branch', { title: 'retry policy' })
    await call(root, 'mt_merge', { branchId: opened.value!.data!.branchId, decisions: ['Retry webhooks 5 times'] })
    expect(seen).toEqual([
      ['branched', 'retry policy'],
      ['merged', ['Retry webhooks 5 times']],
    ])
  })

  it('returns a closed error after unload instead of throwing', async () => {
    const service = root.memoryTree
    await service.ready()
    await root.fiber.dispose()
    const result = await service.runTool('mt_status', {}, { workspace })
    expect(result).toMatchObject({ ok: false, error: { code: 'closed' } })
    root = new Context()
  })
})

describe('memory-tree config', () => {
  it('fails the load naming the field for a bad value or a keyword on both lists', async () => {
    const temp = tempDir('tree-config')
    const ctx = new Context()
    try {
      await ctx.plugin(MemoryStoreService, { dataDir: temp.dir })
      await expect((async () => await ctx.plugin(MemoryTreeService, { recentTurns: 'many' } as unknown as Config))()).rejects.toThrow(/recentTurns/)
      await expect((async () => await ctx.plugin(MemoryTreeService, { recentTurn: 3 } as unknown as Config))()).rejects.toThrow(/memory-tree: recentTurn: unknown option/)
      await expect((async () => await ctx.plugin(MemoryTreeService, { chatKeywords: ['deploy'], projectKeywords: ['deploy'] } as unknown as Config))()).rejects.toThrow(/chatKeywords and projectKeywords both contain "deploy"/)
    } finally {
      await ctx.fiber.dispose()
      temp.remove()
    }
  })
})

describe('memory-tree documentation', () => {
  it('documents every config field in the README table with its default', () => {
    const readme = readFileSync(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8')
    const defaults = Config({} as Config) as unknown as Record<string, unknown>
    for (const [field, value] of Object.entries(defaults)) {
      const row = new RegExp(`^\\| \`${field}\` \\| ([^|]+) \\|`, 'm').exec(readme)
      expect(row, `README row for ${field}`).not.toBeNull()
      if (typeof value !== 'object') expect(row![1]).toContain(typeof value === 'string' && value === '' ? "''" : String(value))
    }
  })
})

