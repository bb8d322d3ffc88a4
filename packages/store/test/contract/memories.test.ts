import { describe, expect, it } from 'vitest'
import type { MemoryStore } from '../../src/index.ts'
import { fakeClock, rejectionOf } from '../helpers.ts'
import { backends } from './backends.ts'

async function seed(store: MemoryStore) {
  const g = await store.memories.add({ kind: 'preference', text: 'Prefers concise answers', scope: 'global', priority: 1 })
  const w1 = await store.memories.add({ kind: 'fact', text: 'Repo one uses pnpm', scope: 'workspace', workspace: '/one', priority: 5 })
  const w2 = await store.memories.add({ kind: 'fact', text: 'Repo two uses yarn', scope: 'workspace', workspace: '/two' })
  const s1 = await store.memories.add({ kind: 'episode', text: 'Debugging the flaky test', scope: 'session', sessionId: 'sess-1', workspace: '/one' })
  const s2 = await store.memories.add({ kind: 'episode', text: 'Writing docs', scope: 'session', sessionId: 'sess-2', workspace: '/one' })
  const s3 = await store.memories.add({ kind: 'episode', text: 'Other repo session', scope: 'session', sessionId: 'sess-3', workspace: '/two' })
  return { g, w1, w2, s1, s2, s3 }
}

const ids = (list: { id: string }[]) => list.map((m) => m.id).sort()

describe.each(backends)('memories ($name)', (backend) => {
  it('add / get / update with revisions', async () => {
    const clock = fakeClock(5_000, 100)
    const store = await backend.open({ now: clock.now })
    const memory = await store.memories.add({
      kind: 'fact',
      text: 'The API lives at api.example.com',
      scope: 'workspace',
      workspace: '/repo',
      sourceMessageIds: ['m1'],
      flags: { confidence: 0.9 },
    })
    expect(memory).toMatchObject({ kind: 'fact', scope: 'workspace', workspace: '/repo', sessionId: null, revision: 1, priority: 0, supersededBy: null, lastRecalledAt: null, embedding: null, flags: { confidence: 0.9 }, sourceMessageIds: ['m1'] })
    expect(memory.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(await store.memories.get(memory.id)).toEqual(memory)

    const updated = await store.memories.update(memory.id, { text: 'The API lives at api.example.org, token ghp_abcdefghijklmnopqrstuvwxyz0123456789', priority: 3, kind: 'instruction' })
    expect(updated).toMatchObject({ revision: 2, priority: 3, kind: 'instruction', text: 'The API lives at api.example.org, token [REDACTED:github-token]' })
    expect(updated.updatedAt).toBeGreaterThan(memory.updatedAt)
    expect(await store.memories.update(memory.id, {})).toEqual(updated)
    expect((await rejectionOf(store.memories.update('missing', { priority: 1 }))).code).toBe('not-found')
  })

  it('stores embeddings as float32 and clears them', async () => {
    const store = await backend.open()
    const vector = new Float32Array([0.25, -1.5, 3.125])
    const memory = await store.memories.add({ kind: 'fact', text: 'vector', scope: 'global', embedding: vector, embeddingModel: 'test-embed-3' })
    expect(Array.from(memory.embedding!)).toEqual([0.25, -1.5, 3.125])
    expect(memory.embeddingModel).toBe('test-embed-3')
    const cleared = await store.memories.update(memory.id, { embedding: null })
    expect(cleared.embedding).toBeNull()
    expect(cleared.embeddingModel).toBeNull()
    expect((await rejectionOf(store.memories.add({ kind: 'fact', text: 'x', scope: 'global', embedding: new Float32Array([NaN]) }))).code).toBe('invalid-argument')
    expect((await rejectionOf(store.memories.add({ kind: 'fact', text: 'x', scope: 'global', embedding: [1, 2] as unknown as Float32Array }))).code).toBe('invalid-argument')
  })

  it('enforces where each scope lives', async () => {
    const store = await backend.open()
    const cases = [
      { kind: 'fact', text: 'x', scope: 'workspace' },
      { kind: 'fact', text: 'x', scope: 'global', workspace: '/w' },
      { kind: 'fact', text: 'x', scope: 'session' },
      { kind: 'fact', text: 'x', scope: 'team' },
      { kind: '', text: 'x', scope: 'global' },
      { kind: 'fact', text: '', scope: 'global' },
      { kind: 'fact', text: 'x', scope: 'global', priority: Infinity },
    ]
    for (const input of cases) expect((await rejectionOf(store.memories.add(input as never))).code, JSON.stringify(input)).toBe('invalid-argument')
  })

  it('supersede keeps history; list and search hide superseded versions', async () => {
    const store = await backend.open()
    const v1 = await store.memories.add({ kind: 'preference', text: 'Likes light theme', scope: 'workspace', workspace: '/w', priority: 2 })
    const v2 = await store.memories.supersede(v1.id, { text: 'Likes dark theme' })
    expect(v2).toMatchObject({ kind: 'preference', scope: 'workspace', workspace: '/w', priority: 2, supersededBy: null, revision: 1 })
    const old = await store.memories.get(v1.id)
    expect(old).toMatchObject({ supersededBy: v2.id, revision: 2, text: 'Likes light theme' })
    const v3 = await store.memories.supersede(v2.id, { text: 'Likes solarized theme', priority: 4 })

    expect((await store.memories.history(v2.id)).map((m) => m.id)).toEqual([v1.id, v2.id, v3.id])
    expect((await store.memories.history(v1.id)).map((m) => m.id)).toEqual([v1.id, v2.id, v3.id])
    expect(await store.memories.history('nope')).toEqual([])
    expect((await rejectionOf(store.memories.supersede(v1.id, { text: 'again' }))).code).toBe('conflict')
    expect((await rejectionOf(store.memories.supersede('nope', { text: 'again' }))).code).toBe('not-found')

    expect(ids(await store.memories.list())).toEqual([v3.id])
    expect(ids(await store.memories.list({ includeSuperseded: true }))).toEqual(ids([v1, v2, v3]))
    expect((await store.search.memories('theme')).map((h) => h.memory.id)).toEqual([v3.id])
    expect(ids((await store.search.memories('theme', { includeSuperseded: true })).map((h) => h.memory))).toEqual(ids([v1, v2, v3]))
  })

  it('delete removes a memory with the versions it replaced and unlinks scenes', async () => {
    const store = await backend.open()
    const a = await store.memories.add({ kind: 'fact', text: 'v1', scope: 'global' })
    const b = await store.memories.supersede(a.id, { text: 'v2' })
    const c = await store.memories.supersede(b.id, { text: 'v3' })
    const other = await store.memories.add({ kind: 'fact', text: 'other', scope: 'global' })
    const scene = await store.scenes.add({ title: 'Versions', summary: 'all of them', scope: 'global', memoryIds: [a.id, c.id, other.id] })

    expect(await store.memories.delete(b.id)).toBe(2)
    expect(await store.memories.get(a.id)).toBeUndefined()
    expect(await store.memories.get(b.id)).toBeUndefined()
    expect(await store.memories.get(c.id)).toMatchObject({ id: c.id, supersededBy: null })
    expect((await store.scenes.get(scene.id))!.memoryIds).toEqual([c.id, other.id])
    expect(await store.memories.delete(b.id)).toBe(0)
    expect(await store.memories.delete(c.id)).toBe(1)
    expect((await store.audit.list({ op: 'memory.delete' })).map((e) => e.entityId).sort()).toEqual([a.id, b.id, c.id].sort())
  })

  it('list applies scope, workspace, session, kind and time filters', async () => {
    const clock = fakeClock(1_000, 1_000)
    const store = await backend.open({ now: clock.now })
    const { g, w1, w2, s1, s2, s3 } = await seed(store)
    expect(ids(await store.memories.list())).toEqual(ids([g, w1, w2, s1, s2, s3]))
    expect(ids(await store.memories.list({ workspace: '/one' }))).toEqual(ids([g, w1, s1, s2]))
    expect(ids(await store.memories.list({ workspace: '/one', includeGlobal: false }))).toEqual(ids([w1, s1, s2]))
    expect(ids(await store.memories.list({ workspace: '/one', sessionId: 'sess-1' }))).toEqual(ids([g, w1, s1]))
    expect(ids(await store.memories.list({ scope: 'session', workspace: '/one' }))).toEqual(ids([s1, s2]))
    expect(ids(await store.memories.list({ scope: ['global', 'workspace'] }))).toEqual(ids([g, w1, w2]))
    expect(ids(await store.memories.list({ kind: 'fact' }))).toEqual(ids([w1, w2]))
    expect(ids(await store.memories.list({ kind: ['fact', 'preference'], workspace: '/two' }))).toEqual(ids([g, w2]))
    expect(ids(await store.memories.list({ since: w2.createdAt, until: s2.createdAt }))).toEqual(ids([w2, s1, s2]))
    expect(ids(await store.memories.list({ workspace: '/two' }))).toEqual(ids([g, w2, s3]))
    expect((await store.memories.list({ orderBy: 'priority', limit: 2 })).map((m) => m.id)).toEqual([w1.id, g.id])
    expect((await store.memories.list({ limit: 2 })).map((m) => m.id)).toEqual([s3.id, s2.id])
    expect((await rejectionOf(store.memories.list({ limit: 0 }))).code).toBe('invalid-argument')
  })

  it('touchRecalled stamps lastRecalledAt on existing memories', async () => {
    const store = await backend.open()
    const a = await store.memories.add({ kind: 'fact', text: 'a', scope: 'global' })
    const b = await store.memories.add({ kind: 'fact', text: 'b', scope: 'global' })
    expect(await store.memories.touchRecalled([a.id, b.id, 'missing', a.id], 77_000)).toBe(2)
    expect((await store.memories.get(a.id))!.lastRecalledAt).toBe(77_000)
    expect((await store.memories.get(b.id))!.lastRecalledAt).toBe(77_000)
    expect(await store.memories.touchRecalled([])).toBe(0)
    expect((await store.audit.list({ op: 'memory.recall' })).length).toBe(2)
  })

  it('counts memories under a scope filter', async () => {
    const store = await backend.open()
    await store.memories.add({ kind: 'fact', text: 'g', scope: 'global' })
    const old = await store.memories.add({ kind: 'fact', text: 'w1', scope: 'workspace', workspace: '/w' })
    await store.memories.supersede(old.id, { text: 'w2' })
    await store.memories.add({ kind: 'preference', text: 's', scope: 'session', sessionId: 's1', workspace: '/w' })
    await store.memories.add({ kind: 'fact', text: 'x', scope: 'workspace', workspace: '/x' })
    expect(await store.memories.count()).toBe(4)
    expect(await store.memories.count({ includeSuperseded: true })).toBe(5)
    expect(await store.memories.count({ workspace: '/w' })).toBe(3)
    expect(await store.memories.count({ workspace: '/w', includeGlobal: false, kind: 'fact' })).toBe(1)
    expect(await store.memories.count({ scope: 'global' })).toBe(1)
  })
})

