/**
 * Two users on one database (a team's PostgreSQL store, or one SQLite file), each with their own
 * distiller on their own store session: the global layer is per user. A user's global memories
 * are counted under `global:<user>` and only that user's host runs the global scene and persona
 * passes on them; the workspace layers stay the team's.
 */
import { describe, expect, it } from 'vitest'
import { Distiller } from '../src/core/distiller.js'
import { resolveDistillOptions } from '../src/core/options.js'
import { DistillStateRepository, initialLayerState } from '../src/core/state.js'
import { backends } from '../../store/test/contract/backends.js'
import { appendMessages, extraction, FakeClock, onCleanup, ScriptedModel } from './fixtures.js'

const ALICE = 'alice@example.com'
const BOB = 'bob@example.com'
const WS = '/work/shop'

const options = resolveDistillOptions({ extract: { minMessages: 1 }, l2: { minNewMemories: 2 }, l3: { enabled: false }, llm: { provider: 'test', model: 'scripted' } })

describe.each(backends)('the global layer per user on $name', (backend) => {
  async function twoUsers() {
    const clock = new FakeClock(Date.now())
    const alice = await backend.open({ now: () => clock.now(), user: ALICE })
    const bob = await backend.reopen(alice, { now: () => clock.now(), user: BOB })
    const models = { alice: new ScriptedModel(), bob: new ScriptedModel() }
    const distiller = (store: typeof alice, model: ScriptedModel) => {
      const made = new Distiller({ store, transport: model.transport, options, clock })
      onCleanup(() => made.close())
      return made
    }
    return { clock, alice, bob, models, distillers: { alice: distiller(alice, models.alice), bob: distiller(bob, models.bob) } }
  }

  it("A's global memories trigger A's pass only: B's pass never consumes A's count and never reads A's memories", async () => {
    const { alice, bob, models, distillers } = await twoUsers()
    models.alice.queue('l1', extraction([{ text: 'Alice drinks 抹茶 every morning.', scope: 'global' }]))
    await appendMessages(alice, 'conv-alice', WS, ['毎朝抹茶を飲みます。'])
    await distillers.alice.runPending(60_000)
    // One new global memory of Alice: her counter, below the threshold of 2.
    expect(await new DistillStateRepository(alice).layers()).toEqual({ [`global:${ALICE}`]: { ...initialLayerState(), sinceL2: 1, sinceL3: 1 } })

    models.bob.queue('l1', extraction([{ text: 'Bob prefers espresso.', scope: 'global' }, { text: 'Bob cycles to work.', scope: 'global' }]))
    models.bob.queue('l2', '{"ops":[{"op":"create","title":"Bob\'s habits","summary":"Espresso, cycling.","memories":["n1","n2"]}]}')
    await appendMessages(bob, 'conv-bob', WS, ['I like espresso and I cycle to work.'])
    await distillers.bob.runPending(60_000)
    // Bob's host distilled Bob's conversation only (Alice's conversation is her host's) and ran his own pass.
    expect(models.bob.callsOf('l1')).toHaveLength(1)
    expect(models.bob.callsOf('l1')[0]!.prompt).not.toContain('抹茶')
    expect(models.bob.callsOf('l2')).toHaveLength(1)
    const bobPrompt = models.bob.callsOf('l2')[0]!.prompt
    expect(bobPrompt).toContain('Bob prefers espresso.')
    expect(bobPrompt).not.toContain('抹茶')
    const layers = await new DistillStateRepository(bob).layers()
    expect(layers[`global:${BOB}`]).toMatchObject({ sinceL2: 0, attempts: 0 })
    // Alice's count and watermark are untouched by Bob's pass.
    expect(layers[`global:${ALICE}`]).toEqual({ ...initialLayerState(), sinceL2: 1, sinceL3: 1 })
    expect(layers.global).toBeUndefined()

    // Alice's second memory makes her layer due: her pass reads both of hers, none of Bob's.
    models.alice.queue('l1', extraction([{ text: 'Alice lives in 京都.', scope: 'global' }]))
    models.alice.queue('l2', '{"ops":[{"op":"create","title":"Alice","summary":"抹茶 in 京都.","memories":["n1","n2"]}]}')
    await appendMessages(alice, 'conv-alice', WS, ['京都に住んでいます。'])
    await distillers.alice.runPending(60_000)
    expect(models.alice.callsOf('l2')).toHaveLength(1)
    const alicePrompt = models.alice.callsOf('l2')[0]!.prompt
    expect(alicePrompt).toContain('Alice drinks 抹茶 every morning.')
    expect(alicePrompt).toContain('Alice lives in 京都.')
    expect(alicePrompt).not.toContain('Bob')
    expect((await alice.scenes.list({ scope: 'global' })).map((scene) => [scene.title, scene.createdBy])).toEqual([['Alice', ALICE]])
    expect((await bob.scenes.list({ scope: 'global' })).map((scene) => [scene.title, scene.createdBy])).toEqual([["Bob's habits", BOB]])
    expect((await new DistillStateRepository(alice).layers())[`global:${ALICE}`]).toMatchObject({ sinceL2: 0 })
    // Bob's host never ran a pass of Alice's layer.
    expect(models.bob.callsOf('l2')).toHaveLength(1)
    await distillers.bob.runPending(60_000)
    expect(models.bob.callsOf('l2')).toHaveLength(1)
  })

  it("the workspace layer stays the team's: both users' workspace memories count under one key", async () => {
    const { alice, bob, models, distillers } = await twoUsers()
    models.alice.queue('l1', extraction([{ text: 'The shop deploys with Kamal.' }]))
    await appendMessages(alice, 'conv-alice', WS, ['We deploy the shop with Kamal.'])
    await distillers.alice.runPending(60_000)
    models.bob.queue('l1', extraction([{ text: 'The shop database is PostgreSQL 17.' }]))
    models.bob.queue('l2', '{"ops":[{"op":"create","title":"Shop stack","summary":"Kamal, PostgreSQL 17.","memories":["n1","n2"]}]}')
    await appendMessages(bob, 'conv-bob', WS, ['The shop runs on PostgreSQL 17.'])
    await distillers.bob.runPending(60_000)
    const prompt = models.bob.callsOf('l2')[0]!.prompt
    expect(prompt).toContain('The shop deploys with Kamal.')
    expect(prompt).toContain('The shop database is PostgreSQL 17.')
    expect((await alice.scenes.list({ workspace: WS, includeGlobal: false })).map((scene) => scene.title)).toEqual(['Shop stack'])
  })

  it("an older version's unattributed 'global' counter goes to the first user whose distiller runs, and only that user's pass uses it", async () => {
    const { alice, bob, models, distillers } = await twoUsers()
    const old = await alice.memories.add({ kind: 'fact', text: 'The team standup is at 9:30 (站会).', scope: 'global' })
    const old2 = await alice.memories.add({ kind: 'fact', text: 'The office is in 大阪.', scope: 'global' })
    // Written before user identities: unattributed, visible to everyone.
    await backend.sql(alice, `UPDATE store_memories SET created_by = '' WHERE id IN ('${old.id}', '${old2.id}')`)
    await new DistillStateRepository(alice).updateLayers((all) => {
      all.global = { ...initialLayerState(), sinceL2: 2, sinceL3: 2 }
    })
    models.bob.queue('l2', '{"ops":[{"op":"create","title":"Office","summary":"大阪, standup 9:30.","memories":["n1","n2"]}]}')
    await distillers.bob.runPending(60_000)
    expect(models.bob.callsOf('l2')).toHaveLength(1)
    expect(models.bob.callsOf('l2')[0]!.prompt).toContain('The office is in 大阪.')
    const layers = await new DistillStateRepository(bob).layers()
    expect(Object.keys(layers)).toEqual([`global:${BOB}`])
    expect(layers[`global:${BOB}`]).toMatchObject({ sinceL2: 0 })
    await distillers.alice.runPending(60_000)
    expect(models.alice.callsOf('l2')).toHaveLength(0)
  })
})
