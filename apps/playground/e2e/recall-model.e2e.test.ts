import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { MemoryStore } from '@dsh-memory/store'
import { beforeAll, describe, expect, it } from 'vitest'
import { contentText, lastUserText, type LoggedRequest, requestText } from '../src/model-server.js'
import { useHostProfile, withHomeStore } from './helpers.js'
import { distillLayer, distillReply, type ScriptedFact } from './support/distill-model.js'
import { driverOverlay, readReport, startHost, writeLayersDriver, type DriverStep } from './support/layers-driver.js'
import { prefixReuse, prefixTotals } from './support/prefix-reuse.js'
import { loggedUserMessages, RECALL_FENCE } from './support/recall-requests.js'

/** What the scripted L1 extractor finds in the tools session (one fact, global). */
const FACTS: readonly ScriptedFact[] = [{ match: 'Zed editor', kind: 'preference', text: 'The user edits code in the Zed editor; 用户用 Zed 编辑器。', scope: 'global' }]
/** The scripted L2 scene and L3 persona (what the model "writes"; the test finds them in the store and the prompt). */
const SCENE = { title: 'Editor setup', summary: 'Which editor the user works in and how it is set up.' }
const PERSONA = '# Persona\n\nA developer who works in the Zed editor and deploys with Kamal.'

/** The scripted tool calls, keyed by a phrase of the human message that asks for them. */
type ToolScript = Record<string, { name: string; arguments: Record<string, unknown> }>

describe('recall as the model meets it in the real DSH host: placement, tools, log', () => {
  let driver: string
  let script: ToolScript = {}
  const seeded: Record<string, string> = {}
  const workspace = () => join(hosted.root, 'work', 'alpha')

  const withStore = <T>(fn: (store: MemoryStore) => Promise<T>): Promise<T> => withHomeStore(hosted.home, fn)

  /** One host process driving one session through `steps`; returns the session's chat requests. */
  const drive = async (sessionId: string, steps: DriverStep[], recallConfig = '') => {
    const reportFile = join(hosted.root, `report-${sessionId}.json`)
    const patch = driverOverlay(driver, { sessionId, resume: false, steps, reportFile }) + recallConfig
    const running = await startHost(hosted.home, { profile: 'recall-model', cwd: workspace(), modelUrl: hosted.server.url, name: sessionId, patch })
    const result = await running.done
    const report = await readReport(reportFile)
    expect(report.error, result.stderr).toBeUndefined()
    expect(result.code, result.stderr).toBe(0)
    const chats = hosted.server.requests.filter((request) => request.purpose === 'chat' && request.headers['x-deepseek-harness-session-id'] === sessionId)
    return { chats, report }
  }

  const hosted = useHostProfile('recall-model', {
    packages: ['@dsh-memory/store', '@dsh-memory/capture', '@dsh-memory/distill', '@dsh-memory/recall'],
    responder: (request) => {
      const layer = distillLayer(request)
      if (layer === 'l2') {
        // One scene over every memory the prompt lists (its `nN` aliases).
        const memories = [...new Set(requestText(request.body).match(/^n\d+(?= \[)/gm) ?? [])]
        return { kind: 'text', text: JSON.stringify({ ops: [{ op: 'create', ...SCENE, memories }] }) }
      }
      if (layer === 'l3') return { kind: 'text', text: PERSONA }
      const distill = distillReply(request, FACTS)
      if (distill) return distill
      const last = request.body.messages.at(-1)
      if (last?.role === 'tool') return { kind: 'text', text: `From the tool: ${contentText(last.content).slice(0, 120)}` }
      const asked = lastUserText(request.body)
      const call = Object.entries(script).find(([phrase]) => asked.includes(phrase))?.[1]
      if (call && request.purpose === 'chat') return { kind: 'tools', calls: [call] }
      return { kind: 'text', text: `Noted: ${asked.slice(0, 60)}` }
    },
  })

  beforeAll(async () => {
    driver = await writeLayersDriver(join(hosted.root, 'plugins'))
    await withStore(async (store) => {
      seeded.kamal = (await store.memories.add({ kind: 'fact', text: 'Staging deploys of this project go out with Kamal.', scope: 'workspace', workspace: workspace() })).id
      seeded.linter = (await store.memories.add({ kind: 'instruction', text: 'Run the linter before every commit.', scope: 'workspace', workspace: workspace() })).id
      await store.memories.add({ kind: 'preference', text: 'The user drinks green tea while coding; 用户喜欢喝绿茶。', scope: 'global' })
      seeded.stale = (await store.memories.add({ kind: 'fact', text: 'The office printer is on the third floor.', scope: 'workspace', workspace: workspace() })).id
      seeded.scene = (await store.scenes.add({ title: 'Release process', summary: 'How this project ships: staging first, then production.', scope: 'workspace', workspace: workspace(), memoryIds: [seeded.kamal!] })).id
    })
    await mkdir(workspace(), { recursive: true })
    await writeFile(join(workspace(), 'AGENTS.md'), '# Rules\n\n- Run `npm test` before every push.\n- 文档用简体中文写。\n')
    await writeFile(join(hosted.root, 'outside.md'), '- not in the workspace\n')
    }, 600_000)

  it('measures prompt-cache prefix reuse of both recall placements over one scripted multi-turn session each', async () => {
    script = { 'search memory': { name: 'memory_search', arguments: { query: 'linter commit' } } }
    const prompts = ['How do staging deploys go out?', 'Please search memory for the linter rule before every commit.', 'Which tea do I like? 我喜欢什么茶？']
    const steps: DriverStep[] = prompts.map((say) => ({ say }))
    const measured: Record<string, ReturnType<typeof prefixTotals> & { rows: ReturnType<typeof prefixReuse> }> = {}
    for (const placement of ['after-user', 'before-user'] as const) {
      const { chats } = await drive(`placement-${placement}`, steps, `- id: memory-recall\n  config:\n    recall:\n      placement: ${placement}\n`)
      // Turn 1, turn 2 (tool call, then its answer), turn 3.
      expect(chats).toHaveLength(4)
      const rows = prefixReuse(chats)
      measured[placement] = { ...prefixTotals(rows), rows }
      // Where the block sits in the request that answers turn 1: the human's words are
      // the last thing the model reads only when it goes before them.
      const messages = chats[0]!.body.messages
      const recallAt = messages.findIndex((message) => message.role === 'user' && contentText(message.content).startsWith(RECALL_FENCE))
      const humanAt = messages.findIndex((message) => message.role === 'user' && contentText(message.content) === prompts[0])
      expect(recallAt).toBeGreaterThan(0)
      expect(contentText(messages[recallAt]!.content)).toContain('Kamal')
      if (placement === 'before-user') expect(recallAt).toBe(humanAt - 1)
      else expect(recallAt).toBeGreaterThan(humanAt)
      expect(recallTextOf(chats[3]!)).toContain('green tea')
    }
    // The numbers behind the README's placement paragraph (printed for `npm test -- recall-model`).
    console.log(
      ['recall placement → prefix bytes shared with the previous request (request: shared / previous / size)']
        .concat(
          Object.entries(measured).map(
            ([placement, m]) =>
              `${placement}: reused ${m.reused} of ${m.sent} bytes sent after the first request (${((100 * m.reused) / m.sent).toFixed(1)} %), append-only steps ${m.appendOnlySteps}/${m.rows.length - 1}; ` +
              m.rows.map((row, index) => `#${index + 1} ${row.shared}/${row.previous}/${row.bytes}`).join(', '),
          ),
        )
        .join('\n'),
    )
    // Both placements only ever append: every later request starts with the whole previous one.
    for (const m of Object.values(measured)) expect(m.appendOnlySteps).toBe(m.rows.length - 1)
  })
  it('the scripted model calls every recall tool in the real host and reads the results; distillation writes L2 and L3; a layer snapshot lands through agent.inject; memory.log has the stages and no text', async () => {
    script = {
      'tool:search': { name: 'memory_search', arguments: { query: 'Kamal staging deploys' } },
      'tool:conversations': { name: 'conversation_search', arguments: { query: 'staging deploys', include_current_session: true } },
      'tool:scene': { name: 'memory_read_scene', arguments: { id: seeded.scene! } },
      'tool:read': { name: 'memory_read', arguments: { id: seeded.linter! } },
      'tool:feedback': { name: 'memory_feedback', arguments: { id: seeded.kamal!, rating: 'helpful' } },
      'tool:add': { name: 'memory_add', arguments: { text: 'The release train leaves on Thursdays.', kind: 'decision' } },
      'tool:delete': { name: 'memory_delete', arguments: { id: seeded.stale! } },
      'tool:import-rules': { name: 'memory_import', arguments: { path: 'AGENTS.md' } },
      'tool:import-outside': { name: 'memory_import', arguments: { path: '../../outside.md' } },
    }
    const phrases = Object.keys(script)
    const distillConfig = '- id: memory-distill\n  config:\n    l2:\n      minNewMemories: 1\n    l3:\n      interval: 1\n'
    const { chats, report } = await drive(
      'tools',
      [
        { say: 'How do staging deploys go out?' },
        ...phrases.map((phrase) => ({ say: `Please run ${phrase} now.` })),
        { say: 'I use the Zed editor for everything.' },
        { distill: true },
        { command: '/memory enable workspace' },
        { say: 'What do you know about this project and me?' },
      ],
      distillConfig,
    )
    const results = toolResultsByPhrase(chats, phrases)
    expect(Object.keys(results).sort()).toEqual([...phrases].sort())
    expect(results['tool:search']).toContain('<memory-search-results untrusted="true">')
    expect(results['tool:search']).toContain(`<memory id="${seeded.kamal}" kind="fact" scope="workspace"`)
    expect(results['tool:conversations']).toContain('How do staging deploys go out?')
    expect(results['tool:scene']).toContain('<title>Release process</title>')
    expect(results['tool:scene']).toContain('Staging deploys of this project go out with Kamal.')
    expect(results['tool:read']).toContain('Run the linter before every commit.')
    // Kamal was recalled into this session by turn 1, so the model may rate it.
    expect(results['tool:feedback']).toBe(`Recorded: memory ${seeded.kamal} rated helpful.`)
    expect(results['tool:add']).toMatch(/^Saved memory \S+ \(workspace\)\.$/)
    expect(results['tool:delete']).toBe(`Deleted memory ${seeded.stale}.`)
    expect(results['tool:import-rules']).toContain('Imported 2 memories from 1 file(s) (0 already stored, skipped).')
    expect(results['tool:import-rules']).toContain('Rules: 文档用简体中文写。')
    expect(results['tool:import-outside']).toContain('outside the workspace')

    const added = results['tool:add']!.split(' ')[2]!
    await withStore(async (store) => {
      expect((await store.memories.get(added))?.text).toBe('The release train leaves on Thursdays.')
      expect(await store.memories.get(seeded.stale!)).toBeUndefined()
      expect((await store.memories.get(seeded.kamal!))?.flags).toMatchObject({ feedback: expect.anything() })
      const imported = (await store.memories.list({ workspace: workspace() })).filter((memory) => memory.flags.source === 'import')
      expect(imported.map((memory) => memory.text).sort()).toEqual(['Rules: Run `npm test` before every push.', 'Rules: 文档用简体中文写。'])
      // Distillation of this session: L1 found the editor, L2 grouped it into a scene, L3 wrote the persona.
      const [zed] = (await store.memories.list({ scope: 'global' })).filter((memory) => memory.text.includes('Zed editor'))
      expect(zed).toBeDefined()
      const scenes = (await store.scenes.list({ scope: 'global' })).filter((scene) => scene.title === SCENE.title)
      expect(scenes).toHaveLength(1)
      expect(scenes[0]!.summary).toBe(SCENE.summary)
      expect(scenes[0]!.memoryIds).toContain(zed!.id)
      expect((await store.persona.get({ scope: 'global' }))?.text).toBe(PERSONA)
    })
    // The next turn's system prompt carries both.
    const final = chats.at(-1)!
    const system = final.body.messages.filter((message) => message.role === 'system').map((message) => contentText(message.content)).join('\n')
    expect(system).toContain('A developer who works in the Zed editor and deploys with Kamal.')
    expect(system).toContain(SCENE.title)

    // `/memory enable workspace` queued the snapshot with agent.inject; the next step carried it, and the log holds it once.
    expect(report.commands[0]!.result).toMatchObject({ kind: 'success', text: expect.stringMatching(/^Enabled the workspace layer/) })
    const snapshots = final.body.messages.map((message) => contentText(message.content)).filter((text) => text.startsWith('<memory-layer-index layer="workspace"'))
    expect(snapshots).toHaveLength(1)
    expect(snapshots[0]).toContain('Staging deploys of this project go out with Kamal.')
    expect(snapshots[0]).toContain('The release train leaves on Thursdays.')
    const logged = (await loggedUserMessages(join(hosted.home.dir, 'sessions'))).filter((message) => message.text.startsWith('<memory-layer-index'))
    expect(logged).toHaveLength(1)
    expect(logged[0]!.source).toEqual({ kind: 'plugin', plugin: 'memory-recall', form: 'catalog' })

    // memory.log: one line per stage, ids and numbers only.
    const log = await readFile(join(hosted.home.dir, 'memory', 'memory.log'), 'utf8')
    const lines = log.trimEnd().split('\n')
    for (const line of lines) expect(line).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z [\w-]+ [\w-]+( [\w-]+=\S+)*$/)
    expect(log).toMatch(/ capture stored session=tools role=user turn=\d+ truncated=false\n/)
    expect(log).toMatch(/ capture stored session=tools role=assistant /)
    expect(log).toMatch(/ recall hit session=tools memories=\d+ chars=\d+ strategy=keyword placement=before-user ms=[\d.]+\n/)
    expect(log).toMatch(/ recall miss session=tools reason=explicit-layers ms=[\d.]+\n/)
    expect(log).toMatch(/ tool memory_search session=tools ok=true ms=[\d.]+\n/)
    expect(log).toMatch(/ tool memory_import session=tools ok=false code=invalid-argument ms=[\d.]+\n/)
    expect(log).toMatch(/ distill batch session=tools reason=\w+ outcome=done messages=\d+ added=\d+ replaced=\d+ ms=[\d.]+\n/)
    expect(log).toMatch(/ distill scenes scope=global created=1 updated=0 deleted=0\n/)
    expect(log).toMatch(/ distill persona scope=global version=\d+\n/)
    for (const text of ['Kamal', 'staging', 'Zed', '绿茶', '文档', 'linter', 'release train', 'Thursdays']) expect(log).not.toContain(text)
  })
})

/** The text of every tool result the model got in the session, keyed by the phrase of the human message that asked for it. */
function toolResultsByPhrase(chats: readonly LoggedRequest[], phrases: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {}
  for (const request of chats) {
    const last = request.body.messages.at(-1)
    if (last?.role !== 'tool') continue
    const phrase = phrases.find((candidate) => lastUserText(request.body).includes(candidate))
    if (phrase) out[phrase] = contentText(last.content)
  }
  return out
}

function recallTextOf(request: LoggedRequest): string {
  return request.body.messages
    .map((message) => contentText(message.content))
    .filter((text) => text.startsWith(RECALL_FENCE))
    .join('\n')
}
