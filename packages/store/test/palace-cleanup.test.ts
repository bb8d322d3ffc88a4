import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { openTemp, reopen } from './helpers.ts'

/**
 * Schema v5 removes what the palace's old index left in L0 (fake conversations under
 * `memory-palace:<workspace>`) and what the distiller derived from it. The rows are written
 * with today's API, then v5 is marked unapplied so the next open runs it on them.
 */
describe('store schema v5: the palace index leaves L0', () => {
  it('removes fake palace conversations and everything derived only from them, and nothing else', async () => {
    const { store, path } = openTemp()
    const fake = 'memory-palace:0123456789abcdef01234567'
    const fakeWorkspace = 'memory-palace:/work/app'
    await store.conversations.ensure({ id: fake, workspace: fakeWorkspace, title: 'memory palace · Ledger' })
    const archived = await store.messages.append({ conversationId: fake, hostMessageId: 't1#0', role: 'assistant', text: 'ledger 0 line 40: 校验码 LEDGER-0-40', turn: 1 })
    await store.conversations.ensure({ id: 'conv-real', workspace: '/work/app' })
    const real = await store.messages.append({ conversationId: 'conv-real', hostMessageId: 'h1', role: 'user', text: '周五发布，リリースは金曜日', turn: 1 })
    const junkInFake = await store.memories.add({ kind: 'fact', text: 'Ledger 0 is balanced', scope: 'workspace', workspace: fakeWorkspace, sourceMessageIds: [archived.message.id] })
    // Placed in the real workspace, but sourced only from archive rows: junk too.
    const junkGlobal = await store.memories.add({ kind: 'fact', text: 'Checksums use QX codes', scope: 'global', sourceMessageIds: [archived.message.id] })
    const older = await store.memories.add({ kind: 'fact', text: 'Release on Friday', scope: 'workspace', workspace: '/work/app', sourceMessageIds: [real.message.id] })
    // A real memory a junk one superseded becomes current again.
    const replacement = await store.memories.supersede(older.id, { text: 'Release on LEDGER day', sourceMessageIds: [archived.message.id] })
    const mixed = await store.memories.add({ kind: 'fact', text: 'Friday release, ledgers balanced', scope: 'workspace', workspace: '/work/app', sourceMessageIds: [real.message.id, archived.message.id] })
    await store.scenes.add({ title: 'Ledgers', summary: 'audit', scope: 'workspace', workspace: fakeWorkspace, memoryIds: [junkInFake.id] })
    const realScene = await store.scenes.add({ title: 'Release', summary: 'Friday', scope: 'workspace', workspace: '/work/app', memoryIds: [mixed.id, junkGlobal.id] })
    await store.persona.put({ scope: 'workspace', workspace: fakeWorkspace, text: 'Audits ledgers.' })
    await store.persona.put({ scope: 'workspace', workspace: '/work/app', text: 'Ships on Fridays.' })
    await store.meta.set(`palace.index.${fake}`, '{"version":1,"turns":1,"lossy":false}')
    await store.meta.set(`distill.conversation.${fake}`, '{}')
    await store.meta.set('distill.conversation.conv-real', '{}')
    await store.meta.set('distill.layers', JSON.stringify({ v: 1, keys: { [`workspace:${fakeWorkspace}`]: { sinceL2: 1 }, 'workspace:/work/app': { sinceL2: 2 } } }))
    await store.close()
    const raw = new Database(path)
    raw.prepare("DELETE FROM store_schema WHERE owner = 'store' AND version = 5").run()
    raw.close()

    const upgraded = reopen(path)
    expect((await upgraded.conversations.list()).map((conversation) => conversation.id)).toEqual(['conv-real'])
    expect(await upgraded.messages.list({ conversationId: fake })).toEqual([])
    expect(await upgraded.search.messages('LEDGER')).toEqual([])
    expect((await upgraded.search.messages('周五')).map((hit) => hit.message.id)).toEqual([real.message.id])
    const memories = await upgraded.memories.list({ limit: 100, includeSuperseded: true })
    expect(memories.map((memory) => memory.text).sort()).toEqual(['Friday release, ledgers balanced', 'Release on Friday'])
    expect((await upgraded.memories.get(older.id))?.supersededBy).toBeNull()
    expect(await upgraded.memories.get(replacement.id)).toBeUndefined()
    expect(await upgraded.search.memories('Checksums')).toEqual([])
    expect((await upgraded.scenes.list({ limit: 100 })).map((scene) => [scene.title, scene.memoryIds])).toEqual([['Release', [mixed.id]]])
    expect((await upgraded.scenes.get(realScene.id))?.revision).toBe(2)
    expect((await upgraded.persona.list()).map((persona) => persona.workspace)).toEqual(['/work/app'])
    expect(await upgraded.meta.get(`palace.index.${fake}`)).toBeUndefined()
    expect(await upgraded.meta.get(`distill.conversation.${fake}`)).toBeUndefined()
    expect(await upgraded.meta.get('distill.conversation.conv-real')).toBe('{}')
    expect(JSON.parse((await upgraded.meta.get('distill.layers'))!)).toEqual({ v: 1, keys: { 'workspace:/work/app': { sinceL2: 2 } } })
    // Other processes learn about every removal from the change log.
    const changes = new Database(path, { readonly: true })
    const deleted = changes.prepare("SELECT entity, entity_id FROM store_changes WHERE op = 'delete' ORDER BY seq").all() as { entity: string; entity_id: string }[]
    changes.close()
    expect(deleted).toEqual(
      expect.arrayContaining([
        { entity: 'conversation', entity_id: fake },
        { entity: 'message', entity_id: archived.message.id },
        { entity: 'memory', entity_id: junkInFake.id },
        { entity: 'memory', entity_id: junkGlobal.id },
        { entity: 'memory', entity_id: replacement.id },
      ]),
    )
  })
})
