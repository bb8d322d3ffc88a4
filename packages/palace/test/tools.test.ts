import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { openMemoryStore, type MemoryStore } from '@dsh-memory/store'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ArchiveIndex, automaticNamespace, createPalaceTools, Palace, palaceTurns, resolvePalaceOptions, type PalaceTool, type SessionView, type ToolReply } from '../src/index.js'
import { EventLog, FakeClock, sessionOf, tempDir } from './fixtures.js'

let temp: ReturnType<typeof tempDir>
let store: MemoryStore
let palace: Palace
let tools: Map<string, PalaceTool>
let log: EventLog
let session: SessionView

beforeEach(() => {
  temp = tempDir('tools')
  store = openMemoryStore({ path: join(temp.dir, 'data', 'memory.db') })
  palace = new Palace(resolvePalaceOptions({}), { now: new FakeClock().now, index: new ArchiveIndex(store) })
  tools = new Map(createPalaceTools(palace).map((tool) => [tool.name, tool]))
  log = new EventLog()
  session = sessionOf(log, join(temp.dir, 'work'))
})
afterEach(async () => {
  await store.close()
  temp.remove()
})

function call(name: string, args: unknown, view: SessionView | undefined = session): Promise<ToolReply> {
  return tools.get(name)!.run(args, { session: view })
}

function conversation(): number[] {
  const turns: number[] = []
  turns.push(...log.exchange('How do we deploy the billing service?', 'With the blue-green script in ops/deploy.sh.'))
  turns.push(...log.exchange('我们的数据库迁移计划是什么？', '周六凌晨两点迁移到 PostgreSQL。'))
  turns.push(...log.exchange('東京オフィスの移転日は？', '来月の十五日です。'))
  return turns
}

describe('palace tools', () => {
  it('exposes the six tools of the reference with object parameter schemas', () => {
    expect([...tools.keys()]).toEqual(['palace_archive', 'palace_turns', 'palace_summary', 'palace_search', 'palace_read', 'palace_config'])
    for (const tool of tools.values()) {
      expect(tool.parameters).toMatchObject({ type: 'object', additionalProperties: false })
      expect(tool.description.length).toBeGreaterThan(80)
    }
  })

  it('with autoName off, refuses to archive an unnamed session, produces no files, and asks no user', async () => {
    const strict = new Palace(resolvePalaceOptions({ autoName: false }), { now: new FakeClock().now, index: new ArchiveIndex(store) })
    const archive = createPalaceTools(strict).find((tool) => tool.name === 'palace_archive')!
    const turns = conversation()
    const reply = await archive.run({ segments: [{ category: 'a', fromTurn: turns[0], toTurn: turns[1] }], summary: 'x' }, { session })
    expect(reply).toMatchObject({ ok: false, code: 'unnamed-session' })
    expect(reply.text).toMatch(/Name it with palace_config with action="set", namespace=/)
    expect(reply.text).not.toMatch(/ask the user/i)
    expect(existsSync(join(temp.dir, 'work', 'memory-palace'))).toBe(false)
  })

  it('archives an unnamed session under an automatic name, and a rename keeps every turn readable and searchable', async () => {
    const turns = conversation()
    const before = await call('palace_config', {})
    expect(before.text).toContain('Memory name: (unnamed — it gets an automatic name at its first archive)')
    expect((await call('palace_summary', {})).text).toContain('nothing of this session is archived yet (歸檔記憶爲空)')
    // A refused plan names nothing.
    expect((await call('palace_archive', { segments: [{ category: 'a', fromTurn: turns[1], toTurn: turns[2] }], summary: 'x' })).code).toBe('gap')
    expect(existsSync(join(temp.dir, 'work', 'memory-palace'))).toBe(false)

    const automatic = automaticNamespace(session.cwd!, session.id)
    const archived = await call('palace_archive', { segments: [{ category: '部署', fromTurn: turns[0], toTurn: turns[3] }], summary: '部署与数据库迁移' })
    expect(archived.ok).toBe(true)
    expect(archived.text).toContain(`This session had no memory name; it is now "${automatic}"`)
    expect((await call('palace_config', {})).text).toContain(`Memory name: "${automatic}" (automatic; action="set" namespace="…" renames it)`)
    await palace.idle()

    const renamed = await call('palace_config', { action: 'set', namespace: 'Billing Ops' })
    expect(renamed.text).toContain(`Renamed memory "${automatic}" to "Billing Ops" (its folder moved).`)
    expect(renamed.text).toContain('Memory name: "Billing Ops";')
    expect(existsSync(join(session.cwd!, 'memory-palace', automatic))).toBe(false)
    expect((await call('palace_read', { fromTurn: turns[2], toTurn: turns[2] })).text).toContain('我们的数据库迁移计划是什么？')
    const found = await call('palace_search', { keyword: '数据库 迁移' })
    expect(found.text).toContain(`turn ${turns[2]}`)
    expect(found.text).toContain('Billing Ops/2026-11/部署/')
    expect((await call('palace_summary', { month: '2026-11', category: '部署' })).text).toContain('部署与数据库迁移')
    // The old name is gone; the workspace lists the new one only.
    expect((await call('palace_read', { fromTurn: turns[0], namespace: automatic })).code).toBe('not-found')
    // Later archives continue under the new name.
    expect((await call('palace_archive', { segments: [{ category: '部署', fromTurn: turns[4], toTurn: turns[5] }], summary: 'office move' })).text).toMatch(/^Archived 2 turns into memory "Billing Ops"/)
  })

  it('gives an unnamed session an automatic name when it changes its own settings', async () => {
    const reply = await call('palace_config', { action: 'set', recallStrength: 'medium' })
    const automatic = automaticNamespace(session.cwd!, session.id)
    expect(reply.text).toContain(`This session had no memory name; it is now "${automatic}".`)
    expect(reply.text).toContain('Updated this session\'s settings: recallStrength.')
    expect(JSON.parse(readFileSync(join(session.cwd!, 'memory-palace', automatic, 'config.json'), 'utf8'))).toMatchObject({ automatic: true, recallStrength: 'medium' })
  })

  it('names the session, archives by segments, and finds and reads the turns back (CJK included)', async () => {
    const turns = conversation()
    const named = await call('palace_config', { action: 'set', namespace: 'Project Alpha' })
    expect(named.ok).toBe(true)
    expect(named.text).toContain('This session\'s memory is now named "Project Alpha".')

    const listed = await call('palace_turns', {})
    expect(listed.text).toContain(`${turns[0]} · user · How do we deploy the billing service?`)
    expect(listed.text).toContain(`First unarchived turn: ${turns[0]}`)

    const archived = await call('palace_archive', {
      segments: [
        { category: 'ops', fromTurn: turns[0], toTurn: turns[1] },
        { category: '数据库', fromTurn: turns[2], toTurn: turns[3] },
        { category: 'office', fromTurn: turns[4], toTurn: turns[5] },
      ],
      summaries: [
        { category: 'ops', text: 'Deploys use the blue-green script.' },
        { category: '数据库', text: '数据库周六迁移。' },
        { category: 'office', text: 'オフィス移転は来月。' },
      ],
    })
    expect(archived).toMatchObject({ ok: true })
    expect(archived.text).toContain(`Archived 6 turns into memory "Project Alpha" (2026-11); archived now: ${turns[0]}–${turns[5]}.`)
    expect(archived.text).toContain('Project Alpha/2026-11/数据库/assistant-数据库-20261130-120000.md')

    const zh = await call('palace_search', { keyword: '迁移 PostgreSQL' })
    expect(zh.ok).toBe(true)
    expect(zh.text).toMatch(new RegExp(`1\\. turn ${turns[3]} · assistant · 数据库 · \\d+ hit`))
    const ja = await call('palace_search', { keyword: '「移転日」' })
    expect(ja.text).toContain(`turn ${turns[4]} · user · office`)
    const path = /\n {3}(Project Alpha\/[^\n]+\.md:\d+)\n/.exec(ja.text)![1]!
    const read = await call('palace_read', { path })
    expect(read.text).toContain('東京オフィスの移転日は？')

    const months = await call('palace_summary', {})
    expect(months.text).toMatch(/2026-11 · 3 archive files · 3 paragraphs · categories: office, ops, 数据库/)
    const month = await call('palace_summary', { month: '2026-11', category: 'ops' })
    expect(month.text).toContain('Deploys use the blue-green script.')
    expect(month.text).not.toContain('数据库周六迁移')

    // The search went through the palace's own index; L0 holds no archive rows.
    expect(await store.conversations.list()).toEqual([])
    const rows = await (await palace.deps.index!.tables()).read((db) => db.select({ namespace: palaceTurns.namespace }).from(palaceTurns).all())
    expect(rows.map((row) => row.namespace)).toEqual(Array(6).fill('Project Alpha'))

    // A misspelt search finds nothing exactly, and says which archived words are near.
    const typo = await call('palace_search', { keyword: 'deplois scrpt' })
    expect(typo.text).toContain('No archived turn matched.')
    expect(typo.text).toMatch(/Did you mean: deploy script\?/)
  })

  it('returns clear errors for bad arguments instead of throwing', async () => {
    conversation()
    await call('palace_config', { action: 'set', namespace: 'alpha' })
    const cases: [string, unknown, RegExp][] = [
      ['palace_archive', { segments: [] }, /invalid-argument.*segments/],
      ['palace_archive', { segments: [{ category: 'a', fromTurn: 'one', toTurn: 2 }] }, /segments\.0\.fromTurn/],
      ['palace_archive', { segments: [{ category: 'a', fromTurn: 1, toTurn: 2 }], bogus: true }, /unknown argument "bogus"/],
      ['palace_search', { keyword: '' }, /keyword/],
      ['palace_search', { keyword: '   ' }, /at least one word/],
      ['palace_search', { keyword: 'x', namespace: '../../etc' }, /invalid-name/],
      ['palace_search', { keyword: 'x', namespace: 'nobody' }, /\[not-found\]: no memory named "nobody" in this workspace; known: alpha/],
      ['palace_read', {}, /give fromTurn\/toTurn, a path, or both/],
      ['palace_read', { path: '../../secret.md' }, /path-refused/],
      ['palace_read', { path: '/etc/passwd' }, /path-refused/],
      ['palace_summary', { month: '2026-13' }, /month must look like YYYY-MM/],
      ['palace_summary', { append: 'note' }, /append needs fromTurn and toTurn/],
      ['palace_config', { action: 'set', recallStrength: 'extreme' }, /recallStrength/],
      ['palace_config', { action: 'set', retainFraction: 0.7 }, /retainFraction/],
      ['palace_config', { action: 'set', namespace: '中文名' }, /invalid-name/],
      ['palace_config', { action: 'get', recallStrength: 'high' }, /action="get" takes no settings/],
      ['palace_turns', { limit: 0 }, /limit/],
    ]
    for (const [name, args, pattern] of cases) {
      const reply = await call(name, args)
      expect([name, args, reply.ok]).toEqual([name, args, false])
      expect([name, reply.text]).toEqual([name, expect.stringMatching(pattern)])
    }
    expect((await tools.get('palace_search')!.run({ keyword: 'x' }, { session: undefined })).text).toMatch(/needs the calling agent's session/)
  })

  it('layers settings: plugin defaults, workspace config.json, session config.json', async () => {
    conversation()
    await call('palace_config', { action: 'set', namespace: 'alpha' })
    await call('palace_config', { action: 'set', scope: 'workspace', recallStrength: 'medium', searchTurnLimit: 5 })
    const set = await call('palace_config', { action: 'set', recallStrength: 'high' })
    expect(set.text).toContain('Updated this session\'s settings: recallStrength.')
    const got = await call('palace_config', {})
    expect(got.text).toContain('"recallStrength":"high"')
    expect(got.text).toContain('"searchTurnLimit":5')
    expect(got.text).toMatch(/Workspace defaults \(memory-palace\/config\.json\): \{"recallStrength":"medium","searchTurnLimit":5\}/)
    expect(got.text).toMatch(/This session \(memory-palace\/alpha\/config\.json\): \{"recallStrength":"high"\}/)
    expect(JSON.parse(readFileSync(join(session.cwd!, 'memory-palace/alpha/config.json'), 'utf8'))).toEqual({ version: 1, namespace: 'alpha', sessionId: 'session-1', recallStrength: 'high' })
    // A broken hand-edited file is reported, naming the file and the field.
    writeFileSync(join(session.cwd!, 'memory-palace/config.json'), JSON.stringify({ version: 1, triggerPresure: 0.5 }))
    const broken = await call('palace_config', {})
    expect(broken).toMatchObject({ ok: false, code: 'invalid-config' })
    expect(broken.text).toMatch(/memory-palace\/config\.json: triggerPresure/)
  })

  it('renames a memory by moving its folder, and refuses a name another session holds', async () => {
    const turns = conversation()
    await call('palace_config', { action: 'set', namespace: 'first' })
    await call('palace_archive', { segments: [{ category: 'a', fromTurn: turns[0], toTurn: turns[1] }], summary: 'x' })
    const renamed = await call('palace_config', { action: 'set', namespace: 'second' })
    expect(renamed.text).toContain('Renamed memory "first" to "second" (its folder moved).')
    expect(existsSync(join(session.cwd!, 'memory-palace/first'))).toBe(false)
    expect((await call('palace_read', { fromTurn: turns[0] })).text).toContain('How do we deploy')

    const otherLog = new EventLog()
    const other = sessionOf(otherLog, session.cwd!, 'session-2')
    const taken = await call('palace_config', { action: 'set', namespace: 'Second' }, other)
    expect(taken).toMatchObject({ ok: false, code: 'namespace-taken' })
    // The other session can still search this memory by name, or all memories.
    expect((await call('palace_search', { keyword: 'deploy', namespace: 'second' }, other)).text).toContain(`turn ${turns[0]}`)
    expect((await call('palace_search', { keyword: 'deploy', all: true }, other)).text).toMatch(/\[second\] turn/)
    expect((await call('palace_search', { keyword: 'deploy' }, other)).code).toBe('unnamed-session')

    // The old name, free again, goes to a third session whose turns reuse the numbers: the
    // index replaces the rows of the earlier archive, so the new words are found.
    await palace.idle()
    const thirdLog = new EventLog()
    const third = sessionOf(thirdLog, session.cwd!, 'session-3')
    const thirdTurns = thirdLog.exchange('Where is the 猫咖啡 meetup?', 'At the Shibuya cafe.')
    expect(thirdTurns[0]).toBe(turns[0])
    await call('palace_config', { action: 'set', namespace: 'first' }, third)
    expect((await call('palace_archive', { segments: [{ category: 'b', fromTurn: thirdTurns[0], toTurn: thirdTurns[1] }], summary: 'y' }, third)).ok).toBe(true)
    expect((await call('palace_search', { keyword: 'Shibuya' }, third)).text).toContain(`turn ${thirdTurns[1]}`)
    expect((await call('palace_search', { keyword: 'deploy' }, third)).text).toContain('No archived turn matched.')
  })

  it('refuses a hand-edited session map that points outside the palace', async () => {
    conversation()
    await call('palace_config', { action: 'set', namespace: 'alpha' })
    writeFileSync(join(session.cwd!, 'memory-palace/.namespaces.json'), JSON.stringify({ version: 1, sessions: { 'session-1': '../../outside' } }))
    for (const [name, args] of [
      ['palace_config', {}],
      ['palace_search', { keyword: 'deploy' }],
      ['palace_summary', {}],
    ] as const) {
      const reply = await call(name, args)
      expect([name, reply.code]).toEqual([name, 'invalid-config'])
      expect(reply.text).toContain('is not a valid memory name')
    }
  })

  it('appends a note about unarchived turns to the month summary', async () => {
    const turns = conversation()
    await call('palace_config', { action: 'set', namespace: 'alpha' })
    const reply = await call('palace_summary', { append: 'Still discussing the office move.', fromTurn: turns[4], toTurn: turns[5] })
    expect(reply.text).toBe(`Appended a note about turns ${turns[4]}–${turns[5]} to alpha/2026-11/_summary.md.`)
    const month = await call('palace_summary', { month: '2026-11' })
    expect(month.text).toContain('note (not yet archived)')
    expect(month.text).toContain('Still discussing the office move.')
  })

  it('reports an empty memory honestly', async () => {
    conversation()
    await call('palace_config', { action: 'set', namespace: 'empty' })
    expect((await call('palace_summary', {})).text).toBe('Memory "empty" has no archives yet (歸檔記憶爲空).')
    expect((await call('palace_search', { keyword: 'deploy' })).text).toContain('No archived turn matched.')
  })
})
