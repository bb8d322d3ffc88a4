import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { isLocalHolderGone, leaseHolderId } from '../src/index.ts'
import { openTemp, rejectionOf } from './helpers.ts'

const run = promisify(execFile)

// The lease contract (both backends) is test/contract/leases.test.ts. What stays here: holder
// ids (no database), and fenced writes of memories, which move to the contract suite once
// memories are on PostgreSQL.
describe('leases', () => {
  it('fence memory writes: a taken-over lease refuses add, update and delete', async () => {
    let t = Date.UTC(2025, 5, 1)
    const { store } = openTemp({ now: () => t })
    const fence = (await store.leases.acquire('sweep', 'paused-process', 1_000))!
    const kept = await store.memories.add({ kind: 'fact', text: 'written while the lease was held', scope: 'global' }, { fence })
    t += 5_000
    const fresh = (await store.leases.acquire('sweep', 'new-process', 1_000))!
    for (const late of [
      store.memories.add({ kind: 'fact', text: 'late write', scope: 'global' }, { fence }),
      store.memories.delete(kept.id, { fence }),
      store.memories.update(kept.id, { text: 'late edit' }, { fence }),
      store.transaction(async (tx) => tx.memories.add({ kind: 'fact', text: 'late tx write', scope: 'global' }), { fence }),
    ]) {
      expect((await rejectionOf(late)).code).toBe('fenced')
    }
    expect((await store.memories.list()).map((memory) => memory.text)).toEqual(['written while the lease was held'])
    await store.memories.add({ kind: 'fact', text: 'new holder writes', scope: 'global' }, { fence: fresh })
    expect(await store.memories.list()).toHaveLength(2)
  })

  it('holder ids name this process; a dead local pid is recognised as gone', async () => {
    const holder = leaseHolderId()
    expect(holder.split(':')[1]).toBe(String(process.pid))
    expect(isLocalHolderGone(holder)).toBe(false)
    const { stdout } = await run(process.execPath, ['-e', 'console.log(process.pid)'])
    const deadPid = Number(stdout.trim())
    expect(isLocalHolderGone(holder.replace(`:${process.pid}:`, `:${deadPid}:`))).toBe(true)
    expect(isLocalHolderGone('another-host:1:x')).toBe(false)
  })
})
