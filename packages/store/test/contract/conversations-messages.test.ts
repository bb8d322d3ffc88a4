import { describe, expect, it } from 'vitest'
import { TRUNCATION_MARKER } from '../../src/core/text.ts'
import { fakeClock, rejectionOf } from '../helpers.ts'
import { backends } from './backends.ts'

describe.each(backends)('conversations ($name)', (backend) => {
  it('ensure creates once, then updates in place without clobbering the workspace with an empty one', async () => {
    const clock = fakeClock(1_000, 10)
    const store = await backend.open({ now: clock.now })
    const first = await store.conversations.ensure({ id: 'session-a', workspace: '/repo', startedAt: 500 })
    expect(first.created).toBe(true)
    expect(first.conversation).toMatchObject({ id: 'session-a', workspace: '/repo', title: null, startedAt: 500, endedAt: null })

    const again = await store.conversations.ensure({ id: 'session-a', workspace: '', startedAt: 9_999 })
    expect(again.created).toBe(false)
    expect(again.conversation.workspace).toBe('/repo')
    expect(again.conversation.startedAt).toBe(500)

    const titled = await store.conversations.ensure({ id: 'session-a', workspace: '/repo', title: 'Fix the build' })
    expect(titled.conversation.title).toBe('Fix the build')
    const moved = await store.conversations.ensure({ id: 'session-a', workspace: '/other' })
    expect(moved.conversation.workspace).toBe('/other')
    expect(moved.conversation.title).toBe('Fix the build')

    const fresh = await store.conversations.ensure({ id: 'session-b', workspace: '' })
    expect(fresh.conversation.workspace).toBe('')
    expect((await store.conversations.ensure({ id: 'session-b', workspace: '/late' })).conversation.workspace).toBe('/late')
  })

  it('lists by recency and workspace, ends and deletes', async () => {
    const clock = fakeClock(1_000, 10)
    const store = await backend.open({ now: clock.now })
    await store.conversations.ensure({ id: 'a', workspace: '/one' })
    await store.conversations.ensure({ id: 'b', workspace: '/two' })
    await store.conversations.ensure({ id: 'c', workspace: '/one' })
    expect((await store.conversations.list()).map((c) => c.id)).toEqual(['c', 'b', 'a'])
    expect((await store.conversations.list({ workspace: '/one' })).map((c) => c.id)).toEqual(['c', 'a'])
    expect((await store.conversations.list({ limit: 1, offset: 1 })).map((c) => c.id)).toEqual(['b'])

    const ended = await store.conversations.end('a', 123_456)
    expect(ended.endedAt).toBe(123_456)
    expect((await rejectionOf(store.conversations.end('missing'))).code).toBe('not-found')

    await store.messages.append({ conversationId: 'a', hostMessageId: 'm1', role: 'user', text: 'hello there' })
    expect(await store.conversations.delete('a')).toBe(true)
    expect(await store.conversations.delete('a')).toBe(false)
    expect(await store.conversations.get('a')).toBeUndefined()
    expect(await store.messages.list({ conversationId: 'a' })).toEqual([])
  })

  it('rejects invalid ids', async () => {
    const store = await backend.open()
    expect((await rejectionOf(store.conversations.ensure({ id: '', workspace: '' }))).code).toBe('invalid-argument')
    expect((await rejectionOf(store.conversations.ensure({ id: 'a\u0000b', workspace: '' }))).code).toBe('invalid-argument')
    expect((await rejectionOf(store.conversations.ensure({ id: 42 as unknown as string, workspace: '' }))).code).toBe('invalid-argument')
  })
})

describe.each(backends)('messages ($name)', (backend) => {
  it('append is idempotent on (conversationId, hostMessageId)', async () => {
    const store = await backend.open()
    await store.conversations.ensure({ id: 's', workspace: '/w' })
    const first = await store.messages.append({ conversationId: 's', hostMessageId: 'evt-1', role: 'user', text: 'Please use pnpm.', turn: 1, sourceIds: ['e1', 'e2'] })
    expect(first.inserted).toBe(true)
    expect(first.message).toMatchObject({ conversationId: 's', hostMessageId: 'evt-1', role: 'user', text: 'Please use pnpm.', turn: 1, seq: 1, sourceIds: ['e1', 'e2'] })
    expect(first.message.tokensEstimate).toBeGreaterThan(0)

    const second = await store.messages.append({ conversationId: 's', hostMessageId: 'evt-1', role: 'user', text: 'Please use pnpm.', turn: 1 })
    expect(second.inserted).toBe(false)
    expect(second.message).toEqual(first.message)
    expect(await store.messages.list({ conversationId: 's' })).toHaveLength(1)
    expect(await store.audit.list({ op: 'message.append' })).toHaveLength(1)

    // The same host id in another conversation is a different message.
    await store.conversations.ensure({ id: 't', workspace: '/w' })
    expect((await store.messages.append({ conversationId: 't', hostMessageId: 'evt-1', role: 'user', text: 'x y' })).inserted).toBe(true)
    expect(await store.messages.getByHostId('s', 'evt-1')).toEqual(first.message)
  })

  it('assigns seq, and lists with filters', async () => {
    const clock = fakeClock(10_000, 1_000)
    const store = await backend.open({ now: clock.now })
    await store.conversations.ensure({ id: 's', workspace: '/w' })
    await store.conversations.ensure({ id: 'o', workspace: '/other' })
    const a = (await store.messages.append({ conversationId: 's', hostMessageId: '1', role: 'user', text: 'first' })).message
    const b = (await store.messages.append({ conversationId: 's', hostMessageId: '2', role: 'assistant', text: 'second' })).message
    const c = (await store.messages.append({ conversationId: 's', hostMessageId: '3', role: 'user', text: 'third', seq: 10 })).message
    const d = (await store.messages.append({ conversationId: 'o', hostMessageId: '1', role: 'user', text: 'elsewhere' })).message
    expect([a.seq, b.seq, c.seq, d.seq]).toEqual([1, 2, 10, 1])
    const ids = (list: { id: string }[]) => list.map((m) => m.id)
    expect(ids(await store.messages.list({ conversationId: 's' }))).toEqual([a.id, b.id, c.id])
    expect(ids(await store.messages.list({ conversationId: 's', order: 'desc' }))).toEqual([c.id, b.id, a.id])
    expect(ids(await store.messages.list({ role: 'assistant' }))).toEqual([b.id])
    expect(ids(await store.messages.list({ workspace: '/other' }))).toEqual([d.id])
    expect(ids(await store.messages.list({ conversationId: 's', afterSeq: 1 }))).toEqual([b.id, c.id])
    expect(ids(await store.messages.list({ since: b.createdAt, until: c.createdAt }))).toEqual([b.id, c.id])
    expect(await store.messages.get(a.id)).toEqual(a)
    expect(await store.messages.delete(a.id)).toBe(true)
    expect(await store.messages.get(a.id)).toBeUndefined()
  })

  it('needs an existing conversation and valid input', async () => {
    const store = await backend.open()
    expect((await rejectionOf(store.messages.append({ conversationId: 'nope', hostMessageId: '1', role: 'user', text: 'hi' }))).code).toBe('not-found')
    await store.conversations.ensure({ id: 's', workspace: '' })
    const bad = [
      { text: '' },
      { text: '   \n\t ' },
      { text: '\u0000\u0001' },
      { text: 42 },
      { text: null },
      { role: 'system' },
      { turn: -1 },
      { sourceIds: 'e1' },
      { flags: [1] },
    ]
    for (const patch of bad) {
      const error = await rejectionOf(store.messages.append({ conversationId: 's', hostMessageId: 'h', role: 'user', text: 'ok', ...patch } as never))
      expect(error.code, JSON.stringify(patch)).toBe('invalid-argument')
    }
    expect(await store.messages.list()).toEqual([])
  })

  it('strips control characters, redacts secrets and caps the length', async () => {
    const store = await backend.open({ limits: { message: 200 } })
    await store.conversations.ensure({ id: 's', workspace: '' })
    const cleaned = await store.messages.append({ conversationId: 's', hostMessageId: '1', role: 'user', text: 'a\u0007b\r\nc\td\u001b[31m' })
    expect(cleaned.message.text).toBe('ab\nc\td[31m')

    const secret = await store.messages.append({ conversationId: 's', hostMessageId: '2', role: 'user', text: 'my key is sk-proj-abcdefghijklmnopqrstuvwx1234 ok' })
    expect(secret.message.text).toBe('my key is [REDACTED:api-key] ok')
    expect(secret.redactions).toBe(1)

    const long = await store.messages.append({ conversationId: 's', hostMessageId: '3', role: 'assistant', text: 'x'.repeat(1_000) })
    expect(long.message.text).toHaveLength(200)
    expect(long.message.text.endsWith(TRUNCATION_MARKER)).toBe(true)
  })

  it('counts messages and reads the turns around given messages in one call', async () => {
    const store = await backend.open()
    await store.conversations.ensure({ id: 'a', workspace: '/one' })
    await store.conversations.ensure({ id: 'b', workspace: '/two' })
    const a: string[] = []
    for (let i = 0; i < 8; i++) a.push((await store.messages.append({ conversationId: 'a', hostMessageId: `a${i}`, role: i % 2 ? 'assistant' : 'user', text: `turn ${i}` })).message.id)
    const b = (await store.messages.append({ conversationId: 'b', hostMessageId: 'b0', role: 'user', text: 'other' })).message.id
    expect(await store.messages.count()).toBe(9)
    expect(await store.messages.count({ workspace: '/one' })).toBe(8)
    expect(await store.messages.count({ workspace: '/one', role: 'assistant' })).toBe(4)
    expect(await store.messages.count({ conversationId: 'b' })).toBe(1)
    const around = await store.messages.around([a[1]!, a[6]!, b, 'missing'], 1)
    expect(around.map((m) => m.text)).toEqual(['turn 0', 'turn 1', 'turn 2', 'turn 5', 'turn 6', 'turn 7', 'other'])
    expect((await store.messages.around([a[3]!], 0)).map((m) => m.id)).toEqual([a[3]])
    expect(await store.messages.around([], 2)).toEqual([])
    await expect(store.messages.around([a[0]!], 21)).rejects.toMatchObject({ code: 'invalid-argument' })
    await expect(store.messages.around(Array.from({ length: 1_001 }, (_, i) => `x${i}`), 1)).rejects.toMatchObject({ code: 'invalid-argument' })
  })

  it('reads the neighbours by position in the conversation, across gaps in seq (the host numbers every event)', async () => {
    const store = await backend.open()
    await store.conversations.ensure({ id: 'h', workspace: '/one' })
    await store.conversations.ensure({ id: 'o', workspace: '/one' })
    // What capture stores in the real host: user 3, assistant 9 (tool call, tool result and
    // chunks in between), two messages sharing seq 20, then 40 and 41.
    const seqs = [3, 9, 20, 20, 40, 41]
    const ids: string[] = []
    for (const [i, seq] of seqs.entries()) {
      ids.push((await store.messages.append({ conversationId: 'h', hostMessageId: `h${i}`, role: i % 2 ? 'assistant' : 'user', text: `step ${i}`, seq })).message.id)
    }
    // A near seq in another conversation is not a neighbour.
    await store.messages.append({ conversationId: 'o', hostMessageId: 'o0', role: 'user', text: 'elsewhere', seq: 8 })
    const [tieLow, tieHigh] = [ids[2]!, ids[3]!].sort()
    const order = [ids[0]!, ids[1]!, tieLow!, tieHigh!, ids[4]!, ids[5]!]
    const idsAround = async (hits: string[], span: number) => (await store.messages.around(hits, span)).map((m) => m.id)

    // The assistant's answer brings the question 6 seqs earlier.
    expect(await idsAround([ids[1]!], 1)).toEqual(order.slice(0, 3))
    expect(await idsAround([ids[4]!], 2)).toEqual(order.slice(2))
    // Equal seqs are ordered by id on both sides of the hit.
    expect(await idsAround([tieLow!], 1)).toEqual(order.slice(1, 4))
    expect(await idsAround([tieHigh!], 1)).toEqual(order.slice(2, 5))
    // Overlapping windows give each message once; the ends of the conversation cut a window short.
    expect(await idsAround([ids[0]!, ids[5]!, ids[1]!], 20)).toEqual(order)
    expect(await idsAround([ids[5]!], 0)).toEqual([ids[5]])
  })
})
