import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { holdLease } from '../../src/index.ts'
import { rejectionOf, tempDir } from '../helpers.ts'
import { backends } from './backends.ts'

const run = promisify(execFile)
const entry = pathToFileURL(join(import.meta.dirname, '..', '..', 'src', 'index.ts')).href

/** A clock the test moves by hand (every reading returns the same time until set). */
function manualClock(start = Date.UTC(2025, 5, 1)) {
  let t = start
  return { now: () => t, advance: (ms: number) => (t += ms) }
}

describe.each(backends)('leases ($name)', (backend) => {
  it('one holder at a time; the holder renews; a free or expired lease is taken with a larger token', async () => {
    const clock = manualClock()
    const store = await backend.open({ now: clock.now })
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

  it('a stale holder’s write is refused: the fencing token is checked inside the write', async () => {
    const clock = manualClock()
    const store = await backend.open({ now: clock.now })
    const stale = (await store.leases.acquire('sweep', 'paused-process', 1_000))!
    const fence = { name: stale.name, token: stale.token }
    await store.meta.set('sweep.kept', 'written while the lease was held', { fence })
    // The holder pauses (GC, suspended laptop) past its TTL; another takes over.
    clock.advance(5_000)
    const fresh = (await store.leases.acquire('sweep', 'new-process', 1_000))!
    expect(fresh.token).toBe(2)

    const refusals = [
      await rejectionOf(store.meta.set('sweep.state', 'late', { fence })),
      await rejectionOf(store.meta.delete('sweep.kept', { fence })),
      await rejectionOf(store.transaction(async (tx) => tx.meta.set('sweep.tx', 'late tx write'), { fence })),
      await rejectionOf(store.leases.renew({ ...fence, holder: 'paused-process' }, 1_000)),
    ]
    for (const error of refusals) expect(error.code).toBe('fenced')
    expect(refusals[0]!.message).toMatch(/lease sweep was taken over \(token 2 now, this writer holds 1\)/)
    expect((await store.meta.list('sweep.')).map((entry) => [entry.key, entry.value])).toEqual([['sweep.kept', 'written while the lease was held']])
    // Its release is a no-op that does not disturb the new holder.
    expect(await store.leases.release({ ...fence, holder: 'paused-process' })).toBe(false)
    await store.meta.set('sweep.state', 'new holder writes', { fence: { name: 'sweep', token: fresh.token } })
    expect(await store.meta.list('sweep.')).toHaveLength(2)
  })

  it('an expired lease refuses writes until renewed; release keeps the token growing', async () => {
    const clock = manualClock()
    const store = await backend.open({ now: clock.now })
    const lease = (await store.leases.acquire('job', 'h', 100))!
    clock.advance(200)
    const expired = await rejectionOf(store.meta.set('job.x', 'x', { fence: lease }))
    expect(expired).toMatchObject({ code: 'fenced', message: expect.stringMatching(/expired/) })
    // Nobody took it over: renewing is safe and writes work again.
    await store.leases.renew(lease, 100)
    await store.meta.set('job.x', 'x', { fence: lease })
    expect(await store.leases.release(lease)).toBe(true)
    expect((await rejectionOf(store.leases.check(lease))).message).toMatch(/released/)
    expect((await rejectionOf(store.leases.renew(lease, 100))).code).toBe('fenced')
    expect((await store.leases.acquire('job', 'h', 100))!.token).toBe(2)
    expect((await rejectionOf(store.leases.check({ name: 'never', token: 1 }))).message).toMatch(/never acquired/)
  })

  it('takes over at once from a holder known to be gone', async () => {
    const store = await backend.open()
    await store.leases.acquire('job', 'dead-host:1:x', 3_600_000)
    expect(await store.leases.acquire('job', 'me', 1_000)).toBeUndefined()
    expect(await store.leases.acquire('job', 'me', 1_000, { isHolderStale: (holder) => holder.startsWith('dead-host') })).toMatchObject({ holder: 'me', token: 2 })
  })

  it('validates its arguments', async () => {
    const store = await backend.open()
    expect((await rejectionOf(store.leases.acquire('', 'h', 1_000))).code).toBe('invalid-argument')
    expect((await rejectionOf(store.leases.acquire('n', 'h', 0))).code).toBe('invalid-argument')
    expect((await rejectionOf(store.leases.acquire('n', 'h', 2 * 86_400_000))).code).toBe('invalid-argument')
    expect((await rejectionOf(store.leases.acquire('n'.repeat(201), 'h', 1_000))).code).toBe('invalid-argument')
    expect((await rejectionOf(store.meta.set('k', 'v', { fence: { name: 'n', token: -1 } }))).code).toBe('invalid-argument')
  })

  it('holdLease renews on a heartbeat, reports a takeover once, and releases', async () => {
    const clock = manualClock()
    const store = await backend.open({ now: clock.now })
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
    const other = await backend.reopen(store, { now: clock.now })
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

  it('another process takes over an expired lease; the stale holder’s fenced writes then fail, alone or in a transaction', async () => {
    const clock = manualClock()
    const first = await backend.open({ now: clock.now })
    const second = await backend.reopen(first, { now: clock.now })
    const lease = (await first.leases.acquire('distill', 'first-process', 1_000))!
    await first.transaction(async (tx) => tx.meta.set('distill.cursor', '1', { fence: lease }), { fence: lease })
    expect(await second.leases.acquire('distill', 'second-process', 1_000)).toBeUndefined()
    clock.advance(1_001)
    const taken = (await second.leases.acquire('distill', 'second-process', 1_000))!
    expect(taken.token).toBe(lease.token + 1)
    expect((await rejectionOf(first.meta.set('distill.cursor', '2', { fence: lease }))).code).toBe('fenced')
    expect((await rejectionOf(first.transaction(async (tx) => tx.meta.set('distill.cursor', '3'), { fence: lease }))).code).toBe('fenced')
    expect((await rejectionOf(first.leases.check(lease))).message).toMatch(/taken over/)
    await second.meta.set('distill.cursor', '4', { fence: taken })
    expect(await first.meta.get('distill.cursor')).toBe('4')
  })

  it('two processes racing for one lease: exactly one wins each round, and only the winner writes', async () => {
    const store = await backend.open()
    const script = join(tempDir(), 'racer.mjs')
    writeFileSync(
      script,
      `import { openStore } from ${JSON.stringify(entry)}
const store = await openStore({ ...JSON.parse(process.argv[2]), busyTimeoutMs: 10000 })
let wins = 0
for (let round = 0; round < 20; round++) {
  const lease = await store.leases.acquire('round-' + round, process.argv[3], 60000)
  if (lease) {
    wins++
    await store.meta.set('round.' + String(round).padStart(2, '0'), process.argv[3], { fence: lease })
  }
}
await store.close()
console.log(wins)
`,
    )
    const location = JSON.stringify(backend.location(store))
    const [first, second] = await Promise.all([
      run(process.execPath, [script, location, 'racer-1'], { timeout: 60_000 }),
      run(process.execPath, [script, location, 'racer-2'], { timeout: 60_000 }),
    ])
    expect(Number(first.stdout.trim()) + Number(second.stdout.trim())).toBe(20)
    const rounds = await store.meta.list('round.')
    expect(rounds).toHaveLength(20)
    for (const { key, value } of rounds) expect((await store.leases.get(`round-${Number(key.slice(6))}`))!.holder).toBe(value)
  }, 90_000)
})
