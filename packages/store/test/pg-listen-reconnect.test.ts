/**
 * PostgreSQL coordination that needs a server: the change feed's listener (another process's
 * commit reaches `store.changes` through LISTEN, with polling off, and a killed listener
 * connection is replaced and caught up from the change log, no gap, no duplicate), and the
 * session's reconnect (a dropped connection is replaced by the next operation; a transaction
 * in flight fails `unavailable` with nothing written; leases and fences still hold).
 * Connections are killed with `pg_terminate_backend`: the cluster is shared with the other
 * test files running meanwhile, so it is never restarted.
 */
import { sql } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { listenerApplicationName } from '../src/core/pg-listener.ts'
import type { StoreChange, StoreChangeEvent } from '../src/index.ts'
import { backends, type BackendOptions } from './contract/backends.ts'
import { type OpenedStore, rejectionOf } from './helpers.ts'
import { demoDeclaration } from './support/demo-tables.ts'

const postgres = backends.find((backend) => backend.name === 'postgres')!

/** The backend pid of `store`'s session connection (asked on that connection). */
async function sessionPid(store: OpenedStore): Promise<number> {
  const tables = await store.tables(demoDeclaration())
  const rows = await tables.read((db) => (db as unknown as { execute(q: unknown): Promise<{ rows: { pid: number }[] }> }).execute(sql`SELECT pg_backend_pid() AS pid`))
  return Number(rows.rows[0]!.pid)
}

/** Kill backends from outside and wait until they are gone (PostgreSQL 14+'s timeout argument). */
async function terminate(store: OpenedStore, where: string): Promise<number> {
  const rows = await postgres.sql(store, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 10000)) AS n FROM pg_stat_activity WHERE ${where}`)
  return Number(rows[0]!.n)
}

/** Every event `store.changes` delivers, and a way to wait for one that matches. */
function record(store: OpenedStore) {
  const events: StoreChangeEvent[] = []
  const waiting: { match: (event: StoreChangeEvent) => boolean; resolve: () => void }[] = []
  store.changes.subscribe((event) => {
    events.push(event)
    for (const wait of [...waiting]) {
      if (!wait.match(event)) continue
      waiting.splice(waiting.indexOf(wait), 1)
      wait.resolve()
    }
  })
  const changes = (): StoreChange[] => events.flatMap((event) => (event.type === 'changes' ? event.changes : []))
  const until = (match: (event: StoreChangeEvent) => boolean): Promise<void> =>
    events.some(match) ? Promise.resolve() : new Promise((resolve) => waiting.push({ match, resolve }))
  /** Resolves once changes of every id in `ids` were delivered. */
  const seen = (...ids: string[]): Promise<void> => until(() => ids.every((id) => changes().some((change) => change.entityId === id)))
  return { events, changes, until, seen }
}

const NO_POLL: BackendOptions = { changePollMs: 0 }
const note = (text: string) => ({ kind: 'fact' as const, text, scope: 'global' as const })

describe('PostgreSQL change feed: LISTEN', () => {
  it("another process's commit reaches store.changes through the notification (no poll), package-table writes too", async () => {
    const a = await postgres.open(NO_POLL)
    const b = await postgres.reopen(a)
    const heard = record(a)
    await a.changes.ready()
    expect(a.changes.listening).toBe(true)

    const memory = await b.memories.add(note('周三发布新版本'))
    await heard.seen(memory.id)
    expect(heard.changes()).toEqual([expect.objectContaining({ entity: 'memory', entityId: memory.id, op: 'insert' })])

    const tables = await b.tables(demoDeclaration())
    await tables.write((db, t) => db.insert(t.notes).values({ id: 'n', body: '週末はリリースしない' }))
    await heard.until((event) => event.type === 'tables' && event.owner === 'demo')
  })

  it('a killed listener connection is replaced; what was committed meanwhile is caught up from the log, in order, once', async () => {
    const a = await postgres.open(NO_POLL)
    const b = await postgres.reopen(a)
    const heard = record(a)
    await a.changes.ready()
    const first = await b.memories.add(note('before'))
    await heard.seen(first.id)

    const { schema } = postgres.location(a) as { schema: string }
    expect(await terminate(a, `application_name = '${listenerApplicationName(schema)}'`)).toBe(1)
    // Committed while A's listener is down or coming back: its notification may never reach A.
    const during = [await b.memories.add(note('会议纪要')), await b.memories.add(note('議事録'))]
    await heard.until((event) => event.type === 'resync')
    await heard.seen(...during.map((memory) => memory.id))
    expect(a.changes.listening).toBe(true)

    const after = await b.memories.add(note('after'))
    await heard.seen(after.id)
    const seqs = heard.changes().map((change) => change.seq)
    expect([...seqs].sort((x, y) => x - y)).toEqual(seqs)
    expect(new Set(seqs).size).toBe(seqs.length)
    expect(heard.changes().map((change) => change.entityId)).toEqual([first.id, ...during.map((memory) => memory.id), after.id])
  })
})

describe('PostgreSQL reconnect', () => {
  it('the next operation after a dropped connection runs on a new one', async () => {
    const store = await postgres.open()
    await store.meta.set('k', 'v')
    const pid = await sessionPid(store)
    expect(await terminate(store, `pid = ${pid}`)).toBe(1)
    expect(await store.meta.get('k')).toBe('v')
    await store.meta.set('k', 'w')
    expect(await sessionPid(store)).not.toBe(pid)
    expect(await store.meta.get('k')).toBe('w')
  })

  it('a read without a transaction (list, count, search) after a dropped connection runs on a new one', async () => {
    const store = await postgres.open()
    await store.memories.add(note('断线之后还能读到'))
    const pid = await sessionPid(store)
    expect(await terminate(store, `pid = ${pid}`)).toBe(1)
    expect((await store.memories.list()).map((memory) => memory.text)).toEqual(['断线之后还能读到'])
    expect(await store.memories.count()).toBe(1)
    expect((await store.search.memories('断线')).map((hit) => hit.memory.text)).toEqual(['断线之后还能读到'])
    expect(await sessionPid(store)).not.toBe(pid)
  })

  it('a transaction in flight fails with a retryable unavailable and writes nothing; the retry succeeds', async () => {
    const store = await postgres.open()
    const pid = await sessionPid(store)
    const error = await rejectionOf(
      store.transaction(async (tx) => {
        await tx.memories.add(note('写了一半'))
        await terminate(store, `pid = ${pid}`)
        await tx.memories.add(note('半分だけ'))
      }),
    )
    expect(error).toMatchObject({ code: 'unavailable', message: expect.stringContaining('nothing of it was written') })
    expect(await store.memories.list({ scope: 'global' })).toEqual([])
    await store.transaction(async (tx) => {
      await tx.memories.add(note('写了一半'))
      await tx.memories.add(note('半分だけ'))
    })
    expect((await store.memories.list({ scope: 'global' })).map((memory) => memory.text).sort()).toEqual(['半分だけ', '写了一半'].sort())
  })

  it("leases and fences hold across a dropped connection: the holder's lease expires as usual", async () => {
    let now = Date.UTC(2026, 0, 1)
    const clock = { now: () => now }
    const a = await postgres.open(clock)
    const b = await postgres.reopen(a, clock)
    const lease = (await a.leases.acquire('distill', 'host-a', 10_000))!
    expect(await terminate(a, `pid = ${await sessionPid(a)}`)).toBe(1)
    // The connection died, the lease did not: B waits for its expiry; A's fenced writes still pass.
    expect(await b.leases.acquire('distill', 'host-b', 10_000)).toBeUndefined()
    await a.meta.set('fenced', 'a', { fence: lease })
    now += 10_001
    const taken = await b.leases.acquire('distill', 'host-b', 10_000)
    expect(taken?.token).toBeGreaterThan(lease.token)
    expect(await rejectionOf(a.meta.set('fenced', 'stale', { fence: lease }))).toMatchObject({ code: 'fenced' })
    expect(await b.meta.get('fenced')).toBe('a')
  })
})
