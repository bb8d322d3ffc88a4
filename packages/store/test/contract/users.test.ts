/**
 * Team scopes on one database: every row carries the user of the session that wrote it, a
 * user's global memories, scenes and persona are theirs alone, workspace rows are the team's
 * (with their author), and unattributed rows (from before user identities) are everyone's.
 * Two stores with two users on one database, as two hosts of two people would be.
 */
import { describe, expect, it } from 'vitest'
import { matchesScope, type Memory, type MemoryScopeFilter, type OpenedMemoryStore } from '../../src/index.ts'
import { collect } from '../support/seed.ts'
import { rejectionOf } from '../helpers.ts'
import { backends } from './backends.ts'

const ALICE = 'alice@example.com'
const BOB = '鈴木 bob@example.jp'
const WS = '/srv/共有/shop'

const ids = (list: { id: string }[]) => list.map((m) => m.id).sort()

/** An export line of a memory from before user identities (no `createdBy`). */
function legacyMemoryLines(id: string, text: string): string[] {
  const header = JSON.stringify({ type: 'header', format: 'dsh-memory-export', version: 1, exportedAt: 1, schema: 5 })
  const memory = { id, kind: 'fact', text, scope: 'global', workspace: null, sessionId: null, sourceMessageIds: [], priority: 0, revision: 1, createdAt: 1_000, updatedAt: 1_000, lastRecalledAt: null, supersededBy: null, embedding: null, embeddingModel: null, flags: {} }
  return [header, JSON.stringify({ type: 'memory', data: memory })]
}

describe.each(backends)('user identity and private global memories ($name)', (backend) => {
  async function twoUsers(): Promise<{ alice: OpenedMemoryStore; bob: OpenedMemoryStore }> {
    const alice = await backend.open({ user: ALICE })
    const bob = await backend.reopen(alice, { user: BOB })
    return { alice, bob }
  }

  it('stamps the session user on every row it writes, and keeps the author through updates', async () => {
    const { alice, bob } = await twoUsers()
    expect(alice.user).toBe(ALICE)
    expect(bob.user).toBe(BOB)
    const { conversation } = await alice.conversations.ensure({ id: 'sess-a', workspace: WS })
    expect(conversation.createdBy).toBe(ALICE)
    const { message } = await bob.messages.append({ conversationId: 'sess-a', hostMessageId: 'h1', role: 'user', text: '在共享仓库里工作' })
    expect(message.createdBy).toBe(BOB)
    expect((await alice.messages.get(message.id))!.createdBy).toBe(BOB)

    const shared = await alice.memories.add({ kind: 'fact', text: 'The shop deploys with Helm', scope: 'workspace', workspace: WS })
    expect(shared.createdBy).toBe(ALICE)
    // The team may edit a workspace memory; it stays Alice's, and the audit says Bob changed it.
    const edited = await bob.memories.update(shared.id, { text: 'The shop deploys with Helm 3' })
    expect(edited).toMatchObject({ createdBy: ALICE, revision: 2 })
    const next = await bob.memories.supersede(shared.id, { text: 'The shop deploys with Argo CD' })
    expect(next.createdBy).toBe(ALICE)
    const audit = await alice.audit.list({ entityId: shared.id })
    expect(audit.map((entry) => [entry.op, entry.createdBy])).toEqual([
      ['memory.add', ALICE],
      ['memory.update', BOB],
      ['memory.supersede', BOB],
    ])
    const scene = await bob.scenes.add({ title: 'デプロイ', summary: 'Helm から Argo CD へ', scope: 'workspace', workspace: WS, memoryIds: [next.id] })
    expect((await alice.scenes.get(scene.id))!.createdBy).toBe(BOB)
  })

  it("one user's global memories are invisible to another: search, list, count, get, history and stats", async () => {
    const { alice, bob } = await twoUsers()
    const privateFact = await alice.memories.add({ kind: 'preference', text: 'Alice prefers 中文 answers about ramen', scope: 'global' })
    const teamFact = await alice.memories.add({ kind: 'fact', text: 'The ramen service lives in the shop repo', scope: 'workspace', workspace: WS })
    const bobsOwn = await bob.memories.add({ kind: 'preference', text: 'Bob prefers short ramen answers', scope: 'global' })

    expect(await bob.memories.get(privateFact.id)).toBeUndefined()
    expect(await bob.memories.history(privateFact.id)).toEqual([])
    expect(ids(await bob.memories.list({ workspace: WS }))).toEqual(ids([teamFact, bobsOwn]))
    expect(ids(await bob.memories.list())).toEqual(ids([teamFact, bobsOwn]))
    expect(await bob.memories.count({ scope: 'global' })).toBe(1)
    expect(ids((await bob.search.memories('ramen', { workspace: WS })).map((hit) => hit.memory))).toEqual(ids([teamFact, bobsOwn]))
    const found = (await bob.search.memories('ramen service')).find((hit) => hit.memory.id === teamFact.id)
    expect(found?.memory.createdBy).toBe(ALICE)
    expect(ids(await alice.memories.list())).toEqual(ids([privateFact, teamFact]))
    expect((await bob.stats.counts()).memories.byScope).toEqual({ global: 1, workspace: 1 })
    expect((await alice.stats.counts()).memories.byScope).toEqual({ global: 1, workspace: 1 })
    // Bob's recall bookkeeping cannot touch Alice's row either.
    expect(await bob.memories.touchRecalled([privateFact.id, teamFact.id])).toBe(1)
  })

  it('a user cannot edit, supersede, merge or forget another user’s global memory', async () => {
    const { alice, bob } = await twoUsers()
    const privateFact = await alice.memories.add({ kind: 'fact', text: 'Alice’s private note', scope: 'global' })
    const mine = await bob.memories.add({ kind: 'fact', text: 'Bob’s note', scope: 'global' })
    expect((await rejectionOf(bob.memories.update(privateFact.id, { text: 'changed' }))).code).toBe('not-found')
    expect((await rejectionOf(bob.memories.supersede(privateFact.id, { text: 'changed' }))).code).toBe('not-found')
    expect((await rejectionOf(bob.memories.mergeInto(mine.id, [privateFact.id]))).code).toBe('not-found')
    expect(await bob.memories.delete(privateFact.id)).toBe(0)
    expect(await alice.memories.get(privateFact.id)).toMatchObject({ text: 'Alice’s private note', revision: 1 })
    expect(await alice.memories.delete(privateFact.id)).toBe(1)
  })

  it('unattributed rows (from before user identities) are visible to every user', async () => {
    const { alice, bob } = await twoUsers()
    const id = '0190a000-0000-7000-8000-000000000001'
    const result = await alice.importJsonl(legacyMemoryLines(id, 'Legacy: the team writes TypeScript'))
    expect(result.inserted.memories).toBe(1)
    for (const store of [alice, bob]) {
      expect(await store.memories.get(id)).toMatchObject({ createdBy: '', scope: 'global' })
      expect((await store.search.memories('TypeScript')).map((hit) => hit.memory.id)).toEqual([id])
    }
    // Editing it keeps it unattributed (and so everyone's).
    await bob.memories.update(id, { priority: 2 })
    expect(await alice.memories.get(id)).toMatchObject({ createdBy: '', priority: 2 })
  })

  it('the global persona is per user; a workspace persona is the team’s', async () => {
    const { alice, bob } = await twoUsers()
    const a1 = await alice.persona.put({ scope: 'global', text: 'Alice: likes 寿司' })
    expect(a1).toMatchObject({ version: 1, createdBy: ALICE })
    expect(await bob.persona.get({ scope: 'global' })).toBeUndefined()
    const b1 = await bob.persona.put({ scope: 'global', text: 'Bob: likes pizza', expectedVersion: 0 })
    expect(b1).toMatchObject({ version: 1, createdBy: BOB })
    expect((await alice.persona.get({ scope: 'global' }))!.text).toBe('Alice: likes 寿司')
    expect(await bob.persona.delete({ scope: 'global' })).toBe(true)
    expect((await alice.persona.get({ scope: 'global' }))!.text).toBe('Alice: likes 寿司')

    await alice.persona.put({ scope: 'workspace', workspace: WS, text: 'In the shop repo: strict lint' })
    const shared = await bob.persona.put({ scope: 'workspace', workspace: WS, text: 'In the shop repo: strict lint, no any', expectedVersion: 1 })
    expect(shared).toMatchObject({ version: 2, createdBy: ALICE })
    expect((await alice.persona.list()).map((p) => [p.scope, p.text])).toEqual([
      ['global', 'Alice: likes 寿司'],
      ['workspace', 'In the shop repo: strict lint, no any'],
    ])
    expect((await bob.persona.list()).map((p) => p.scope)).toEqual(['workspace'])
    expect((await bob.stats.counts()).persona.byScope).toEqual({ workspace: 1 })
  })

  it("global scenes are private; the global layer's revision is per user", async () => {
    const { alice, bob } = await twoUsers()
    const before = (await bob.layers.revision({ scope: 'global' })).revision
    const privateScene = await alice.scenes.add({ title: 'Alice', summary: 'about Alice', scope: 'global' })
    await alice.memories.add({ kind: 'fact', text: 'Alice only', scope: 'global' })
    expect(await bob.scenes.get(privateScene.id)).toBeUndefined()
    expect(await bob.scenes.list({ scope: 'global' })).toEqual([])
    expect(await bob.scenes.delete(privateScene.id)).toBe(false)
    expect((await rejectionOf(bob.scenes.update(privateScene.id, { title: 'x' }))).code).toBe('not-found')
    // Alice's writes to her global layer do not move Bob's.
    expect((await bob.layers.revision({ scope: 'global' })).revision).toBe(before)
    const aliceLayer = await alice.layers.revision({ scope: 'global' })
    expect(aliceLayer).toMatchObject({ scope: 'global', workspace: null, key: `global:${ALICE}`, revision: 2 })
    expect((await alice.layers.list()).map((layer) => layer.key)).toEqual([`global:${ALICE}`])
    expect(await bob.layers.list()).toEqual([])
    await bob.memories.add({ kind: 'fact', text: 'team fact', scope: 'workspace', workspace: WS })
    expect((await alice.layers.list()).map((layer) => layer.key)).toEqual([`global:${ALICE}`, `workspace:${WS}`])
    // An unattributed global row is in everyone's global layer.
    await alice.importJsonl(legacyMemoryLines('0190a000-0000-7000-8000-000000000002', 'legacy'))
    expect((await bob.layers.revision({ scope: 'global' })).revision).toBe(before + 1)
    expect((await alice.layers.revision({ scope: 'global' })).revision).toBe(3)
  })

  it('matchesScope (in memory) and the SQL filter agree for every viewer', async () => {
    const { alice, bob } = await twoUsers()
    await alice.importJsonl(legacyMemoryLines('0190a000-0000-7000-8000-000000000003', 'legacy global'))
    for (const [store, who] of [
      [alice, 'a'],
      [bob, 'b'],
    ] as const) {
      await store.memories.add({ kind: 'fact', text: `${who} global`, scope: 'global' })
      await store.memories.add({ kind: 'fact', text: `${who} ws`, scope: 'workspace', workspace: WS })
      await store.memories.add({ kind: 'episode', text: `${who} other ws`, scope: 'workspace', workspace: '/other' })
      await store.memories.add({ kind: 'episode', text: `${who} session`, scope: 'session', sessionId: `s-${who}`, workspace: WS })
    }
    const filters: MemoryScopeFilter[] = [
      {},
      { workspace: WS },
      { workspace: WS, includeGlobal: false },
      { scope: 'global' },
      { workspace: WS, sessionId: 's-a' },
      { kind: 'fact', workspace: '/other' },
    ]
    // Every row, seen by nobody in particular: the database as it is.
    const all: Memory[] = (await collect(alice.exportJsonl())).map((line) => JSON.parse(line) as { type: string; data: Memory }).filter((r) => r.type === 'memory').map((r) => r.data)
    expect(all).toHaveLength(9)
    for (const store of [alice, bob]) {
      for (const filter of filters) {
        const expected = all.filter((m) => matchesScope({ ...m, superseded: m.supersededBy !== null }, filter, store.user))
        expect(ids(await store.memories.list(filter)), `${store.user} ${JSON.stringify(filter)}`).toEqual(ids(expected))
        expect(await store.memories.count(filter)).toBe(expected.length)
      }
    }
  })

  it('export keeps authors; import keeps them and can stamp unattributed records', async () => {
    const { alice } = await twoUsers()
    await alice.memories.add({ kind: 'fact', text: 'Alice global', scope: 'global' })
    await alice.persona.put({ scope: 'global', text: 'Alice persona' })
    const lines = await collect(alice.exportJsonl())
    const target = await backend.open({ user: BOB })
    await target.importJsonl(lines)
    // Bob imported Alice's export: her rows stay hers, so Bob does not see her global memory.
    expect(await target.memories.list()).toEqual([])
    expect(await target.persona.get({ scope: 'global' })).toBeUndefined()
    const aliceView = await backend.reopen(target, { user: ALICE })
    expect((await aliceView.memories.list()).map((m) => [m.text, m.createdBy])).toEqual([['Alice global', ALICE]])
    expect((await aliceView.persona.get({ scope: 'global' }))!.text).toBe('Alice persona')

    const stamped = await backend.open({ user: BOB })
    await stamped.importJsonl(legacyMemoryLines('0190a000-0000-7000-8000-000000000004', 'legacy'), { unattributedAs: BOB })
    expect(await stamped.memories.get('0190a000-0000-7000-8000-000000000004')).toMatchObject({ createdBy: BOB })
    expect((await rejectionOf(stamped.importJsonl(legacyMemoryLines('0190a000-0000-7000-8000-000000000005', 'x'), { unattributedAs: 'a\nb' }))).code).toBe('invalid-argument')
  })

  it('refuses a bad user, naming the option', async () => {
    const error = await rejectionOf(backend.open({ user: 'line\nbreak' }))
    expect(error.code).toBe('invalid-argument')
    expect(error.message).toMatch(/^user /)
    // Blank means "not set": the default identity, never an empty one.
    const store = await backend.open({ user: '  ' })
    expect(store.user.length).toBeGreaterThan(0)
  })
})
