import { describe, expect, it } from 'vitest'
import { isMemoryStoreError, MemoryStoreError } from '../../src/index.ts'
import { type OpenedStore, rejectionOf } from '../helpers.ts'
import { backends } from './backends.ts'

function delay(ms: number) {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

describe.each(backends)('transactions ($name)', (backend) => {
  it('commits every write together', async () => {
    const store = await backend.open()
    const result = await store.transaction(async (tx) => {
      await tx.conversations.ensure({ id: 'c', workspace: '' })
      await tx.messages.append({ conversationId: 'c', hostMessageId: '1', role: 'user', text: 'one' })
      return 'done'
    })
    expect(result).toBe('done')
    expect(await store.messages.list()).toHaveLength(1)
  })

  it('rolls back every write (and its audit rows) when the function throws', async () => {
    const store = await backend.open()
    await store.memories.add({ kind: 'fact', text: 'kept', scope: 'global' })
    expect((await store.search.memories('kept')).length).toBe(1)
    const auditBefore = (await store.audit.list({ limit: 1_000 })).length
    const error = await rejectionOf(
      store.transaction(async () => {
        await store.memories.add({ kind: 'fact', text: 'discarded searchable words', scope: 'global' })
        // Searches inside see the transaction's own writes.
        expect((await store.search.memories('discarded')).length).toBe(1)
        throw new Error('boom')
      }),
    )
    expect(error.message).toBe('boom')
    expect((await store.memories.list()).map((m) => m.text)).toEqual(['kept'])
    expect((await store.audit.list({ limit: 1_000 })).length).toBe(auditBefore)
    // The index forgot the rolled-back document and still finds later writes.
    expect(await store.search.memories('discarded')).toEqual([])
    await store.memories.add({ kind: 'fact', text: 'discarded no more', scope: 'global' })
    expect((await store.search.memories('discarded')).map((h) => h.memory.text)).toEqual(['discarded no more'])
  })

  it('makes other callers wait until it ends', async () => {
    const store = await backend.open()
    const order: string[] = []
    const tx = store.transaction(async () => {
      await store.memories.add({ kind: 'fact', text: 'inside-1', scope: 'global' })
      await delay(30)
      await store.memories.add({ kind: 'fact', text: 'inside-2', scope: 'global' })
      order.push('tx-end')
    })
    const outside = store.memories.add({ kind: 'fact', text: 'outside', scope: 'global' }).then(() => order.push('outside'))
    await Promise.all([tx, outside])
    expect(order).toEqual(['tx-end', 'outside'])
    const added = (await store.audit.list({ op: 'memory.add' })).map((e) => e.entityId)
    const texts = await Promise.all(added.map(async (id) => (await store.memories.get(id))!.text))
    expect(texts).toEqual(['inside-1', 'inside-2', 'outside'])
  })

  it('nests as savepoints', async () => {
    const store = await backend.open()
    await store.transaction(async () => {
      await store.memories.add({ kind: 'fact', text: 'outer', scope: 'global' })
      await rejectionOf(
        store.transaction(async () => {
          await store.memories.add({ kind: 'fact', text: 'inner', scope: 'global' })
          throw new Error('inner fails')
        }),
      )
    })
    expect((await store.memories.list()).map((m) => m.text)).toEqual(['outer'])
  })
})

describe.each(backends)('lifecycle ($name)', (backend) => {
  it('close is idempotent and later calls fail with closed', async () => {
    const store = await backend.open()
    await store.memories.add({ kind: 'fact', text: 'x', scope: 'global' })
    await Promise.all([store.close(), store.close()])
    await store.close()
    expect(store.closed).toBe(true)
    for (const call of [() => store.memories.list(), () => store.search.memories('x'), () => store.meta.get('k'), () => store.transaction(() => 1)]) {
      const error = await rejectionOf(call)
      expect(isMemoryStoreError(error, 'closed')).toBe(true)
      expect(error).toBeInstanceOf(MemoryStoreError)
    }
    expect(() => store.exportJsonl()).toThrowError(expect.objectContaining({ code: 'closed' }))
    // The database is free again.
    expect((await (await backend.reopen(store)).memories.list()).length).toBe(1)
  })

  it('close waits for a running transaction to finish', async () => {
    const store = await backend.open()
    const tx = store.transaction(async () => {
      await delay(20)
      await store.memories.add({ kind: 'fact', text: 'finished', scope: 'global' })
    })
    await store.close()
    await tx
    expect((await (await backend.reopen(store)).memories.list()).map((m) => m.text)).toEqual(['finished'])
  })

  it('supports await using', async () => {
    let disposed: OpenedStore | undefined
    {
      await using store = (await backend.open()) as OpenedStore & AsyncDisposable
      disposed = store
      await store.meta.set('greeting', 'hello')
    }
    expect(disposed.closed).toBe(true)
    expect(await (await backend.reopen(disposed)).meta.get('greeting')).toBe('hello')
  })

  it('meta stores plugin settings and reserves the store. prefix', async () => {
    const store = await backend.open()
    expect(await store.meta.get('x')).toBeUndefined()
    await store.meta.set('x', '1')
    await store.meta.set('x', '2')
    expect(await store.meta.get('x')).toBe('2')
    expect(await store.meta.delete('x')).toBe(true)
    expect(await store.meta.delete('x')).toBe(false)
    expect((await rejectionOf(store.meta.set('store.instance-id', 'mine'))).code).toBe('invalid-argument')
    expect(await store.meta.get('store.instance-id')).toMatch(/^[0-9a-f]{32}$/)
  })
})
