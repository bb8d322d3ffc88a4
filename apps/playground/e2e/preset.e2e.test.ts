import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { openCueRepository } from '@dsh-memory/cue-bank'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DshRunResult } from '../src/host.js'
import { contentText, lastUserText, startModelServer, type LoggedRequest, type ModelServer } from '../src/model-server.js'
import { distillLayer, distillReply, type ScriptedFact } from './support/distill-model.js'
import { expectBootRejects, freshHome, tarballs, useHostProfile, withHomeStore } from './helpers.js'
import { activeRows, allRows, probeOverlay, readProbe, writeProbePlugin } from './support/preset-probe.js'
import { RECALL_FENCE, recallTexts, systemText } from './support/recall-requests.js'

/** What the scripted extractor "finds" in session A. */
const FACTS: ScriptedFact[] = [
  { match: 'heron', kind: 'fact', text: 'The staging server of the shop API is called heron.', scope: 'workspace' },
  { match: 'Kamal', kind: 'fact', text: 'The shop API staging server is deployed with Kamal.', scope: 'workspace' },
]
const PROMPT_A = 'Our staging server for the shop API is called heron and we deploy it with Kamal.'
const QUESTION = 'Remind me: what is the shop API staging server called, and how is it deployed?'
const CUE_BLOCK = '<memory-cues source="cue-bank">'
const PRESET_CHILDREN: [id: string, name: string][] = [
  ['memory-store', '@dsh-memory/store/plugin'],
  ['memory-preset-capture', '@dsh-memory/capture/plugin'],
  ['memory-preset-distill', '@dsh-memory/distill/plugin'],
  ['memory-preset-recall', '@dsh-memory/recall/plugin'],
  ['memory-preset-cue-bank', '@dsh-memory/cue-bank/plugin'],
  ['memory-preset-palace', '@dsh-memory/palace/plugin'],
  ['memory-preset-tree', '@dsh-memory/tree/plugin'],
]

/** `[id, name]` of every row of a `--dump-config` output, in order (group children included). */
function dumpedRows(dump: string): [string, string][] {
  return [...dump.matchAll(/^\s*- id: (\S+)\n\s*name: '?([^'\n]+)'?$/gm)].map((match) => [match[1]!, match[2]!])
}

/** The YAML block of one row in a `--dump-config` output (up to the next row). */
function dumpedBlock(dump: string, id: string): string {
  const start = dump.indexOf(`- id: ${id}\n`)
  if (start < 0) return ''
  const next = dump.indexOf('- id: ', start + 6)
  return dump.slice(start, next < 0 ? undefined : next)
}

const memoryTags = (text: string) => text.split('<memory id=').length - 1
const chatRequests = (requests: LoggedRequest[]) => requests.filter((request) => request.purpose === 'chat' && !distillLayer(request))
const toolNames = (request: LoggedRequest) => (request.body.tools ?? []).map((tool) => tool.function.name)

function scriptedModel(request: LoggedRequest) {
  return distillReply(request, FACTS) ?? { kind: 'text' as const, text: `Noted: ${lastUserText(request.body).slice(0, 60)}` }
}

function expectClean(result: DshRunResult): void {
  expect(result.stderr).not.toMatch(/Error|error:/)
  expect(result.code).toBe(0)
}

describe('the preset in the real DSH host', () => {

  // One package: `dsh plugin --profile preset add @dsh-memory/preset` brings everything.
  const hosted = useHostProfile('preset', { packages: ['@dsh-memory/preset'], responder: scriptedModel })

  it('--dump-config shows one group row holding the store row and every plugin row', async () => {
    const dump = await hosted.home.run({ profile: 'preset', cwd: join(hosted.root, 'work', 'dump'), args: ['--dump-config'] })
    expect(dump.code).toBe(0)
    const rows = dumpedRows(dump.stdout)
    const memoryRows = rows.filter(([id]) => id.startsWith('memory-'))
    expect(memoryRows).toEqual([['memory-preset', 'cordis:group'], ...PRESET_CHILDREN])
    expect(dump.stdout).toContain('# == @dsh-memory/preset')
    expect(dumpedBlock(dump.stdout, 'memory-preset')).toMatch(/group: true/)
    expect(dumpedBlock(dump.stdout, 'memory-preset-recall')).toMatch(/maxResults: 5\n/)
  })

  it('a run exercises every plugin: captured, distilled, recalled, the cue bank and the tree in the next session, palace tools offered', async () => {
    const project = join(hosted.root, 'work', 'shop-api')
    const beforeA = hosted.server.requests.length
    const a = await hosted.home.run({ profile: 'preset', cwd: project, modelUrl: hosted.server.url, args: [PROMPT_A] })
    expectClean(a)
    const [chatA] = chatRequests(hosted.server.requests.slice(beforeA))
    // Every plugin's tools are in the request: recall, cue bank, palace, tree.
    expect(toolNames(chatA!)).toEqual(
      expect.arrayContaining([
        'memory_search',
        'memory_add',
        'conversation_search',
        'cue_bank_open',
        'palace_archive',
        'palace_search',
        'palace_read',
        'palace_config',
        'mt_status',
        'mt_branch',
        'mt_merge',
      ]),
    )
    // Distillation ran through the host's model during the run.
    expect(hosted.server.requests.slice(beforeA).some((request) => distillLayer(request) === 'l1')).toBe(true)

    await withHomeStore(hosted.home, async (store) => {
      // capture: the prompt and the reply, once.
      const messages = await store.messages.list({ workspace: project })
      expect(messages.map((message) => [message.role, message.text])).toEqual([
        ['user', PROMPT_A],
        ['assistant', `Noted: ${PROMPT_A.slice(0, 60)}`],
      ])
      // distill: both facts as L1 memories of the workspace.
      const memories = await store.memories.list({ workspace: project, includeGlobal: false })
      expect(memories.map((memory) => memory.text).sort()).toEqual(FACTS.map((fact) => fact.text).sort())
      // cue bank: the session's topic cues were written.
      const repository = await openCueRepository(store)
      try {
        const cues = repository.listCues(undefined)
        expect(cues.map((cue) => cue.level).sort()).toEqual(['conversation', 'task'])
        expect(cues.every((cue) => cue.partition === `workspace:${project}`)).toBe(true)
      } finally {
        repository.close()
      }
    })

    const beforeB = hosted.server.requests.length
    const b = await hosted.home.run({ profile: 'preset', cwd: project, modelUrl: hosted.server.url, args: [QUESTION] })
    expectClean(b)
    const [chatB] = chatRequests(hosted.server.requests.slice(beforeB))
    // recall: session B's request carries both memories in the fenced block.
    const recalled = recallTexts(chatB!)
    expect(recalled).toHaveLength(1)
    expect(recalled[0]!.startsWith(RECALL_FENCE)).toBe(true)
    expect(memoryTags(recalled[0]!)).toBe(2)
    for (const fact of FACTS) expect(recalled[0]).toContain(fact.text)
    // tree: the project mainline section with session A's turn.
    const system = systemText(chatB!)
    expect(system).toContain('<memory-tree-mainline project="shop-api"')
    expect(system).toContain(PROMPT_A)
    // cue bank: A's topic came back as a cue block naming session A.
    const texts = chatB!.body.messages.map((message) => contentText(message.content))
    expect(texts.filter((text) => text.includes(CUE_BLOCK))).toHaveLength(1)
  })

  it('a child is configured by id in the profile’s cordis.patch.yml: recall.maxResults 1 recalls one memory', async () => {
    await writeFile(join(hosted.profileDir, 'cordis.patch.yml'), '- id: memory-preset-recall\n  config:\n    recall:\n      maxResults: 1\n')
    const dump = await hosted.home.run({ profile: 'preset', cwd: join(hosted.root, 'work', 'dump'), args: ['--dump-config'] })
    expect(dump.code).toBe(0)
    const block = dumpedBlock(dump.stdout, 'memory-preset-recall')
    expect(block).toMatch(/maxResults: 1\n/)
    expect(block).not.toMatch(/maxResults: 5/)
    // Only the overridden child changed.
    expect(dumpedRows(dump.stdout).filter(([id]) => id.startsWith('memory-'))).toEqual([['memory-preset', 'cordis:group'], ...PRESET_CHILDREN])

    const before = hosted.server.requests.length
    const c = await hosted.home.run({ profile: 'preset', cwd: join(hosted.root, 'work', 'shop-api'), modelUrl: hosted.server.url, args: [QUESTION] })
    expectClean(c)
    const [chat] = chatRequests(hosted.server.requests.slice(before))
    const recalled = recallTexts(chat!)
    expect(recalled).toHaveLength(1)
    expect(memoryTags(recalled[0]!)).toBe(1)
  })

  it('a broken child config fails boot, naming the row and the field', async () => {
    await expectBootRejects(hosted, '- id: memory-preset-recall\n  config:\n    recall:\n      maxResults: lots\n', [
      'failed to apply loader entry memory-preset-recall (@dsh-memory/recall/plugin): invalid config',
      '$.recall.maxResults expected number but got lots',
    ])
  })
})

describe('the preset plus a standalone plugin, and two standalone plugins, in the real DSH host', () => {
  let server: ModelServer
  const cleanups: (() => Promise<void>)[] = []

  beforeAll(async () => {
    server = await startModelServer({ responder: scriptedModel })
  })

  afterAll(async () => {
    await server?.close()
    for (const cleanup of cleanups) await cleanup()
  })

  /**
   * A fresh home with one profile of `packages` (its `--dump-config` must succeed), and one turn
   * in `work/<folder>` under the preset probe, whose report it returns with the run.
   */
  async function probedProfile(label: string, profile: string, packages: string[]) {
    const { home, root, cleanup } = await freshHome(label)
    cleanups.push(cleanup)
    const profileDir = await home.createProfile(profile, tarballs(), packages)
    const dump = await home.run({ profile, cwd: join(root, 'work', 'dump'), args: ['--dump-config'] })
    expect(dump.code).toBe(0)
    const turn = async (folder: string, prompt: string) => {
      const probe = await writeProbePlugin(profileDir)
      const out = join(root, 'probe.jsonl')
      const workspace = join(root, 'work', folder)
      expectClean(await home.run({ profile, cwd: workspace, modelUrl: server.url, patch: probeOverlay(probe, out), args: [prompt] }))
      return { workspace, report: readProbe(out) }
    }
    return { home, dump, turn }
  }

  it('preset + @dsh-memory/capture: one store, one capture — each message stored once, one memory-capture/captured each', async () => {
    const { home, dump, turn } = await probedProfile('preset-capture', 'both', ['@dsh-memory/preset', '@dsh-memory/capture'])
    // Both bundles' rows are configured …
    const ids = dumpedRows(dump.stdout).map(([id]) => id)
    expect(ids).toEqual(expect.arrayContaining(['memory-capture-store', 'memory-capture', 'memory-store', 'memory-preset-capture']))

    const { workspace, report } = await turn('shop-api', '我们的 staging 服务器叫 heron。')
    // … but each plugin runs from one row, and the store is opened once.
    expect(allRows(report)['memory-store']).toEqual(['memory-capture-store', 'memory-store'])
    expect(activeRows(report)['memory-store']).toHaveLength(1)
    expect(allRows(report)['memory-capture']).toEqual(['memory-capture', 'memory-preset-capture'])
    expect(activeRows(report)['memory-capture']).toHaveLength(1)
    for (const plugin of ['memory-distill', 'memory-recall', 'memory-cue-bank', 'memory-palace', 'memory-tree']) {
      expect(activeRows(report)[plugin], plugin).toEqual([`memory-preset-${plugin.slice('memory-'.length)}`])
    }
    expect(report.dataDir).toBe(join(home.dir, 'memory'))
    // The deprecated service keys hold the same instances as the new ones.
    expect(report.aliases).toEqual({ cueBank: true, distill: true })

    await withHomeStore(home, async (store) => {
      const messages = await store.messages.list({ workspace })
      expect(messages.map((message) => message.role)).toEqual(['user', 'assistant'])
      expect(messages[0]!.text).toBe('我们的 staging 服务器叫 heron。')
      // One memory-capture/captured per stored message, no more; the deprecated name the same.
      expect(report.captured.map((event) => event.messageId).sort()).toEqual(messages.map((message) => message.id).sort())
      expect(report.capturedDeprecated).toEqual(report.captured)
    })
  })

  it('@dsh-memory/capture + @dsh-memory/cue-bank alone: two store rows, one mounted; both plugins work', async () => {
    const { home, dump, turn } = await probedProfile('capture-cue-bank', 'pair', ['@dsh-memory/capture', '@dsh-memory/cue-bank'])
    expect(dumpedRows(dump.stdout).filter(([id]) => id.startsWith('memory-'))).toEqual([
      ['memory-capture-store', '@dsh-memory/store/plugin'],
      ['memory-capture', '@dsh-memory/capture/plugin'],
      ['memory-cue-bank-store', '@dsh-memory/store/plugin'],
      ['memory-cue-bank', '@dsh-memory/cue-bank/plugin'],
    ])

    const prompt = '我们决定把 PostgreSQL 主数据库迁移到 16 版本，所有索引都要重建'
    const { workspace, report } = await turn('alpha', prompt)
    expect(allRows(report)['memory-store']).toEqual(['memory-capture-store', 'memory-cue-bank-store'])
    expect(activeRows(report)['memory-store']).toHaveLength(1)
    expect(activeRows(report)['memory-capture']).toEqual(['memory-capture'])
    expect(activeRows(report)['memory-cue-bank']).toEqual(['memory-cue-bank'])

    await withHomeStore(home, async (store) => {
      // capture works …
      expect((await store.messages.list({ workspace })).map((message) => message.text)).toEqual([prompt, `Noted: ${prompt.slice(0, 60)}`])
      expect(report.captured).toHaveLength(2)
      // … and so does the cue bank, in the same database.
      const repository = await openCueRepository(store)
      try {
        const cues = repository.listCues(undefined)
        expect(cues.map((cue) => cue.level).sort()).toEqual(['conversation', 'task'])
        expect(cues[0]!.keywords.map((keyword) => keyword.word)).toEqual(expect.arrayContaining(['postgresql', '主数据库']))
      } finally {
        repository.close()
      }
    })
  })
})
