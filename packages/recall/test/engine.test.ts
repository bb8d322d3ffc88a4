import { describe, expect, it } from 'vitest'
import { resolveRecallOptions } from '../src/core/options.ts'
import { RecallEngine } from '../src/core/recall-engine.ts'
import { RecallInjector } from '../src/core/injector.ts'
import { modePolicy } from '../src/core/session-modes.ts'
import { RECALL_TOOLS } from '../src/core/tools.ts'
import { tempStoreEachTest } from './support/store.ts'

describe('RecallEngine on a real store', () => {
  const openStore = tempStoreEachTest()

  it('sees global memories, its workspace\'s, and only its own session\'s session-scoped ones', async () => {
    const handle = openStore()
    const { store } = handle
    await store.memories.add({ kind: 'fact', text: 'global one', scope: 'global' })
    await store.memories.add({ kind: 'fact', text: 'alpha one', scope: 'workspace', workspace: '/w/alpha' })
    await store.memories.add({ kind: 'fact', text: 'beta one', scope: 'workspace', workspace: '/w/beta' })
    await store.memories.add({ kind: 'fact', text: 'mine', scope: 'session', sessionId: 's1', workspace: '/w/alpha' })
    await store.memories.add({ kind: 'fact', text: 'theirs', scope: 'session', sessionId: 's2', workspace: '/w/alpha' })
    const engine = new RecallEngine(store, resolveRecallOptions())
    const texts = (await engine.visibleMemories({ sessionId: 's1', workspace: '/w/alpha' })).map((memory) => memory.text).sort()
    expect(texts).toEqual(['alpha one', 'global one', 'mine'])
    // A session without a workspace sees global and its own session memories only.
    expect((await engine.visibleMemories({ sessionId: 's2', workspace: '' })).map((memory) => memory.text).sort()).toEqual(['global one', 'theirs'])
  })

  it('resolves ids by prefix or suffix and reports ambiguity with a stable code', async () => {
    const handle = openStore()
    const engine = new RecallEngine(handle.store, resolveRecallOptions())
    const scope = { sessionId: 's', workspace: '/w' }
    const a = await engine.addMemory({ text: 'first' }, scope, 'user')
    const b = await engine.addMemory({ text: 'second' }, scope, 'user')
    expect((await engine.resolveMemory(a.id.slice(-8), scope)).id).toBe(a.id)
    expect((await engine.resolveMemory(b.id, scope)).id).toBe(b.id)
    // Ids are time-ordered: two memories of the same millisecond share their first 12 characters.
    const at = Date.UTC(2025, 0, 1)
    const twin1 = await handle.store.memories.add({ kind: 'fact', text: 'twin one', scope: 'workspace', workspace: '/w', createdAt: at })
    const twin2 = await handle.store.memories.add({ kind: 'fact', text: 'twin two', scope: 'workspace', workspace: '/w', createdAt: at })
    expect(twin1.id.slice(0, 8)).toBe(twin2.id.slice(0, 8))
    await expect(engine.resolveMemory(twin1.id.slice(0, 8), scope)).rejects.toMatchObject({ code: 'ambiguous-id' })
    await expect(engine.resolveMemory('abc', scope)).rejects.toMatchObject({ code: 'not-found' })
    await expect(engine.addMemory({ text: '  ' }, scope, 'user')).rejects.toMatchObject({ code: 'invalid-argument', path: 'text' })
    await expect(engine.addMemory({ text: 'x', scope: 'workspace' }, { sessionId: 's', workspace: '' }, 'user')).rejects.toMatchObject({ code: 'invalid-argument', path: 'scope' })
  })

  it('a superseded memory is history: it is not recalled and cannot be edited again', async () => {
    const handle = openStore()
    const engine = new RecallEngine(handle.store, resolveRecallOptions())
    const scope = { sessionId: 's', workspace: '/w' }
    const old = await engine.addMemory({ text: 'The build uses webpack.' }, scope, 'user')
    const { current } = await engine.correctMemory(old.id, 'The build uses vite.', scope, 'user')
    const hits = await engine.searchMemories('which build tool, webpack or vite', scope)
    expect(hits.map((hit) => hit.memory.id)).toEqual([current.id])
    await expect(engine.resolveMemory(old.id, scope)).rejects.toMatchObject({ code: 'not-found', message: expect.stringMatching(/replaced by/) })
  })

  it('conversation search leaves out the current session unless asked, and never reads other workspaces', async () => {
    const handle = openStore()
    const { store } = handle
    for (const [id, workspace, text] of [
      ['now', '/w', 'We are debugging the websocket reconnect right now.'],
      ['before', '/w', 'Last week the websocket reconnect loop was fixed by a backoff.'],
      ['elsewhere', '/x', 'The websocket reconnect in the other repo.'],
    ] as const) {
      await store.conversations.ensure({ id, workspace })
      await store.messages.append({ conversationId: id, hostMessageId: `${id}-1`, role: 'user', text })
    }
    const engine = new RecallEngine(store, resolveRecallOptions())
    const scope = { sessionId: 'now', workspace: '/w' }
    expect((await engine.searchConversations('websocket reconnect', scope)).map((hit) => hit.message.conversationId)).toEqual(['before'])
    expect((await engine.searchConversations('websocket reconnect', scope, { includeCurrentSession: true })).map((hit) => hit.message.conversationId).sort()).toEqual(['before', 'now'])
  })

  it('ranks the store\'s full-text candidates: old memories beyond any scan window, inflections, scope kept', async () => {
    const handle = openStore()
    const { store } = handle
    const scope = { sessionId: 's', workspace: '/w' }
    // The matching memory is the oldest of many: a newest-N scan would never reach it.
    const at = Date.UTC(2025, 0, 1)
    const target = await store.memories.add({ kind: 'fact', text: 'The team painted the mural in the lobby', scope: 'workspace', workspace: '/w', createdAt: at })
    await store.memories.add({ kind: 'fact', text: 'Mural painting in another repo', scope: 'workspace', workspace: '/other', createdAt: at })
    await store.transaction(async (tx) => {
      for (let i = 0; i < 300; i++) await tx.memories.add({ kind: 'fact', text: `Unrelated note ${i} about lunch orders`, scope: 'workspace', workspace: '/w', createdAt: at + 1_000 + i })
    })
    const engine = new RecallEngine(store, resolveRecallOptions({ recall: { scoreThreshold: 0 } }))
    // "painting" meets "painted" through the analyzer's stem, which the store matches as a prefix.
    expect((await engine.searchMemories('who was painting murals?', scope)).map((hit) => hit.memory.id)).toEqual([target.id])
    const turn = await engine.recallForTurn('the mural painting', scope, modePolicy(engine.options.defaultMode), new Set())
    expect(turn.selection.selected.map((selected) => selected.scored.memory.id)).toEqual([target.id])
    // Only full-text candidates were ranked, not the 301 visible memories.
    expect(turn.considered).toBe(1)
  })

  it('conversation search ranks a hit\'s context turns too (one store read for the neighbours)', async () => {
    const handle = openStore()
    const { store } = handle
    await store.conversations.ensure({ id: 'old', workspace: '/w' })
    const turns = ['Where should the offsite be?', 'Lisbon, in the second week of May.', 'Book the hotel near the river.', 'Unrelated chatter.', 'More unrelated chatter.']
    // Seqs as capture stores them in the host (its event numbers: the turn's other events lie
    // between two messages), further apart than the context span.
    for (const [i, text] of turns.entries()) await store.messages.append({ conversationId: 'old', hostMessageId: `m${i}`, role: i % 2 ? 'assistant' : 'user', text, seq: 5 + i * 7 })
    const engine = new RecallEngine(store, resolveRecallOptions())
    const hits = await engine.searchConversations('offsite location', { sessionId: 'now', workspace: '/w' })
    // The question matches; its answer (no query word) is found through the context window and,
    // as the reply to that question, ranks first (question → reply pairing).
    expect(hits.map((hit) => hit.message.text).slice(0, 2)).toEqual([turns[1], turns[0]])
    expect(hits.map((hit) => hit.message.text)).not.toContain(turns[4])
  })

  it('conversation search ranks the reply to a matching question above the reply to a stronger statement', async () => {
    const handle = openStore()
    const { store } = handle
    const talk = async (id: string, texts: string[]) => {
      await store.conversations.ensure({ id, workspace: '/w' })
      for (const [i, text] of texts.entries()) await store.messages.append({ conversationId: id, hostMessageId: `${id}${i}`, role: i % 2 ? 'assistant' : 'user', seq: i, text })
    }
    // The statement says both query words twice, the question once each: without pairing the
    // statement's reply borrows more context than the question's reply, which holds the answer.
    await talk('asked', ['Which hotel did we pick for the offsite?', 'The Riverside, two nights.'])
    await talk('told', ['Offsite hotel: the offsite hotel is booked.', 'Noted, two nights.'])
    await talk('ja', ['オフサイトのホテルはどこにしましたか？', 'リバーサイドに二泊です。'])
    const engine = new RecallEngine(store, resolveRecallOptions())
    const scope = { sessionId: 'now', workspace: '/w' }
    const texts = (await engine.searchConversations('offsite hotel', scope, { limit: 10 })).map((hit) => hit.message.text)
    expect(texts.indexOf('The Riverside, two nights.')).toBeGreaterThanOrEqual(0)
    expect(texts.indexOf('The Riverside, two nights.')).toBeLessThan(texts.indexOf('Noted, two nights.'))
    expect(texts.indexOf('The Riverside, two nights.')).toBeLessThan(texts.indexOf('Which hotel did we pick for the offsite?'))
    // A full-width question mark asks too: the Japanese reply comes before its question.
    const japanese = (await engine.searchConversations('オフサイトのホテル', scope, { limit: 10 })).map((hit) => hit.message.text)
    expect(japanese.slice(0, 2)).toEqual(['リバーサイドに二泊です。', 'オフサイトのホテルはどこにしましたか？'])
  })

  it('conversation search also takes the best matches written in the period a query names', async () => {
    const handle = openStore()
    const { store } = handle
    // 200 turns of 2023 share the question's rarer words; the one of July 2022 shares only
    // "trip", said in all of them, so the workspace-wide search (150 candidates) never hands it over.
    await store.transaction(async (tx) => {
      await tx.conversations.ensure({ id: 'later', workspace: '/w', startedAt: Date.UTC(2023, 2, 1) })
      for (let i = 0; i < 200; i++) {
        await tx.messages.append({ conversationId: 'later', hostMessageId: `l${i}`, role: 'user', seq: i, createdAt: Date.UTC(2023, 2, 1) + i * 1000, text: `Joanna planned the trip to the coast, draft ${i}.` })
      }
    })
    await store.conversations.ensure({ id: 'july', workspace: '/w', startedAt: Date.UTC(2022, 6, 10) })
    const july = await store.messages.append({ conversationId: 'july', hostMessageId: 'j0', role: 'user', seq: 0, createdAt: Date.UTC(2022, 6, 10), text: 'Back from the trip, the mountains of Nepal were unreal.' })
    const engine = new RecallEngine(store, resolveRecallOptions())
    const scope = { sessionId: 'now', workspace: '/w' }
    const plain = await engine.searchConversations('Where did Joanna plan a coast trip?', scope, { limit: 200 })
    expect(plain.map((hit) => hit.message.id)).not.toContain(july.message.id)
    // Naming the month makes it a candidate (a second search limited to the period), so the
    // date prior can lift it.
    const dated = await engine.searchConversations('Where did Joanna plan a coast trip in July 2022?', scope, { limit: 200 })
    expect(dated.map((hit) => hit.message.id)).toContain(july.message.id)
    // The same for a period named in Chinese or Japanese (2022年7月).
    const mixed = await engine.searchConversations('Joanna 2022年7月 coast trip 去哪里了？', scope, { limit: 200 })
    expect(mixed.map((hit) => hit.message.id)).toContain(july.message.id)
  })

  it('tools validate arguments before touching the store', async () => {
    const handle = openStore()
    const engine = new RecallEngine(handle.store, resolveRecallOptions())
    const scope = { sessionId: 's', workspace: '/w' }
    const tool = (name: string) => RECALL_TOOLS.find((spec) => spec.name === name)!
    await expect(tool('memory_search').run(engine, scope, { query: '' })).rejects.toMatchObject({ code: 'invalid-argument', path: 'query' })
    await expect(tool('memory_search').run(engine, scope, null)).rejects.toMatchObject({ code: 'invalid-argument', path: 'query' })
    await expect(tool('memory_add').run(engine, scope, { text: 'x', scope: 'everywhere' })).rejects.toMatchObject({ code: 'invalid-argument', path: 'scope' })
    await expect(tool('conversation_search').run(engine, scope, { query: 'x', limit: 0 })).rejects.toMatchObject({ code: 'invalid-argument', path: 'limit' })
    expect(await handle.store.memories.list()).toEqual([])
    for (const spec of RECALL_TOOLS) {
      expect(spec.parameters).toMatchObject({ type: 'object' })
      expect(spec.description.length).toBeGreaterThan(40)
    }
  })

  it('the injector ignores steps without a human message and reports why nothing was injected', async () => {
    const handle = openStore()
    const engine = new RecallEngine(handle.store, resolveRecallOptions())
    const injector = new RecallInjector(engine)
    const scope = { sessionId: 's', workspace: '/w' }
    expect(await injector.prepare(scope, [{ role: 'user', source: { kind: 'tool' }, content: [{ type: 'text', text: 'x' }] }], [])).toEqual({})
    expect(injector.lastRecall('s')).toBeUndefined()
    const result = await injector.prepare(scope, [{ role: 'user', source: { kind: 'user' }, content: [{ type: 'text', text: 'anything about kites?' }] }], [])
    expect(result.plan).toBeUndefined()
    expect(result.skipped).toBe('no memory matched')
    expect(injector.lastRecall('s')).toMatchObject({ injected: 0, strategy: 'keyword' })
  })
})
