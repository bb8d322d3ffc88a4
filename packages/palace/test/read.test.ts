import { afterEach, describe, expect, it } from 'vitest'
import { backLinks, buildTurns, isPalaceError, Palace, planArchive, readArchive, READ_CAP, resolvePalaceOptions } from '../src/index.js'
import { EventLog, FakeClock, tempDir } from './fixtures.js'

const cleanups: (() => void)[] = []
afterEach(() => {
  while (cleanups.length > 0) cleanups.pop()!()
})

async function archived(build: (log: EventLog) => void) {
  const temp = tempDir('read')
  cleanups.push(temp.remove)
  const workspace = new Palace(resolvePalaceOptions({}), { now: new FakeClock().now }).workspace(temp.dir)
  await workspace.setNamespace('s', 'reader')
  const log = new EventLog()
  build(log)
  const turns = buildTurns(log.events, { includeReasoning: true })
  await workspace.archive(
    'reader',
    's',
    planArchive({ segments: [{ category: 'work', fromTurn: turns[0]!.turn, toTurn: turns[turns.length - 1]!.turn }], summary: 'work', selfName: 'assistant' }, turns, () => false, { maxFileBytes: 5_000_000 }),
  )
  return { archive: await workspace.openArchive('reader'), turns, dir: temp.dir }
}

async function failure(work: Promise<unknown>): Promise<string> {
  const error = await work.then(
    () => undefined,
    (caught: unknown) => caught,
  )
  return isPalaceError(error) ? `${error.code}: ${error.message}` : `no palace error: ${String(error)}`
}

describe('readArchive', () => {
  it('returns whole turns by range, with reasoning, tool calls and results', async () => {
    const { archive, turns } = await archived((log) => {
      log.user('look at src/app.ts please')
      log.assistant('Opening it.', { reasoning: 'need the file', calls: [{ id: 'c1', name: 'read', args: { path: 'src/app.ts' } }] })
      log.toolResult('c1', 'export const app = 1')
      log.assistant('It exports app; see turn 2 for context.')
    })
    const result = await readArchive(archive, { fromTurn: turns[1]!.turn, toTurn: turns[1]!.turn })
    expect(result.turns).toEqual([turns[1]!.turn])
    expect(result.text).toContain('### Reasoning\n\nneed the file')
    expect(result.text).toContain('### Tool call · read (c1)')
    expect(result.text).toContain('export const app = 1')
    expect(result.text).not.toContain('look at src/app.ts please')
    expect(result.nextOffset).toBeUndefined()
    expect(result.text).toMatch(/Back-links \(auto-extracted, for reference only\): .*files src\/app\.ts.*tools read/)

    const all = await readArchive(archive, { fromTurn: turns[0]!.turn, toTurn: turns[2]!.turn })
    expect(all.turns).toEqual(turns.map((turn) => turn.turn))
    expect(all.text.indexOf('look at src/app.ts')).toBeLessThan(all.text.indexOf('It exports app'))
  })

  it('reads by path, by the "<memory>/…:<line>" form search prints, and by path plus range', async () => {
    const { archive, turns } = await archived((log) => {
      log.exchange('first question', 'first answer')
      log.exchange('second question', 'second answer')
    })
    const entries = await archive.entries()
    const path = entries[0]!.path
    const file = await readArchive(archive, { path })
    expect(file.text).toContain('first question')
    expect(file.text).toContain('second answer')
    const third = entries[2]!
    const jump = await readArchive(archive, { path: `reader/${path}:${third.line + 3}` })
    expect(jump.turns).toEqual([third.turn])
    expect(jump.text).toContain('second question')
    const ranged = await readArchive(archive, { path, fromTurn: turns[1]!.turn, toTurn: turns[2]!.turn })
    expect(ranged.turns).toEqual([turns[1]!.turn, turns[2]!.turn])
  })

  it('caps a read at 60 000 characters and continues from offset', async () => {
    const big = Array.from({ length: 3000 }, (_, i) => `line ${String(i).padStart(4, '0')} ${'数据'.repeat(10)}`).join('\n') // ~90 000 chars
    const { archive, turns } = await archived((log) => {
      log.user(big)
    })
    const first = await readArchive(archive, { fromTurn: turns[0]!.turn })
    expect(first.totalChars).toBeGreaterThan(READ_CAP)
    expect(first.nextOffset).toBe(READ_CAP)
    expect(first.text).toContain(`Continue with palace_read(fromTurn=${turns[0]!.turn}, offset=${READ_CAP})`)
    const second = await readArchive(archive, { fromTurn: turns[0]!.turn, offset: first.nextOffset! })
    expect(second.nextOffset).toBeUndefined()
    const pageOne = first.text.slice(0, first.text.indexOf('\n\n… '))
    const pageTwo = second.text.replace(/\n\nBack-links[^\n]*$/, '')
    expect(pageOne + pageTwo).toContain(big)
    const small = await readArchive(archive, { fromTurn: turns[0]!.turn, maxChars: 100 })
    expect(small.nextOffset).toBe(100)
  })

  it('refuses traversal, absolute paths and bad ranges with clear errors', async () => {
    const { archive, turns } = await archived((log) => log.exchange('q', 'a'))
    expect(await failure(readArchive(archive, { path: '../../../etc/passwd' }))).toMatch(/^path-refused: .*climbs out/)
    expect(await failure(readArchive(archive, { path: '/etc/passwd' }))).toMatch(/^path-refused: absolute paths are refused/)
    expect(await failure(readArchive(archive, { path: 'C:\\Windows\\win.ini' }))).toMatch(/^path-refused/)
    expect(await failure(readArchive(archive, { path: '2026-11/../../reader2/x.md' }))).toMatch(/^path-refused/)
    expect(await failure(readArchive(archive, { path: '2026-11/work/missing.md' }))).toMatch(/^not-found/)
    expect(await failure(readArchive(archive, { fromTurn: 5000 }))).toMatch(new RegExp(`^not-found: turns 5000 are not archived .*archived turns: ${turns[0]!.turn}–${turns[1]!.turn}`))
    expect(await failure(readArchive(archive, { fromTurn: 9, toTurn: 3 }))).toMatch(/^invalid-argument: fromTurn 9 is after toTurn 3/)
    expect(await failure(readArchive(archive, { fromTurn: turns[0]!.turn, offset: 10_000_000 }))).toMatch(/^invalid-argument: offset/)
  })
})

describe('backLinks', () => {
  it('extracts turn references, files and tools, excluding the turns being read', () => {
    const text = 'As in turn 48 and 第12轮, we edited packages/palace/src/core/read.ts.\n### Tool call · bash (c9)\n'
    expect(backLinks(text, new Set([12]))).toBe('Back-links (auto-extracted, for reference only): turns 48 · files packages/palace/src/core/read.ts · tools bash')
    expect(backLinks('nothing to see')).toBeUndefined()
  })
})
