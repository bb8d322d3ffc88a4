import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from '@deepseek-ai/cordis'
import MemoryStoreService from '@dsh-memory/store/plugin'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { openMemoryStore } from '@dsh-memory/store'
import * as recall from '../src/plugin.ts'
import { SessionSettingsRepository } from '../src/core/session-settings.ts'
import { RECALL_FENCE_OPEN, RECALL_PREAMBLE } from '../src/core/recall-text.ts'
import { type EmbeddingServer, startEmbeddingServer } from './support/loopback.ts'
import { chatRequests, type ModelRequest, recallMessages, startHost, type TestHost } from './support/host.ts'

const DAY = 86_400_000
const store = (host: TestHost) => (host.ctx as any).memoryStore

/** Unrelated memories, so the words of a test's own memories are as distinctive as in a real store. */
async function seedFiller(host: TestHost, count = 12): Promise<void> {
  const topics = ['gardening tomatoes', 'marathon training', 'jazz records', 'sourdough baking', 'chess openings', 'bird watching', 'sailing knots', 'tax filing', 'piano lessons', 'camping gear', 'film photography', 'board games', 'knitting patterns', 'wine tasting']
  for (const topic of topics.slice(0, count)) await store(host).memories.add({ kind: 'fact', text: `The user once mentioned ${topic} in passing.`, scope: 'global' })
}

function toolResults(request: ModelRequest): string[] {
  return request.messages.flatMap((message) =>
    message.content.filter((block: any) => block.type === 'tool-result').map((block: any) => ({ text: block.content.map((part: any) => part.text ?? '').join(''), isError: !!block.isError })),
  ) as unknown as string[]
}

describe('recall plugin in an in-process host', () => {
  let host: TestHost | undefined
  let embeddings: EmbeddingServer | undefined
  afterEach(async () => {
    await host?.cleanup()
    await embeddings?.close()
    host = undefined
    embeddings = undefined
  })

  it('injects the relevant memory as one fenced message sourced from recall, just before the user message', async () => {
    host = await startHost()
    await store(host).memories.add({ kind: 'preference', text: 'The user prefers the Helix editor over Vim.', scope: 'global' })
    await store(host).memories.add({ kind: 'fact', text: 'The deploy target of this project is Fly.io.', scope: 'workspace', workspace: '/work/alpha' })
    const agent = await host.createAgent('/work/alpha')
    const [request] = chatRequests(await host.say(agent, 'Which editor should I open the config in?'))
    const recalled = recallMessages(request!)
    expect(recalled).toHaveLength(1)
    expect(recalled[0]).toContain('Helix editor')
    expect(recalled[0]).not.toContain('Fly.io')
    expect(recalled[0]!.startsWith(RECALL_FENCE_OPEN)).toBe(true)
    expect(recalled[0]).toContain(RECALL_PREAMBLE)
    expect(recalled[0]!.trimEnd().endsWith('</recalled-memories>')).toBe(true)
    // The recall message comes right before the human message (recall.placement: before-user).
    const humanAt = request!.messages.findIndex((message) => message.source?.kind === 'user')
    const injected = request!.messages[humanAt - 1]!
    expect(injected.role).toBe('user')
    expect(injected.source).toEqual({ kind: 'plugin', plugin: 'memory-recall', form: 'recall' })
  })

  it('recall.placement after-user puts the block right after the user message', async () => {
    host = await startHost({ recall: { recall: { placement: 'after-user' } } })
    await store(host).memories.add({ kind: 'preference', text: 'The user prefers the Helix editor over Vim.', scope: 'global' })
    const agent = await host.createAgent('/work/alpha')
    const [request] = chatRequests(await host.say(agent, 'Which editor should I open the config in?'))
    const humanAt = request!.messages.findIndex((message) => message.source?.kind === 'user')
    expect(request!.messages[humanAt + 1]!.source).toEqual({ kind: 'plugin', plugin: 'memory-recall', form: 'recall' })
  })

  it('never injects another workspace\'s memories, only this workspace\'s and global ones', async () => {
    host = await startHost()
    await store(host).memories.add({ kind: 'fact', text: 'Staging database password rotation happens on Fridays.', scope: 'workspace', workspace: '/work/beta' })
    await store(host).memories.add({ kind: 'fact', text: 'Staging database migrations run with sqitch.', scope: 'workspace', workspace: '/work/alpha' })
    await store(host).memories.add({ kind: 'fact', text: 'The user names staging databases after birds.', scope: 'global' })
    const agent = await host.createAgent('/work/alpha')
    const [request] = chatRequests(await host.say(agent, 'How do we handle the staging database?'))
    const text = recallMessages(request!).join('\n')
    expect(text).toContain('sqitch')
    expect(text).toContain('birds')
    expect(text).not.toContain('Fridays')
  })

  it('records lastRecalledAt and announces memory-recall/injected (and the deprecated recall/injected) after the write', async () => {
    host = await startHost()
    const memory = await store(host).memories.add({ kind: 'preference', text: 'The user drinks oat milk lattes.', scope: 'global' })
    const events: any[] = []
    const deprecated: any[] = []
    host.ctx.on('memory-recall/injected', (event) => {
      events.push(event)
    })
    host.ctx.on('recall/injected', (event) => void deprecated.push(event))
    const agent = await host.createAgent('/work/alpha')
    await host.say(agent, 'Order my usual latte please')
    await (host.ctx as any).parallel('session/flush', { id: agent.id })
    expect(events).toHaveLength(1)
    expect(events[0]).toMatchObject({ sessionId: agent.id, workspace: '/work/alpha', memoryIds: [memory.id] })
    expect(deprecated).toEqual(events)
    expect((await store(host).memories.get(memory.id)).lastRecalledAt).toEqual(expect.any(Number))
  })

  it('does not inject a memory twice in a session until a compaction drops it', async () => {
    host = await startHost()
    await store(host).memories.add({ kind: 'preference', text: 'The user prefers tabs over spaces in Go code.', scope: 'global' })
    const agent = await host.createAgent('/work/alpha')
    const first = chatRequests(await host.say(agent, 'Format this Go code with tabs or spaces? ' + 'padding '.repeat(80)))
    expect(recallMessages(first.at(-1)!).join('')).toContain('tabs over spaces')
    const second = chatRequests(await host.say(agent, 'And the Go tests, tabs or spaces? ' + 'padding '.repeat(80)))
    // The first recall message is still in the history; no second copy.
    const inSecond = recallMessages(second.at(-1)!)
    expect(inSecond).toHaveLength(1)
    expect(second.at(-1)!.messages.filter((message) => message.source?.plugin === 'memory-recall')).toHaveLength(1)

    const compacted = await host.compact(agent)
    expect(compacted?.kind).toBe('success')
    const third = chatRequests(await host.say(agent, 'Tabs or spaces for the Go generator? ' + 'padding '.repeat(10)))
    const afterCompaction = recallMessages(third.at(-1)!)
    // The compaction replaced the old recall message; the memory is injected again.
    expect(afterCompaction).toHaveLength(1)
    expect(afterCompaction[0]).toContain('tabs over spaces')
  })

  it('injects nothing for a step without a new human message (tool loop steps)', async () => {
    host = await startHost()
    await store(host).memories.add({ kind: 'fact', text: 'The release checklist lives in docs/release.md.', scope: 'workspace', workspace: '/work/alpha' })
    host.respond((request, index) => (index === 0 ? { toolCall: { name: 'memory_search', arguments: { query: 'release checklist' } } } : { text: 'done' }))
    const agent = await host.createAgent('/work/alpha')
    const requests = chatRequests(await host.say(agent, 'Where is the release checklist?'))
    expect(requests).toHaveLength(2)
    // Step 2 carries the same single recall message from step 1, no new one.
    expect(recallMessages(requests[1]!)).toHaveLength(1)
  })

  describe('budgets', () => {
    it('maxResults caps the number of injected memories', async () => {
      host = await startHost({ recall: { recall: { maxResults: 2 } } })
      await seedFiller(host)
      for (const place of ['Lisbon', 'Porto', 'Faro', 'Braga']) {
        await store(host).memories.add({ kind: 'fact', text: `The user travelled to ${place} by train.`, scope: 'global' })
      }
      const agent = await host.createAgent('/work/alpha')
      const [request] = chatRequests(await host.say(agent, 'Which places did I travel to by train?'))
      expect(recallMessages(request!)[0]!.match(/<memory /g)).toHaveLength(2)
    })

    it('maxCharsPerMemory cuts long memories with an ellipsis', async () => {
      host = await startHost({ recall: { recall: { maxCharsPerMemory: 40 } } })
      await store(host).memories.add({ kind: 'fact', text: `The kubernetes cluster runs ${'many services '.repeat(20)}in Frankfurt.`, scope: 'global' })
      const agent = await host.createAgent('/work/alpha')
      const [request] = chatRequests(await host.say(agent, 'Tell me about the kubernetes cluster'))
      const body = /<memory [^>]*>([^<]*)<\/memory>/.exec(recallMessages(request!)[0]!)![1]!
      expect([...body]).toHaveLength(40)
      expect(body.endsWith('…')).toBe(true)
    })

    it('maxTotalRecallChars caps the characters of one injection', async () => {
      host = await startHost({ recall: { recall: { maxResults: 5, maxCharsPerMemory: 100, maxTotalRecallChars: 120 } } })
      await seedFiller(host)
      for (const n of [1, 2, 3, 4]) {
        await store(host).memories.add({ kind: 'fact', text: `Invoice number ${n} for the printer was paid by card; ${'details '.repeat(8)}`, scope: 'global' })
      }
      const agent = await host.createAgent('/work/alpha')
      const [request] = chatRequests(await host.say(agent, 'Was the printer invoice paid?'))
      const bodies = [...recallMessages(request!)[0]!.matchAll(/<memory [^>]*>([^<]*)<\/memory>/g)].map((match) => match[1]!)
      expect(bodies.length).toBeGreaterThanOrEqual(1)
      expect(bodies.reduce((sum, body) => sum + [...body].length, 0)).toBeLessThanOrEqual(120)
    })

    it('scoreThreshold keeps weak matches out', async () => {
      host = await startHost({ recall: { recall: { scoreThreshold: 0.95 } } })
      await store(host).memories.add({ kind: 'fact', text: 'The user keeps bees in the garden.', scope: 'global' })
      const agent = await host.createAgent('/work/alpha')
      const [request] = chatRequests(await host.say(agent, 'What is in the garden?'))
      expect(recallMessages(request!)).toEqual([])
    })

    it('timeoutMs: a slow recall is skipped and the turn is not delayed', async () => {
      embeddings = await startEmbeddingServer('stall')
      host = await startHost({
        recall: {
          recall: { strategy: 'embedding', timeoutMs: 150 },
          embedding: { enabled: true, baseUrl: embeddings.url, model: 'concepts', dimensions: 8, timeoutMs: 20_000 },
        },
      })
      await store(host).memories.add({ kind: 'fact', text: 'The user walks the dog at seven.', scope: 'global' })
      const agent = await host.createAgent('/work/alpha')
      // The stalled endpoint never answers and the embedder's own timeout (20 s) outlasts this
      // test's, so a turn that waited for recall would never reach the lines below.
      const [request] = chatRequests(await host.say(agent, 'When do I walk the dog?'))
      expect(recallMessages(request!)).toEqual([])
      const status = await host.command(agent, '/memory status')
      expect(status?.text).toMatch(/longer than recall\.timeoutMs \(150 ms\)/)
    })
  })

  describe('decay', () => {
    it('prefers the newer of two similar memories, and not when decay is disabled', async () => {
      const seed = async (target: TestHost) => {
        // The old memory matches one more query word; only its age should make it lose.
        await store(target).memories.add({ kind: 'fact', text: 'The office coffee machine brews espresso beans from Kenya.', scope: 'global', createdAt: Date.now() - 200 * DAY })
        await store(target).memories.add({ kind: 'fact', text: 'The office coffee machine brews espresso.', scope: 'global' })
      }
      const ask = 'Which espresso beans does the office coffee machine brew?'
      host = await startHost({ recall: { recall: { maxResults: 1, decayHalfLifeDays: 30 } } })
      await seed(host)
      const [decayed] = chatRequests(await host.say(await host.createAgent('/work/alpha'), ask))
      expect(recallMessages(decayed!)[0]).not.toContain('Kenya')
      await host.cleanup()

      host = await startHost({ recall: { recall: { maxResults: 1, decayHalfLifeDays: 0 } } })
      await seed(host)
      const [flat] = chatRequests(await host.say(await host.createAgent('/work/alpha'), ask))
      expect(recallMessages(flat!)[0]).toContain('Kenya')
    })
  })

  describe('modes and the inject switch', () => {
    async function seedKinds(target: TestHost) {
      await seedFiller(target)
      await store(target).memories.add({ kind: 'preference', text: 'Global preference: answers about the linter in German.', scope: 'global' })
      await store(target).memories.add({ kind: 'instruction', text: 'Global instruction: never auto-fix linter warnings.', scope: 'global' })
      await store(target).memories.add({ kind: 'fact', text: 'Workspace fact: the linter is eslint 9.', scope: 'workspace', workspace: '/work/alpha' })
      await store(target).memories.add({ kind: 'preference', text: 'Workspace preference: linter output as a table.', scope: 'workspace', workspace: '/work/alpha' })
    }
    const ask = 'What about the linter?'

    it('auto recalls every kind from workspace and global', async () => {
      host = await startHost({ recall: { recall: { maxResults: 10 } } })
      await seedKinds(host)
      const [request] = chatRequests(await host.say(await host.createAgent('/work/alpha'), ask))
      const text = recallMessages(request!).join('')
      for (const needle of ['German', 'auto-fix', 'eslint 9', 'as a table']) expect(text).toContain(needle)
    })

    it.each([
      { mode: 'work', keeps: ['auto-fix', 'eslint 9', 'as a table'], drops: 'German', title: 'work keeps workspace memories and only global instructions/decisions' },
      { mode: 'chat', keeps: ['German', 'auto-fix', 'as a table'], drops: 'eslint 9', title: 'chat keeps global memories and only workspace preferences' },
    ])('$title', async ({ mode, keeps, drops }) => {
      host = await startHost({ recall: { recall: { maxResults: 10 } } })
      await seedKinds(host)
      const agent = await host.createAgent('/work/alpha')
      expect((await host.command(agent, `/memory mode ${mode}`))?.kind).toBe('success')
      const [request] = chatRequests(await host.say(agent, ask))
      const text = recallMessages(request!).join('')
      for (const needle of keeps) expect(text).toContain(needle)
      expect(text).not.toContain(drops)
    })

    it('off injects nothing and drops the memory sections; the choice survives a restart', async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'dshm-recall-restart-'))
      try {
        host = await startHost({ dataDir })
        await seedKinds(host)
        await store(host).persona.put({ scope: 'global', text: 'Prefers short answers.' })
        const agent = await host.createAgent('/work/alpha', 'session-persisted')
        const [before] = chatRequests(await host.say(agent, ask))
        expect(before!.system).toContain('Prefers short answers.')
        await host.command(agent, '/memory mode off')
        const [after] = chatRequests(await host.say(agent, `${ask} again`))
        expect(recallMessages(after!).length).toBe(recallMessages(before!).length) // only the old message, nothing new
        expect(after!.system).not.toContain('Prefers short answers.')
        await host.dispose()

        // A new process on the same data dir: the session id still has mode off.
        host = await startHost({ dataDir })
        const resumed = await host.createAgent('/work/alpha', 'session-persisted')
        const [again] = chatRequests(await host.say(resumed, ask))
        expect(recallMessages(again!)).toEqual([])
        expect((await host.command(resumed, '/memory mode'))?.text).toMatch(/^Mode: off/)
        // Another session is not affected.
        const other = await host.createAgent('/work/alpha')
        const [fresh] = chatRequests(await host.say(other, ask))
        expect(recallMessages(fresh!)).toHaveLength(1)
      } finally {
        await host?.cleanup()
        host = undefined
        rmSync(dataDir, { recursive: true, force: true })
      }
    })

    it('inject off makes a write-only session; inject on overrides recall.enabled: false', async () => {
      host = await startHost({ recall: { recall: { enabled: false } } })
      await seedKinds(host)
      const quiet = await host.createAgent('/work/alpha')
      const [followed] = chatRequests(await host.say(quiet, ask))
      expect(recallMessages(followed!)).toEqual([])
      expect((await host.command(quiet, '/memory inject on'))?.kind).toBe('success')
      const [forced] = chatRequests(await host.say(quiet, `${ask} now`))
      expect(recallMessages(forced!)).toHaveLength(1)
      await host.cleanup()

      host = await startHost()
      await seedKinds(host)
      const writeOnly = await host.createAgent('/work/alpha')
      const result = await host.command(writeOnly, '/memory inject off')
      expect(result?.text).toContain('write-only')
      const [none] = chatRequests(await host.say(writeOnly, ask))
      expect(recallMessages(none!)).toEqual([])
      expect((await host.command(writeOnly, '/memory status'))?.text).toMatch(/memory·write-only/)
    })

    it('a damaged settings record of the old format is left where it was and the session runs on the defaults', async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'dshm-recall-damaged-'))
      const old = openMemoryStore({ path: join(dataDir, 'memory.db') })
      await old.meta.set('recall.session.session-damaged', '{not json')
      await old.close()
      try {
        host = await startHost({ dataDir })
        await seedKinds(host)
        const agent = await host.createAgent('/work/alpha', 'session-damaged')
        const [request] = chatRequests(await host.say(agent, ask))
        expect(recallMessages(request!)).toHaveLength(1)
        expect((await host.command(agent, '/memory status'))?.text).toMatch(/mode auto, inject follow, default/)
        // Nothing is lost: the unreadable record stays under its key for a person to look at.
        expect(await store(host).meta.get('recall.session.session-damaged')).toBe('{not json')
      } finally {
        await host?.cleanup()
        host = undefined
        rmSync(dataDir, { recursive: true, force: true })
      }
    })
  })

  describe('persona and scene navigation in the system prompt', () => {
    it('adds stable sections after the host\'s own, changing only when the data changes', async () => {
      host = await startHost()
      await store(host).persona.put({ scope: 'global', text: 'The user is a backend engineer who likes {{terse}} answers.' })
      await store(host).persona.put({ scope: 'workspace', workspace: '/work/alpha', text: 'In this repo the user maintains the billing service.' })
      const scene = await store(host).scenes.add({ title: 'Billing migration', summary: 'Moving invoices from MySQL to Postgres in three steps.', scope: 'workspace', workspace: '/work/alpha' })
      await store(host).scenes.add({ title: 'Other repo scene', summary: 'Should not show.', scope: 'workspace', workspace: '/work/beta' })
      host.respond((request, index) => (index === 0 ? { toolCall: { name: 'memory_read_scene', arguments: { id: scene.id } } } : { text: 'ok' }))
      const agent = await host.createAgent('/work/alpha')
      const [step1, step2] = chatRequests(await host.say(agent, 'Continue the billing work'))
      expect(step1!.system!.startsWith('You are an AI agent powered by DeepSeek Harness.')).toBe(true)
      expect(step1!.system).toContain('## Long-term memory: the user')
      expect(step1!.system).toContain('backend engineer')
      // `{{` from model-written text cannot break the host's strict interpolation.
      expect(step1!.system).toContain('{ {terse} }')
      expect(step1!.system).toContain('billing service')
      expect(step1!.system).toContain(`${scene.id} [workspace] Billing migration`)
      expect(step1!.system).not.toContain('Other repo scene')
      expect(step1!.system!.indexOf('Long-term memory: the user')).toBeLessThan(step1!.system!.indexOf('Long-term memory: scenes'))
      // Between steps of a turn the prefix is byte-identical.
      expect(step2!.system).toBe(step1!.system)
      const sceneResult = toolResults(step2!) as unknown as { text: string; isError: boolean }[]
      expect(sceneResult[0]!.isError).toBe(false)
      expect(sceneResult[0]!.text).toContain('Moving invoices')

      host.respond(() => ({ text: 'ok' }))
      const [unchanged] = chatRequests(await host.say(agent, 'next'))
      expect(unchanged!.system).toBe(step1!.system)
      await store(host).persona.put({ scope: 'global', text: 'The user is a backend engineer who now prefers long answers.' })
      const [changed] = chatRequests(await host.say(agent, 'and now?'))
      expect(changed!.system).toContain('long answers')
      expect(changed!.system).not.toBe(step1!.system)
    })
  })

  describe('model tools', () => {
    async function callTool(target: TestHost, cwd: string, name: string, args: unknown): Promise<{ text: string; isError: boolean }> {
      target.respond((request, index) => (index === target.requests.length - 1 && !request.messages.some((m) => m.content.some((b) => b.type === 'tool-result')) ? { toolCall: { name, arguments: args as Record<string, unknown> } } : { text: 'ok' }))
      const agent = await target.createAgent(cwd)
      const requests = chatRequests(await target.say(agent, `please run ${name}`))
      return (toolResults(requests.at(-1)!) as unknown as { text: string; isError: boolean }[])[0]!
    }

    it('are offered to the model', async () => {
      host = await startHost()
      const [request] = chatRequests(await host.say(await host.createAgent('/work/alpha'), 'hi'))
      expect(request!.tools!.map((tool) => tool.name)).toEqual(
        expect.arrayContaining(['memory_search', 'conversation_search', 'memory_read_scene', 'memory_add', 'memory_delete']),
      )
    })

    /** A successful tool result that shows `wanted` and not `unwanted` (the other workspace's). */
    function expectFound(result: { isError: boolean; text: string }, wanted: string, unwanted: string) {
      expect(result.isError).toBe(false)
      expect(result.text).toContain(wanted)
      expect(result.text).not.toContain(unwanted)
    }

    it('memory_search finds memories of this workspace and global scope only', async () => {
      host = await startHost()
      await store(host).memories.add({ kind: 'fact', text: 'Alpha uses pnpm workspaces.', scope: 'workspace', workspace: '/work/alpha' })
      await store(host).memories.add({ kind: 'fact', text: 'Beta uses yarn workspaces.', scope: 'workspace', workspace: '/work/beta' })
      const result = await callTool(host, '/work/alpha', 'memory_search', { query: 'workspaces' })
      expectFound(result, 'pnpm', 'yarn')
    })

    it('memory_add stores a workspace memory; memory_delete removes it; bad arguments are clear errors', async () => {
      host = await startHost()
      const added = await callTool(host, '/work/alpha', 'memory_add', { text: 'The user wants commit messages in English.', kind: 'instruction' })
      expect(added.isError).toBe(false)
      const rows = await store(host).memories.list({ workspace: '/work/alpha' })
      expect(rows.map((row: any) => [row.text, row.kind, row.scope, row.workspace])).toEqual([['The user wants commit messages in English.', 'instruction', 'workspace', '/work/alpha']])

      const missing = await callTool(host, '/work/alpha', 'memory_add', { kind: 'instruction' })
      expect(missing.isError).toBe(true)
      expect(missing.text).toMatch(/memory_add: invalid argument text/)
      const badKind = await callTool(host, '/work/alpha', 'memory_add', { text: 'x', kind: 'gossip' })
      expect(badKind.isError).toBe(true)
      expect(badKind.text).toMatch(/invalid argument kind/)
      const noQuery = await callTool(host, '/work/alpha', 'memory_search', { limit: 500 })
      expect(noQuery.isError).toBe(true)
      expect(noQuery.text).toMatch(/memory_search: invalid argument (query|limit)/)

      const deleted = await callTool(host, '/work/alpha', 'memory_delete', { id: rows[0].id })
      expect(deleted.isError).toBe(false)
      expect(await store(host).memories.get(rows[0].id)).toBeUndefined()
      const unknown = await callTool(host, '/work/alpha', 'memory_delete', { id: rows[0].id })
      expect(unknown.isError).toBe(true)
      expect(unknown.text).toMatch(/no memory/)
    })

    it('memory_delete refuses another workspace\'s memory', async () => {
      host = await startHost()
      const foreign = await store(host).memories.add({ kind: 'fact', text: 'Beta secret plan.', scope: 'workspace', workspace: '/work/beta' })
      const result = await callTool(host, '/work/alpha', 'memory_delete', { id: foreign.id })
      expect(result.isError).toBe(true)
      expect(result.text).toMatch(/not visible from this workspace/)
      expect(await store(host).memories.get(foreign.id)).toBeDefined()
    })

    it('conversation_search finds earlier sessions of this workspace (L0), not other workspaces', async () => {
      host = await startHost()
      const s = store(host)
      await s.conversations.ensure({ id: 'old-alpha', workspace: '/work/alpha' })
      await s.messages.append({ conversationId: 'old-alpha', hostMessageId: 'm1', role: 'user', text: 'The flaky test is test_upload_retry in api/tests.' })
      await s.messages.append({ conversationId: 'old-alpha', hostMessageId: 'm2', role: 'assistant', text: 'I will quarantine it.' })
      await s.conversations.ensure({ id: 'old-beta', workspace: '/work/beta' })
      await s.messages.append({ conversationId: 'old-beta', hostMessageId: 'm3', role: 'user', text: 'The flaky test in beta is test_download.' })
      const result = await callTool(host, '/work/alpha', 'conversation_search', { query: 'flaky test' })
      expectFound(result, 'test_upload_retry', 'test_download')
    })

    it('memory_read_scene rejects an unknown id with a clear error', async () => {
      host = await startHost()
      const result = await callTool(host, '/work/alpha', 'memory_read_scene', { id: 'nope' })
      expect(result.isError).toBe(true)
      expect(result.text).toMatch(/no scene nope/)
    })
  })

  describe('/memory command', () => {
    it('status, list, remember, correct (keeping history), forget', async () => {
      host = await startHost()
      const agent = await host.createAgent('/work/alpha')
      const remembered = await host.command(agent, '/memory remember The CI runs on Buildkite.')
      expect(remembered?.kind).toBe('success')
      const global = await host.command(agent, '/memory remember --global The user is in the CET time zone.')
      expect(global?.text).toMatch(/^Remembered \(global\)/)
      const list = await host.command(agent, '/memory list')
      expect(list?.text).toContain('[workspace/fact]  The CI runs on Buildkite.')
      expect(list?.text).toContain('[global/fact]  The user is in the CET time zone.')
      const id = /^(\S+)\s+\[workspace/m.exec(list!.text!)![1]!

      const corrected = await host.command(agent, `/memory correct ${id.slice(-10)} The CI runs on GitHub Actions.`)
      expect(corrected?.kind).toBe('success')
      const history = await store(host).memories.history(id)
      expect(history.map((memory: any) => memory.text)).toEqual(['The CI runs on Buildkite.', 'The CI runs on GitHub Actions.'])

      const status = await host.command(agent, '/memory status')
      expect(status?.text).toMatch(/Memory: memory·auto \(mode auto, inject follow, default\)/)
      expect(status?.text).toMatch(/Memories visible: 1 workspace, 1 global, 0 session/)

      const newest = history.at(-1).id
      const forgot = await host.command(agent, `/memory forget ${newest}`)
      expect(forgot?.text).toMatch(/^Forgot/)
      expect(await store(host).memories.history(id)).toEqual([])
    })

    it('takes the reference\'s layer forms: remember/correct/forget workspace|global', async () => {
      host = await startHost()
      const agent = await host.createAgent('/work/alpha')
      const local = await host.command(agent, '/memory remember workspace Staging deploys go out with Kamal.')
      expect(local?.text).toMatch(/^Remembered \(workspace\): /)
      const global = await host.command(agent, '/memory remember GLOBAL 用户喜欢简洁的回答。')
      expect(global?.text).toMatch(/^Remembered \(global\): /)
      const list = (await host.command(agent, '/memory list'))!.text!
      expect(list).toContain('[workspace/fact]  Staging deploys go out with Kamal.')
      expect(list).toContain('[global/fact]  用户喜欢简洁的回答。')
      const localId = /^(\S+)\s+\[workspace/m.exec(list)![1]!
      const globalId = /^(\S+)\s+\[global/m.exec(list)![1]!

      // The wrong layer is refused, naming the right one, and nothing changes.
      const wrong = await host.command(agent, `/memory correct global ${localId} Staging deploys use Capistrano.`)
      expect(wrong).toEqual({ kind: 'error', text: `memory ${localId} is in the workspace layer, not global: /memory correct workspace ${localId} <text>` })
      expect((await host.command(agent, `/memory forget workspace ${globalId}`))?.text).toMatch(/is in the global layer, not workspace: \/memory forget global /)
      expect((await store(host).memories.history(localId)).map((memory: any) => memory.text)).toEqual(['Staging deploys go out with Kamal.'])

      const corrected = await host.command(agent, `/memory correct workspace ${localId.slice(-8)} Staging deploys go out with Kamal 2.`)
      expect(corrected?.kind).toBe('success')
      expect((await store(host).memories.history(localId)).map((memory: any) => memory.text)).toEqual(['Staging deploys go out with Kamal.', 'Staging deploys go out with Kamal 2.'])
      const forgot = await host.command(agent, `/memory forget global ${globalId}`)
      expect(forgot?.text).toBe(`Forgot ${globalId}: 用户喜欢简洁的回答。`)
      expect((await host.command(agent, '/memory forget workspace'))?.kind).toBe('error')
      expect((await host.command(agent, '/memory remember global'))?.text).toMatch(/^remember needs the text/)
      expect((await host.command(agent, `/memory correct workspace ${localId}`))?.kind).toBe('error')
    })

    it('rejects bad input with usage help and changes nothing', async () => {
      host = await startHost()
      const agent = await host.createAgent('/work/alpha')
      expect(await host.command(agent, '/memory mode sometimes')).toEqual({ kind: 'error', text: 'mode takes one of auto, chat, work, off' })
      expect((await host.command(agent, '/memory frobnicate'))?.text).toMatch(/unknown subcommand "frobnicate"\nUsage/)
      expect((await host.command(agent, '/memory forget'))?.kind).toBe('error')
      expect((await host.command(agent, '/memory remember'))?.kind).toBe('error')
      expect((await host.command(agent, '/memory correct abc'))?.kind).toBe('error')
      expect((await host.command(agent, '/memory list 0'))?.kind).toBe('error')
      expect((await host.command(agent, '/memory forget 0190abcd'))?.text).toMatch(/no memory/)
      expect(await new SessionSettingsRepository(store(host), { mode: 'auto', inject: 'follow' }).get(agent.id)).toMatchObject({ updatedAt: null })
    })
  })

  describe('embeddings', () => {
    it('hybrid recall finds a synonym keyword search misses, through a loopback /embeddings server', async () => {
      embeddings = await startEmbeddingServer('vectors')
      host = await startHost({
        recall: {
          recall: { strategy: 'hybrid' },
          embedding: { enabled: true, baseUrl: embeddings.url, apiKey: 'sk-test', model: 'concepts', dimensions: 8, timeoutMs: 5_000 },
        },
      })
      await store(host).memories.add({ kind: 'fact', text: 'Production runs on Fly.io in the Amsterdam region.', scope: 'workspace', workspace: '/work/alpha' })
      const agent = await host.createAgent('/work/alpha')
      // "hosting" shares no word with the memory; the first turn embeds the memory (backfill).
      await host.say(agent, 'Where is our hosting?')
      await (host.ctx as any).parallel('session/flush', { id: agent.id })
      const [memory] = await store(host).memories.list({ workspace: '/work/alpha' })
      expect(memory.embeddingModel).toBe('concepts@8')
      const other = await host.createAgent('/work/alpha')
      const [request] = chatRequests(await host.say(other, 'Where is our hosting?'))
      expect(recallMessages(request!).join('')).toContain('Fly.io')
      expect(embeddings.requests[0]!.headers.authorization).toBe('Bearer sk-test')
      expect(embeddings.requests[0]!.body).toMatchObject({ model: 'concepts', dimensions: 8 })
    })

    it('the embedding strategy orders by meaning and admits like hybrid: a half-related memory stays out', async () => {
      embeddings = await startEmbeddingServer('vectors')
      host = await startHost({
        recall: { recall: { strategy: 'embedding' }, embedding: { enabled: true, baseUrl: embeddings.url, model: 'concepts', dimensions: 8, timeoutMs: 5_000 } },
      })
      // Neither shares a word with the question. The latte is all coffee (cosine 1); the pet's
      // espresso is half coffee, half pet (cosine 0.71): over scoreThreshold (0.3), under the
      // gate (hybridThreshold 0.85).
      await store(host).memories.add({ kind: 'preference', text: 'The user drinks a latte every morning.', scope: 'workspace', workspace: '/work/alpha' })
      await store(host).memories.add({ kind: 'fact', text: 'My pet sips espresso at the office.', scope: 'workspace', workspace: '/work/alpha' })
      const first = await host.createAgent('/work/alpha')
      await host.say(first, 'Which coffee beans do I buy?')
      await (host.ctx as any).parallel('session/flush', { id: first.id })
      expect((await store(host).memories.list({ workspace: '/work/alpha' })).map((memory: any) => memory.embeddingModel)).toEqual(['concepts@8', 'concepts@8'])
      const other = await host.createAgent('/work/alpha')
      const [request] = chatRequests(await host.say(other, 'Which coffee beans do I buy?'))
      const recalled = recallMessages(request!).join('')
      expect(recalled).toContain('latte')
      expect(recalled).not.toContain('espresso')
      const status = await host.command(other, '/memory status')
      expect(status?.text).toMatch(/strategy embedding, .*hybrid threshold 0\.85/)
    })

    it('provider minilm (in-process, real model): an English paraphrase is recalled once the model has loaded; a Chinese turn recalls by keywords', async () => {
      // The paraphrase's MiniLM cosine (0.36) is far under the default hybridThreshold (0.85,
      // calibrated for precision on LoCoMo): this test lowers it to show the path.
      host = await startHost({ recall: { recall: { strategy: 'hybrid', scoreThreshold: 0.2, hybridThreshold: 0.2 }, embedding: { enabled: true, provider: 'minilm' } } })
      await seedFiller(host)
      await store(host).memories.add({ kind: 'preference', text: 'The user has a latte every morning.', scope: 'global' })
      await store(host).memories.add({ kind: 'preference', text: '用户喜欢喝乌龙茶', scope: 'global' })
      // "coffee" and "drink" are in no memory: only the vector finds the latte. A turn never waits
      // for the model load (it is ranked by keywords meanwhile), so ask until the model is in.
      await vi.waitFor(
        async () => {
          const agent = await host!.createAgent('/work/alpha')
          const [request] = chatRequests(await host!.say(agent, 'What coffee do I usually drink?'))
          await (host!.ctx as any).parallel('session/flush', { id: agent.id })
          expect(recallMessages(request!).join('')).toContain('latte')
        },
        { timeout: 60_000, interval: 200 },
      )
      const zh = await host.createAgent('/work/alpha')
      const [request] = chatRequests(await host.say(zh, '我平时喜欢喝什么茶？'))
      expect(recallMessages(request!).join('')).toContain('乌龙茶')
      const memories = await store(host).memories.list({ scope: 'global', limit: 100 })
      expect(memories.find((memory: any) => memory.text.startsWith('The user has a latte')).embeddingModel).toBe('local:minilm-l6-v2@384')
      expect(memories.find((memory: any) => memory.text === '用户喜欢喝乌龙茶').embedding).toBeNull()
    })

    it('falls back to keyword recall when the endpoint fails', async () => {
      embeddings = await startEmbeddingServer('http-500')
      host = await startHost({
        recall: { embedding: { enabled: true, baseUrl: embeddings.url, model: 'concepts', dimensions: 8, timeoutMs: 2_000 } },
      })
      await store(host).memories.add({ kind: 'fact', text: 'Production runs on Fly.io in the Amsterdam region.', scope: 'workspace', workspace: '/work/alpha' })
      const agent = await host.createAgent('/work/alpha')
      const [request] = chatRequests(await host.say(agent, 'Which region does production run in?'))
      expect(recallMessages(request!).join('')).toContain('Amsterdam')
      expect((await host.command(agent, '/memory status'))?.text).toMatch(/Embeddings: last error: .*HTTP 500/)
    })
  })

  describe('config', () => {
    it('rejects invalid config at load, naming the field', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'dshm-recall-config-'))
      const ctx = new Context()
      try {
        await ctx.plugin(MemoryStoreService, { dataDir: dir })
        await expect((async () => ctx.plugin(recall, { recall: { scoreThreshold: 2 } } as any))()).rejects.toThrow(/scoreThreshold/)
        await expect((async () => ctx.plugin(recall, { embedding: { enabled: true } } as any))()).rejects.toThrow(/embedding\.baseUrl/)
        await expect((async () => ctx.plugin(recall, { embedding: { enabled: true, provider: 'onnx' } } as any))()).rejects.toThrow(/embedding\.provider/)
        await expect((async () => ctx.plugin(recall, { recall: { strategy: 'embedding' } } as any))()).rejects.toThrow(/recall\.strategy/)
        await expect((async () => ctx.plugin(recall, { defaultMode: 'sometimes' } as any))()).rejects.toThrow(/defaultMode/)
        await expect((async () => ctx.plugin(recall, { lifecycle: { consolidationSimilarity: 0 } } as any))()).rejects.toThrow(/lifecycle\.consolidationSimilarity/)
        await expect((async () => ctx.plugin(recall, { retention: { rules: [{ maxAgeDays: 3 }] } } as any))()).rejects.toThrow(/kind/)
      } finally {
        await ctx.fiber.dispose()
        rmSync(dir, { recursive: true, force: true })
      }
    })
  })
})
