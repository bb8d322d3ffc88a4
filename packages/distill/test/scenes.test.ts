import { describe, expect, it } from 'vitest'
import { adoptUnattributedGlobal, applySceneOps, layerKey, parseLayerKey, relatedScenes, runsLayer } from '../src/core/scenes.js'
import { initialLayerState, type LayerState } from '../src/core/state-types.js'
import { openTempStore } from './fixtures.js'

describe('scene ops on a real store', () => {
  it('applies create / update / merge / delete and keeps memory links', async () => {
    const { store } = openTempStore()
    const scope = { scope: 'workspace' as const, workspace: '/w' }
    const a = await store.scenes.add({ title: 'Editor', summary: 'Uses Helix.', scope: 'workspace', workspace: '/w', memoryIds: ['m-a'] })
    const b = await store.scenes.add({ title: 'Editor keys', summary: 'Custom keymap.', scope: 'workspace', workspace: '/w', memoryIds: ['m-b'] })
    const c = await store.scenes.add({ title: 'Old', summary: 'Obsolete.', scope: 'workspace', workspace: '/w' })
    const d = await store.scenes.add({ title: 'Coffee', summary: 'Drinks espresso.', scope: 'workspace', workspace: '/w' })
    const scenes = new Map([
      ['s1', a.id],
      ['s2', b.id],
      ['s3', c.id],
      ['s4', d.id],
    ])
    const memories = new Map([
      ['n1', 'm-new-1'],
      ['n2', 'm-new-2'],
    ])
    const applied = await store.transaction((tx) =>
      applySceneOps(
        tx,
        [
          { op: 'create', title: 'Cats', summary: 'Has a cat named Mochi.', memories: ['n2'] },
          { op: 'merge', scenes: ['s1', 's2'], title: 'Editor setup', summary: 'Helix with a custom keymap.', memories: ['n1'] },
          { op: 'delete', scene: 's3' },
          { op: 'update', scene: 's4', summary: 'Drinks espresso, no sugar.', memories: ['n1'] },
        ],
        scenes,
        memories,
        scope,
        4,
        12,
      ),
    )
    expect(applied.created.map((scene) => scene.title)).toEqual(['Cats'])
    expect([...applied.deleted].sort()).toEqual([b.id, c.id].sort())
    const merged = await store.scenes.get(a.id)
    expect(merged).toMatchObject({ title: 'Editor setup', summary: 'Helix with a custom keymap.' })
    expect(merged!.memoryIds.sort()).toEqual(['m-a', 'm-b', 'm-new-1'])
    expect((await store.scenes.get(d.id))!.memoryIds).toEqual(['m-new-1'])
    expect((await store.scenes.list({ workspace: '/w', includeGlobal: false })).map((scene) => scene.title).sort()).toEqual(['Cats', 'Coffee', 'Editor setup'])
  })

  it('refuses creations beyond maxScenes, after deletes freed what they could', async () => {
    const { store } = openTempStore()
    const scope = { scope: 'global' as const, workspace: null }
    const a = await store.scenes.add({ title: 'A', summary: 'a', scope: 'global' })
    await store.scenes.add({ title: 'B', summary: 'b', scope: 'global' })
    const applied = await store.transaction((tx) =>
      applySceneOps(
        tx,
        [
          { op: 'create', title: 'C', summary: 'c', memories: [] },
          { op: 'create', title: 'D', summary: 'd', memories: [] },
          { op: 'delete', scene: 's1' },
        ],
        new Map([['s1', a.id]]),
        new Map(),
        scope,
        2,
        2,
      ),
    )
    expect(applied.created.map((scene) => scene.title)).toEqual(['C'])
    expect(applied.refused).toEqual([{ op: 'create', reason: 'scene cap 2 reached' }])
    expect((await store.scenes.list({ scope: 'global' })).length).toBe(2)
  })
})

describe('relatedScenes', () => {
  it('puts the scenes sharing most tokens (CJK included) in full, the rest by title', () => {
    const scene = (id: string, title: string, summary: string) => ({ id, title, summary }) as never
    const memory = (text: string) => ({ text }) as never
    const { context, others } = relatedScenes(
      [scene('1', '料理', '毎朝コーヒーを飲む'), scene('2', 'Editor', 'Helix keymap'), scene('3', '旅行', '京都に行った')],
      [memory('ユーザーは毎朝コーヒーを二杯飲む')],
      1,
    )
    expect(context.map((s: { id: string }) => s.id)).toEqual(['1'])
    expect(others.map((s: { id: string }) => s.id)).toEqual(['2', '3'])
  })

  it('round-trips layer keys: the global layer is per user, workspaces are the team\'s', () => {
    expect(layerKey({ scope: 'global', workspace: null }, 'alice@example.com')).toBe('global:alice@example.com')
    expect(parseLayerKey(layerKey({ scope: 'global', workspace: null }, '山田@例え.jp'))).toEqual({ scope: 'global', workspace: null, user: '山田@例え.jp' })
    expect(parseLayerKey('global')).toEqual({ scope: 'global', workspace: null, user: '' })
    expect(parseLayerKey(layerKey({ scope: 'workspace', workspace: 'git:github.com/o/r' }, 'alice@example.com'))).toEqual({ scope: 'workspace', workspace: 'git:github.com/o/r', user: '' })
    expect(parseLayerKey(layerKey({ scope: 'workspace', workspace: '/a:b' }, 'alice@example.com'))).toEqual({ scope: 'workspace', workspace: '/a:b', user: '' })
    expect(parseLayerKey('nonsense')).toBeUndefined()
    expect(parseLayerKey('global:')).toBeUndefined()
    const alice = parseLayerKey('global:alice@example.com')!
    expect([runsLayer(alice, 'alice@example.com'), runsLayer(alice, 'bob@example.com'), runsLayer(parseLayerKey('workspace:/w')!, 'bob@example.com')]).toEqual([true, false, true])
  })

  it('gives the unattributed global counter to the adopting user, adding to a counter the user has', () => {
    const layers: Record<string, LayerState> = { global: { ...initialLayerState(), sinceL2: 3, sinceL3: 4, lastL2At: 10 }, 'workspace:/w': initialLayerState() }
    expect(adoptUnattributedGlobal(layers, 'alice@example.com')).toBe(true)
    expect(layers).toEqual({ 'global:alice@example.com': { ...initialLayerState(), sinceL2: 3, sinceL3: 4, lastL2At: 10 }, 'workspace:/w': initialLayerState() })
    expect(adoptUnattributedGlobal(layers, 'alice@example.com')).toBe(false)
    const both: Record<string, LayerState> = { global: { ...initialLayerState(), sinceL2: 1, sinceL3: 1, lastL2At: 5 }, 'global:bob@example.com': { ...initialLayerState(), sinceL2: 2, lastL2At: 20, attempts: 1 } }
    adoptUnattributedGlobal(both, 'bob@example.com')
    expect(both).toEqual({ 'global:bob@example.com': { ...initialLayerState(), sinceL2: 3, sinceL3: 1, lastL2At: 20, attempts: 1 } })
  })
})
