import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import { openMemoryStore, schemaDrift } from '@dsh-memory/store'
import { sql } from 'drizzle-orm'
import { cueBankMigrations } from '../src/migrations.js'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { isCueBankError } from '../src/core/errors.js'
import { cueBankSchema } from '../src/core/schema.js'
import { openCueRepository, type CueRepository } from '../src/core/store-cue-repository.js'
import { cueFixture, T0, tempDir } from './fixtures.js'

const cue = cueFixture

describe('the cue repository on the shared store', () => {
  let temp: ReturnType<typeof tempDir>
  let store: ReturnType<typeof openMemoryStore>
  let repository: CueRepository

  beforeEach(async () => {
    temp = tempDir()
    store = openMemoryStore({ path: join(temp.dir, 'memory.db') })
    repository = await openCueRepository(store)
  })
  afterEach(async () => {
    repository.close()
    await store.close()
    temp.remove()
  })

  it('creates its tables through the store migration runner, owner cue-bank', async () => {
    const applied = await store.meta.migrations()
    expect(applied.filter((m) => m.owner === 'cue-bank').map((m) => [m.version, m.name])).toEqual([[1, 'init']])
    // Opening again is a no-op (checksums match).
    const again = await openCueRepository(store)
    again.close()
    // Read through the seam: the same connection the repository uses.
    const tables = await store.tables({ migrations: cueBankMigrations() })
    const names = await tables.read((db) =>
      db.all<{ name: string }>(sql`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'cue_bank_%' ORDER BY name`),
    )
    expect(names.map((t) => t.name)).toEqual(['cue_bank_idioms', 'cue_bank_topics', 'cue_bank_user_turns'])
    // The drizzle schema the queries are typed by describes exactly what the migrations created.
    expect(await tables.read((db) => schemaDrift(db, cueBankSchema))).toEqual([])
  })

  it('round-trips a cue with keywords, dimensions, sources, timestamps and its vector', () => {
    const vector = Float32Array.from([0.25, -1, 3.5])
    expect(repository.insertCue(cue('a', 'workspace:/w', { embedding: vector, embeddingModel: 'm', hitCount: 2 }))).toBe(true)
    expect(repository.insertCue(cue('a', 'workspace:/w'))).toBe(false)
    const back = repository.getCue('a')!
    expect(back).toMatchObject({ partition: 'workspace:/w', keywords: [{ word: 'a', score: 1 }], sourceMessageIds: ['m1', 'm2'], hitCount: 2, embeddingModel: 'm' })
    expect(back.dimensions).toEqual({ trigger: 'keywords', perspective: 'conversation', language: 'en' })
    expect([...back.embedding!]).toEqual([0.25, -1, 3.5])
    // One conversation cue per (partition, session, turn), one task cue per (partition, session).
    expect(repository.insertCue(cue('dup', 'workspace:/w', { sessionId: 's-a' }))).toBe(false)
    expect(repository.insertCue(cue('t1', 'workspace:/w', { level: 'task', sessionId: 'S' }))).toBe(true)
    expect(repository.insertCue(cue('t2', 'workspace:/w', { level: 'task', sessionId: 'S' }))).toBe(false)
    expect(repository.taskCue('workspace:/w', 'S')?.id).toBe('t1')
  })

  it('lists by partition only', () => {
    repository.insertCue(cue('a', 'workspace:/alpha'))
    repository.insertCue(cue('b', 'workspace:/beta'))
    repository.insertCue(cue('g', 'global'))
    expect(repository.listCues(['workspace:/alpha']).map((c) => c.id)).toEqual(['a'])
    expect(repository.listCues(['workspace:/alpha', 'global']).map((c) => c.id).sort()).toEqual(['a', 'g'])
    expect(repository.listCues([])).toEqual([])
  })

  it('evicts the least recently touched cues beyond the cap, per partition', () => {
    for (let i = 0; i < 5; i++) repository.insertCue(cue(`c${i}`, 'p', { lastTouchedAt: T0 + i * 1000 }))
    repository.insertCue(cue('other', 'q', { lastTouchedAt: T0 - 10_000 }))
    repository.touchCues(['c0'], T0 + 10_000) // c0 was woken: now the most recent
    expect(repository.evictCues('p', 3).sort()).toEqual(['c1', 'c2'])
    expect(repository.listCues(['p']).map((c) => c.id)).toEqual(['c0', 'c4', 'c3'])
    expect(repository.getCue('other')).toBeDefined()
    expect(repository.getCue('c0')!.hitCount).toBe(1)
  })

  it('deletes cues untouched since a cutoff (decay pruning)', () => {
    repository.insertCue(cue('old', 'p', { lastTouchedAt: T0 - 1 }))
    repository.insertCue(cue('new', 'p', { lastTouchedAt: T0 }))
    expect(repository.deleteUntouchedSince('p', T0)).toEqual(['old'])
    expect(repository.listCues(['p']).map((c) => c.id)).toEqual(['new'])
  })

  it('keeps idioms with first/last seen and an LRU cap', () => {
    repository.upsertIdioms('p', [{ word: '闭环', score: 0.3, turns: 3, lastUsed: T0 }])
    repository.upsertIdioms('p', [{ word: '闭环', score: 0.5, turns: 5, lastUsed: T0 + 1000 }, { word: '抓手', score: 0.2, turns: 2, lastUsed: T0 + 1000 }])
    repository.upsertIdioms('p', [{ word: '赋能', score: 0.2, turns: 2, lastUsed: T0 + 2000 }])
    const idioms = repository.listIdioms(['p'])
    expect(idioms.find((i) => i.word === '闭环')).toMatchObject({ score: 0.5, turns: 5, firstSeen: T0, lastSeen: T0 + 1000 })
    // 抓手 and 闭环 were last seen together; the weaker one goes.
    expect(repository.evictIdioms('p', 2)).toBe(1)
    expect(repository.listIdioms(['p']).map((i) => i.word).sort()).toEqual(['赋能', '闭环'].sort())
  })

  it('keeps a bounded idiom window of user turns', () => {
    for (let turn = 1; turn <= 5; turn++) expect(repository.addUserTurn('p', 'S', turn, 'S#1', [`w${turn}`], T0 + turn)).toBe(true)
    expect(repository.addUserTurn('p', 'S', 5, 'S#1', ['again'], T0 + 9)).toBe(false)
    expect(repository.pruneUserTurns('p', 3)).toBe(2)
    expect(repository.recentUserTurns('p', 10).map((t) => t.terms[0])).toEqual(['w5', 'w4', 'w3'])
  })

  it('fails fast with code busy while another connection holds the write lock, and writes once it is free', async () => {
    // A second store on the same file is a second connection, as another DSH process would be.
    const other = openMemoryStore({ path: store.path })
    try {
      await other.transaction(async (tx) => {
        await tx.meta.set('holder', 'other')
        let error: unknown
        try {
          repository.insertCue(cue('blocked', 'p'))
        } catch (caught) {
          error = caught
        }
        expect(isCueBankError(error, 'busy')).toBe(true)
      })
    } finally {
      await other.close()
    }
    expect(repository.insertCue(cue('blocked', 'p'))).toBe(true)
  })

  it('fails fast with code busy while another caller of the same store holds its transaction open', async () => {
    let release!: () => void
    const open = new Promise<void>((resolve) => (release = resolve))
    // The store takes its connection for this transaction before transaction() returns.
    const held = store.transaction(() => open)
    let error: unknown
    try {
      repository.insertCue(cue('waiting', 'p'))
    } catch (caught) {
      error = caught
    }
    release()
    await held
    expect(isCueBankError(error, 'busy')).toBe(true)
    expect(repository.insertCue(cue('waiting', 'p'))).toBe(true)
  })

  it('works on an in-memory store: the cue tables live on the store connection itself', async () => {
    const memory = openMemoryStore({ path: ':memory:' })
    try {
      const onMemory = await openCueRepository(memory)
      expect(onMemory.insertCue(cue('m', 'p'))).toBe(true)
      expect(onMemory.listCues(['p']).map((c) => c.id)).toEqual(['m'])
    } finally {
      await memory.close()
    }
  })

  it('finds the cues, idioms and idiom window of a data dir written before the store seam', async () => {
    // Written by the pre-seam code (cue bank on its own connection); see the tree package's fixture generator.
    const dir = join(temp.dir, 'pre-seam')
    mkdirSync(dir)
    const path = join(dir, 'memory.db')
    writeFileSync(path, gunzipSync(readFileSync(join(import.meta.dirname, '..', '..', 'tree', 'test', 'fixtures', 'pre-seam-memory.db.gz'))))
    const old = openMemoryStore({ path })
    try {
      const upgraded = await openCueRepository(old)
      const [only] = upgraded.listCues(undefined)
      expect(only).toMatchObject({ id: 'c-1', summary: '缓存目录', hitCount: 3, keywords: [{ word: '缓存', score: 1 }], embeddingModel: 'm' })
      expect([...only!.embedding!]).toEqual([0.5, 0.25])
      expect(upgraded.listIdioms(['p:/work/app']).map((idiom) => idiom.word)).toEqual(['缓存'])
      expect(upgraded.recentUserTurns('p:/work/app', 5).map((turn) => turn.terms)).toEqual([['缓存']])
      expect(upgraded.touchCues(['c-1'], T0)).toBe(1)
    } finally {
      await old.close()
    }
  })
})
