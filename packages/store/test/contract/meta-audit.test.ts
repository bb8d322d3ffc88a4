import { describe, expect, it } from 'vitest'
import { rejectionOf } from '../helpers.ts'
import { backends } from './backends.ts'

const PHRASE = 'purple-elephant-7731 sk-live-abcdefghijklmnopqrstuvwxyz99'

describe.each(backends)('meta ($name)', (backend) => {
  it('lists a prefix in key order, CJK included, with a limit', async () => {
    const store = await backend.open()
    await store.meta.set('recall.layers.s2', 'b')
    await store.meta.set('recall.layers.s1', 'a')
    await store.meta.set('recall.layers.会话', 'c')
    await store.meta.set('recall.other', 'x')
    await store.meta.set('recall_layers', 'y')
    expect((await store.meta.list('recall.layers.')).map((entry) => [entry.key, entry.value])).toEqual([
      ['recall.layers.s1', 'a'],
      ['recall.layers.s2', 'b'],
      ['recall.layers.会话', 'c'],
    ])
    expect((await store.meta.list('recall.layers.会')).map((entry) => entry.key)).toEqual(['recall.layers.会话'])
    expect(await store.meta.list('recall.layers.', { limit: 1 })).toHaveLength(1)
    expect((await store.meta.list('recall.layers.'))[0]!.updatedAt).toEqual(expect.any(Number))
    expect(await store.meta.list('nothing.')).toEqual([])
    // Wildcards of LIKE are plain characters in a prefix.
    await store.meta.set('a%b', '1')
    await store.meta.set('axb', '2')
    expect((await store.meta.list('a%')).map((entry) => entry.key)).toEqual(['a%b'])
  })

  it('keeps values exactly (JSON, CJK, Japanese, emoji), and checks keys and values', async () => {
    const store = await backend.open()
    const value = JSON.stringify({ 会话: '进行中', 日本語: 'テスト', emoji: '🧠', nested: { n: 1 } })
    await store.meta.set('plugin.状態', value)
    expect(await store.meta.get('plugin.状態')).toBe(value)
    expect((await rejectionOf(store.meta.set('', 'x'))).code).toBe('invalid-argument')
    expect((await rejectionOf(store.meta.set('k', 'x'.repeat(64 * 1024 + 1)))).code).toBe('invalid-argument')
    expect((await rejectionOf(store.meta.delete('store.instance-id'))).code).toBe('invalid-argument')
    expect((await rejectionOf(store.meta.list(7 as never))).code).toBe('invalid-argument')
  })

  it('reports diagnostics: the backend, where it is, and the change log position', async () => {
    const store = await backend.open({ busyTimeoutMs: 1234 })
    const before = await store.meta.diagnostics()
    await store.meta.set('k', '1')
    await store.meta.set('k', '2')
    const after = await store.meta.diagnostics()
    expect(after).toMatchObject({ backend: backend.name, location: store.path, details: { busyTimeoutMs: 1234, readonly: false } })
    expect(Number(after.details.changeLogSeq) - Number(before.details.changeLogSeq)).toBe(2)
    expect(after.details.sizeBytes).toBeGreaterThan(0)
  })
})

describe.each(backends)('audit log ($name)', (backend) => {
  it('has no column that could hold content', async () => {
    const store = await backend.open()
    expect(await backend.columns(store, 'store_audit')).toEqual(['id', 'at', 'op', 'entity', 'entity_id', 'actor', 'revision', 'created_by'])
  })

  it('records meta and lease writes with actor, never the content; filters by entity, id, op, actor, time and position', async () => {
    let t = 1_000
    const store = await backend.open({ actor: 'default-actor', now: () => t++ })
    await store.meta.set('plugin.setting', PHRASE)
    await store.meta.set('plugin.setting', `${PHRASE} again`, { actor: 'distill' })
    await store.meta.delete('plugin.setting', { actor: 'user' })
    const lease = (await store.leases.acquire('job', 'holder', 1_000, { actor: 'sweeper' }))!
    await store.leases.release({ ...lease, holder: 'holder' })

    const entries = await store.audit.list({ limit: 1_000 })
    expect(entries.map((e) => [e.op, e.entity, e.entityId, e.actor, e.revision])).toEqual([
      ['meta.set', 'meta', 'plugin.setting', 'default-actor', null],
      ['meta.set', 'meta', 'plugin.setting', 'distill', null],
      ['meta.delete', 'meta', 'plugin.setting', 'user', null],
      ['lease.acquire', 'lease', 'job', 'sweeper', 1],
      ['lease.release', 'lease', 'job', 'default-actor', 1],
    ])
    expect(entries.map((e) => e.id)).toEqual([...entries.map((e) => e.id)].sort((a, b) => a - b))
    expect((await store.audit.list({ entity: 'meta', entityId: 'plugin.setting', op: 'meta.set' })).map((e) => e.actor)).toEqual(['default-actor', 'distill'])
    expect((await store.audit.list({ actor: 'user' })).map((e) => e.op)).toEqual(['meta.delete'])
    expect((await store.audit.list({ since: entries[1]!.at, until: entries[2]!.at })).map((e) => e.op)).toEqual(['meta.set', 'meta.delete'])
    expect((await store.audit.list({ afterId: entries[3]!.id })).map((e) => e.op)).toEqual(['lease.release'])
    expect(await store.audit.list({ limit: 2 })).toHaveLength(2)
    expect((await rejectionOf(store.audit.list({ limit: 0 }))).code).toBe('invalid-argument')
    expect((await rejectionOf(store.audit.list({ since: -1 }))).code).toBe('invalid-argument')
    expect((await rejectionOf(store.meta.set('k', 'v', { actor: '' }))).code).toBe('invalid-argument')

    // The raw tables, read without the store: no trace of the phrase, secret or not.
    const raw = JSON.stringify(await backend.sql(store, 'SELECT * FROM store_audit')) + JSON.stringify(await backend.sql(store, 'SELECT * FROM store_changes'))
    expect(raw).not.toContain('purple-elephant')
    expect(raw).not.toContain('sk-live')
  })

  it('records no workspace path in meta or lease keys: they are written and looked up by an opaque digest', async () => {
    const store = await backend.open()
    const workspaces = ['/home/alice/shop-api', 'C:\\Users\\alice\\客户项目']
    for (const workspace of workspaces) await store.meta.set(`plugin.state.${workspace}`, 'x')
    const lease = await store.leases.acquire(`consolidate:workspace:${workspaces[0]}`, 'holder', 1_000)
    await store.leases.release(lease!)
    const entries = await store.audit.list({ limit: 1_000 })
    for (const entry of entries) for (const segment of ['alice', '客户项目']) expect(entry.entityId).not.toContain(segment)
    expect(entries.find((e) => e.entity === 'lease')!.entityId).toMatch(/^consolidate:workspace:ws_[0-9a-f]{16}$/)
    expect((await store.audit.list({ entity: 'meta', entityId: `plugin.state.${workspaces[1]}` })).map((e) => e.op)).toEqual(['meta.set'])
    expect(JSON.stringify(await backend.sql(store, 'SELECT * FROM store_audit'))).not.toContain('alice')
  })

  it('writes audit and change rows in the same transaction as the write, and none for a failed or fenced write', async () => {
    const store = await backend.open()
    await store.meta.set('kept', '1')
    await rejectionOf(
      store.transaction(async (tx) => {
        await tx.meta.set('discarded', '1')
        throw new Error('boom')
      }),
    )
    await rejectionOf(store.meta.set('fenced', '1', { fence: { name: 'never-acquired', token: 1 } }))
    await store.meta.set('kept', '2')
    await store.meta.delete('kept')
    expect((await backend.sql(store, `SELECT op, entity_id FROM store_audit ORDER BY id`)).map((row) => [row.op, row.entity_id])).toEqual([
      ['meta.set', 'kept'],
      ['meta.set', 'kept'],
      ['meta.delete', 'kept'],
    ])
    expect(await backend.sql(store, `SELECT entity, entity_id, op FROM store_changes ORDER BY seq`)).toEqual([
      { entity: 'meta', entity_id: 'kept', op: 'insert' },
      { entity: 'meta', entity_id: 'kept', op: 'update' },
      { entity: 'meta', entity_id: 'kept', op: 'delete' },
    ])
  })
})
