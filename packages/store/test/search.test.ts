/**
 * Search on SQLite only: the index file of versions before FTS5, and SQLite's locking. The
 * search contract (both backends) is `contract/search.test.ts`.
 */
import { existsSync, writeFileSync } from 'node:fs'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { openTemp, reopen } from './helpers.ts'

const memoryIds = (hits: { memory: { id: string } }[]) => hits.map((h) => h.memory.id)

describe('search on SQLite', () => {
  it('keeps no index file, and deletes the search-index file an older version left behind', async () => {
    const { store, path } = openTemp()
    const memory = await store.memories.add({ kind: 'fact', text: 'Vitest runs the unit tests', scope: 'global' })
    await store.close()
    expect(existsSync(`${path}.search-index`)).toBe(false)
    writeFileSync(`${path}.search-index`, '{"type":"dsh-memory-search-index"}\n{}')
    const raw = new Database(path)
    raw.prepare(`INSERT INTO store_meta (key, value, updated_at) VALUES ('store.search-index', '{}', 0)`).run()
    raw.close()
    const next = reopen(path)
    expect(existsSync(`${path}.search-index`)).toBe(false)
    expect(memoryIds(await next.search.memories('vitest'))).toEqual([memory.id])
    // A read-only store never deletes anything.
    await next.close()
    writeFileSync(`${path}.search-index`, 'old')
    const readonly = reopen(path, { readonly: true })
    expect(existsSync(`${path}.search-index`)).toBe(true)
    expect(memoryIds(await readonly.search.memories('vitest'))).toEqual([memory.id])
  })

  it('searches while another process holds the write lock', async () => {
    const { store, path } = openTemp({ busyTimeoutMs: 10_000 })
    const memory = await store.memories.add({ kind: 'fact', text: 'Lock holders never block readers', scope: 'global' })
    const other = new Database(path)
    other.exec('BEGIN IMMEDIATE')
    try {
      // The lock is held until after this line: a search that waited for it would end in a busy
      // error after 10 s, not in a result.
      expect(memoryIds(await store.search.memories('readers'))).toEqual([memory.id])
    } finally {
      other.exec('ROLLBACK')
      other.close()
    }
  })

  it('works on an in-memory database', async () => {
    const { store } = openTemp({ path: ':memory:' })
    const memory = await store.memories.add({ kind: 'fact', text: '喜欢喝乌龙茶', scope: 'global' })
    expect(memoryIds(await store.search.memories('乌龙茶'))).toEqual([memory.id])
  })
})
