import { join } from 'node:path'
import { coordinatedStore, openMemoryStore } from '@dsh-memory/store'
import { describe, expect, it, vi } from 'vitest'
import { Distiller } from '../src/core/distiller.js'
import { resolveDistillOptions } from '../src/core/options.js'
import { appendMessages, extraction, FakeClock, onCleanup, openTempStore, ScriptedModel, settle, tempDir } from './fixtures.js'

describe('Distiller store leases and fencing', () => {
  it('a distiller that stalled past its lease cannot commit after another process took the slice over', async () => {
    // One clock for both "processes" and their store connections: lease expiry is store time.
    const clock = new FakeClock(Date.now())
    const dir = tempDir()
    const storeA = coordinatedStore(openTempStore(dir, () => clock.now()).store)
    const storeB = openMemoryStore({ path: join(dir, 'memory.db'), now: () => clock.now() })
    onCleanup(() => storeB.close())
    await appendMessages(storeA, 'conv', '/w', ['I live in Lisbon.'])
    const options = resolveDistillOptions({ llm: { provider: 'test', model: 'scripted' } })

    let releaseA!: () => void
    const gate = new Promise<void>((resolve) => (releaseA = resolve))
    const modelA = new ScriptedModel()
    const stalled: ScriptedModel['transport'] = async (route, call) => {
      if (call.layer === 'l1') await gate
      return modelA.transport(route, call)
    }
    modelA.on((call) => (call.layer === 'l1' ? extraction([{ text: 'Stale copy: the user lives in Lisbon.', scope: 'global' }]) : undefined))
    const logsA: string[] = []
    const a = new Distiller({ store: storeA, transport: stalled, options, clock, logger: { debug: () => {}, info: () => {}, warn: (m) => logsA.push(m) } })
    onCleanup(() => a.close())
    const running = a.runPending(60_000)
    // A holds the job's store lease and waits for its model call.
    await vi.waitFor(async () => expect(await storeA.audit.list({ entity: 'lease' })).toHaveLength(1))
    const leaseName = (await storeA.audit.list({ entity: 'lease' }))[0]!.entityId
    expect((await storeA.leases.get(leaseName))!.token).toBe(1)

    // A freezes (its heartbeat does not run) past the lease TTL; B, another process, takes over.
    await clock.advance(31_000)
    const modelB = new ScriptedModel().on((call) => (call.layer === 'l1' ? extraction([{ text: 'The user lives in Lisbon.', scope: 'global' }]) : undefined))
    const b = new Distiller({ store: storeB, transport: modelB.transport, options, clock, isLeaseOwnerAlive: (owner) => owner !== a.instanceId })
    onCleanup(() => b.close())
    await b.runPending(10_000)
    // B took the expired lease over (token 2; a later job of B takes it again with a larger one).
    expect((await storeB.leases.get(leaseName))!.token).toBeGreaterThanOrEqual(2)
    expect((await storeB.memories.list({ scope: 'global' })).map((memory) => memory.text)).toEqual(['The user lives in Lisbon.'])

    // A wakes up with its model answer and tries to commit: the fencing token refuses it.
    releaseA()
    await running
    await settle()
    expect(logsA.join('\n')).toMatch(/conflict, will redo: fenced: lease distill\/l1\/\w+ was taken over \(token \d+ now, this writer holds 1\)/)
    expect((await storeA.memories.list({ scope: 'global' })).map((memory) => memory.text)).toEqual(['The user lives in Lisbon.'])
    expect((await storeA.audit.list({ entity: 'lease' })).slice(0, 2).map((entry) => [entry.op, entry.revision])).toEqual([
      ['lease.acquire', 1],
      ['lease.takeover', 2],
    ])
    // The slice was paid for by both (A's answer came too late) but stored once.
    expect(modelA.callsOf('l1')).toHaveLength(1)
    expect(modelB.callsOf('l1')).toHaveLength(1)
  })
})
