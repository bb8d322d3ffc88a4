/**
 * The cue bank on PostgreSQL: the wake's synchronous reads answer from the repository's view,
 * which catches up with other processes' writes when the store's change feed hears of their
 * commit (PostgreSQL's notification), or by polling `cue_bank_revisions` as the fallback.
 */
import { execFile } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it, vi } from 'vitest'
import { backends } from '../../store/test/contract/backends.js'
import { tempDir } from '../../store/test/helpers.js'
import { CueBank } from '../src/core/cue-bank.js'
import { resolveCueBankOptions } from '../src/core/options.js'
import { openCueRepository } from '../src/core/store-cue-repository.js'
import { CueBankService } from '../src/service.js'
import { Clock, cueFixture, DAY, session, T0 } from './fixtures.js'

const run = promisify(execFile)
const postgres = backends.find((backend) => backend.name === 'postgres')!
/** What a second process imports: the built package, as a user's host loads it. */
const BUILT = fileURLToPath(new URL('../dist/index.js', import.meta.url))
const STORE_BUILT = fileURLToPath(new URL('../../store/dist/index.js', import.meta.url))

describe('the cue bank on PostgreSQL', () => {
  it('a second store handle sees what the first wrote once its view catches up: new cues, hits, evictions, idioms', async () => {
    const store = await postgres.open()
    const other = await postgres.reopen(store)
    // Neither polls nor follows notifications: only refresh() moves the reader's view here.
    const writer = await openCueRepository(store, { pollMs: 0, follow: false })
    const reader = await openCueRepository(other, { pollMs: 0, follow: false })
    try {
      await writer.insertCue(cueFixture('a', 'workspace:/w', { keywords: [{ word: '数据库', score: 1 }] }))
      await writer.insertCue(cueFixture('b', 'workspace:/w'))
      await writer.upsertIdioms('workspace:/w', [{ word: '闭环', score: 0.5, turns: 5, lastUsed: T0 }])
      // The writer's own view caught up with its commits; the reader's waits for its next refresh.
      expect(writer.listCues(['workspace:/w']).map((cue) => cue.id)).toEqual(['a', 'b'])
      expect(reader.listCues(['workspace:/w'])).toEqual([])
      await reader.refresh()
      expect(reader.listCues(['workspace:/w']).map((cue) => [cue.id, cue.keywords])).toEqual([
        ['a', [{ word: '数据库', score: 1 }]],
        ['b', [{ word: 'b', score: 1 }]],
      ])
      expect(reader.listIdioms(['workspace:/w']).map((idiom) => idiom.word)).toEqual(['闭环'])

      await writer.touchCues(['b'], T0 + 1)
      expect(await writer.evictCues('workspace:/w', 1)).toEqual(['a'])
      await reader.refresh()
      expect(reader.listCues(['workspace:/w']).map((cue) => [cue.id, cue.hitCount])).toEqual([['b', 1]])
      // Another partition's write reloads only that partition; the others stay as they were.
      await writer.insertCue(cueFixture('g', 'global'))
      await reader.refresh()
      expect(reader.listCues(undefined).map((cue) => cue.id)).toEqual(['b', 'g'])
    } finally {
      writer.close()
      reader.close()
    }
  })

  it('ctx.memoryCueBank.importJson shows the imported cues at once, without waiting for the poll', async () => {
    const store = await postgres.open()
    const repository = await openCueRepository(store, { pollMs: 0 })
    // The reference file's cues were touched on 2026-08-15: wake on that day, before they decay.
    const bank = new CueBank({ repository, options: resolveCueBankOptions({}, {}), now: () => T0 })
    try {
      const service = new CueBankService(bank, store)
      const result = await service.importJson(readFileSync(new URL('./fixtures/reference-cue-bank.json', import.meta.url), 'utf8'))
      expect(result.inserted).toEqual({ topics: 3, idioms: 2 })
      expect(service.list({ partitions: ['global'] })).toHaveLength(3)
      expect(service.idioms().map((idiom) => idiom.word)).toEqual(['闭环', '形成闭环'])
      const decision = bank.observeUserMessage(session('/work/any'), { id: 'm', text: '飞书插件的审批流又卡住了' }, 1)!
      expect(decision.cues.map((ranked) => ranked.cue.id)).toEqual(expect.arrayContaining(['t-1755222000000-a1', 't-1755222000000-a2']))
    } finally {
      await bank.close()
    }
  })

  it('wakes, from the view and synchronously, a CJK cue another process wrote: the commit\'s notification reloads the view, no poll', async () => {
    if (!existsSync(BUILT) || !existsSync(STORE_BUILT)) throw new Error('build the packages first: npm run build (the second process loads dist/)')
    const store = await postgres.open()
    const clock = new Clock(T0 + DAY)
    // No poll: only the notification of the other process's commit can bring its cues.
    const repository = await openCueRepository(store, { pollMs: 0 })
    const bank = new CueBank({ repository, options: resolveCueBankOptions({}, {}), now: clock.now })
    try {
      // Another DSH process records a turn through the built package on the same database.
      const script = join(tempDir(), 'other-host.mjs')
      writeFileSync(
        script,
        `import { openStore } from ${JSON.stringify(pathToFileURL(STORE_BUILT).href)}
import { CueBank, openCueRepository, resolveCueBankOptions } from ${JSON.stringify(pathToFileURL(BUILT).href)}
const store = await openStore(JSON.parse(process.argv[2]))
const repository = await openCueRepository(store, { pollMs: 0 })
const bank = new CueBank({ repository, options: resolveCueBankOptions({}, {}), now: () => ${T0}, hooks: { onError: (error, where) => console.error(where, error) } })
const written = await bank.recordTurn({ id: 'other-host-session', workspace: '/work/alpha' }, {
  turn: 1,
  user: [{ id: 'u1', text: '我们决定把主数据库从 MySQL 迁移到 PostgreSQL，索引要重建' }],
  assistant: [{ id: 'a1', text: '好的，PostgreSQL 迁移计划：先导出 schema，再重建索引。' }],
})
await bank.close()
await store.close()
console.log(JSON.stringify(written.cueIds))
`,
      )
      const { stdout } = await run(process.execPath, [script, JSON.stringify(postgres.location(store))], { timeout: 60_000 })
      const written = JSON.parse(stdout.trim()) as string[]
      expect(written).toHaveLength(2)
      // No explicit refresh and no poll: the notification brings the other host's cues into the view.
      await vi.waitFor(() => expect(bank.list({ workspace: '/work/alpha' }).map((cue) => cue.id).sort()).toEqual([...written].sort()), { timeout: 10_000, interval: 50 })

      const here = session('/work/alpha')
      const decision = bank.observeUserMessage(here, { id: 'm1', text: 'PostgreSQL 主数据库迁移之后索引还要重建吗？' }, 1)!
      expect(decision.via).toBe('keyword')
      expect(decision.cues.map((ranked) => ranked.cue.sessionId)).toEqual(['other-host-session'])
      expect(bank.injection(here.id)).toContain('我们决定把主数据库从 MySQL 迁移到 PostgreSQL')
      // The hit is written back, and the view shows it at once.
      await bank.settle(here.id)
      await bank.whenIdle()
      const woken = decision.cues[0]!.cue.id
      expect(bank.list({ workspace: '/work/alpha' }).find((cue) => cue.id === woken)).toMatchObject({ hitCount: 1, lastTouchedAt: T0 + DAY })
    } finally {
      await bank.close()
    }
  }, 90_000)
})
