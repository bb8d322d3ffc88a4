import { describe, expect, it } from 'vitest'
import { rejectionOf } from '../helpers.ts'
import { backends } from './backends.ts'

describe.each(backends)('scenes ($name)', (backend) => {
  it('add / get / update / list / delete', async () => {
    const store = await backend.open()
    const m = await store.memories.add({ kind: 'fact', text: 'Uses Postgres', scope: 'workspace', workspace: '/w' })
    const scene = await store.scenes.add({ title: 'Database choices', summary: 'Postgres for OLTP.', scope: 'workspace', workspace: '/w', memoryIds: [m.id] })
    expect(scene).toMatchObject({ title: 'Database choices', summary: 'Postgres for OLTP.', scope: 'workspace', workspace: '/w', memoryIds: [m.id], revision: 1 })
    expect(await store.scenes.get(scene.id)).toEqual(scene)
    const updated = await store.scenes.update(scene.id, { summary: 'Postgres for OLTP, ClickHouse for analytics.', memoryIds: [] })
    expect(updated).toMatchObject({ revision: 2, memoryIds: [], title: 'Database choices' })
    const global = await store.scenes.add({ title: 'About the user', summary: 'Backend engineer.', scope: 'global' })
    const elsewhere = await store.scenes.add({ title: 'Elsewhere', summary: 'Another repo.', scope: 'workspace', workspace: '/x' })
    expect((await store.scenes.list({ workspace: '/w' })).map((s) => s.id).sort()).toEqual([scene.id, global.id].sort())
    expect((await store.scenes.list({ workspace: '/w', includeGlobal: false })).map((s) => s.id)).toEqual([scene.id])
    expect((await store.scenes.list()).map((s) => s.id).sort()).toEqual([scene.id, global.id, elsewhere.id].sort())
    expect(await store.scenes.delete(scene.id)).toBe(true)
    expect(await store.scenes.delete(scene.id)).toBe(false)
    expect((await rejectionOf(store.scenes.update(scene.id, { title: 'x' }))).code).toBe('not-found')
    expect((await rejectionOf(store.scenes.add({ title: '', summary: 'x', scope: 'global' }))).code).toBe('invalid-argument')
  })
})

describe.each(backends)('persona ($name)', (backend) => {
  it('one versioned document per (scope, workspace)', async () => {
    const store = await backend.open()
    expect(await store.persona.get({ scope: 'global' })).toBeUndefined()
    const v1 = await store.persona.put({ scope: 'global', text: '# User\n- prefers TypeScript' })
    expect(v1).toMatchObject({ scope: 'global', workspace: null, version: 1, text: '# User\n- prefers TypeScript' })
    const v2 = await store.persona.put({ scope: 'global', text: '# User\n- prefers TypeScript\n- lives in Berlin', expectedVersion: 1 })
    expect(v2.version).toBe(2)
    expect((await rejectionOf(store.persona.put({ scope: 'global', text: 'stale', expectedVersion: 1 }))).code).toBe('conflict')
    const ws = await store.persona.put({ scope: 'workspace', workspace: '/repo', text: 'In this repo: strict lint.', expectedVersion: 0 })
    expect(ws).toMatchObject({ scope: 'workspace', workspace: '/repo', version: 1 })
    expect((await store.persona.get({ scope: 'global' }))!.text).toContain('Berlin')
    expect((await store.persona.get({ scope: 'workspace', workspace: '/repo' }))!.version).toBe(1)
    expect(await store.persona.get({ scope: 'workspace', workspace: '/other' })).toBeUndefined()
    expect((await store.persona.list()).map((p) => `${p.scope}:${p.workspace ?? ''}`)).toEqual(['global:', 'workspace:/repo'])
    expect(await store.persona.delete({ scope: 'workspace', workspace: '/repo' })).toBe(true)
    expect(await store.persona.delete({ scope: 'workspace', workspace: '/repo' })).toBe(false)
    expect((await rejectionOf(store.persona.get({ scope: 'workspace' }))).code).toBe('invalid-argument')
    expect((await rejectionOf(store.persona.get({ scope: 'global', workspace: '/w' }))).code).toBe('invalid-argument')
    expect((await rejectionOf(store.persona.put({ scope: 'session' as never, text: 'x' }))).code).toBe('invalid-argument')
  })
})
