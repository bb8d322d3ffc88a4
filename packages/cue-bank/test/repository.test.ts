import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import { openMemoryStore, schemaDrift } from '@dsh-memory/store'
import { getTableColumns } from 'drizzle-orm'
import { getTableConfig as pgTableConfig } from 'drizzle-orm/pg-core'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
// The store's contract harness: every test below runs on a real SQLite file and on a real PostgreSQL schema.
import { backends } from '../../store/test/contract/backends.js'
import { cueBankMigrations } from '../src/migrations.js'
import { cueBankPgSchema } from '../src/core/pg-schema.js'
import { cueBankSchema } from '../src/core/schema.js'
import { openCueRepository, type CueRepository } from '../src/core/store-cue-repository.js'
import { cueFixture, T0, tempDir } from './fixtures.js'

const cue = cueFixture
type Store = Awaited<ReturnType<(typeof backends)[number]['open']>>

describe('the cue tables on both backends', () => {
  it('have the same keys and column property names on PostgreSQL as on SQLite (one set of queries runs on both)', () => {
    expect(Object.keys(cueBankPgSchema)).toEqual(Object.keys(cueBankSchema))
    for (const key of Object.keys(cueBankSchema) as (keyof typeof cueBankSchema)[]) {
      expect(Object.keys(getTableColumns(cueBankPgSchema[key]))).toEqual(Object.keys(getTableColumns(cueBankSchema[key])))
    }
  })
})

describe.each(backends)('the cue repository on the shared store ($name)', (backend) => {
  let store: Store
  let repository: CueRepository

  beforeEach(async () => {
    store = await backend.open()
    // No poll: a test catches the view up explicitly (refresh) or through its own writes.
    repository = await openCueRepository(store, { pollMs: 0 })
  })
  afterEach(() => repository.close())

  it('creates its tables through the store migration runner, owner cue-bank, as the drizzle schema describes them', async () => {
    const applied = await store.meta.migrations()
    expect(applied.filter((m) => m.owner === 'cue-bank').map((m) => [m.version, m.name])).toEqual([[1, 'init']])
    // Opening again is a no-op (checksums match).
    const again = await openCueRepository(store, { pollMs: 0 })
    again.close()
    expect(again.dialect).toBe(backend.name === 'sqlite' ? 'sqlite' : 'postgresql')
    if (backend.name === 'sqlite') {
      // Read through the seam: the same connection the repository uses.
      const tables = await store.tables({ migrations: cueBankMigrations() })
      expect(await tables.read((db) => schemaDrift(db, cueBankSchema))).toEqual([])
      return
    }
    for (const table of Object.values(cueBankPgSchema)) {
      const config = pgTableConfig(table)
      expect(await backend.columns(store, config.name)).toEqual(config.columns.map((column) => column.name))
      const indexes = await backend.sql(store, `SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = '${config.name}'`)
      const names = indexes.map((row) => String(row.indexname))
      for (const index of config.indexes) expect(names).toContain(index.config.name)
    }
  })

  it('round-trips a cue with CJK keywords, dimensions, sources, timestamps and its vector', async () => {
    const vector = Float32Array.from([0.25, -1, 3.5])
    const keywords = [{ word: '数据库迁移', score: 0.5 }, { word: 'データベース', score: 0.3 }, { word: 'postgresql', score: 0.2 }]
    expect(await repository.insertCue(cue('a', 'workspace:/w', { embedding: vector, embeddingModel: 'm', hitCount: 2, keywords, summary: '主数据库从 MySQL 迁到 PostgreSQL' }))).toBe(true)
    expect(await repository.insertCue(cue('a', 'workspace:/w'))).toBe(false)
    const back = (await repository.getCue('a'))!
    expect(back).toMatchObject({ partition: 'workspace:/w', keywords, summary: '主数据库从 MySQL 迁到 PostgreSQL', sourceMessageIds: ['m1', 'm2'], hitCount: 2, embeddingModel: 'm', createdAt: T0 })
    expect(back.dimensions).toEqual({ trigger: 'keywords', perspective: 'conversation', language: 'en' })
    expect([...back.embedding!]).toEqual([0.25, -1, 3.5])
    // The synchronous read (the wake's) sees the committed write too.
    expect(repository.listCues(['workspace:/w'])).toEqual([back])
    // One conversation cue per (partition, session, turn), one task cue per (partition, session).
    expect(await repository.insertCue(cue('dup', 'workspace:/w', { sessionId: 's-a' }))).toBe(false)
    expect(await repository.insertCue(cue('t1', 'workspace:/w', { level: 'task', sessionId: 'S' }))).toBe(true)
    expect(await repository.insertCue(cue('t2', 'workspace:/w', { level: 'task', sessionId: 'S' }))).toBe(false)
    expect((await repository.taskCue('workspace:/w', 'S'))?.id).toBe('t1')
  })

  it('lists by partition only, most recently touched first, and finds a session’s latest conversation cue', async () => {
    await repository.insertCue(cue('a', 'workspace:/alpha', { sessionId: 'S', turn: 1 }))
    await repository.insertCue(cue('a2', 'workspace:/alpha', { sessionId: 'S', turn: 2, lastTouchedAt: T0 + 1 }))
    await repository.insertCue(cue('b', 'workspace:/beta'))
    await repository.insertCue(cue('g', 'global'))
    expect(repository.listCues(['workspace:/alpha']).map((c) => c.id)).toEqual(['a2', 'a'])
    expect(repository.listCues(['workspace:/alpha', 'global']).map((c) => c.id)).toEqual(['a2', 'a', 'g'])
    expect(repository.listCues(undefined)).toHaveLength(4)
    expect(repository.listCues([])).toEqual([])
    expect(repository.latestConversationCue('S')?.id).toBe('a2')
  })

  it('evicts the least recently touched cues beyond the cap, per partition', async () => {
    for (let i = 0; i < 5; i++) await repository.insertCue(cue(`c${i}`, 'p', { lastTouchedAt: T0 + i * 1000 }))
    await repository.insertCue(cue('other', 'q', { lastTouchedAt: T0 - 10_000 }))
    expect(await repository.touchCues(['c0', 'missing'], T0 + 10_000)).toBe(1) // c0 was woken: now the most recent
    expect((await repository.evictCues('p', 3)).sort()).toEqual(['c1', 'c2'])
    expect(repository.listCues(['p']).map((c) => c.id)).toEqual(['c0', 'c4', 'c3'])
    expect(await repository.getCue('other')).toBeDefined()
    expect((await repository.getCue('c0'))!.hitCount).toBe(1)
    // A touch never moves a cue back in time.
    await repository.touchCues(['c0'], T0)
    expect((await repository.getCue('c0'))!).toMatchObject({ hitCount: 2, lastTouchedAt: T0 + 10_000 })
  })

  it('deletes cues untouched since a cutoff (decay pruning) and finds cues lacking a vector of a model', async () => {
    await repository.insertCue(cue('old', 'p', { lastTouchedAt: T0 - 1 }))
    await repository.insertCue(cue('new', 'p', { lastTouchedAt: T0 }))
    await repository.insertCue(cue('vec', 'p', { lastTouchedAt: T0 - 2, embedding: Float32Array.from([1]), embeddingModel: 'm' }))
    expect((await repository.cuesWithoutEmbedding(['p'], 'm', 10)).map((c) => c.id)).toEqual(['new', 'old'])
    expect((await repository.cuesWithoutEmbedding(['p'], 'other-model', 10)).map((c) => c.id)).toEqual(['new', 'old', 'vec'])
    expect((await repository.deleteUntouchedSince('p', T0)).sort()).toEqual(['old', 'vec'])
    expect(repository.listCues(['p']).map((c) => c.id)).toEqual(['new'])
  })

  it('keeps CJK idioms with first/last seen and an LRU cap', async () => {
    await repository.upsertIdioms('p', [{ word: '闭环', score: 0.3, turns: 3, lastUsed: T0 }])
    await repository.upsertIdioms('p', [
      { word: '闭环', score: 0.5, turns: 5, lastUsed: T0 + 1000 },
      { word: '抓手', score: 0.2, turns: 2, lastUsed: T0 + 1000 },
    ])
    await repository.upsertIdioms('p', [{ word: '赋能', score: 0.2, turns: 2, lastUsed: T0 + 2000 }])
    const idioms = repository.listIdioms(['p'])
    expect(idioms.map((i) => i.word)).toEqual(['闭环', '赋能', '抓手'])
    expect(idioms[0]).toMatchObject({ score: 0.5, turns: 5, firstSeen: T0, lastSeen: T0 + 1000 })
    // 抓手 and 闭环 were last seen together; the weaker one goes.
    expect(await repository.evictIdioms('p', 2)).toBe(1)
    expect(repository.listIdioms(['p']).map((i) => i.word)).toEqual(['闭环', '赋能'])
    expect(await repository.insertIdiom({ partition: 'p', word: '闭环', score: 1, turns: 1, firstSeen: T0, lastSeen: T0 })).toBe(false)
  })

  it('keeps a bounded idiom window of user turns', async () => {
    for (let turn = 1; turn <= 5; turn++) expect(await repository.addUserTurn('p', 'S', turn, 'S#1', [`w${turn}`, '抓手'], T0 + turn)).toBe(true)
    expect(await repository.addUserTurn('p', 'S', 5, 'S#1', ['again'], T0 + 9)).toBe(false)
    expect(await repository.pruneUserTurns('p', 3)).toBe(2)
    expect((await repository.recentUserTurns('p', 10)).map((t) => t.terms)).toEqual([
      ['w5', '抓手'],
      ['w4', '抓手'],
      ['w3', '抓手'],
    ])
  })

  it('makes a transaction one unit: a failure inside writes nothing', async () => {
    const failure = await repository
      .transaction(async (writer) => {
        await writer.insertCue(cue('kept?', 'p'))
        throw new Error('half way')
      })
      .catch((error: unknown) => error)
    expect((failure as Error).message).toBe('half way')
    expect(await repository.getCue('kept?')).toBeUndefined()
    expect(repository.listCues(['p'])).toEqual([])
  })

  it('waits for another caller’s open store transaction, then writes', async () => {
    let release!: () => void
    const open = new Promise<void>((resolve) => (release = resolve))
    const order: string[] = []
    // The store takes its connection for this transaction before transaction() returns.
    const held = store.transaction(async () => {
      await open
      order.push('store transaction')
    })
    const write = repository.insertCue(cue('waiting', 'p')).then((inserted) => {
      order.push('cue write')
      return inserted
    })
    release()
    await held
    expect(await write).toBe(true)
    expect(order).toEqual(['store transaction', 'cue write'])
  })
})

describe('the cue repository on a SQLite file', () => {
  let temp: ReturnType<typeof tempDir>
  beforeEach(() => {
    temp = tempDir()
  })
  afterEach(() => temp.remove())

  it('works on an in-memory store: the cue tables live on the store connection itself', async () => {
    const memory = openMemoryStore({ path: ':memory:' })
    try {
      const onMemory = await openCueRepository(memory)
      expect(await onMemory.insertCue(cue('m', 'p'))).toBe(true)
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
      expect((await upgraded.recentUserTurns('p:/work/app', 5)).map((turn) => turn.terms)).toEqual([['缓存']])
      expect(await upgraded.touchCues(['c-1'], T0)).toBe(1)
    } finally {
      await old.close()
    }
  })
})
