import { describe, expect, it } from 'vitest'
import { openStoreMaintenance } from '../src/index.ts'
import { fakeClock, onCleanup, openTemp, rejectionOf, reopen } from './helpers.ts'
import { withRawDatabase } from './support/raw-database.ts'

const DAY = 86_400_000
const WS_SHOP = '/home/ユーザー/店舗'
const WS_BLOG = '/srv/博客'

/** A small store spread over two days and two workspaces (CJK paths and text). */
async function seeded() {
  const clock = fakeClock(Date.UTC(2026, 10, 30, 12))
  const opened = openTemp({ now: clock.now })
  const { store } = opened
  await store.conversations.ensure({ id: 's1', workspace: WS_SHOP })
  await store.conversations.ensure({ id: 's2', workspace: WS_BLOG })
  await store.conversations.ensure({ id: 's3', workspace: '' })
  await store.messages.append({ conversationId: 's1', hostMessageId: 'h1', role: 'user', text: '周三发布商店 API' })
  await store.messages.append({ conversationId: 's1', hostMessageId: 'h2', role: 'assistant', text: '了解しました' })
  await store.messages.append({ conversationId: 's2', hostMessageId: 'h3', role: 'user', text: 'ブログは R2 でホストする' })
  const old = await store.memories.add({ kind: 'fact', text: 'Shop API deploys on Wednesdays', scope: 'workspace', workspace: WS_SHOP })
  await store.memories.supersede(old.id, { text: '商店 API 周三发布' })
  await store.memories.add({ kind: 'preference', text: 'Prefers small pull requests', scope: 'global' })
  clock.set(Date.UTC(2026, 11, 1, 9))
  await store.memories.add({ kind: 'fact', text: 'ブログは R2', scope: 'workspace', workspace: WS_BLOG })
  await store.memories.add({ kind: 'fact', text: 'session note', scope: 'session', sessionId: 's3' })
  await store.messages.append({ conversationId: 's2', hostMessageId: 'h4', role: 'assistant', text: 'R2 に置きます' })
  await store.scenes.add({ title: '发布', summary: '周三发布', scope: 'workspace', workspace: WS_SHOP })
  await store.persona.put({ scope: 'global', text: '# 用户\n简洁' })
  return opened
}

describe('store.stats', () => {
  it('counts rows per layer, scope, kind and workspace without loading them', async () => {
    const { store } = await seeded()
    const counts = await store.stats.counts()
    expect(counts).toMatchObject({
      conversations: 3,
      messages: { total: 4, user: 2, assistant: 2 },
      memories: { current: 4, superseded: 1, byScope: { global: 1, session: 1, workspace: 2 }, byKind: { fact: 3, preference: 1 } },
      scenes: { total: 1, byScope: { workspace: 1 } },
      persona: { total: 1, byScope: { global: 1 } },
    })
    // Busiest workspace first (messages + current memories), ties by path, the unknown one (`''`) included.
    expect(counts.workspaces).toEqual([
      { workspace: WS_SHOP, conversations: 1, messages: 2, memories: 1 },
      { workspace: WS_BLOG, conversations: 1, messages: 2, memories: 1 },
      { workspace: '', conversations: 1, messages: 0, memories: 0 },
    ])
    expect(counts.auditEntries).toBe((await store.audit.list({ limit: 10_000 })).length)
  })

  it('groups what was written per UTC day, oldest first, and lists kinds by use', async () => {
    const { store } = await seeded()
    const first = Math.floor(Date.UTC(2026, 10, 30, 12) / DAY)
    expect(await store.stats.daily()).toEqual([
      // The superseded memory is history, not counted; its successor is.
      { day: first, memories: { workspace: 1, global: 1 }, scenes: 0, messages: 3 },
      { day: first + 1, memories: { workspace: 1, session: 1 }, scenes: 1, messages: 1 },
    ])
    expect(await store.stats.kinds()).toEqual(['fact', 'preference'])
    expect(await store.stats.searchIndexBytes()).toBeGreaterThan(0)
  })

  it('answers on a read-only store while the owner keeps writing, and an empty store counts zero', async () => {
    const { store, path } = await seeded()
    const reader = reopen(path, { readonly: true })
    await store.messages.append({ conversationId: 's1', hostMessageId: 'h5', role: 'user', text: 'one more' })
    expect((await reader.stats.counts()).messages.total).toBe(5)
    const { store: empty } = openTemp()
    expect(await empty.stats.counts()).toEqual({
      conversations: 0,
      messages: { total: 0, user: 0, assistant: 0 },
      memories: { current: 0, superseded: 0, byScope: {}, byKind: {} },
      scenes: { total: 0, byScope: {} },
      persona: { total: 0, byScope: {} },
      workspaces: [],
      auditEntries: 0,
    })
    expect(await empty.stats.daily()).toEqual([])
    await store.close()
    expect((await rejectionOf(() => store.stats.counts())).code).toBe('closed')
  })
})

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
