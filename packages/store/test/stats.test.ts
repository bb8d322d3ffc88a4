import { describe, expect, it } from 'vitest'
import { openStoreMaintenance } from '../src/index.ts'
import { fakeClock, onCleanup, openTemp } from './helpers.ts'
import { withRawDatabase } from './support/raw-database.ts'
import { seedTwoDays } from './support/seed.ts'

/** The contract suite's two-day store (`contract/stats.test.ts`), on a SQLite file. */
async function seeded() {
  const clock = fakeClock(Date.UTC(2026, 10, 30, 12))
  const opened = openTemp({ now: clock.now })
  await seedTwoDays(opened.store, clock)
  return opened
}

describe('openStoreMaintenance', () => {
  it('finds rows written behind the store’s back and repairs them only when opened for repair', async () => {
    const { store, path } = await seeded()
    const [memory] = await store.memories.list({ kind: 'preference' })
    const [scene] = await store.scenes.list()
    await store.close()
    withRawDatabase(path, (db) => {
      db.pragma('foreign_keys = OFF')
      db.prepare("INSERT INTO store_messages (id, conversation_id, host_message_id, role, text, turn, seq, created_at) VALUES ('orphan', 'gone', 'hx', 'user', '孤立', 0, 1, 0)").run()
      db.prepare("UPDATE store_memories SET superseded_by = 'never-was' WHERE id = ?").run(memory!.id)
      db.prepare('UPDATE store_scenes SET memory_ids = ? WHERE id = ?').run(JSON.stringify([memory!.id, 'deleted-memory']), scene!.id)
      db.prepare("INSERT INTO store_meta (key, value, updated_at) VALUES ('demo.conversation.gone', '{}', 0), ('demo.conversation.s1', '{}', 0)").run()
    })

    const check = openStoreMaintenance(path)
    onCleanup(() => check.close())
    expect(check.integrityCheck()).toEqual(['ok'])
    const violations = check.foreignKeyViolations()
    expect(violations.map((v) => [v.table, v.column, v.nullable, v.id]).sort()).toEqual([
      ['store_memories', 'superseded_by', true, memory!.id],
      ['store_messages', 'conversation_id', false, 'orphan'],
    ])
    expect(check.sceneOrphans()).toEqual([{ sceneId: scene!.id, missing: ['deleted-memory'], kept: [memory!.id] }])
    expect(check.metaKeysOfMissingConversations('demo.conversation.')).toEqual(['demo.conversation.gone'])
    expect(check.documentCounts()).toEqual({ messages: 5, memories: 5 })
    // Read-only unless asked: nothing can be repaired through this handle.
    expect(() => check.repairForeignKeys(violations)).toThrow(expect.objectContaining({ code: 'readonly' }))
    expect(() => check.reindex()).toThrow(expect.objectContaining({ code: 'readonly' }))

    const repair = openStoreMaintenance(path, { repair: true })
    onCleanup(() => repair.close())
    expect(repair.repairForeignKeys(violations)).toEqual({ cleared: 1, deleted: 1 })
    repair.reindex()
    expect(repair.foreignKeyViolations()).toEqual([])
    expect(repair.integrityCheck()).toEqual(['ok'])
  })

  it('says which file is missing', async () => {
    const { dir } = openTemp()
    expect(() => openStoreMaintenance(`${dir}/none.db`)).toThrow(expect.objectContaining({ code: 'not-found' }))
  })
})
