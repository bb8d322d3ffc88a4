import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { automaticNamespace, buildTurns, Palace, recallGuidance, RECALL_STRENGTHS, resolvePalaceOptions, type PalaceOptions } from '../src/index.js'
import { EventLog, FakeClock, sessionOf, tempDir } from './fixtures.js'

const cleanups: (() => void)[] = []
afterEach(() => {
  while (cleanups.length > 0) cleanups.pop()!()
})

function setup(options: Partial<PalaceOptions> = {}) {
  const temp = tempDir('core')
  cleanups.push(temp.remove)
  const palace = new Palace(resolvePalaceOptions(options), { now: new FakeClock().now })
  const log = new EventLog()
  const session = sessionOf(log, temp.dir)
  return { palace, log, session, dir: temp.dir }
}

function messageIdsOf(log: EventLog, seqs: readonly number[]): string[] {
  return log.events
    .filter((event) => seqs.includes(event.seq))
    .map((event) => (event.type === 'user/message' ? (event.data as { id: string }).id : (event.data as { message: { id: string } }).message.id))
}

describe('archive before compaction', () => {
  it('archives every unarchived turn through the last one the compaction replays, and nothing after', async () => {
    const { palace, log, session, dir } = setup()
    await palace.workspace(dir).setNamespace(session.id, 'alpha')
    const seqs: number[] = []
    for (let i = 0; i < 6; i++) seqs.push(...log.exchange(`topic ${i} question`, `topic ${i} answer`))
    // The compaction replays the first 8 surface messages.
    const outcome = await palace.archiveBeforeCompaction(session, messageIdsOf(log, seqs.slice(0, 8)))
    expect(outcome?.turns).toEqual(seqs.slice(0, 8))
    expect(outcome?.files[0]?.category).toBe('auto')
    const archive = await palace.workspace(dir).openArchive('alpha')
    expect((await archive.readState())?.sessionId).toBe(session.id)
    const paragraphs = await archive.summaryParagraphs('2026-11')
    expect(paragraphs[0]!.body).toMatch(/^Archived automatically before a compaction: 8 turns \(\d+–\d+; 4 user, 4 assistant\)\. First request: “topic 0 question”\./)
    // A second compaction later only adds what is new.
    const again = await palace.archiveBeforeCompaction(session, messageIdsOf(log, seqs.slice(0, 10)))
    expect(again?.turns).toEqual(seqs.slice(8, 10))
    expect(await palace.archiveBeforeCompaction(session, messageIdsOf(log, seqs.slice(0, 10)))).toBeUndefined()
  })

  it('archives a session that was never named under an automatic name, renameable without losing anything', async () => {
    const { palace, log, session, dir } = setup()
    const workspace = palace.workspace(dir)
    const seqs = log.exchange('the rollback window is 42 minutes', 'noted: 42 minutes')
    const outcome = await palace.archiveBeforeCompaction(session, messageIdsOf(log, seqs))
    expect(outcome?.turns).toEqual(seqs)
    const automatic = automaticNamespace(dir, session.id)
    expect(await workspace.namespaceOf(session.id)).toBe(automatic)
    expect(await workspace.isAutomatic(automatic)).toBe(true)
    expect((await (await workspace.openArchive(automatic)).readState())?.namespace).toBe(automatic)
    // Renamed later: the folder moves with everything in it, and a later compaction archives
    // into the new name, continuing the same ranges.
    await workspace.setNamespace(session.id, 'Rollback Plan')
    expect(existsSync(join(dir, 'memory-palace', automatic))).toBe(false)
    expect(await workspace.isAutomatic('Rollback Plan')).toBe(false)
    const renamed = await workspace.openArchive('Rollback Plan')
    expect((await renamed.entries()).map((entry) => entry.turn)).toEqual(seqs)
    expect((await renamed.readState())?.namespace).toBe('Rollback Plan')
    const more = log.exchange('and the freeze starts Friday', 'noted')
    expect((await palace.archiveBeforeCompaction(session, messageIdsOf(log, more)))?.turns).toEqual(more)
    expect(await renamed.ranges()).toEqual([[seqs[0], more[1]]])
    expect(await workspace.listNamespaces()).toEqual(['Rollback Plan'])
  })

  it('writes nothing with autoName off (unnamed), for a subagent, or when switched off', async () => {
    const { palace, log, session, dir } = setup({ autoName: false })
    log.exchange('q', 'a')
    expect(await palace.archiveBeforeCompaction(session, [])).toBeUndefined()
    expect(existsSync(join(dir, 'memory-palace'))).toBe(false)
    await palace.workspace(dir).setNamespace(session.id, 'alpha')
    expect(await palace.archiveBeforeCompaction({ ...session, root: false }, [])).toBeUndefined()
    await palace.workspace(dir).updateSettings(session.id, 'session', { archiveBeforeCompaction: false })
    expect(await palace.archiveBeforeCompaction(session, [])).toBeUndefined()
    await palace.workspace(dir).updateSettings(session.id, 'session', { archiveBeforeCompaction: true, enabled: false })
    expect(await palace.archiveBeforeCompaction(session, [])).toBeUndefined()
  })

  it('names no session when a compaction has nothing to archive', async () => {
    const { palace, session, dir } = setup()
    expect(await palace.archiveBeforeCompaction(session, [])).toBeUndefined()
    expect(existsSync(join(dir, 'memory-palace'))).toBe(false)
  })
})

describe('steering', () => {
  function busy(log: EventLog, pairs: number): void {
    for (let i = 0; i < pairs; i++) log.exchange(`question ${i} ${'q'.repeat(2000)}`, `answer ${i} ${'a'.repeat(2000)}`)
  }

  it('asks to archive only when the check is due and both gates hold, once per archivable run', async () => {
    const { palace, log, session, dir } = setup({ checkEveryTurns: 5, minBatchTurns: 10 })
    await palace.workspace(dir).setNamespace(session.id, 'alpha')
    busy(log, 8) // 16 turns of ~500 tokens; 2 fit the retained budget of 1200
    const low = async () => ({ historyTokens: 1000, contextWindow: 10_000 })
    const high = async () => ({ historyTokens: 7000, contextWindow: 10_000 })
    expect(await palace.steeringFor(session, low)).toBeUndefined() // due, pressure too low
    expect(await palace.steeringFor(session, high)).toBeUndefined() // not due again yet
    busy(log, 3)
    const steer = await palace.steeringFor(session, high)
    expect(steer?.gates.open).toBe(true)
    const turns = buildTurns(log.events, { includeReasoning: true })
    expect(steer?.note).toMatch(/^\[memory palace\] Context is at 70% of the window \(archive threshold 60%\), and \d+ turns/)
    expect(steer?.note).toContain(`palace_archive with segments=[{category, fromTurn, toTurn}, …] starting at turn ${turns[0]!.turn}`)
    expect(steer?.note).toContain('Finish the user\'s current request first')
    // No second note right away, even when the check is due again…
    busy(log, 3)
    expect(await palace.steeringFor(session, high)).toBeUndefined()
    // …but after another batch of turns (minBatchTurns) the model is reminded.
    busy(log, 3)
    expect((await palace.steeringFor(session, high))?.note).toMatch(/^\[memory palace\]/)
  })

  it('tells an unnamed session that its first archive names it, and never to ask a user', async () => {
    const { palace, log, session } = setup({ checkEveryTurns: 1, minBatchTurns: 2 })
    busy(log, 3)
    const steer = await palace.steeringFor(session, async () => ({ historyTokens: 9000, contextWindow: 10_000 }))
    expect(steer?.note).toContain('this session has no memory name yet: the first archive names it automatically')
    expect(steer?.note).toContain('palace_archive with segments=')
    expect(steer?.note).not.toMatch(/ask the user/i)
  })

  it('with autoName off, asks the model to name the session itself (a headless run has no user to ask)', async () => {
    const { palace, log, session } = setup({ checkEveryTurns: 1, minBatchTurns: 2, autoName: false })
    busy(log, 3)
    const steer = await palace.steeringFor(session, async () => ({ historyTokens: 9000, contextWindow: 10_000 }))
    expect(steer?.note).toContain('This session has no memory name, so nothing can be archived yet. Name it with palace_config with action="set" and namespace="…"')
    expect(steer?.note).not.toMatch(/ask the user/i)
  })

  it('stays silent with enableSteer or injectNotice off', async () => {
    for (const off of [{ enableSteer: false }, { injectNotice: false }]) {
      const { palace, log, session } = setup({ checkEveryTurns: 1, minBatchTurns: 2, ...off })
      busy(log, 3)
      expect(await palace.steeringFor(session, async () => ({ historyTokens: 9000, contextWindow: 10_000 }))).toBeUndefined()
    }
  })
})

describe('recall guidance', () => {
  it('shapes the system-prompt guidance by strength', () => {
    const texts = Object.fromEntries(RECALL_STRENGTHS.map((strength) => [strength, recallGuidance(strength, { rounds: 3, keywords: 6 })]))
    expect(texts.off).toBe('')
    expect(texts.low).toContain('Prefer the month summaries')
    expect(texts.low).toContain('Do not chain searches')
    expect(texts.medium).toContain('month (palace_summary without month) → that month\'s summary → palace_search')
    expect(texts.high).toContain('at most 3 search rounds and 6 keywords')
    expect(texts.forced).toContain('Search the palace before answering every user message')
    expect(texts.forced).toContain('do not invent')
  })

  it('claims an archive in the system prompt only once one is there', async () => {
    const claim = 'Earlier turns of this session are archived verbatim'
    const { palace, log, session, dir } = setup()
    const before = await palace.recallSection(session)
    expect(before).not.toContain(claim)
    expect(before).toContain('Nothing of this session is archived yet; turns the host compacts out of context are archived verbatim first')
    expect(palace.defaultRecallSection()).toBe(before)
    await palace.archiveBeforeCompaction(session, messageIdsOf(log, log.exchange('q', 'a')))
    expect(await palace.recallSection(session)).toContain(claim)
    // Another session of the workspace has archived nothing of its own.
    expect(await palace.recallSection({ ...session, id: 'session-2' })).not.toContain(claim)
    expect(existsSync(join(dir, 'memory-palace'))).toBe(true)

    const manual = setup({ archiveBeforeCompaction: false })
    expect(await manual.palace.recallSection(manual.session)).toContain('Nothing of this session is archived yet; palace_archive archives turns')
    const unnamed = setup({ autoName: false })
    const text = await unnamed.palace.recallSection(unnamed.session)
    expect(text).toContain('Nothing of this session is archived: it has no memory name (palace_config with action="set"')
    expect(text).not.toMatch(/ask the user/i)
    expect(unnamed.palace.defaultRecallSection()).toBe(text)
    expect(await setup({ recallStrength: 'off' }).palace.recallSection(session)).toBe('')
  })

  it('sends the forced-recall instruction, saying so when the archive is empty', async () => {
    const { palace, log, session, dir } = setup({ recallStrength: 'forced' })
    await palace.workspace(dir).setNamespace(session.id, 'alpha')
    expect(await palace.forcedRecallFor(session)).toContain('Archived memory is empty (歸檔記憶爲空)')
    const seqs = log.exchange('q', 'a')
    await palace.archiveBeforeCompaction(session, messageIdsOf(log, seqs))
    expect(await palace.forcedRecallFor(session)).toContain('Before answering, search memory "alpha"')
    const lowPalace = new Palace(resolvePalaceOptions({ recallStrength: 'low' }))
    expect(await lowPalace.forcedRecallFor(session)).toBeUndefined()
    const quiet = new Palace(resolvePalaceOptions({ recallStrength: 'forced', injectNotice: false }))
    expect(await quiet.forcedRecallFor(session)).toBeUndefined()
  })

  it('queues one note after a compaction pointing at the summary to read', async () => {
    const { palace, log, session, dir } = setup({ recallStrength: 'medium' })
    await palace.workspace(dir).setNamespace(session.id, 'alpha')
    const seqs = log.exchange('q', 'a')
    await palace.archiveBeforeCompaction(session, messageIdsOf(log, seqs))
    await palace.compactionEnded(session)
    const note = palace.takeGuidance(session.id)
    expect(note).toContain('read palace_summary(month="2026-11") or palace_summary(month="2026-11", category="auto") first')
    expect(note).toContain('palace_read(fromTurn=N, toTurn=N)')
    expect(palace.takeGuidance(session.id)).toBeUndefined()
    // A later compaction that archived nothing new adds no second note.
    await palace.compactionEnded(session)
    expect(palace.takeGuidance(session.id)).toBeUndefined()
    await palace.archiveBeforeCompaction(session, messageIdsOf(log, log.exchange('q2', 'a2')))
    await palace.compactionEnded(session)
    expect(palace.takeGuidance(session.id)).toContain('turns ')
  })

  it('gives no post-compaction note at recall strength off or without notices', async () => {
    for (const options of [{ recallStrength: 'off' as const }, { injectNotice: false }]) {
      const { palace, log, session, dir } = setup(options)
      await palace.workspace(dir).setNamespace(session.id, 'alpha')
      await palace.archiveBeforeCompaction(session, messageIdsOf(log, log.exchange('q', 'a')))
      await palace.compactionEnded(session)
      expect(palace.takeGuidance(session.id)).toBeUndefined()
    }
  })
})
