import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { openTemp, rejectionOf, reopen } from './helpers.ts'

const PHRASE = 'purple-elephant-7731 sk-live-abcdefghijklmnopqrstuvwxyz99'

// The audit contract on both backends (columns, meta and lease rows, filters, rollback) is
// test/contract/meta-audit.test.ts; the repositories' own audit rows are checked here.
describe('audit log', () => {
  it('records every write path, with actor and revision, and never the content', async () => {
    const { store, path } = openTemp({ actor: 'default-actor' })
    await store.conversations.ensure({ id: 'c1', workspace: '/w', title: `Title ${PHRASE}` })
    await store.conversations.ensure({ id: 'c1', workspace: '/w2' })
    await store.conversations.end('c1')
    const { message } = await store.messages.append({ conversationId: 'c1', hostMessageId: 'h1', role: 'user', text: `note ${PHRASE}` }, { actor: 'capture' })
    await store.messages.delete(message.id)
    const memory = await store.memories.add({ kind: 'fact', text: `fact ${PHRASE}`, scope: 'global' }, { actor: 'distill' })
    await store.memories.update(memory.id, { text: `updated ${PHRASE}` })
    const next = await store.memories.supersede(memory.id, { text: `newer ${PHRASE}` })
    await store.memories.touchRecalled([next.id])
    const scene = await store.scenes.add({ title: `Scene ${PHRASE}`, summary: `summary ${PHRASE}`, scope: 'global' })
    await store.scenes.update(scene.id, { summary: `again ${PHRASE}` })
    await store.scenes.delete(scene.id)
    await store.persona.put({ scope: 'global', text: `persona ${PHRASE}` })
    await store.persona.delete({ scope: 'global' })
    await store.meta.set('plugin.setting', PHRASE)
    await store.meta.delete('plugin.setting')
    await store.memories.delete(next.id)
    await store.conversations.delete('c1')

    const entries = await store.audit.list({ limit: 1_000 })
    expect(entries.map((e) => e.op)).toEqual(
      expect.arrayContaining([
        'conversation.create',
        'conversation.update',
        'conversation.end',
        'conversation.delete',
        'message.append',
        'message.delete',
        'memory.add',
        'memory.update',
        'memory.supersede',
        'memory.recall',
        'memory.delete',
        'scene.add',
        'scene.update',
        'scene.delete',
        'persona.put',
        'persona.delete',
        'meta.set',
        'meta.delete',
      ]),
    )
    expect(entries.find((e) => e.op === 'message.append')!.actor).toBe('capture')
    expect(entries.find((e) => e.op === 'memory.add')!.actor).toBe('distill')
    expect(entries.find((e) => e.op === 'memory.update')).toMatchObject({ actor: 'default-actor', revision: 2, entityId: memory.id })
    expect((await store.audit.list({ entity: 'memory', entityId: memory.id })).map((e) => e.op)).toEqual(['memory.add', 'memory.update', 'memory.supersede', 'memory.delete'])
    expect((await store.audit.list({ afterId: entries[entries.length - 2]!.id })).length).toBe(1)

    // The raw table, read without the store: no trace of the phrase, secret or not.
    await store.close()
    const db = new Database(path, { readonly: true })
    const raw = JSON.stringify(db.prepare('SELECT * FROM store_audit').all()) + JSON.stringify(db.prepare('SELECT * FROM store_changes').all())
    db.close()
    expect(raw).not.toContain('purple-elephant')
    expect(raw).not.toContain('sk-live')
    reopen(path)
  })

  it('records no workspace path: keys that embed one are written and looked up by an opaque digest', async () => {
    const { store, path } = openTemp()
    const workspaces = ['/home/alice/shop-api', 'C:\\Users\\alice\\客户项目', '~/notes']
    for (const workspace of workspaces) {
      await store.memories.add({ kind: 'fact', text: 'Deploys go out on Tuesdays.', scope: 'workspace', workspace })
      await store.persona.put({ scope: 'workspace', workspace, text: 'Prefers small commits.' })
      await store.meta.set(`plugin.state.${workspace}`, 'x')
    }
    const lease = await store.leases.acquire(`consolidate:workspace:${workspaces[0]}`, 'holder', 1_000)
    await store.leases.release(lease!)
    const entries = await store.audit.list({ limit: 1_000 })
    for (const entry of entries) for (const segment of ['alice', '客户项目', 'notes']) expect(entry.entityId).not.toContain(segment)
    const layer = entries.filter((e) => e.entity === 'layer').map((e) => e.entityId)
    for (const id of layer) expect(id).toMatch(/^workspace:ws_[0-9a-f]{16}$/)
    expect(new Set(layer).size).toBe(3)
    expect(entries.find((e) => e.entity === 'lease')!.entityId).toMatch(/^consolidate:workspace:ws_[0-9a-f]{16}$/)
    // Ids that are not keys stay readable; lookups by the real key still work.
    const memory = entries.find((e) => e.op === 'memory.add')!
    expect(memory.entityId).toMatch(/^[0-9A-Za-z_-]+$/)
    expect((await store.audit.list({ entity: 'meta', entityId: `plugin.state.${workspaces[1]}` })).map((e) => e.op)).toEqual(['meta.set'])
    await store.close()
    const db = new Database(path, { readonly: true })
    const raw = JSON.stringify(db.prepare('SELECT * FROM store_audit').all())
    db.close()
    expect(raw).not.toContain('alice')
  })

  it('an existing database has the paths in its audit log made opaque when it is opened (schema v4)', async () => {
    const { store, path } = openTemp()
    await store.memories.add({ kind: 'fact', text: 'Uses pnpm.', scope: 'workspace', workspace: '/srv/acme/billing' })
    await store.close()
    // What a version before v4 left: the path itself, and no record of migration 4.
    const raw = new Database(path)
    raw.prepare(`UPDATE store_audit SET entity_id = 'workspace:/srv/acme/billing' WHERE entity = 'layer'`).run()
    raw.prepare(`INSERT INTO store_audit (at, op, entity, entity_id, actor, revision) VALUES (1, 'lease.acquire', 'lease', 'distill', NULL, 1)`).run()
    raw.prepare(`DELETE FROM store_schema WHERE owner = 'store' AND version = 4`).run()
    raw.close()
    const upgraded = reopen(path)
    const entries = await upgraded.audit.list({ limit: 100 })
    expect(entries.find((e) => e.entity === 'layer')!.entityId).toMatch(/^workspace:ws_[0-9a-f]{16}$/)
    expect(entries.find((e) => e.entity === 'lease')!.entityId).toBe('distill')
    expect(await upgraded.audit.list({ entity: 'layer', entityId: 'workspace:/srv/acme/billing' })).toHaveLength(1)
    expect((await upgraded.meta.migrations()).map((m) => m.version)).toContain(4)
    await upgraded.close()
    const db = new Database(path, { readonly: true })
    expect(JSON.stringify(db.prepare('SELECT * FROM store_audit').all())).not.toContain('acme')
    db.close()
  })

  it('writes audit and change rows in the same transaction as the write, and none for a failed write', async () => {
    const { store, path } = openTemp()
    await store.conversations.ensure({ id: 'c', workspace: '' })
    await rejectionOf(store.messages.append({ conversationId: 'missing', hostMessageId: '1', role: 'user', text: 'x' }))
    await rejectionOf(store.memories.update('missing', { text: 'x' }))
    await store.memories.add({ kind: 'fact', text: 'x', scope: 'global' })
    await store.close()
    const db = new Database(path, { readonly: true })
    const audit = db.prepare(`SELECT op FROM store_audit WHERE entity NOT IN ('meta', 'layer') ORDER BY id`).all() as { op: string }[]
    const changes = db.prepare(`SELECT entity, op FROM store_changes WHERE entity <> 'meta' ORDER BY seq`).all()
    db.close()
    expect(audit.map((a) => a.op)).toEqual(['conversation.create', 'memory.add'])
    expect(changes).toEqual([
      { entity: 'conversation', op: 'insert' },
      { entity: 'memory', op: 'insert' },
    ])
  })
})
