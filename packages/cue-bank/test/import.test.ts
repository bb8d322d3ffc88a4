import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { isCueBankError } from '../src/core/errors.js'
import { importCueBankJson } from '../src/core/import.js'
import { openHarness, session, storeEachTest } from './fixtures.js'

const SAMPLE = readFileSync(new URL('./fixtures/reference-cue-bank.json', import.meta.url), 'utf8')

describe('importCueBankJson (the reference data model)', () => {
  const temp = storeEachTest()

  it('imports topics and idioms into the global partition, keeping ids, levels, keywords, counts and dates', async () => {
    const result = await importCueBankJson(temp.store, SAMPLE)
    expect(result).toEqual({ partition: 'global', userId: 'ou_7d8a6e', inserted: { topics: 3, idioms: 2 }, skipped: { topics: 0, idioms: 0 } })
    const h = await openHarness(temp.dir)
    try {
      const cues = h.bank.list({ partitions: ['global'] })
      const task = cues.find((cue) => cue.id === 't-1755222000000-a1')!
      expect(task).toMatchObject({
        level: 'task',
        sessionId: 'import:t-1755222000000-a1',
        refSessions: ['feishu:ou_7d8a6e'],
        hitCount: 3,
        createdAt: Date.parse('2026-08-14T08:00:00.000Z'),
        lastTouchedAt: Date.parse('2026-08-15T09:30:00.000Z'),
        keywords: [{ word: '飞书插件', score: 0.035 }, { word: '插件', score: 0.028 }, { word: '记忆', score: 0.021 }],
        dimensions: { trigger: 'keywords', perspective: 'task', imported: true },
        embedding: null, // no embedding model named: vectors of an unknown model are dropped
      })
      expect(cues.find((cue) => cue.id === 't-1755222000000-a3')).toMatchObject({ createdAt: 1755248400000, lastTouchedAt: 1755248400000, hitCount: 0 })
      expect(h.bank.idioms().map((idiom) => idiom.word)).toEqual(['闭环', '形成闭环'])

      // Imported cues wake workspace sessions (the global partition is read by default) and name their source session.
      const decision = h.bank.observeUserMessage(session('/work/any'), { id: 'm', text: '飞书插件的审批流又卡住了' }, 1)!
      expect(decision.cues.map((c) => c.cue.id)).toEqual(expect.arrayContaining(['t-1755222000000-a1', 't-1755222000000-a2']))
      expect(decision.text).toContain('session: feishu:ou_7d8a6e')
      expect(decision.idioms).toContain('闭环')
    } finally {
      await h.close()
    }
  })

  it('is idempotent and can target a workspace or partition, keeping vectors when their model is named', async () => {
    await importCueBankJson(temp.store, SAMPLE, { workspace: '/work/alpha', embeddingModel: 'BAAI/bge-m3' })
    const again = await importCueBankJson(temp.store, JSON.parse(SAMPLE), { workspace: '/work/alpha', embeddingModel: 'BAAI/bge-m3' })
    expect(again).toMatchObject({ partition: 'workspace:/work/alpha', inserted: { topics: 0, idioms: 0 }, skipped: { topics: 3, idioms: 2 } })
    const user = await importCueBankJson(temp.store, SAMPLE, { partition: 'user:ou_7d8a6e' })
    expect(user.partition).toBe('user:ou_7d8a6e')
    // Same ids, already present: topic ids are global keys, so nothing is duplicated.
    expect(user.inserted.topics).toBe(0)
    const h = await openHarness(temp.dir)
    try {
      const task = (await h.repository.getCue('t-1755222000000-a1'))!
      expect(task.partition).toBe('workspace:/work/alpha')
      expect(task.embeddingModel).toBe('BAAI/bge-m3')
      expect([...task.embedding!]).toEqual([0, 0, 0, 1, expect.closeTo(0.05, 5)])
    } finally {
      await h.close()
    }
  })

  it('rejects a file that is not the documented model, naming the field, and writes nothing', async () => {
    const broken = JSON.parse(SAMPLE)
    broken.topics[2].keywords[1].score = 'high'
    const attempt = (json: unknown, options = {}) =>
      importCueBankJson(temp.store, json, options).then(
        () => {
          throw new Error('expected a failure')
        },
        (error: unknown) => {
          expect(isCueBankError(error, 'invalid-import')).toBe(true)
          return (error as { path: string }).path
        },
      )
    expect(await attempt(broken)).toBe('topics[2].keywords[1].score')
    expect(await attempt('{ not json')).toBe('')
    expect(await attempt({ ...JSON.parse(SAMPLE), version: 2 })).toBe('version')
    expect(await attempt({ version: 1, topics: [{ id: 'x', level: 'episode', keywords: [], summary: 's' }] })).toBe('topics[0].level')
    expect(await attempt({ version: 1, topics: [{ id: 'x', level: 'task', keywords: [], summary: 's', createdAt: 'yesterday' }] })).toBe('topics[0].createdAt')
    expect(await attempt({ version: 1, idiosyncrasies: [{ word: '', score: 1 }] })).toBe('idiosyncrasies[0].word')
    const dup = JSON.parse(SAMPLE)
    dup.topics[1].id = dup.topics[0].id
    expect(await attempt(dup)).toBe('topics')
    expect(await attempt(SAMPLE, { partition: 'team' })).toBe('options.partition')
    const h = await openHarness(temp.dir)
    try {
      expect(h.bank.list()).toEqual([])
      expect(h.bank.idioms()).toEqual([])
    } finally {
      await h.close()
    }
  })
})
