import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { coordinatedStore } from '@dsh-memory/store'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { InjectionLedger } from '../src/core/injection-ledger-repository.ts'
import { Lifecycle } from '../src/core/lifecycle.ts'
import { resolveRecallOptions } from '../src/core/options.ts'
import { projectionPath } from '../src/core/projection.ts'
import { chatRequests, type ModelRequest, recallMessages, startHost, type TestAgent, type TestHost } from './support/host.ts'

const WS = '/work/alpha'
// The service's underlying store: it has the layer and lease repositories.
const store = (host: TestHost) => coordinatedStore((host.ctx as any).memoryStore) as any

/** The layer snapshot messages (form catalog) of a request. */
function snapshots(request: ModelRequest): { id?: string; text: string; source: unknown }[] {
  return request.messages
    .filter((message) => message.source?.kind === 'plugin' && message.source.plugin === 'memory-recall' && message.source.form === 'catalog')
    .map((message) => ({ id: (message as { id?: string }).id, text: message.content.map((block) => block.text ?? '').join(''), source: message.source }))
}

/** `user/message` events of the session log that carry a layer snapshot. */
function loggedSnapshots(agent: TestAgent): { id: string; seq: number }[] {
  return (agent.session.events as unknown as { type: string; seq: number; data: { id: string; source?: { form?: string } } }[])
    .filter((event) => event.type === 'user/message' && event.data.source?.form === 'catalog')
    .map((event) => ({ id: event.data.id, seq: event.seq }))
}

function toolResults(request: ModelRequest): { text: string; isError: boolean }[] {
  return request.messages.flatMap((message) =>
    message.content.filter((block: any) => block.type === 'tool-result').map((block: any) => ({ text: block.content.map((part: any) => part.text ?? '').join(''), isError: !!block.isError })),
  )
}

async function seed(host: TestHost) {
  const s = store(host)
  const ids = {
    deploy: (await s.memories.add({ kind: 'fact', text: 'Staging deploys of this project go out with Kamal.', scope: 'workspace', workspace: WS })).id as string,
    lint: (await s.memories.add({ kind: 'instruction', text: 'Run the linter before every commit.', scope: 'workspace', workspace: WS })).id as string,
    tea: (await s.memories.add({ kind: 'preference', text: 'The user drinks green tea while coding.', scope: 'global' })).id as string,
  }
  return ids
}

describe('explicit memory layers in an in-process host', () => {
  let host: TestHost | undefined
  const dirs: string[] = []
  afterEach(async () => {
    await host?.cleanup()
    host = undefined
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
  })

  it('/memory enable workspace appends one index message through the inject API; automatic recall stays out of the session', async () => {
    host = await startHost()
    const ids = await seed(host)
    const agent = await host.createAgent(WS)
    const enabled = await host.command(agent, '/memory enable workspace')
    expect(enabled).toMatchObject({ kind: 'success', text: expect.stringMatching(/^Enabled the workspace layer for this session; its index \(revision 2: 2 of 2 memories listed, ~\d+ tokens\) enters the conversation with the next message\.$/) })
    const [request] = chatRequests(await host.say(agent, 'How do staging deploys go out? And tea?'))
    const found = snapshots(request!)
    expect(found).toHaveLength(1)
    expect(found[0]!.source).toEqual({ kind: 'plugin', plugin: 'memory-recall', form: 'catalog' })
    expect(found[0]!.id).toMatch(/^memory-layer-[0-9a-f]{32}$/)
    expect(found[0]!.text).toContain(`- ${ids.deploy} [fact] Staging deploys of this project go out with Kamal.`)
    expect(found[0]!.text).toContain(ids.lint)
    // Index only: the global layer is not enabled, and no automatic recall message in explicit mode.
    expect(found[0]!.text).not.toContain('green tea')
    expect(recallMessages(request!).filter((text) => text.startsWith('<recalled-memories'))).toEqual([])
    // The snapshot came before the human message (next-step input is claimed first).
    const order = request!.messages.map((message) => message.source?.kind)
    expect(order.indexOf('plugin')).toBeLessThan(order.lastIndexOf('user'))
    expect(loggedSnapshots(agent)).toHaveLength(1)
    expect((await host.command(agent, '/memory status'))?.text).toMatch(/workspace: enabled, snapshot memory-layer-\w+ committed at revision 2 \(2 listed/)

    // Later turns carry the same single message; refresh of an unchanged layer adds nothing.
    expect((await host.command(agent, '/memory refresh'))?.text).toMatch(/current \(revision 2\)/)
    const [later] = chatRequests(await host.say(agent, 'next question'))
    expect(snapshots(later!)).toHaveLength(1)
    expect(loggedSnapshots(agent)).toHaveLength(1)

    // A change bumps the revision; refresh delivers a second snapshot (the first stays untouched).
    await host.command(agent, '/memory remember The staging database is called heron.')
    expect((await host.command(agent, '/memory status'))?.text).toMatch(/the layer is at revision 3 now/)
    expect((await host.command(agent, '/memory refresh workspace'))?.text).toMatch(/revision 3: 3 of 3/)
    const [third] = chatRequests(await host.say(agent, 'and now?'))
    const both = snapshots(third!)
    expect(both).toHaveLength(2)
    expect(both[0]!.text).toBe(found[0]!.text)
    expect(both[1]!.text).toContain('heron')

    // Disable: automatic recall again; the old snapshots stay in the conversation.
    expect((await host.command(agent, '/memory disable'))?.text).toMatch(/Automatic recall applies again/)
    const [fourth] = chatRequests(await host.say(agent, 'Which tea do I drink while coding?'))
    expect(snapshots(fourth!)).toHaveLength(2)
    expect(recallMessages(fourth!).some((text) => text.includes('green tea'))).toBe(true)
  })

  it('after a compaction replaced the snapshot, refresh delivers it again (new generation); before, it is a no-op', async () => {
    host = await startHost()
    await seed(host)
    const agent = await host.createAgent(WS)
    await host.command(agent, '/memory enable global')
    const [first] = chatRequests(await host.say(agent, 'hello ' + 'padding '.repeat(50)))
    const original = snapshots(first!)
    expect(original).toHaveLength(1)
    expect((await host.command(agent, '/memory refresh global'))?.text).toMatch(/current/)
    expect((await host.compact(agent))?.kind).toBe('success')
    const [afterCompaction] = chatRequests(await host.say(agent, 'after the compaction'))
    expect(snapshots(afterCompaction!)).toEqual([])
    expect((await host.command(agent, '/memory refresh global'))?.text).toMatch(/its index \(revision 1: 1 of 1/)
    const [refreshed] = chatRequests(await host.say(agent, 'and now?'))
    const again = snapshots(refreshed!)
    expect(again).toHaveLength(1)
    expect(again[0]!.id).not.toBe(original[0]!.id)
    expect(again[0]!.text.replace(/injection="[^"]+"/, '')).toBe(original[0]!.text.replace(/injection="[^"]+"/, ''))
    // The raw log keeps both (append-only); the state machine has both committed.
    expect(loggedSnapshots(agent)).toHaveLength(2)
  })

  it('restarting the host between queued and committed: the resumed session logs the snapshot exactly once', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'dshm-layers-restart-'))
    const sessionsRoot = mkdtempSync(join(tmpdir(), 'dshm-layers-sessions-'))
    dirs.push(dataDir, sessionsRoot)
    host = await startHost({ dataDir, sessionsRoot })
    await seed(host)
    const first = await host.createAgent(WS, 'session-layers-restart')
    await host.say(first, 'hello')
    await host.command(first, '/memory enable workspace')
    // Queued: persisted in the store, pending in the host's inbox, not in the log.
    const state = await new InjectionLedger(() => store(host!)).get('session-layers-restart')
    expect(state.injections.map((record) => record.state)).toEqual(['queued'])
    const id = state.injections[0]!.id
    expect(loggedSnapshots(first)).toEqual([])
    await host.flush(first)
    await host.dispose()

    // A new host process on the same data dir and session store resumes the session.
    host = await startHost({ dataDir, sessionsRoot })
    const resumed = await host.resumeAgent('session-layers-restart')
    const [request] = chatRequests(await host.say(resumed, 'what do you know about this project?'))
    expect(snapshots(request!).map((message) => message.id)).toEqual([id])
    expect(loggedSnapshots(resumed).map((event) => event.id)).toEqual([id])
    await host.say(resumed, 'and again')
    await host.flush(resumed)
    expect((await new InjectionLedger(() => store(host!)).get('session-layers-restart')).injections.map((record) => [record.id, record.state])).toEqual([[id, 'committed']])
    await host.dispose()

    // Once more: nothing is added after a second restart.
    host = await startHost({ dataDir, sessionsRoot })
    const again = await host.resumeAgent('session-layers-restart')
    const [last] = chatRequests(await host.say(again, 'still there?'))
    expect(snapshots(last!).map((message) => message.id)).toEqual([id])
    expect(loggedSnapshots(again)).toHaveLength(1)
  })

  it('memory_read returns a memory whole, or a chunk manifest first and then chunks; bad ids are clear errors', async () => {
    host = await startHost({ recall: { layers: { readChunkChars: 200 } } })
    const s = store(host)
    const short = await s.memories.add({ kind: 'fact', text: 'The CI runs on Buildkite.', scope: 'workspace', workspace: WS })
    const long = await s.memories.add({ kind: 'episode', text: Array.from({ length: 80 }, (_, i) => `step${i}`).join(' '), scope: 'workspace', workspace: WS })
    const calls: Record<string, unknown>[] = [{ id: short.id }, { id: long.id }, { id: long.id, chunk: 2 }, { id: long.id, chunk: 99 }, { id: 'nope-nope' }]
    const results: { text: string; isError: boolean }[] = []
    for (const args of calls) {
      host.respond((request) => (request.messages.some((m) => m.content.some((b) => b.type === 'tool-result')) ? { text: 'ok' } : { toolCall: { name: 'memory_read', arguments: args } }))
      const requests = chatRequests(await host.say(await host.createAgent(WS), 'read it'))
      results.push(toolResults(requests.at(-1)!)[0]!)
    }
    expect(results[0]).toEqual({ isError: false, text: expect.stringContaining('>The CI runs on Buildkite.</memory>') })
    expect(results[1]!.text).toMatch(/^<memory-manifest id="[^"]+" kind="episode" .* chars="\d+" tokens="\d+" untrusted="true">/)
    expect(results[1]!.text).toMatch(/- chunk 1: \d+ chars, ~\d+ tokens, starts "step0 step1/)
    expect(results[2]!.text).toMatch(/chunk="2" of="\d" untrusted="true">step\d+/)
    expect(results[3]).toMatchObject({ isError: true, text: expect.stringMatching(/chunk 99 does not exist/) })
    expect(results[4]).toMatchObject({ isError: true, text: expect.stringMatching(/no memory with id nope-nope/) })
  })

  it('memory_feedback rates only memories shown in this session; incorrect demotes and flags for review', async () => {
    host = await startHost()
    const ids = await seed(host)
    // Global: not in the workspace layer's index, never recalled here.
    const hidden = (await store(host).memories.add({ kind: 'fact', text: 'Never shown in this session.', scope: 'global' })).id
    const agent = await host.createAgent(WS)
    await host.command(agent, '/memory enable workspace')
    const rate = async (args: Record<string, unknown>) => {
      host!.respond((request) =>
        request.messages.at(-1)?.content.some((b) => b.type === 'tool-result') ? { text: 'ok' } : { toolCall: { name: 'memory_feedback', arguments: args } },
      )
      const requests = chatRequests(await host!.say(agent, `rate ${JSON.stringify(args)}`))
      return toolResults(requests.at(-1)!).at(-1)!
    }
    expect(await rate({ id: ids.deploy, rating: 'incorrect' })).toEqual({ isError: false, text: `Recorded: memory ${ids.deploy} rated incorrect. It is demoted and flagged for review.` })
    expect(await rate({ id: hidden, rating: 'helpful' })).toMatchObject({ isError: true, text: expect.stringMatching(/was not injected in this session/) })
    expect(await rate({ id: ids.lint, rating: 'great' })).toMatchObject({ isError: true, text: expect.stringMatching(/memory_feedback: invalid argument rating/) })
    const flagged = await store(host).memories.get(ids.deploy)
    expect(flagged.flags).toMatchObject({ needsReview: true, feedback: { incorrect: 1, bySession: { [agent.id]: 'incorrect' } } })
    expect((await store(host).memories.get(hidden)).flags.feedback).toBeUndefined()
    expect((await host.command(agent, '/memory review'))?.text).toMatch(new RegExp(`1 memory was rated incorrect[\\s\\S]*${ids.deploy}`))
    // Demoted: a new session's automatic recall prefers the unflagged memory on the same topic.
    await store(host).memories.add({ kind: 'fact', text: 'Staging deploys of this project go out with Kamal from CI.', scope: 'workspace', workspace: WS })
    host.respond(() => ({ text: 'ok' }))
    const [request] = chatRequests(await host.say(await host.createAgent(WS), 'How do staging deploys of this project go out?'))
    const recalled = recallMessages(request!).join('\n')
    expect(recalled.indexOf('from CI')).toBeGreaterThan(-1)
    expect(recalled.indexOf(ids.deploy) === -1 || recalled.indexOf(ids.deploy) > recalled.indexOf('from CI')).toBe(true)
    // A correction resolves the review.
    await host.command(agent, `/memory correct ${ids.deploy} Staging deploys go out with Kamal 2.`)
    expect((await host.command(agent, '/memory review'))?.text).toBe('No memory is waiting for review.')
  })

  it('/memory promote moves a workspace memory to the global layer (history kept, both revisions move)', async () => {
    host = await startHost()
    const ids = await seed(host)
    const agent = await host.createAgent(WS)
    const before = [(await store(host).layers.revision({ scope: 'global' })).revision, (await store(host).layers.revision({ scope: 'workspace', workspace: WS })).revision]
    const result = await host.command(agent, `/memory promote ${ids.lint}`)
    expect(result?.text).toMatch(new RegExp(`^Promoted ${ids.lint} to the global layer as \\S+`))
    const [promoted] = await store(host).memories.list({ scope: 'global', kind: 'instruction' })
    expect(promoted).toMatchObject({ text: 'Run the linter before every commit.', workspace: null, flags: { promotedFrom: WS } })
    expect((await store(host).memories.get(ids.lint)).supersededBy).toBe(promoted.id)
    const after = [(await store(host).layers.revision({ scope: 'global' })).revision, (await store(host).layers.revision({ scope: 'workspace', workspace: WS })).revision]
    expect(after).toEqual([before[0]! + 1, before[1]! + 1])
    expect((await host.command(agent, `/memory promote ${ids.tea}`))?.text).toMatch(/only workspace memories can be promoted/)
    expect((await host.command(agent, '/memory promote'))?.kind).toBe('error')
    expect((await host.command(agent, '/memory enable everything'))?.text).toMatch(/enable takes one layer: global or workspace/)
  })

  it('length limits and secret scanning on what users and the model write, with clear errors', async () => {
    host = await startHost({ recall: { limits: { memoryChars: 40 } } })
    const agent = await host.createAgent(WS)
    const tooLong = await host.command(agent, `/memory remember ${'x'.repeat(41)}`)
    expect(tooLong).toEqual({ kind: 'error', text: 'the memory text is 41 characters; the limit is 40 (limits.memoryChars). Split it into shorter memories.' })
    expect(await store(host).memories.list({ workspace: WS })).toEqual([])
    const secret = await host.command(agent, '/memory remember key sk-abcdefghijklmnopqrstuvwxyz0123')
    expect(secret?.text).toMatch(/Remembered \(workspace\): \S+ \(1 secret was redacted\)/)
    const [stored] = await store(host).memories.list({ workspace: WS })
    expect(stored.text).not.toContain('sk-abcdefghijklmnopqrstuvwxyz0123')
    expect(stored.text).toContain('[REDACTED')
    host.respond((request) => (request.messages.at(-1)?.content.some((b) => b.type === 'tool-result') ? { text: 'ok' } : { toolCall: { name: 'memory_add', arguments: { text: 'y'.repeat(60) } } }))
    const requests = chatRequests(await host.say(agent, 'save it'))
    expect(toolResults(requests.at(-1)!)[0]).toEqual({ isError: true, text: 'Error: the memory text is 60 characters; the limit is 40 (limits.memoryChars). Split it into shorter memories.' })
    expect(await store(host).memories.list({ workspace: WS })).toHaveLength(1)
    // The audit log holds operations, revisions and times, never content.
    const audit = JSON.stringify(await store(host).audit.list({ limit: 1_000 }))
    expect(audit).not.toContain('REDACTED')
    expect(audit).not.toContain('key ')
    expect(audit).toMatch(/"op":"layer.change"/)
  })

  it('counts completed user turns and announces a review after reviewEveryUserTurns; keeps the Markdown projection current', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'dshm-layers-lifecycle-'))
    dirs.push(dataDir)
    host = await startHost({ dataDir, recall: { lifecycle: { reviewEveryUserTurns: 2 } } })
    const reviews: unknown[] = []
    host.ctx.on('memory-recall/review-due', (event) => void reviews.push(event))
    const agent = await host.createAgent(WS)
    await host.say(agent, 'one')
    await host.command(agent, '/memory status')
    await (host.ctx as any).parallel('session/flush', agent.session)
    expect(reviews).toEqual([])
    await host.say(agent, 'two')
    await (host.ctx as any).parallel('session/flush', agent.session)
    expect(reviews).toEqual([{ reason: 'turns', turns: 2 }])
    const reader = new Lifecycle({ store: () => store(host!), options: resolveRecallOptions({}), holder: 'test-reader' })
    expect(await reader.turns()).toMatchObject({ sinceReview: 0, total: 2 })

    await host.command(agent, '/memory remember The release branch is called trunk-next.')
    const file = projectionPath(join(dataDir, 'layers'), `workspace:${WS}`)
    for (let i = 0; i < 50 && !existsSync(file); i++) await new Promise((resolve) => setTimeout(resolve, 50))
    await (host.ctx as any).parallel('session/flush', agent.session)
    expect(readFileSync(file, 'utf8')).toContain('The release branch is called trunk-next.')
    rmSync(join(dataDir, 'layers'), { recursive: true, force: true })
    expect((await host.command(agent, '/memory project'))?.text).toMatch(/^Rebuilt 1 layer file in /)
    expect(readFileSync(file, 'utf8')).toContain('trunk-next')
  })

  it('re-projects when code outside recall announces a memory edit under the deprecated recall/memory-changed', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'dshm-layers-renamed-'))
    dirs.push(dataDir)
    host = await startHost({ dataDir })
    const file = projectionPath(join(dataDir, 'layers'), `workspace:${WS}`)
    // The first upkeep pass (a second after start) projects the layer; the next one is a minute away.
    await store(host).memories.add({ kind: 'fact', text: 'The talk is on Thursday.', scope: 'workspace', workspace: WS })
    await vi.waitFor(() => expect(existsSync(file) && readFileSync(file, 'utf8')).toContain('Thursday'), { timeout: 5_000 })
    // Another plugin writes a memory itself and announces it the old way: only that event re-projects now.
    const memory = await store(host).memories.add({ kind: 'fact', text: '発表の締め切りは金曜日です。', scope: 'workspace', workspace: WS })
    ;(host.ctx as any).emit('recall/memory-changed', { op: 'add', id: memory.id, sessionId: 'outside', actor: 'user' })
    await vi.waitFor(() => expect(readFileSync(file, 'utf8')).toContain('発表の締め切りは金曜日です。'), { timeout: 5_000 })
  })
})
