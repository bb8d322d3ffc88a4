import { describe, expect, it } from 'vitest'
import type { StoreChangeEvent } from '../../src/index.ts'
import { backends } from './backends.ts'

// `store.changes` on both backends, driven by catchUp() (the poll's work) with the timer off:
// what another store on the same database commits reaches this one in log order, once.
describe.each(backends)('change feed ($name)', (backend) => {
  it("delivers another store's committed writes after subscribing, in change-log order and once, until unsubscribed", async () => {
    const a = await backend.open({ changePollMs: 0 })
    const b = await backend.reopen(a, { changePollMs: 0 })
    await b.memories.add({ kind: 'fact', text: 'before anyone listened', scope: 'global' })
    const events: StoreChangeEvent[] = []
    const unsubscribe = a.changes.subscribe((event) => events.push(event))
    await a.changes.ready()
    const start = a.changes.position
    expect(start).toBeGreaterThan(0)

    const memory = await b.memories.add({ kind: 'fact', text: '周三发布', scope: 'global' })
    await b.memories.update(memory.id, { text: '周四发布' })
    const { conversation } = await b.conversations.ensure({ id: 'c1', workspace: '/w/项目' })
    await a.changes.catchUp()
    await a.changes.catchUp()
    const changes = events.flatMap((event) => (event.type === 'changes' ? event.changes : []))
    expect(changes.map((change) => [change.entity, change.entityId, change.op])).toEqual([
      ['memory', memory.id, 'insert'],
      ['memory', memory.id, 'update'],
      ['conversation', conversation.id, 'insert'],
    ])
    expect(changes[0]!.seq).toBeGreaterThan(start)
    expect(a.changes.position).toBe(changes[2]!.seq)

    unsubscribe()
    await b.memories.delete(memory.id)
    await a.changes.catchUp()
    expect(events.flatMap((event) => (event.type === 'changes' ? event.changes : []))).toHaveLength(3)
  })

  it('a subscriber that throws does not stop the others; a non-function is refused', async () => {
    const store = await backend.open({ changePollMs: 0 })
    const heard: string[] = []
    store.changes.subscribe(() => {
      throw new Error('broken subscriber')
    })
    store.changes.subscribe((event) => heard.push(event.type))
    await store.changes.ready()
    await store.meta.set('k', 'v')
    await store.memories.add({ kind: 'fact', text: '会議', scope: 'global' })
    await store.changes.catchUp()
    expect(heard).toContain('changes')
    expect(() => store.changes.subscribe('nope' as never)).toThrow(TypeError)
  })
})
