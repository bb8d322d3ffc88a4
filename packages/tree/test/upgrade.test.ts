import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import { openMemoryStore } from '@dsh-memory/store'
import { describe, expect, it } from 'vitest'
import { openStoreTreeRepository } from '../src/core/store-repository.js'
import { openTestTree, tempDirEachTest } from './helpers.js'

/**
 * A data dir written by the code before the store seam (tree on its own second SQLite
 * connection); `fixtures/pre-seam-generate.mjs` wrote it.
 */
function writePreSeamDataDir(dir: string): string {
  mkdirSync(dir, { recursive: true })
  const path = join(dir, 'memory.db')
  writeFileSync(path, gunzipSync(readFileSync(join(import.meta.dirname, 'fixtures', 'pre-seam-memory.db.gz'))))
  return path
}

describe('a data dir written before the store seam', () => {
  const temp = tempDirEachTest('tree-upgrade')

  it('opens in place: the tree finds its projects, items, branches, turns, chat and settings', async () => {
    writePreSeamDataDir(temp.dir)
    const opened = await openTestTree(temp.dir)
    try {
      const caller = { workspace: '/work/app', sessionId: 'after-upgrade', source: 'user' }
      const project = (await opened.tree.resolveProject(caller, { create: false }))!
      expect(project.name).toBe('发布计划')
      const repository = opened.tree.repository
      expect((await repository.listItems(project.id)).map((item) => [item.kind, item.text])).toEqual([
        ['decision', '缓存放在 /var/cache'],
        ['question', 'リリースノートは誰が書く？'],
      ])
      const [branch] = await repository.listBranches(project.id)
      expect(branch).toMatchObject({ title: 'try sqlite wal', status: 'active', eventCount: 2 })
      expect((await repository.branchEvents(branch!.id)).map((event) => event.text)).toEqual(['try sqlite wal', 'WAL works across processes'])
      expect((await repository.recentTurns(project.id, { limit: 5 })).map((turn) => turn.text)).toEqual(['今天先做缓存'])
      expect((await repository.listChat('/work/app', 5)).map((entry) => entry.text)).toEqual(['午饭吃什么'])
      expect(await repository.getSetting('projection.version')).toBe('1')
      // And it keeps writing on the store's connection.
      await opened.tree.note({ kind: 'outcome', text: '升级后继续写入' }, caller)
      expect((await repository.listItems(project.id)).map((item) => item.seq)).toEqual([1, 2, 3])
      // The store's own rows of the old dir are untouched.
      expect((await opened.store!.messages.list({ conversationId: 'conv-1' })).map((m) => m.text)).toEqual(['把缓存目录改到 /var/cache'])
    } finally {
      await opened.close()
    }
  })

  it('runs on an in-memory store too: there is no second connection any more', async () => {
    const store = openMemoryStore({ path: ':memory:' })
    try {
      const repository = await openStoreTreeRepository(store)
      const { project, created } = await repository.ensureProject({ name: 'in memory', workspace: '/w', now: 1 })
      expect(created).toBe(true)
      expect((await repository.projectForWorkspace('/w/sub'))?.id).toBe(project.id)
    } finally {
      await store.close()
    }
  })
})
