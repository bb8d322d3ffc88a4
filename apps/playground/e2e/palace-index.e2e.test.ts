import { execFile } from 'node:child_process'
import { mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { REPO_ROOT, type DshHome } from '../src/host.js'
import { contentText, requestText, startModelServer, type LoggedRequest, type ModelServer, type ScriptedReply } from '../src/model-server.js'
import { freshHome, tarballs, withHomeStore } from './helpers.js'
import { distillLayer, distillReply, type ScriptedFact } from './support/distill-model.js'
import { filesUnder, SMALL_WINDOW, toolResults, writeReadingFiles } from './support/palace-workspace.js'

const FACTS: ScriptedFact[] = [{ match: 'rollback window', kind: 'fact', text: 'The billing rollback window is 42 minutes.', scope: 'workspace' }]

/** `dsh-memory <args>` as a user runs it: a separate process on the data dir. */
function cli(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(REPO_ROOT, 'apps/cli/dist/bin.js'), ...args], { encoding: 'utf8', env: { ...process.env, DSH_MEMORY_DIR: '' } }, (error, stdout, stderr) =>
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
  })
}

describe('the palace index in the real DSH host (palace + capture + distill)', () => {
  let server: ModelServer
  let home: DshHome
  let root: string
  let cleanup: () => Promise<void>
  let chat: (request: LoggedRequest) => ScriptedReply = () => ({ kind: 'text', text: 'ok' })

  beforeAll(async () => {
    server = await startModelServer({
      responder: (request) => {
        if (distillLayer(request)) return distillReply(request, FACTS)
        if (request.purpose === 'title') return { kind: 'text', text: 'Palace index' }
        if (request.purpose === 'compaction') return { kind: 'text', text: '## Primary Request and Intent\n- audit the ledgers' }
        return chat(request)
      },
    })
    ;({ home, root, cleanup } = await freshHome('palace-index'))
    await home.createProfile('palace-index', tarballs(), ['@dsh-memory/store', '@dsh-memory/capture', '@dsh-memory/distill', '@dsh-memory/palace'])
  })

  afterAll(async () => {
    await server?.close()
    await cleanup?.()
  })

  it('archived turns never reach the distiller, in the run that archives them or at the next start, and status lists only the real workspace', async () => {
    const workspace = join(root, 'work', 'ledgers')
    writeReadingFiles(workspace, 'ledger', 12, (i, line) => `ledger ${i} line ${line}: 校验码 LEDGER-${i}-${line}-QX${(i * 977 + line * 131) % 10007} entry balanced`)
    let reads = 0
    let compacted = false
    chat = (request) => {
      if (request.body.messages.some((message) => contentText(message.content).startsWith('This is an automatically generated checkpoint'))) compacted = true
      if (!compacted && reads < 12) return { kind: 'tools', calls: [{ name: 'read', arguments: { file_path: join(workspace, `ledger-${reads++}.txt`) } }] }
      return { kind: 'text', text: 'Audit done.' }
    }
    const first = await home.run({ profile: 'palace-index', cwd: workspace, modelUrl: server.url, patch: SMALL_WINDOW, args: ['The rollback window is 42 minutes. Audit the ledgers one by one.'], timeoutMs: 120_000 })
    expect(first.stderr).not.toMatch(/Error:/)
    expect(first.code).toBe(0)
    // The compaction archived the ledger reads under an automatic memory name.
    const palaceFiles = filesUnder(join(workspace, 'memory-palace'))
    const volumes = palaceFiles.filter((file) => /\/\d{4}-\d{2}\/auto\/.*\.md$/.test(file))
    expect(volumes.length).toBeGreaterThan(0)
    expect(volumes.map((file) => readFileSync(join(workspace, 'memory-palace', file), 'utf8')).join('\n')).toContain('LEDGER-0-40-')

    // A second process starts: the distiller's start-up scan looks at everything in the store,
    // and the model searches the archive (rebuilding nothing by hand: the palace tables serve it).
    let searched = false
    chat = (request) => {
      if (!searched) {
        searched = true
        return { kind: 'tools', calls: [{ name: 'palace_search', arguments: { keyword: '"LEDGER-0-40-QX5240" 校验码', all: true } }] }
      }
      return { kind: 'text', text: 'Found it.' }
    }
    const before = server.requests.length
    const second = await home.run({ profile: 'palace-index', cwd: workspace, modelUrl: server.url, args: ['Where was ledger 0 line 40?'], timeoutMs: 120_000 })
    expect(second.code).toBe(0)
    const searchReply = server.requests.slice(before).flatMap(toolResults).find((text) => text.startsWith('palace_search'))
    expect(searchReply).toMatch(/1 matching turn/)
    expect(searchReply).toContain('LEDGER-0-40-QX5240')

    // The distiller ran (the fact the user said was extracted) and no L1 request carried archived text.
    const l1 = server.requests.filter((request) => distillLayer(request) === 'l1')
    expect(l1.length).toBeGreaterThan(0)
    for (const request of l1) {
      const text = requestText(request.body)
      expect(text).not.toContain('LEDGER-')
      expect(text).not.toContain('memory-palace:')
    }
    await withHomeStore(home, async (store) => {
      const conversations = await store.conversations.list()
      expect(new Set(conversations.map((conversation) => conversation.workspace))).toEqual(new Set([workspace]))
      const memories = await store.memories.list({ limit: 100 })
      expect(memories.map((memory) => memory.text)).toContain('The billing rollback window is 42 minutes.')
      expect(memories.filter((memory) => (memory.workspace ?? '').includes('memory-palace') || memory.text.includes('LEDGER'))).toEqual([])
    })

    // `dsh-memory status` on that data dir: one workspace, the real one.
    const status = await cli(['status', '--data-dir', join(home.dir, 'memory'), '--json'])
    expect(status.stderr).toBe('')
    expect(status.code).toBe(0)
    const report = JSON.parse(status.stdout) as { counts: { workspaces: { workspace: string }[] } }
    expect(report.counts.workspaces.map((entry) => entry.workspace)).toEqual([workspace])
    const text = await cli(['status', '--data-dir', join(home.dir, 'memory')])
    expect(text.stdout).toContain(`\nworkspaces\n  ${workspace}  `)
    expect(text.stdout).not.toContain('memory-palace')
  })

  it('runs every palace_* tool through the model, each with its effect', async () => {
    const workspace = join(root, 'work', 'tour')
    mkdirSync(workspace, { recursive: true })
    const prompt = 'Tour kickoff: the design freeze is on 3 March, 设计冻结在三月三日。'
    const replies: Record<string, string> = {}
    let firstTurn = 0
    // Each step: the call to make, given the replies so far (keyed by step name).
    const steps: { name: string; call: () => { name: string; arguments: Record<string, unknown> } }[] = [
      { name: 'config-set', call: () => ({ name: 'palace_config', arguments: { action: 'set', namespace: 'Tool Tour' } }) },
      { name: 'turns', call: () => ({ name: 'palace_turns', arguments: { all: true } }) },
      {
        name: 'archive',
        call: () => {
          firstTurn = Number(/First unarchived turn: (\d+)/.exec(replies.turns ?? '')?.[1] ?? Number.NaN)
          return { name: 'palace_archive', arguments: { segments: [{ category: 'design', fromTurn: firstTurn, toTurn: firstTurn }], summary: 'Kickoff: the design freeze is on 3 March.' } }
        },
      },
      { name: 'summary', call: () => ({ name: 'palace_summary', arguments: {} }) },
      { name: 'search', call: () => ({ name: 'palace_search', arguments: { keyword: 'design freeze 设计冻结' } }) },
      { name: 'typo', call: () => ({ name: 'palace_search', arguments: { keyword: 'dezign freez' } }) },
      { name: 'read', call: () => ({ name: 'palace_read', arguments: { fromTurn: firstTurn, toTurn: firstTurn } }) },
      { name: 'config-get', call: () => ({ name: 'palace_config', arguments: {} }) },
    ]
    let step = 0
    chat = (request) => {
      const results = toolResults(request)
      if (step > 0 && results.length > 0) replies[steps[step - 1]!.name] ??= results[results.length - 1]!
      if (step >= steps.length) return { kind: 'text', text: 'Tour done.' }
      return { kind: 'tools', calls: [steps[step++]!.call()] }
    }
    const result = await home.run({ profile: 'palace-index', cwd: workspace, modelUrl: server.url, args: [prompt], timeoutMs: 120_000 })
    expect(result.stderr).not.toMatch(/Error:/)
    expect(result.code).toBe(0)
    expect(Object.keys(replies)).toEqual(steps.map((entry) => entry.name))

    // palace_config set: the session is named in the workspace's map.
    expect(replies['config-set']).toContain('Tool Tour')
    const sessions = JSON.parse(readFileSync(join(workspace, 'memory-palace/.namespaces.json'), 'utf8')).sessions as Record<string, string>
    expect(Object.values(sessions)).toEqual(['Tool Tour'])
    // palace_turns: lists the turns and the first unarchived one (the prompt).
    expect(replies.turns).toMatch(/First unarchived turn: \d+/)
    expect(replies.turns).toContain('Tour kickoff')
    // palace_archive: the prompt's turn is a volume on disk, with the month summary.
    expect(replies.archive).toMatch(/^Archived 1 turns? into memory "Tool Tour" \(\d{4}-\d{2}\)/)
    const files = filesUnder(join(workspace, 'memory-palace', 'Tool Tour'))
    const volume = files.find((file) => /^\d{4}-\d{2}\/design\/assistant-design-\d{8}-\d{6}\.md$/.test(file))
    expect(volume).toBeDefined()
    expect(readFileSync(join(workspace, 'memory-palace', 'Tool Tour', volume!), 'utf8')).toContain(prompt)
    // palace_summary: the month with the summary just written.
    expect(replies.summary).toContain('Kickoff: the design freeze is on 3 March.')
    // palace_search: the archived turn, by English and Chinese keywords; a misspelling gets the right words back.
    expect(replies.search).toMatch(/: 1 matching turn/)
    expect(replies.search).toContain(`turn ${firstTurn} · user · design`)
    expect(replies.typo).toContain('No archived turn matched.')
    expect(replies.typo).toMatch(/Did you mean: .*design.*freeze|Did you mean: .*freeze.*design/)
    expect(replies.typo).toContain(`turn ${firstTurn}`)
    // palace_read: the turn verbatim.
    expect(replies.read).toContain(prompt)
    // palace_config get: the effective settings of the named memory.
    expect(replies['config-get']).toContain('Memory name: "Tool Tour"')
    expect(replies['config-get']).toMatch(/Effective: \{.*"recallStrength"/)
  })
})
