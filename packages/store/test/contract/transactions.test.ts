import { describe, expect, it } from 'vitest'
import { type OpenedStore, rejectionOf } from '../helpers.ts'
import { backends } from './backends.ts'

/** A promise and its resolver, to hold a transaction open until the test lets it go. */
function latch(): { promise: Promise<void>; open: () => void } {
  let open!: () => void
  const promise = new Promise<void>((resolve) => (open = resolve))
  return { promise, open }
}

/**
 * A transaction on `store` that sets meta `key` to `value`, then stays open until `release()`,
 * then runs `after`. Resolves once the write inside is done.
 */
async function heldTransaction(store: OpenedStore, key: string, value: string, after: (tx: OpenedStore) => unknown = () => undefined) {
  const hold = latch()
  const entered = latch()
  const done = store.transaction(async (inside) => {
    await inside.meta.set(key, value)
    entered.open()
    await hold.promise
    await after(inside)
  })
  await entered.promise
  return { release: hold.open, done }
}

describe.each(backends)('transactions and the session ($name)', (backend) => {
  it('commit every write together, or none when the function throws', async () => {
    const store = await backend.open()
    expect(await store.transaction(async (tx) => {
      await tx.meta.set('a', '1')
      await tx.meta.set('b', '1')
      return 'done'
    })).toBe('done')
    const error = await rejectionOf(
      store.transaction(async (tx) => {
        await tx.meta.set('a', '2')
        // Reads inside see the transaction's own writes.
        expect(await tx.meta.get('a')).toBe('2')
        await tx.leases.acquire('job', 'h', 1_000)
        throw new Error('boom')
      }),
    )
    expect(error.message).toBe('boom')
    expect(await store.meta.get('a')).toBe('1')
    expect(await store.leases.get('job')).toBeUndefined()
  })

  it('nest as savepoints: an inner failure rolls back only the inner writes', async () => {
    const store = await backend.open()
    await store.transaction(async (tx) => {
      await tx.meta.set('outer', '1')
      const inner = await rejectionOf(
        tx.transaction(async (nested) => {
          await nested.meta.set('inner', '1')
          throw new Error('inner fails')
        }),
      )
      expect(inner.message).toBe('inner fails')
      // A failed fenced write inside is its own savepoint too: the transaction goes on.
      expect((await rejectionOf(tx.meta.set('fenced', '1', { fence: { name: 'none', token: 1 } }))).code).toBe('fenced')
      await tx.meta.set('after', '1')
    })
    expect((await store.meta.list('')).map((entry) => entry.key).filter((key) => !key.startsWith('store.'))).toEqual(['after', 'outer'])
  })

  it('make this store’s other callers wait until the transaction ends, without joining it', async () => {
    const store = await backend.open()
    const order: string[] = []
    const tx = await heldTransaction(store, 'k', 'inside', () => order.push('tx-end'))
    const read = store.meta.get('k').then((value) => {
      order.push(`read:${value}`)
    })
    const write = store.meta.set('k', 'outside').then(() => order.push('write'))
    tx.release()
    await Promise.all([tx.done, read, write])
    expect(order).toEqual(['tx-end', 'read:inside', 'write'])
    expect(await store.meta.get('k')).toBe('outside')
  })

  it('another store (another process) waits for a writing transaction and never sees half of it', async () => {
    const store = await backend.open({ busyTimeoutMs: 20_000 })
    const other = await backend.reopen(store, { busyTimeoutMs: 20_000 })
    const tx = await heldTransaction(store, 'first', '1', (inside) => inside.meta.set('second', '1'))
    // A snapshot read does not wait, and sees nothing of the open transaction.
    expect(await other.meta.get('first')).toBeUndefined()
    const write = other.meta.set('third', '1')
    tx.release()
    await Promise.all([tx.done, write])
    expect((await other.meta.list('')).map((entry) => entry.key).filter((key) => !key.startsWith('store.'))).toEqual(['first', 'second', 'third'])
  })

  it('a writer that waits longer than busyTimeoutMs for another store’s transaction fails with busy, writing nothing', async () => {
    const store = await backend.open()
    const other = await backend.reopen(store, { busyTimeoutMs: 100 })
    const tx = await heldTransaction(store, 'held', '1')
    const refused = await rejectionOf(other.meta.set('waited', '1'))
    tx.release()
    await tx.done
    expect(refused.code).toBe('busy')
    expect(await other.meta.get('waited')).toBeUndefined()
    await other.meta.set('waited', '2')
    expect(await store.meta.get('waited')).toBe('2')
  })

  it('a fenced transaction checks the lease when it starts; the fence holds until it ends', async () => {
    let t = Date.UTC(2025, 0, 1)
    const store = await backend.open({ now: () => t })
    const lease = (await store.leases.acquire('job', 'h', 1_000))!
    await store.transaction(async (tx) => {
      await tx.leases.check(lease)
      await tx.meta.set('job.progress', '1', { fence: lease })
    }, { fence: lease })
    t += 2_000
    expect((await rejectionOf(store.transaction(async (tx) => tx.meta.set('job.progress', '2'), { fence: lease }))).code).toBe('fenced')
    expect(await store.meta.get('job.progress')).toBe('1')
    expect((await rejectionOf(store.transaction(() => 1, { fence: { name: '', token: 1 } }))).code).toBe('invalid-argument')
    expect((await rejectionOf(store.transaction('not a function' as never))).code).toBe('invalid-argument')
  })

  it('close waits for a running transaction; queued and later calls fail with closed', async () => {
    const store = await backend.open()
    const hold = latch()
    const tx = store.transaction(async (inside) => {
      await hold.promise
      await inside.meta.set('finished', 'yes')
    })
    // Queued behind the transaction when close() begins: new work, refused.
    const queued = rejectionOf(store.meta.get('finished'))
    const closing = store.close()
    hold.open()
    await Promise.all([tx, closing])
    expect((await queued).code).toBe('closed')
    expect(store.closed).toBe(true)
    for (const call of [() => store.meta.get('k'), () => store.leases.get('k'), () => store.audit.list(), () => store.transaction(() => 1)]) {
      expect((await rejectionOf(call)).code).toBe('closed')
    }
    await store.close()
    expect(await (await backend.reopen(store)).meta.get('finished')).toBe('yes')
  })
})
