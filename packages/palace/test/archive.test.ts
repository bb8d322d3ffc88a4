import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import {
  buildTurns,
  fileStamp,
  isPalaceError,
  Palace,
  parseSummary,
  planArchive,
  resolvePalaceOptions,
  scanVolume,
  TEMP_MARKER,
  type PalaceOptions,
  type Turn,
} from '../src/index.js'
import { EventLog, FakeClock, filesUnder, tempDir } from './fixtures.js'

const cleanups: (() => void)[] = []
afterEach(() => {
  while (cleanups.length > 0) cleanups.pop()!()
})

function setup(options: Partial<PalaceOptions> = {}, crash?: (step: string) => void) {
  const temp = tempDir()
  cleanups.push(temp.remove)
  const clock = new FakeClock()
  const palace = new Palace(resolvePalaceOptions(options), { now: clock.now, ...(crash ? { crash } : {}) })
  return { dir: temp.dir, clock, palace, workspace: palace.workspace(temp.dir) }
}

function conversation(pairs: number, size = 60): { log: EventLog; turns: Turn[] } {
  const log = new EventLog()
  for (let i = 0; i < pairs; i++) log.exchange(`question ${i}: ${'x'.repeat(size)}`, `answer ${i}: ${'y'.repeat(size)}`)
  return { log, turns: buildTurns(log.events, { includeReasoning: true }) }
}

function plan(turns: Turn[], cuts: [string, number, number][], maxFileBytes = 5_000_000, archived: ReadonlySet<number> = new Set()) {
  return planArchive(
    {
      segments: cuts.map(([category, from, to]) => ({ category, fromTurn: turns[from]!.turn, toTurn: turns[to]!.turn })),
      summaries: [...new Set(cuts.map(([category]) => category))].map((category) => ({ category, text: `Summary of ${category}.` })),
      selfName: 'assistant',
    },
    turns,
    (turn) => archived.has(turn),
    { maxFileBytes },
  )
}

describe('archive file layout', () => {
  it('writes exactly the reference layout', async () => {
    const { dir, workspace, clock } = setup()
    await workspace.setNamespace('session-1', 'Project Alpha')
    const { turns } = conversation(3)
    const outcome = await workspace.archive('Project Alpha', 'session-1', plan(turns, [['setup', 0, 1], ['debugging', 2, 5]]))
    const stamp = fileStamp(clock.now())
    expect(filesUnder(join(dir, 'memory-palace'))).toEqual(
      [
        '.namespaces.json',
        'Project Alpha/.state.json',
        'Project Alpha/2026-11/_summary.md',
        `Project Alpha/2026-11/debugging/assistant-debugging-${stamp}.md`,
        `Project Alpha/2026-11/setup/assistant-setup-${stamp}.md`,
        'Project Alpha/config.json',
        'Project Alpha/index.jsonl',
      ].sort(),
    )
    expect(stamp).toBe('20261130-120000')
    expect(JSON.parse(readFileSync(join(dir, 'memory-palace/.namespaces.json'), 'utf8'))).toEqual({ version: 1, sessions: { 'session-1': 'Project Alpha' } })
    expect(JSON.parse(readFileSync(join(dir, 'memory-palace/Project Alpha/config.json'), 'utf8'))).toEqual({ version: 1, namespace: 'Project Alpha', sessionId: 'session-1' })
    const state = JSON.parse(readFileSync(join(dir, 'memory-palace/Project Alpha/.state.json'), 'utf8'))
    expect(state).toMatchObject({ version: 1, sessionId: 'session-1', namespace: 'Project Alpha', watermark: turns[5]!.turn, ranges: [[turns[0]!.turn, turns[5]!.turn]], archives: 1, turns: 6 })
    expect(outcome.files.map((file) => [file.category, file.turns.length, file.created])).toEqual([
      ['setup', 2, true],
      ['debugging', 4, true],
    ])

    // Each turn is in its category's volume, verbatim, where the index says.
    const index = readFileSync(join(dir, 'memory-palace/Project Alpha/index.jsonl'), 'utf8').trim().split('\n').map((line) => JSON.parse(line))
    expect(index.map((entry) => [entry.turn, entry.category])).toEqual(turns.slice(0, 6).map((turn, i) => [turn.turn, i < 2 ? 'setup' : 'debugging']))
    for (const entry of index) {
      const volume = readFileSync(join(dir, 'memory-palace/Project Alpha', entry.path), 'utf8')
      const located = scanVolume(volume).find((found) => found.turn === entry.turn)
      expect(located).toEqual({ turn: entry.turn, line: entry.line, lines: entry.lines })
      expect(volume).toContain(turns.find((turn) => turn.turn === entry.turn)!.body)
    }
    const summary = parseSummary(readFileSync(join(dir, 'memory-palace/Project Alpha/2026-11/_summary.md'), 'utf8'))
    expect(summary.map((paragraph) => [paragraph.category, paragraph.body, paragraph.fromTurn, paragraph.toTurn])).toEqual([
      ['setup', 'Summary of setup.', turns[0]!.turn, turns[1]!.turn],
      ['debugging', 'Summary of debugging.', turns[2]!.turn, turns[5]!.turn],
    ])
  })

  it('appends a later archive of the same category to the same file and only appends to the summary', async () => {
    const { dir, workspace, clock } = setup()
    await workspace.setNamespace('s', 'alpha')
    const { turns } = conversation(4)
    const first = await workspace.archive('alpha', 's', plan(turns, [['notes', 0, 3]]))
    const summaryPath = join(dir, 'memory-palace/alpha/2026-11/_summary.md')
    const before = readFileSync(summaryPath, 'utf8')
    clock.advance(60_000)
    const second = await workspace.archive('alpha', 's', plan(turns, [['notes', 4, 7]], 5_000_000, new Set(first.turns)))
    expect(second.files).toHaveLength(1)
    expect(second.files[0]!.path).toBe(first.files[0]!.path)
    expect(second.files[0]!.created).toBe(false)
    const after = readFileSync(summaryPath, 'utf8')
    expect(after.startsWith(before)).toBe(true)
    expect(parseSummary(after)).toHaveLength(2)
    expect(second.state.ranges).toEqual([[turns[0]!.turn, turns[7]!.turn]])
    expect(second.state.archives).toBe(2)
    expect(scanVolume(readFileSync(join(dir, 'memory-palace/alpha', first.files[0]!.path), 'utf8')).map((found) => found.turn)).toEqual(turns.slice(0, 8).map((turn) => turn.turn))
  })

  it('starts a new volume, by turn, when a file would exceed maxFileBytes', async () => {
    const { dir, workspace } = setup({ maxFileBytes: 10_000 })
    await workspace.setNamespace('s', 'big')
    const { turns } = conversation(4, 3000) // 8 turns of ~3 KB
    const outcome = await workspace.archive('big', 's', plan(turns, [['logs', 0, 7]], 10_000))
    const volumes = outcome.files.map((file) => join(dir, 'memory-palace/big', file.path))
    expect(volumes.length).toBeGreaterThanOrEqual(3)
    for (const volume of volumes) expect(statSync(volume).size).toBeLessThanOrEqual(10_000)
    // Same second: later volumes get a sequence suffix and sort after the first.
    expect(outcome.files.map((file) => file.path.split('/').pop())).toEqual([
      'assistant-logs-20261130-120000.md',
      'assistant-logs-20261130-120000-2.md',
      'assistant-logs-20261130-120000-3.md',
      ...outcome.files.slice(3).map((_, i) => `assistant-logs-20261130-120000-${i + 4}.md`),
    ])
    // Every turn is whole in exactly one volume.
    const found = volumes.flatMap((volume) => scanVolume(readFileSync(volume, 'utf8')).map((entry) => entry.turn))
    expect(found).toEqual(turns.slice(0, 8).map((turn) => turn.turn))
  })

  it('gives a turn bigger than maxFileBytes a volume of its own', async () => {
    const { workspace } = setup({ maxFileBytes: 10_000 })
    await workspace.setNamespace('s', 'huge')
    const { turns } = conversation(1, 25_000)
    const outcome = await workspace.archive('huge', 's', plan(turns, [['dump', 0, 1]], 10_000))
    expect(outcome.files.map((file) => file.turns)).toEqual([[turns[0]!.turn], [turns[1]!.turn]])
  })

  it('refuses to archive a turn twice even when called concurrently', async () => {
    const { workspace } = setup()
    await workspace.setNamespace('s', 'race')
    const { turns } = conversation(2)
    const results = await Promise.allSettled([workspace.archive('race', 's', plan(turns, [['a', 0, 3]])), workspace.archive('race', 's', plan(turns, [['a', 0, 3]]))])
    expect(results.map((result) => result.status).sort()).toEqual(['fulfilled', 'rejected'])
    const failure = results.find((result) => result.status === 'rejected') as PromiseRejectedResult
    expect(isPalaceError(failure.reason) && failure.reason.code).toBe('overlap')
    const archive = await workspace.openArchive('race')
    expect((await archive.entries()).map((entry) => entry.turn)).toEqual(turns.slice(0, 4).map((turn) => turn.turn))
  })
})

describe('several processes on one workspace', () => {
  it('serialises archives of two palace instances through the lock folder', async () => {
    const { dir, workspace } = setup()
    await workspace.setNamespace('s', 'shared')
    const other = new Palace(resolvePalaceOptions({}), { now: new FakeClock().now }).workspace(dir)
    const { turns } = conversation(3)
    const results = await Promise.allSettled([workspace.archive('shared', 's', plan(turns, [['a', 0, 5]])), other.archive('shared', 's', plan(turns, [['a', 0, 5]]))])
    expect(results.map((result) => result.status).sort()).toEqual(['fulfilled', 'rejected'])
    const archive = await new Palace(resolvePalaceOptions({})).workspace(dir).openArchive('shared')
    expect((await archive.entries()).map((entry) => entry.turn)).toEqual(turns.slice(0, 6).map((turn) => turn.turn))
    expect(existsSync(join(dir, 'memory-palace', '.lock'))).toBe(false)
  })

  it('waits for a live lock, gives up with busy, and breaks a stale one', async () => {
    const { dir } = setup()
    const lock = join(dir, 'memory-palace', '.lock')
    const quick = new Palace(resolvePalaceOptions({}), { lockTimeoutMs: 150 }).workspace(dir)
    mkdirSync(lock, { recursive: true })
    const busy = await quick.setNamespace('s', 'locked').catch((error) => error)
    expect(isPalaceError(busy) && busy.code).toBe('busy')
    // A lock left by a process that died a minute ago is broken.
    const old = new Date(Date.now() - 120_000)
    utimesSync(lock, old, old)
    await quick.setNamespace('s', 'locked')
    expect(await quick.namespaceOf('s')).toBe('locked')
  })

  it('takes over at once a lock whose owner process is dead on this host, and waits for a live one', async () => {
    const { dir } = setup()
    const lock = join(dir, 'memory-palace', '.lock')
    const quick = new Palace(resolvePalaceOptions({}), { lockTimeoutMs: 300 }).workspace(dir)
    const deadPid = Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout)
    const own = (record: Record<string, unknown>) => {
      mkdirSync(lock, { recursive: true })
      writeFileSync(join(lock, 'owner.json'), JSON.stringify({ at: Date.now(), token: 'theirs', ...record }))
    }
    // A SIGKILLed archiver: same host, its pid is gone → broken at once, well inside the wait.
    own({ pid: deadPid, hostname: hostname() })
    // Waiting out the 300 ms lock timeout would end in a busy error, as the live owner's below does.
    await quick.setNamespace('s', 'after-crash')
    expect(existsSync(lock)).toBe(false)
    // A record of an older palace version (pid only) is judged the same way.
    own({ pid: deadPid })
    await quick.setNamespace('s', 'legacy-record')
    // The pid is alive but was reused by a later process (start time differs): dead owner.
    own({ pid: process.pid, hostname: hostname(), startTicks: '1' })
    await quick.setNamespace('s', 'reused-pid')
    expect(await quick.namespaceOf('s')).toBe('reused-pid')
    // A live owner (this process, as another palace instance would be) is waited for: busy.
    own({ pid: process.pid, hostname: hostname() })
    const busy = await quick.setNamespace('s', 'blocked').catch((error) => error)
    expect(isPalaceError(busy) && busy.code).toBe('busy')
    expect(busy.message).toMatch(new RegExp(`pid ${process.pid}`))
    // …and waited for, not refused at once: released while a patient palace waits, it goes ahead.
    const patient = new Palace(resolvePalaceOptions({}), { lockTimeoutMs: 60_000 }).workspace(dir)
    const waiting = patient.setNamespace('s', 'waited')
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(await quick.namespaceOf('s')).toBe('reused-pid')
    rmSync(lock, { recursive: true })
    await waiting
    expect(await quick.namespaceOf('s')).toBe('waited')
    await patient.setNamespace('s', 'reused-pid')
    // Another host's lock cannot be checked: only the age rule breaks it.
    own({ pid: deadPid, hostname: 'some-other-host' })
    expect(isPalaceError(await quick.setNamespace('s', 'blocked').catch((error) => error))).toBe(true)
    expect(await quick.namespaceOf('s')).toBe('reused-pid')
    // Our own lock is released only by us: the folder is gone after a normal run.
    rmSync(lock, { recursive: true })
    await quick.setNamespace('s', 'free')
    expect(existsSync(lock)).toBe(false)
    expect(readdirSync(join(dir, 'memory-palace')).filter((name) => name.startsWith('.lock'))).toEqual([])
  })
})

describe('crash safety', () => {
  async function stepsOfOneArchive(): Promise<string[]> {
    const steps: string[] = []
    const { workspace } = setup({}, (step) => steps.push(step))
    await workspace.setNamespace('s', 'crash')
    const { turns } = conversation(4)
    const first = await workspace.archive('crash', 's', plan(turns, [['a', 0, 1]]))
    steps.length = 0
    await workspace.archive('crash', 's', plan(turns, [['a', 2, 3], ['b', 4, 7]], 5_000_000, new Set(first.turns)))
    return steps
  }

  it('leaves either the old or the new archive after a crash at any step, and recovery finishes it', async () => {
    const steps = await stepsOfOneArchive()
    expect(steps).toEqual(expect.arrayContaining(['journal-written', 'journal-removed']))
    expect(steps.filter((step) => step.startsWith('renamed:'))).toHaveLength(5) // 2 volumes, summary, index, state
    expect(steps.findIndex((step) => step.endsWith('.state.json'))).toBeGreaterThan(steps.findIndex((step) => step.endsWith('index.jsonl')))

    for (const [position, crashAt] of steps.entries()) {
      let armed = false
      const temp = tempDir('crash')
      cleanups.push(temp.remove)
      const clock = new FakeClock()
      const crashing = new Palace(resolvePalaceOptions({}), {
        now: clock.now,
        crash: (step) => {
          if (armed && step === crashAt) throw new Error(`simulated crash at ${step}`)
        },
      })
      const workspace = crashing.workspace(temp.dir)
      await workspace.setNamespace('s', 'crash')
      const { turns } = conversation(4)
      const first = await workspace.archive('crash', 's', plan(turns, [['a', 0, 1]]))
      armed = true
      await expect(workspace.archive('crash', 's', plan(turns, [['a', 2, 3], ['b', 4, 7]], 5_000_000, new Set(first.turns)))).rejects.toThrow(/simulated crash/)

      // A new process opens the palace.
      const restarted = new Palace(resolvePalaceOptions({}), { now: clock.now }).workspace(temp.dir)
      const archive = await restarted.openArchive('crash')
      const entries = await archive.entries()
      const state = (await archive.readState())!
      const committed = position >= steps.indexOf('journal-written')
      const expected = (committed ? turns.slice(0, 8) : turns.slice(0, 2)).map((turn) => turn.turn)
      expect({ crashAt, turns: entries.map((entry) => entry.turn) }).toEqual({ crashAt, turns: expected })
      expect(state.ranges).toEqual([[expected[0], expected[expected.length - 1]]])
      // No half file: every volume parses, and holds exactly the turns the index puts there.
      const files = filesUnder(join(temp.dir, 'memory-palace'))
      expect(files.filter((file) => file.includes(TEMP_MARKER) || file.endsWith('.journal.json'))).toEqual([])
      for (const file of files.filter((name) => name.endsWith('.md') && !name.endsWith('_summary.md'))) {
        const found = scanVolume(readFileSync(join(temp.dir, 'memory-palace', file), 'utf8')).map((entry) => entry.turn)
        expect(found).toEqual(entries.filter((entry) => `crash/${entry.path}` === file).map((entry) => entry.turn))
      }
      for (const entry of entries) expect(await archive.turnText(entry)).toContain(turns.find((turn) => turn.turn === entry.turn)!.body)
      // And the archive continues from where the files are.
      const done = new Set(entries.map((entry) => entry.turn))
      if (!committed) await restarted.archive('crash', 's', plan(turns, [['a', 2, 3], ['b', 4, 7]], 5_000_000, done))
      expect((await archive.readState())!.ranges).toEqual([[turns[0]!.turn, turns[7]!.turn]])
    }
  })

  it('removes stray temp files and rebuilds a state file that disagrees with the index', async () => {
    const { dir, workspace, palace } = setup()
    await workspace.setNamespace('s', 'heal')
    const { turns } = conversation(2)
    await workspace.archive('heal', 's', plan(turns, [['a', 0, 3]]))
    const folder = join(dir, 'memory-palace/heal')
    writeFileSync(join(folder, `index.jsonl${TEMP_MARKER}999-dead`), '{"half":')
    writeFileSync(join(folder, '.state.json'), JSON.stringify({ version: 1, sessionId: 's', namespace: 'heal', watermark: 1, ranges: [[1, 1]], archives: 1, turns: 1, updatedAt: 0 }))
    const fresh = new Palace(palace.options, { now: () => new Date() }).workspace(dir)
    const archive = await fresh.openArchive('heal')
    expect(existsSync(join(folder, `index.jsonl${TEMP_MARKER}999-dead`))).toBe(false)
    expect((await archive.readState())!.ranges).toEqual([[turns[0]!.turn, turns[3]!.turn]])
  })

  it('fails loudly on a state or index written by a newer format', async () => {
    const { dir, workspace } = setup()
    await workspace.setNamespace('s', 'future')
    const { turns } = conversation(1)
    await workspace.archive('future', 's', plan(turns, [['a', 0, 1]]))
    writeFileSync(join(dir, 'memory-palace/future/index.jsonl'), '{"v":2,"turn":1}\n')
    const archive = await new Palace(resolvePalaceOptions({})).workspace(dir).openArchive('future').catch((error) => error)
    expect(isPalaceError(archive) && archive.code).toBe('unsupported-format')
  })
})
