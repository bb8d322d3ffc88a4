import { describe, expect, it } from 'vitest'
import { fakeClock, rejectionOf } from '../helpers.ts'
import { seedTwoDays, WS_BLOG, WS_SHOP } from '../support/seed.ts'
import { type Backend, backends } from './backends.ts'

const DAY = 86_400_000

/** A small store spread over two days and two workspaces (CJK paths and text). */
async function seeded(backend: Backend) {
  const clock = fakeClock(Date.UTC(2026, 10, 30, 12))
  const store = await backend.open({ now: clock.now })
  await seedTwoDays(store, clock)
  return store
}

describe.each(backends)('store.stats ($name)', (backend) => {
  it('counts rows per layer, scope, kind and workspace without loading them', async () => {
    const store = await seeded(backend)
    const counts = await store.stats.counts()
    expect(counts).toMatchObject({
      conversations: 3,
      messages: { total: 4, user: 2, assistant: 2, withVectors: 0 },
      memories: { current: 4, superseded: 1, byScope: { global: 1, session: 1, workspace: 2 }, byKind: { fact: 3, preference: 1 } },
      scenes: { total: 1, byScope: { workspace: 1 } },
      persona: { total: 1, byScope: { global: 1 } },
    })
    // Busiest workspace first (messages + current memories), ties by path, the unknown one (`''`) included.
    expect(counts.workspaces).toEqual([
      { workspace: WS_SHOP, conversations: 1, messages: 2, memories: 1 },
      { workspace: WS_BLOG, conversations: 1, messages: 2, memories: 1 },
      { workspace: '', conversations: 1, messages: 0, memories: 0 },
    ])
    expect(counts.auditEntries).toBe((await store.audit.list({ limit: 10_000 })).length)
  })

  it('groups what was written per UTC day, oldest first, and lists kinds by use', async () => {
    const store = await seeded(backend)
    const first = Math.floor(Date.UTC(2026, 10, 30, 12) / DAY)
    expect(await store.stats.daily()).toEqual([
      // The superseded memory is history, not counted; its successor is.
      { day: first, memories: { workspace: 1, global: 1 }, scenes: 0, messages: 3 },
      { day: first + 1, memories: { workspace: 1, session: 1 }, scenes: 1, messages: 1 },
    ])
    expect(await store.stats.kinds()).toEqual(['fact', 'preference'])
    expect(await store.stats.searchIndexBytes()).toBeGreaterThan(0)
  })

  it('answers on a read-only store while the owner keeps writing, and an empty store counts zero', async () => {
    const store = await seeded(backend)
    const reader = await backend.reopen(store, { readonly: true })
    await store.messages.append({ conversationId: 's1', hostMessageId: 'h5', role: 'user', text: 'one more' })
    expect((await reader.stats.counts()).messages.total).toBe(5)
    const empty = await backend.open()
    expect(await empty.stats.counts()).toEqual({
      conversations: 0,
      messages: { total: 0, user: 0, assistant: 0, withVectors: 0 },
      memories: { current: 0, superseded: 0, byScope: {}, byKind: {} },
      scenes: { total: 0, byScope: {} },
      persona: { total: 0, byScope: {} },
      workspaces: [],
      auditEntries: 0,
    })
    expect(await empty.stats.daily()).toEqual([])
    await store.close()
    expect((await rejectionOf(() => store.stats.counts())).code).toBe('closed')
  })
})
