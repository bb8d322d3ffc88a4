import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import type { CoordinatedMemoryStore, LayerKey } from '../src/index.ts'
import { fakeClock, openTemp, rejectionOf, reopen } from './helpers.ts'

const GLOBAL: LayerKey = { scope: 'global' }
const ALPHA: LayerKey = { scope: 'workspace', workspace: '/work/alpha' }
const BETA: LayerKey = { scope: 'workspace', workspace: '/work/beta' }

async function revisions(store: CoordinatedMemoryStore): Promise<[number, number, number]> {
  return [(await store.layers.revision(GLOBAL)).revision, (await store.layers.revision(ALPHA)).revision, (await store.layers.revision(BETA)).revision]
}

// Layer keys and reads on both backends: test/contract/layers.test.ts. The bumps below come from
// memory, scene and persona writes and move there once those are on PostgreSQL.
describe('layer revisions', () => {
  it('start at 0 and grow with every write to the layer, in that layer only', async () => {
    const { store } = openTemp()
    expect(await revisions(store)).toEqual([0, 0, 0])
    const fact = await store.memories.add({ kind: 'fact', text: 'Deploys use Kamal.', scope: 'workspace', workspace: '/work/alpha' })
    expect(await revisions(store)).toEqual([0, 1, 0])
    await store.memories.update(fact.id, { text: 'Deploys use Kamal 2.' })
    expect(await revisions(store)).toEqual([0, 2, 0])
    await store.memories.update(fact.id, { priority: 3 })
    await store.memories.update(fact.id, { flags: { pinned: true } })
    expect(await revisions(store)).toEqual([0, 4, 0])
    const global = await store.memories.add({ kind: 'preference', text: 'Likes tea.', scope: 'global' })
    expect(await revisions(store)).toEqual([1, 4, 0])
    // Promotion: supersede into another layer changes both.
    await store.memories.supersede(fact.id, { text: 'Deploys use Kamal 2.', scope: 'global', workspace: null })
    expect(await revisions(store)).toEqual([2, 5, 0])
    await store.memories.delete(global.id)
    expect(await revisions(store)).toEqual([3, 5, 0])
    const scene = await store.scenes.add({ title: 'Beta', summary: 'beta things', scope: 'workspace', workspace: '/work/beta' })
    await store.scenes.update(scene.id, { summary: 'more beta things' })
    await store.scenes.delete(scene.id)
    expect(await revisions(store)).toEqual([3, 5, 3])
    await store.persona.put({ scope: 'workspace', workspace: '/work/beta', text: 'beta persona' })
    await store.persona.delete({ scope: 'workspace', workspace: '/work/beta' })
    expect(await revisions(store)).toEqual([3, 5, 5])
  })

  it('do not change for recall bookkeeping, embeddings or session-scoped rows', async () => {
    const { store } = openTemp()
    const memory = await store.memories.add({ kind: 'fact', text: 'x', scope: 'global' })
    await store.memories.touchRecalled([memory.id])
    await store.memories.update(memory.id, { embedding: new Float32Array([1, 2]), embeddingModel: 'm@2' })
    await store.memories.add({ kind: 'fact', text: 'session note', scope: 'session', sessionId: 's1', workspace: '/work/alpha' })
    expect(await revisions(store)).toEqual([1, 0, 0])
    // The global layer is per user: its stored key names the session's user.
    expect((await store.layers.list()).map((layer) => layer.key)).toEqual([`global:${store.user}`])
  })

  it('bump in the same transaction as the write: a rollback rolls the revision back too', async () => {
    const { store } = openTemp()
    await rejectionOf(
      store.transaction(async (tx) => {
        await tx.memories.add({ kind: 'fact', text: 'discarded', scope: 'global' })
        expect((await tx.layers.revision(GLOBAL)).revision).toBe(1)
        throw new Error('boom')
      }),
    )
    expect(await revisions(store)).toEqual([0, 0, 0])
  })

  it('are readable by another connection (another process) on the same file, with time and no content in the audit', async () => {
    const clock = fakeClock(Date.UTC(2025, 4, 1))
    const { store, path } = openTemp({ now: clock.now })
    const other = reopen(path)
    await store.memories.add({ kind: 'fact', text: 'secret-ish phrase purple-elephant', scope: 'workspace', workspace: '/work/alpha' })
    await store.memories.add({ kind: 'fact', text: 'another purple-elephant', scope: 'workspace', workspace: ' /work/alpha ' })
    expect(await other.layers.revision(ALPHA)).toMatchObject({ scope: 'workspace', workspace: '/work/alpha', key: 'workspace:/work/alpha', revision: 2, updatedAt: expect.any(Number) })
    // The key is normalised like the workspace column.
    expect((await other.layers.revision({ scope: 'workspace', workspace: '/work/alpha ' })).revision).toBe(2)
    // Operation, revision and time; the workspace path is recorded as an opaque digest.
    const audit = await store.audit.list({ entity: 'layer' })
    expect(audit.map((entry) => [entry.op, entry.entityId, entry.revision])).toEqual([
      ['layer.change', expect.stringMatching(/^workspace:ws_[0-9a-f]{16}$/), 1],
      ['layer.change', audit[0]!.entityId, 2],
    ])
    expect(await store.audit.list({ entity: 'layer', entityId: 'workspace:/work/alpha' })).toHaveLength(2)
    await store.close()
    await other.close()
    const db = new Database(path, { readonly: true })
    const raw = JSON.stringify(db.prepare('SELECT * FROM store_audit').all()) + JSON.stringify(db.prepare('SELECT * FROM store_layer_revisions').all())
    db.close()
    expect(raw).not.toContain('purple-elephant')
    expect(raw.split('store_layer_revisions')[0]).not.toMatch(/"entity_id":"[^"]*\/work\/alpha/)
  })

  it('count imports, merges and cascaded scene edits', async () => {
    const { store } = openTemp()
    const a = await store.memories.add({ kind: 'fact', text: 'A', scope: 'global' })
    const b = await store.memories.add({ kind: 'fact', text: 'A again', scope: 'global' })
    await store.scenes.add({ title: 'S', summary: 's', scope: 'global', memoryIds: [a.id] })
    expect((await store.layers.revision(GLOBAL)).revision).toBe(3)
    await store.memories.mergeInto(b.id, [a.id])
    expect((await store.layers.revision(GLOBAL)).revision).toBe(4)
    // Deleting the merge target removes the merged source too and prunes the scene (one bump).
    await store.memories.delete(b.id)
    expect((await store.layers.revision(GLOBAL)).revision).toBe(5)

    const lines: string[] = []
    for await (const line of store.exportJsonl()) lines.push(line)
    const { store: target } = openTemp()
    await target.importJsonl(lines)
    expect((await target.layers.revision(GLOBAL)).revision).toBeGreaterThan(0)
  })
})

describe('memories.mergeInto', () => {
  it('keeps the sources as history of the target, without a new row', async () => {
    const { store } = openTemp()
    const old1 = await store.memories.add({ kind: 'fact', text: 'Uses pnpm', scope: 'global', sourceMessageIds: ['m1'] })
    const old2 = await store.memories.add({ kind: 'fact', text: 'Uses pnpm for installs', scope: 'global', sourceMessageIds: ['m2'] })
    const target = await store.memories.add({ kind: 'fact', text: 'Uses pnpm for installs and scripts', scope: 'global', sourceMessageIds: ['m3'] })
    const merged = await store.memories.mergeInto(target.id, [old1.id, old2.id], { actor: 'recall' })
    expect(merged.id).toBe(target.id)
    expect(merged.sourceMessageIds.sort()).toEqual(['m1', 'm2', 'm3'])
    expect((await store.memories.list()).map((memory) => memory.id)).toEqual([target.id])
    expect((await store.memories.get(old1.id))!.supersededBy).toBe(target.id)
    expect((await store.memories.history(target.id)).map((memory) => memory.id).sort()).toEqual([old1.id, old2.id, target.id].sort())
    expect((await store.audit.list({ op: 'memory.merge' })).length).toBe(3)
    expect((await rejectionOf(store.memories.mergeInto(target.id, [old1.id]))).code).toBe('conflict')
    expect((await rejectionOf(store.memories.mergeInto(old1.id, [target.id]))).code).toBe('conflict')
    expect((await rejectionOf(store.memories.mergeInto(target.id, [target.id]))).code).toBe('invalid-argument')
    expect((await rejectionOf(store.memories.mergeInto(target.id, ['missing']))).code).toBe('not-found')
  })
})
