import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { openMemoryStore } from '@dsh-memory/store'
import { describe, expect, it } from 'vitest'
import { contentText, type ChatRequestBody, type LoggedRequest } from '../src/model-server.js'
import { expectBootRejects, useHostProfile } from './helpers.js'
import { filesUnder, SMALL_WINDOW, toolResults, writeReadingFiles } from './support/palace-workspace.js'

const MEMORY = 'Project Alpha'
const PROMPT = 'Remember this for later: the launch codename is 蓝鲸-Orion and the rollback window is 42 minutes. Then read the project files one by one.'
/** Every volume file of a memory, concatenated (summaries excluded: they are not turns). */
function archivedText(workspace: string, memory: string): string {
  const root = join(workspace, 'memory-palace', memory)
  const out: string[] = []
  const walk = (dir: string): void => {
    if (!existsSync(dir)) return
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (entry.name.endsWith('.md') && entry.name !== '_summary.md') out.push(readFileSync(path, 'utf8'))
    }
  }
  walk(root)
  return out.join('\n')
}

/** What the summarizer was asked to condense, checked against the disk at that moment. */
interface DiskCheck {
  readonly replayed: number
  readonly missing: string[]
  readonly promptOnDisk: boolean
  /** Replayed tool results the host had pruned before summarising. */
  readonly pruned: number
  /** A line the pruner cut from the first file read is still archived. */
  readonly fullFileOnDisk: boolean
}

const PRUNE_MARK = /\[\.\.\. tool result middle pruned \.\.\.\]/

function checkDisk(body: ChatRequestBody, workspace: string, memory = MEMORY, prompt = PROMPT, firstLine = 'notes 0 line 40:'): DiskCheck {
  const disk = archivedText(workspace, memory)
  // The last message is the compaction instruction; the rest replay what is being replaced.
  const replayed = body.messages.slice(0, -1).filter((message) => message.role !== 'system')
  const missing: string[] = []
  let pruned = 0
  for (const message of replayed) {
    const text = contentText(message.content)
    // An earlier checkpoint is a summary, not a turn: it is not archived verbatim.
    if (text.startsWith('This is an automatically generated checkpoint')) continue
    // The host's tool-result pruner may have cut the middle out of a long result before the
    // summary request; the archive holds the original, so each kept piece must be on disk.
    const pieces = text.split(PRUNE_MARK).map((piece) => piece.trim()).filter((piece) => piece.length > 0)
    if (pieces.length > 1) pruned++
    for (const piece of pieces) if (!disk.includes(piece)) missing.push(`${message.role}: ${piece.slice(0, 80)}`)
    for (const call of (message.tool_calls ?? []) as { id: string; function: { name: string } }[]) {
      if (!disk.includes(`### Tool call · ${call.function.name} (${call.id})`)) missing.push(`tool call ${call.id}`)
    }
  }
  return { replayed: replayed.length, missing, pruned, promptOnDisk: disk.includes(prompt), fullFileOnDisk: disk.includes(firstLine) }
}

/** What the palace said in a request: its system-prompt section and its notes. */
function palaceTexts(request: LoggedRequest): string[] {
  const texts = request.body.messages.map((message) => contentText(message.content))
  const section = texts.flatMap((text) => /## Memory palace\n[\s\S]*?(?=\n## |$)/.exec(text)?.[0] ?? [])
  return [...section, ...texts.filter((text) => text.startsWith('[memory palace]'))]
}

describe('memory palace in the real DSH host', () => {
  // Installed the way a user installs: `dsh plugin --profile palace add <tarballs>`.
  const hosted = useHostProfile('palace', { packages: ['@dsh-memory/store', '@dsh-memory/palace'] })

  it('archives the turns a compaction drops before its summary request, and palace_search finds them afterwards', async () => {
    const workspace = join(hosted.root, 'work', 'alpha')
    writeReadingFiles(workspace, 'notes', 12, (i, line) => `notes ${i} line ${line}: ${'status report and follow-ups '.repeat(3)}`)
    const checks: DiskCheck[] = []
    let named = false
    let reads = 0
    let searched = false
    hosted.server.setResponder((request) => {
        if (request.purpose === 'title') return { kind: 'text', text: 'Palace e2e' }
        if (request.purpose === 'compaction') {
          // The summarizer request has arrived: what it is about to condense must be on disk now.
          checks.push(checkDisk(request.body, workspace))
          return { kind: 'text', text: '## Primary Request and Intent\n- read the project files\n\n## Critical Context\n- (see archive)' }
        }
        if (toolResults(request).some((text) => text.startsWith('palace_search'))) return { kind: 'text', text: 'Recalled the launch codename from the memory palace.' }
        if (!named) {
          named = true
          return { kind: 'tools', calls: [{ name: 'palace_config', arguments: { action: 'set', namespace: MEMORY } }] }
        }
        if (checks.length === 0 && reads < 12) {
          return { kind: 'tools', calls: [{ name: 'read', arguments: { file_path: join(workspace, `notes-${reads++}.txt`) } }] }
        }
        if (!searched) {
          searched = true
          return { kind: 'tools', calls: [{ name: 'palace_search', arguments: { keyword: '"launch codename" 蓝鲸' } }] }
        }
        return { kind: 'text', text: 'done' }
    })

    const result = await hosted.home.run({ profile: 'palace', cwd: workspace, modelUrl: hosted.server.url, patch: SMALL_WINDOW, args: [PROMPT], timeoutMs: 120_000 })
    expect(result.stderr).not.toMatch(/Error:/)
    expect(result.code).toBe(0)

    // The host compacted, and at the moment its summary request arrived every replayed turn
    // (the human prompt included) was already archived in the workspace.
    expect(checks.length).toBeGreaterThanOrEqual(1)
    expect(checks[0]!.replayed).toBeGreaterThan(2)
    expect(checks[0]!.promptOnDisk).toBe(true)
    expect(checks.map((check) => check.missing)).toEqual(checks.map(() => []))
    // What the host had already pruned from context is still archived in full.
    expect(checks[0]!.fullFileOnDisk).toBe(true)

    // The model searched after the compaction, and the tool result in the next request found the phrase.
    const searchReply = hosted.server.requests
      .filter((request) => request.purpose === 'chat')
      .flatMap(toolResults)
      .find((text) => text.startsWith('palace_search'))
    expect(searchReply).toBeDefined()
    expect(searchReply).toMatch(/^palace_search "\\"launch codename\\" 蓝鲸": 1 matching turn/)
    expect(searchReply).toMatch(/1\. turn \d+ · user · auto · 1 hit/)
    expect(searchReply).toContain('蓝鲸-Orion')
    expect(searchReply).toContain(`${MEMORY}/2026-`)
    // The prompt itself was no longer in context when the model searched: compaction dropped it.
    const searchRequest = hosted.server.requests.find((request) => toolResults(request).some((text) => text.startsWith('palace_search')))!
    expect(searchRequest.body.messages.filter((message) => message.role === 'user').map((message) => contentText(message.content))).not.toContain(PROMPT)
    // One guidance note after the compaction pointed at the summary to read.
    const guidance = searchRequest.body.messages.map((message) => contentText(message.content)).filter((text) => text.startsWith('[memory palace] Earlier turns were compacted'))
    expect(guidance).toHaveLength(1)
    expect(guidance[0]).toMatch(/palace_summary\(month="\d{4}-\d{2}"\)/)

    // The files are laid out as the reference describes.
    const files = filesUnder(join(workspace, 'memory-palace'))
    expect(files).toContain('.namespaces.json')
    expect(files).toContain(`${MEMORY}/config.json`)
    expect(files).toContain(`${MEMORY}/.state.json`)
    expect(files).toContain(`${MEMORY}/index.jsonl`)
    expect(files.some((file) => new RegExp(`^${MEMORY}/\\d{4}-\\d{2}/_summary\\.md$`).test(file))).toBe(true)
    expect(files.some((file) => new RegExp(`^${MEMORY}/\\d{4}-\\d{2}/auto/assistant-auto-\\d{8}-\\d{6}\\.md$`).test(file))).toBe(true)
    expect(files.filter((file) => file.includes('.palace-tmp-') || file.endsWith('.journal.json'))).toEqual([])
    const state = JSON.parse(readFileSync(join(workspace, 'memory-palace', MEMORY, '.state.json'), 'utf8'))
    expect(state.ranges).toHaveLength(1)
    expect(state.namespace).toBe(MEMORY)
    const sessions = JSON.parse(readFileSync(join(workspace, 'memory-palace/.namespaces.json'), 'utf8')).sessions as Record<string, string>
    expect(Object.entries(sessions)).toEqual([[state.sessionId, MEMORY]])

    // The archive is indexed in the palace's own tables, never as an L0 conversation.
    const store = openMemoryStore({ path: join(hosted.home.dir, 'memory', 'memory.db'), readonly: true })
    try {
      expect(await store.conversations.list()).toEqual([])
      expect(await store.search.messages('蓝鲸')).toEqual([])
      expect((await store.meta.migrations()).map((entry) => entry.owner)).toContain('palace')
    } finally {
      await store.close()
    }
  })

  it('a headless run that never names its session loses nothing: the compacted tool output is archived under an automatic name and indexed', async () => {
    // A Chinese folder name: the automatic name cannot come from it, so it comes from the session.
    const workspace = join(hosted.root, 'work', '账本')
    const prompt = 'Audit the ledgers one by one and report the checksums.'
    writeReadingFiles(workspace, 'ledger', 12, (i, line) => `ledger ${i} line ${line}: 校验码 LEDGER-${i}-${line}-QX${(i * 977 + line * 131) % 10007} ${'entry balanced '.repeat(3)}`)
    const checks: DiskCheck[] = []
    const memories: string[] = []
    let reads = 0
    let searched = false
    hosted.server.setResponder((request) => {
      if (request.purpose === 'title') return { kind: 'text', text: 'Ledger audit' }
      if (request.purpose === 'compaction') {
        // The archive is written before this request is answered: read its name from the map.
        const sessions = JSON.parse(readFileSync(join(workspace, 'memory-palace/.namespaces.json'), 'utf8')).sessions as Record<string, string>
        const memory = Object.values(sessions)[0]!
        memories.push(memory)
        checks.push(checkDisk(request.body, workspace, memory, prompt, 'ledger 0 line 40:'))
        return { kind: 'text', text: '## Primary Request and Intent\n- audit the ledgers' }
      }
      if (toolResults(request).some((text) => text.startsWith('palace_search'))) return { kind: 'text', text: 'Found the first ledger in the memory palace.' }
      if (checks.length === 0 && reads < 12) return { kind: 'tools', calls: [{ name: 'read', arguments: { file_path: join(workspace, `ledger-${reads++}.txt`) } }] }
      if (!searched) {
        searched = true
        return { kind: 'tools', calls: [{ name: 'palace_search', arguments: { keyword: '"LEDGER-0-40-QX5240" 校验码' } }] }
      }
      return { kind: 'text', text: 'done' }
    })
    const before = hosted.server.requests.length
    const result = await hosted.home.run({ profile: 'palace', cwd: workspace, modelUrl: hosted.server.url, patch: SMALL_WINDOW, args: [prompt], timeoutMs: 120_000 })
    expect(result.stderr).not.toMatch(/Error:/)
    expect(result.code).toBe(0)
    const requests = hosted.server.requests.slice(before)

    // The host compacted; by the time its summary request arrived, every replayed turn, the
    // whole tool results included, was on disk under one automatic name.
    expect(checks.length).toBeGreaterThanOrEqual(1)
    expect(checks[0]!.replayed).toBeGreaterThan(2)
    expect(checks.map((check) => check.missing)).toEqual(checks.map(() => []))
    expect(checks[0]!.promptOnDisk).toBe(true)
    expect(checks[0]!.fullFileOnDisk).toBe(true)
    const memory = memories[0]!
    expect(memory).toMatch(/^session-[0-9a-f]{8}$/)
    expect(new Set(memories)).toEqual(new Set([memory]))
    const sessions = JSON.parse(readFileSync(join(workspace, 'memory-palace/.namespaces.json'), 'utf8')).sessions as Record<string, string>
    const [sessionId] = Object.keys(sessions)
    expect(sessions).toEqual({ [sessionId!]: memory })
    expect(JSON.parse(readFileSync(join(workspace, 'memory-palace', memory, 'config.json'), 'utf8'))).toMatchObject({ automatic: true, sessionId })
    const disk = archivedText(workspace, memory)
    for (const line of [0, 40, 79]) expect(disk).toContain(`ledger 0 line ${line}: 校验码 LEDGER-0-${line}-`)

    // The system prompt never claimed an archive before there was one, and never asked for a user.
    const system = (request: LoggedRequest): string => contentText(request.body.messages.find((message) => message.role === 'system')?.content)
    const chats = requests.filter((request) => request.purpose === 'chat')
    const firstCompaction = requests.findIndex((request) => request.purpose === 'compaction')
    const beforeCompaction = chats.filter((request) => request.index < requests[firstCompaction]!.index)
    expect(beforeCompaction.length).toBeGreaterThan(0)
    for (const request of beforeCompaction) {
      expect(system(request)).toContain('Nothing of this session is archived yet')
      expect(system(request)).not.toContain('Earlier turns of this session are archived')
    }
    for (const request of chats) expect(palaceTexts(request).join('\n')).not.toMatch(/ask the user/i)
    expect(system(chats[chats.length - 1]!)).toContain('Earlier turns of this session are archived verbatim')

    // The model found the dropped tool output with palace_search after the compaction.
    const searchReply = chats.flatMap(toolResults).find((text) => text.startsWith('palace_search'))
    expect(searchReply).toMatch(/1 matching turn/)
    expect(searchReply).toContain('LEDGER-0-40-QX5240')
    expect(searchReply).toContain(`${memory}/2026-`)

    // Nothing of the archive in L0: the store holds conversations only.
    const store = openMemoryStore({ path: join(hosted.home.dir, 'memory', 'memory.db'), readonly: true })
    try {
      expect(await store.conversations.list()).toEqual([])
      expect(await store.search.messages('LEDGER-0-40-QX5240')).toEqual([])
    } finally {
      await store.close()
    }
  })

  it('steers the model to archive when both gates hold, archives its segments, compacts them, and reads them back', async () => {
    const workspace = join(hosted.root, 'work', 'beta')
    mkdirSync(workspace, { recursive: true })
    for (let i = 0; i < 12; i++) {
      writeFileSync(join(workspace, `notes-${i}.txt`), Array.from({ length: 40 }, (_, line) => `beta ${i} line ${line}: ${'design review notes '.repeat(3)}`).join('\n'))
    }
    let named = false
    let reads = 0
    let steer: string | undefined
    let listed: string | undefined
    let archived: string | undefined
    let compactions = 0
    let readBack: string | undefined
    let first = 0
    hosted.server.setResponder((request) => {
      if (request.purpose === 'title') return { kind: 'text', text: 'Palace steering' }
      if (request.purpose === 'compaction') {
        compactions++
        return { kind: 'text', text: '## Primary Request and Intent\n- read the beta notes' }
      }
      const results = toolResults(request)
      steer ??= request.body.messages.map((message) => contentText(message.content)).find((text) => text.startsWith('[memory palace] Context is at'))
      const last = results[results.length - 1] ?? ''
      if (last.startsWith('<!-- Beta Notes/')) {
        readBack = last
        return { kind: 'text', text: 'Read the archived prompt back.' }
      }
      if (!named) {
        named = true
        return { kind: 'tools', calls: [{ name: 'palace_config', arguments: { action: 'set', namespace: 'Beta Notes' } }] }
      }
      if (steer && !listed) {
        listed = 'pending'
        return { kind: 'tools', calls: [{ name: 'palace_turns', arguments: {} }] }
      }
      if (listed === 'pending') {
        listed = last
        const match = /Archivable now: \d+ turns \((\d+)–(\d+)\)/.exec(last)
        if (!match) return { kind: 'text', text: `no archivable turns in: ${last}` }
        first = Number(match[1])
        return {
          kind: 'tools',
          calls: [{ name: 'palace_archive', arguments: { segments: [{ category: 'reading', fromTurn: Number(match[1]), toTurn: Number(match[2]) }], summary: 'Read the beta design review notes.' } }],
        }
      }
      if (listed && !archived) {
        archived = last
        return { kind: 'tools', calls: [{ name: 'palace_read', arguments: { fromTurn: first, toTurn: first } }] }
      }
      if (reads < 12) return { kind: 'tools', calls: [{ name: 'read', arguments: { file_path: join(workspace, `notes-${reads++}.txt`) } }] }
      return { kind: 'text', text: 'gave up waiting for the steering note' }
    })
    const patch = `${SMALL_WINDOW.replace('contextWindow: 24000', 'contextWindow: 60000')}- id: memory-palace
  config:
    triggerPressure: 0.25
    checkEveryTurns: 1
    minBatchTurns: 4
    compactAfterArchive: true
    recallStrength: medium
`
    const before = hosted.server.requests.length
    const result = await hosted.home.run({ profile: 'palace', cwd: workspace, modelUrl: hosted.server.url, patch, args: ['Beta kickoff: the design freeze is on 3 March. Read the notes files one by one.'], timeoutMs: 120_000 })
    expect(result.code).toBe(0)
    // The steering note showed the numbers behind both gates, once.
    const notes = new Set(hosted.server.requests.slice(before).flatMap((request) => request.body.messages.map((message) => contentText(message.content)).filter((text) => text.startsWith('[memory palace] Context is at'))))
    expect([...notes].map((text) => text.slice(0, 160))).toHaveLength(1)
    expect(steer).toMatch(/^\[memory palace\] Context is at \d+% of the window \(archive threshold 25%\), and \d+ turns \(\d+–\d+, about \d+ tokens\) can be archived/)
    expect(steer).toContain('into memory "Beta Notes"')
    expect(listed).toMatch(/First unarchived turn: \d+\. Archivable now: \d+ turns/)
    expect(archived).toMatch(/^Archived \d+ turns into memory "Beta Notes" \(\d{4}-\d{2}\)/)
    expect(archived).toContain('The archived span will be compacted before the next request.')
    // compactAfterArchive: the host compacted the archived span; nothing was left to auto-archive.
    expect(compactions).toBeGreaterThanOrEqual(1)
    const files = filesUnder(join(workspace, 'memory-palace', 'Beta Notes'))
    expect(files.some((file) => /^\d{4}-\d{2}\/reading\/assistant-reading-\d{8}-\d{6}\.md$/.test(file))).toBe(true)
    expect(files.some((file) => file.includes('/auto/'))).toBe(false)
    // palace_read returned the archived prompt verbatim, while the prompt itself had been
    // compacted out of the model's context.
    expect(readBack).toContain('Beta kickoff: the design freeze is on 3 March.')
    const readRequest = hosted.server.requests.slice(before).find((request) => toolResults(request).some((text) => text.startsWith('<!-- Beta Notes/')))!
    const userTexts = readRequest.body.messages.filter((message) => message.role === 'user').map((message) => contentText(message.content))
    expect(userTexts.some((text) => text.startsWith('Beta kickoff'))).toBe(false)
    expect(userTexts.some((text) => text.startsWith('This is an automatically generated checkpoint'))).toBe(true)
  })

  it('fails boot with a message naming the field when the palace config is broken', async () => {
    await expectBootRejects(hosted, '- id: memory-palace\n  config:\n    recallStrength: extreme\n', [/memory-palace/, /recallStrength/])
    // A cross-field rule, checked after each field is valid on its own.
    await expectBootRejects(hosted, '- id: memory-palace\n  config:\n    triggerPressure: 0.1\n', [/retainFraction \(0\.12\) must be below triggerPressure \(0\.1\)/])
  })
})
