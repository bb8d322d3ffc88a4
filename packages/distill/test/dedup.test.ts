import { describe, expect, it } from 'vitest'
import { applyMemoryOps, placeMemory, planMemoryOps, sameScopeFilter, type PlacedCandidate } from '../src/core/dedup.js'
import type { ExtractedMemory } from '../src/core/schemas.js'
import { openTempStore } from './fixtures.js'

const candidate = (text: string, over: Partial<ExtractedMemory> = {}): ExtractedMemory => ({ kind: 'fact', text, scope: 'workspace', priority: 3, sourceMessageIds: ['msg-new'], ...over })

describe('placeMemory', () => {
  it('maps scope suggestions to valid placements', () => {
    expect(placeMemory('global', '/w', 'c')).toEqual({ scope: 'global', workspace: null, sessionId: null })
    expect(placeMemory('workspace', '/w', 'c')).toEqual({ scope: 'workspace', workspace: '/w', sessionId: null })
    // Without a known workspace a workspace memory stays with its session, never leaks to all.
    expect(placeMemory('workspace', '', 'c')).toEqual({ scope: 'session', workspace: null, sessionId: 'c' })
    expect(placeMemory('session', '/w', 'c')).toEqual({ scope: 'session', workspace: '/w', sessionId: 'c' })
    expect(sameScopeFilter(placeMemory('workspace', '/w', 'c'))).toEqual({ scope: 'workspace', workspace: '/w', includeGlobal: false })
  })
})

describe('planMemoryOps', () => {
  const existing = { id: 'mem-old', text: 'The user lives in Tokyo.' } as never
  const placed = (text: string, similar = [existing]): PlacedCandidate => ({ memory: candidate(text), placement: placeMemory('workspace', '/w', 'c'), similar })
  const aliases = new Map([['e1', 'mem-old']])

  it('skips exact duplicates without a decision and adds undecided candidates', () => {
    const ops = planMemoryOps([placed('the user LIVES in tokyo'), placed('The user likes tea.')], undefined, aliases)
    expect(ops).toEqual([
      { type: 'skip', candidate: 0, target: 'mem-old', reason: 'exact duplicate' },
      { type: 'add', candidate: 1 },
    ])
  })

  it('turns update / merge / supersede into replacements with the right text', () => {
    const candidates = [placed('The user moved to Osaka.'), placed('The user lives in Tokyo, Shibuya.'), placed('Tokyo apartment has 2 rooms.')]
    const ops = planMemoryOps(
      candidates,
      [
        { id: 'n1', action: 'supersede', target: 'e1' },
        { id: 'n2', action: 'update', target: 'e1', text: 'The user lives in Shibuya, Tokyo.' },
        { id: 'n3', action: 'merge', target: 'e1', text: 'The user lives in Tokyo in a 2-room apartment.' },
      ],
      aliases,
    )
    expect(ops).toEqual([
      { type: 'replace', candidate: 0, action: 'supersede', target: 'mem-old', text: 'The user moved to Osaka.' },
      { type: 'replace', candidate: 1, action: 'update', target: 'mem-old', text: 'The user lives in Shibuya, Tokyo.' },
      { type: 'replace', candidate: 2, action: 'merge', target: 'mem-old', text: 'The user lives in Tokyo in a 2-room apartment.' },
    ])
  })
})

describe('applyMemoryOps on a real store', () => {
  it('adds, skips and replaces with history: the old fact stays, superseded by the new one', async () => {
    const { store } = openTempStore()
    const old = await store.memories.add({ kind: 'fact', text: 'The user lives in Tokyo.', scope: 'workspace', workspace: '/w', sourceMessageIds: ['msg-old'], priority: 2 })
    const tea = await store.memories.add({ kind: 'preference', text: 'The user likes green tea.', scope: 'workspace', workspace: '/w' })
    const placement = placeMemory('workspace', '/w', 'conv-1')
    const candidates: PlacedCandidate[] = [
      { memory: candidate('The user moved to Osaka in May.', { priority: 4 }), placement, similar: [old] },
      { memory: candidate('The user likes green tea.'), placement, similar: [tea] },
      { memory: candidate('The user has a cat named Mochi.'), placement, similar: [] },
      { memory: candidate('The user drinks green tea without sugar.'), placement, similar: [tea] },
    ]
    const ops = planMemoryOps(
      candidates,
      [
        { id: 'n1', action: 'supersede', target: 'e1' },
        { id: 'n4', action: 'merge', target: 'e2', text: 'The user likes green tea, without sugar.' },
      ],
      new Map([
        ['e1', old.id],
        ['e2', tea.id],
      ]),
    )
    const applied = await store.transaction((tx) => applyMemoryOps(tx, candidates, ops, { conversationId: 'conv-1', layer: 'l1' }))
    expect(applied.skipped).toBe(1)
    expect(applied.added.map((memory) => memory.text)).toEqual(['The user has a cat named Mochi.'])
    expect(applied.replaced.map((entry) => [entry.from, entry.action])).toEqual([
      [old.id, 'supersede'],
      [tea.id, 'merge'],
    ])

    const history = await store.memories.history(applied.replaced[0]!.to)
    expect(history.map((memory) => memory.text)).toEqual(['The user lives in Tokyo.', 'The user moved to Osaka in May.'])
    expect(history[0]!.supersededBy).toBe(applied.replaced[0]!.to)
    expect(history[1]).toMatchObject({ priority: 4, sourceMessageIds: ['msg-old', 'msg-new'], flags: { distill: { action: 'supersede', conversationId: 'conv-1' } } })

    const current = await store.memories.list({ workspace: '/w' })
    expect(current.map((memory) => memory.text).sort()).toEqual(['The user has a cat named Mochi.', 'The user likes green tea, without sugar.', 'The user moved to Osaka in May.'])
    // History stays queryable.
    expect((await store.memories.list({ workspace: '/w', includeSuperseded: true })).length).toBe(5)
  })

  it('follows a target superseded meanwhile to its current version and adds when it was deleted', async () => {
    const { store } = openTempStore()
    const v1 = await store.memories.add({ kind: 'fact', text: 'Deploys on Fridays.', scope: 'global' })
    const v2 = await store.memories.supersede(v1.id, { text: 'Deploys on Thursdays.' })
    const gone = await store.memories.add({ kind: 'fact', text: 'Uses Jenkins.', scope: 'global' })
    await store.memories.delete(gone.id)
    const placement = placeMemory('global', '', 'c')
    const candidates: PlacedCandidate[] = [
      { memory: candidate('Deploys on Wednesdays now.', { scope: 'global' }), placement, similar: [v1] },
      { memory: candidate('Uses GitHub Actions.', { scope: 'global' }), placement, similar: [gone] },
    ]
    const applied = await store.transaction((tx) =>
      applyMemoryOps(
        tx,
        candidates,
        [
          { type: 'replace', candidate: 0, action: 'supersede', target: v1.id, text: 'Deploys on Wednesdays now.' },
          { type: 'replace', candidate: 1, action: 'supersede', target: gone.id, text: 'Uses GitHub Actions.' },
        ],
        { conversationId: 'c', layer: 'l1' },
      ),
    )
    expect(applied.replaced).toEqual([{ from: v2.id, to: expect.any(String), action: 'supersede' }])
    expect(applied.added.map((memory) => memory.text)).toEqual(['Uses GitHub Actions.'])
    expect((await store.memories.history(v1.id)).map((memory) => memory.text)).toEqual(['Deploys on Fridays.', 'Deploys on Thursdays.', 'Deploys on Wednesdays now.'])
  })
})
