/**
 * `store.transfer`: what moving a whole team database needs (`dsh-memory migrate`). Presence
 * and counts are every user's, whoever the session's user is, while the session's normal
 * reads keep other users' global rows private; audit entries of another database are
 * appended with new ids and everything else kept.
 */
import { describe, expect, it } from 'vitest'
import type { CopiedAuditEntry } from '../../src/index.ts'
import { rejectionOf } from '../helpers.ts'
import { collect } from '../support/seed.ts'
import { backends } from './backends.ts'

const ALICE = 'alice@example.com'
const BOB = '鈴木 bob@example.jp'

describe.each(backends)('transfer ($name)', (backend) => {
  it('finds and counts every user’s records, while normal reads still hide another user’s global rows', async () => {
    const alice = await backend.open({ user: ALICE })
    const bob = await backend.reopen(alice, { user: BOB })
    const secret = await alice.memories.add({ kind: 'preference', text: 'Alice prefers 深色主题.', scope: 'global' })
    await alice.persona.put({ scope: 'global', text: 'Alice, backend developer.' })
    await alice.scenes.add({ title: 'Alice only', summary: 'Private.', scope: 'global', memoryIds: [secret.id] })
    await alice.conversations.ensure({ id: 'sess-1', workspace: '/srv/shop' })
    await alice.messages.append({ conversationId: 'sess-1', hostMessageId: 'h1', role: 'user', text: '你好' })

    const lines = (await collect(alice.exportJsonl())).slice(1)
    expect(await bob.memories.get(secret.id)).toBeUndefined()
    expect((await bob.stats.counts()).memories.current).toBe(0)
    // Bob's session finds every record, Alice's included, and counts them all.
    expect(await bob.transfer.present(lines)).toEqual(lines.map(() => true))
    expect(await bob.transfer.counts()).toEqual({ conversations: 1, messages: 1, memories: 1, scenes: 1, persona: 1 })
    // Presence says nothing more: his reads still do not show her global rows.
    expect(await bob.memories.get(secret.id)).toBeUndefined()

    // Records of another database are absent; an unattributed global persona is looked up as `unattributedAs`.
    const other = await backend.open({ user: BOB })
    expect(await other.transfer.present(lines)).toEqual(lines.map(() => false))
    const persona = lines.find((line) => line.includes('"type":"persona"'))!
    const unattributed = JSON.stringify({ type: 'persona', data: { ...JSON.parse(persona).data, createdBy: '' } })
    expect(await bob.transfer.present([unattributed], { unattributedAs: ALICE })).toEqual([true])
    expect(await bob.transfer.present([unattributed], { unattributedAs: BOB })).toEqual([false])

    const bad = await rejectionOf(bob.transfer.present([lines[0]!, '{"type":"memory","data":{"id":""}}']))
    expect(bad.code).toBe('invalid-argument')
    expect(bad.message).toBe('line 2: id must be a non-empty string')
  })

  it('appends another database’s audit entries in order under new ids, keeping every column', async () => {
    const source = await backend.open({ user: ALICE })
    await source.memories.add({ kind: 'fact', text: 'One.', scope: 'workspace', workspace: '/srv/shop' })
    await source.meta.set('team.setting', 'x')
    const entries = await source.audit.list()
    expect(entries.length).toBeGreaterThan(1)

    const target = await backend.open({ user: BOB })
    await target.meta.set('own', 'y')
    const before = await target.audit.list()
    const copied = entries.map(({ id: _id, ...entry }): CopiedAuditEntry => entry)
    expect(await target.transfer.appendAudit(copied)).toBe(entries.length)
    const after = await target.audit.list({ afterId: before[before.length - 1]!.id })
    expect(after.map(({ id: _id, ...entry }) => entry)).toEqual(copied)
    expect(after.every((entry, index) => index === 0 || entry.id > after[index - 1]!.id)).toBe(true)
    expect(after.some((entry) => entry.createdBy === ALICE)).toBe(true)

    // A path in an entity id becomes its digest, as in the store's own entries.
    await target.transfer.appendAudit([{ at: 5, op: 'layer.change', entity: 'layer', entityId: 'workspace:/home/me/shop', actor: null, revision: 2, createdBy: '' }])
    const [layer] = await target.audit.list({ afterId: after[after.length - 1]!.id })
    expect(layer!.entityId).toMatch(/^workspace:ws_[0-9a-f]{16}$/)

    // A bad entry names itself and its field; nothing of the call is written.
    const count = (await target.audit.list({ limit: 10_000 })).length
    const bad = await rejectionOf(target.transfer.appendAudit([copied[0]!, { ...copied[0]!, at: -1 }]))
    expect(bad.code).toBe('invalid-argument')
    expect(bad.message).toBe('entries[1].at must be a non-negative epoch-ms number')
    expect((await target.audit.list({ limit: 10_000 })).length).toBe(count)
    // Inside a transaction it rolls back with the rest.
    await rejectionOf(
      target.transaction(async (tx) => {
        await tx.transfer.appendAudit(copied)
        throw new Error('stop')
      }),
    )
    expect((await target.audit.list({ limit: 10_000 })).length).toBe(count)
  })
})
