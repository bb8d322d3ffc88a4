import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { holdLease, isLocalHolderGone, leaseHolderId } from '../src/index.ts'
import { fakeClock, openTemp, rejectionOf, reopen, tempDir } from './helpers.ts'

const run = promisify(execFile)
const entry = pathToFileURL(join(import.meta.dirname, '..', 'src', 'index.ts')).href

/** A clock the test moves by hand (every reading returns the same time until set). */
function manualClock(start = Date.UTC(2025, 5, 1)) {
  let t = start
  return { now: () => t, advance: (ms: number) => (t += ms) }
}

describe('leases', () => {
  it('one holder at a time; the holder renews; a free or expired lease is taken with a larger token', async () => {
    const clock = manualClock()
    const { store } = openTemp({ now: clock.now })
    const a = await store.leases.acquire('distill', 'holder-a', 1_000)
    expect(a).toMatchObject({ name: 'distill', holder: 'holder-a', token: 1, expiresAt: clock.now() + 1_000 })
    expect(await store.leases.acquire('distill', 'holder-b', 1_000)).toBeUndefined()
    // Re-acquiring one's own live lease extends it, same token.
    clock.advance(500)
    expect(await store.leases.acquire('distill', 'holder-a', 1_000)).toMatchObject({ token: 1, expiresAt: clock.now() + 1_000 })
    clock.advance(900)
    expect(await store.leases.renew(a!, 1_000)).toMatchObject({ token: 1, expiresAt: clock.now() + 1_000 })
    // Heartbeats stop: after the TTL another holder takes over with a new token.
    clock.advance(1_001)
    const b = await store.leases.acquire('distill', 'holder-b', 1_000)
    expect(b).toMatchObject({ holder: 'holder-b', token: 2 })
    // Other names are independent.
    expect(await store.leases.acquire('consolidate:global', 'holder-a', 1_000)).toMatchObject({ token: 1 })
    expect((await store.audit.list({ entity: 'lease' })).map((e) => [e.op, e.entityId, e.revision])).toEqual([
      ['lease.acquire', 'distill', 1],
      ['lease.takeover', 'distill', 2],
      ['lease.acquire', 'consolidate:global', 1],
    ])
  })

  it('a stale holder\'s write is refused: the fencing token is checked inside the write', async () => {
    const clock = manualClock()
    const { store } = openTemp({ now: clock.now })
    const stale = (await store.leases.acquire('sweep', 'paused-process', 1_000))!
    const fence = { name: stale.name, token: stale.token }
    const kept = await store.memories.add({ kind: 'fact', text: 'written while the lease was held', scope: 'global' }, { fence })
    // The holder pauses (GC, suspended laptop) past its TTL; another takes over.
    clock.advance(5_000)
    const fresh = (await store.leases.acquire('sweep', 'new-process', 1_000))!
    expect(fresh.token).toBe(2)

    const refusals = [
      await rejectionOf(store.memories.add({ kind: 'fact', text: 'late write', scope: 'global' }, { fence })),
      await rejectionOf(store.memories.delete(kept.id, { fence })),
      await rejectionOf(store.memories.update(kept.id, { text: 'late edit' }, { fence })),
      await rejectionOf(store.meta.set('sweep.state', 'late', { fence })),
      await rejectionOf(store.transaction(async (tx) => tx.memories.add({ kind: 'fact', text: 'late tx write', scope: 'global' }), { fence })),
      await rejectionOf(store.leases.renew({ ...fence, holder: 'paused-process' }, 1_000)),
    ]
    for (const error of refusals) expect(error.code).toBe('fenced')
    expect(refusals[0]!.message).toMatch(/lease sweep was taken over \(token 2 now, this writer holds 1\)/)
    expect((await store.memories.list()).map((memory) => memory.text)).toEqual(['written while the lease was held'])
    expect(await store.meta.get('sweep.state')).toBeUndefined()
    // Its release is a no-op that does not disturb the new holder.
    expect(await store.leases.release({ ...fence, holder: 'paused-process' })).toBe(false)
    await store.memories.add({ kind: 'fact', text: 'new holder writes', scope: 'global' }, { fence: { name: 'sweep', token: fresh.token } })
    expect(await store.memories.list()).toHaveLength(2)
  })

  it('an expired lease refuses writes until renewed; release keeps the token growing', async () => {
    const clock = manualClock()
    const { store } = openTemp({ now: clock.now })
    const lease = (await store.leases.acquire('job', 'h', 100))!
    clock.advance(200)
    const expired = await rejectionOf(store.memories.add({ kind: 'fact', text: 'x', scope: 'global' }, { fence: lease }))
    expect(expired).toMatchObject({ code: 'fenced', message: expect.stringMatching(/expired/) })
    // Nobody took it over: renewing is safe and writes work again.
    await store.leases.renew(lease, 100)
    await store.memories.add({ kind: 'fact', text: 'x', scope: 'global' }, { fence: lease })
    expect(await store.leases.release(lease)).toBe(true)
    expect((await rejectionOf(store.leases.check(lease))).message).toMatch(/released/)
    expect((await rejectionOf(store.leases.renew(lease, 100))).code).toBe('fenced')
    expect((await store.leases.acquire('job', 'h', 100))!.token).toBe(2)
    expect((await rejectionOf(store.leases.check({ name: 'never', token: 1 }))).message).toMatch(/never acquired/)
  })

  it('takes over at once from a holder known to be gone', async () => {
    const { store } = openTemp()
    await store.leases.acquire('job', 'dead-host:1:x', 3_600_000)
    expect(await store.leases.acquire('job', 'me', 1_000)).toBeUndefined()
    expect(await store.leases.acquire('job', 'me', 1_000, { isHolderStale: (holder) => holder.startsWith('dead-host') })).toMatchObject({ holder: 'me', token: 2 })
  })

  it('validates its arguments', async () => {
    const { store } = openTemp()
    expect((await rejectionOf(store.leases.acquire('', 'h', 1_000))).code).toBe('invalid-argument')
    expect((await rejectionOf(store.leases.acquire('n', 'h', 0))).code).toBe('invalid-argument')
    expect((await rejectionOf(store.leases.acquire('n', 'h', 2 * 86_400_000))).code).toBe('invalid-argument')
    expect((await rejectionOf(store.memories.add({ kind: 'fact', text: 'x', scope: 'global' }, { fence: { name: 'n', token: -1 } }))).code).toBe('invalid-argument')
  })

  it('holdLease renews on a heartbeat, reports a takeover once, and releases', async () => {
    const clock = manualClock()
    const { store, path } = openTemp({ now: clock.now })
    const timers: { fn: () => void; at: number }[] = []
    const setTimer = (fn: () => void, ms: number) => {
      const timer = { fn, at: clock.now() + ms }
      timers.push(timer)
      return () => timers.splice(timers.indexOf(timer) >>> 0, 1)
    }
    const fire = async () => {
      const due = timers.splice(0)
      for (const timer of due) timer.fn()
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    const lost: unknown[] = []
    const held = (await holdLease(store, 'consolidate', 'keeper', { ttlMs: 300, setTimer, onLost: (error) => lost.push(error) }))!
    expect(held.fence).toEqual({ name: 'consolidate', token: 1 })
    expect(timers[0]!.at - clock.now()).toBe(100)
    clock.advance(100)
    await fire()
    expect(held.lease.expiresAt).toBe(clock.now() + 300)
    expect(held.lost).toBe(false)
    // Another process steals it (the keeper's process was frozen past the TTL).
    clock.advance(1_000)
    const other = reopen(path, { now: clock.now })
    expect(await other.leases.acquire('consolidate', 'thief', 300)).toMatchObject({ token: 2 })
    await fire()
    expect(held.lost).toBe(true)
    expect(lost).toHaveLength(1)
    expect(timers).toHaveLength(0)
    await held.release()
    expect((await store.leases.get('consolidate'))!.holder).toBe('thief')

    const again = (await holdLease(store, 'other', 'keeper', { ttlMs: 300, setTimer }))!
    await again.release()
    await again.release()
    expect((await store.leases.get('other'))!.expiresAt).toBe(0)
    expect(again.lost).toBe(true)
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

  it('two processes racing for one lease: exactly one wins each round, and only the winner writes', async () => {
    const { store, path } = openTemp()
    await store.memories.add({ kind: 'fact', text: 'seed', scope: 'global' })
    const script = join(tempDir(), 'racer.mjs')
    writeFileSync(
      script,
      `import { openMemoryStore } from ${JSON.stringify(entry)}
const store = openMemoryStore({ path: process.argv[2], busyTimeoutMs: 10000 })
let wins = 0
for (let round = 0; round < 20; round++) {
  const lease = await store.leases.acquire('round-' + round, process.argv[3], 60000)
  if (lease) {
    wins++
    await store.memories.add({ kind: 'fact', text: 'round ' + round + ' by ' + process.argv[3], scope: 'global' }, { fence: lease })
  }
}
await store.close()
console.log(wins)
`,
    )
    const [first, second] = await Promise.all([
      run(process.execPath, [script, path, 'racer-1'], { timeout: 60_000 }),
      run(process.execPath, [script, path, 'racer-2'], { timeout: 60_000 }),
    ])
    expect(Number(first.stdout.trim()) + Number(second.stdout.trim())).toBe(20)
    const texts = (await store.memories.list({ limit: 100 })).map((memory) => memory.text).filter((text) => text.startsWith('round '))
    expect(texts).toHaveLength(20)
    expect(new Set(texts.map((text) => text.split(' by ')[0])).size).toBe(20)
  }, 90_000)
})
