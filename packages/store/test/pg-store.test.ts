/**
 * What only the PostgreSQL backend has: opening by URL (bad URLs, unreachable servers, refused
 * credentials, the password kept out of paths and messages), the session's primitives that the
 * PostgreSQL repositories build on, the change notification, and the seams not ported yet.
 * The shared contract is test/contract/.
 */
import { createServer } from 'node:net'
import pg from 'pg'
import { describe, expect, inject, it } from 'vitest'
import { CHANGES_CHANNEL, openPostgresStore, openStore } from '../src/index.ts'
import { backends } from './contract/backends.ts'
import { onCleanup, rejectionOf } from './helpers.ts'
import { pgSessionOn } from './support/pg-session.ts'

const postgres = backends.find((backend) => backend.name === 'postgres')!
const PASSWORD = new URL(inject('pgUrl')).password

/** A port on 127.0.0.1 that nothing listens on. */
async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

describe('opening a PostgreSQL store', () => {
  it('keeps the password out of store.path and diagnostics; openStore picks the backend by databaseUrl', async () => {
    const store = await postgres.open()
    expect(store.path).toMatch(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/)
    expect(JSON.stringify(await store.meta.diagnostics())).not.toContain(PASSWORD)
    expect((await store.meta.diagnostics()).details).toMatchObject({ schema: (postgres.location(store) as { schema: string }).schema, serverVersion: expect.any(String) })
  })

  it('a bad URL or schema is invalid-argument naming the field', async () => {
    for (const databaseUrl of ['', 'not a url', 'mysql://u@localhost/db', 42]) {
      const error = await rejectionOf(openPostgresStore({ databaseUrl: databaseUrl as string }))
      expect(error.code, String(databaseUrl)).toBe('invalid-argument')
      expect(error.message).toContain('databaseUrl')
    }
    const badSchema = await rejectionOf(openStore({ databaseUrl: inject('pgUrl'), schema: 'Robert"; DROP' }))
    expect(badSchema).toMatchObject({ code: 'invalid-argument', message: expect.stringContaining('schema') })
    expect((await rejectionOf(openStore({ databaseUrl: inject('pgUrl'), busyTimeoutMs: -1 }))).code).toBe('invalid-argument')
  })

  it('an unreachable server is unavailable, naming host:port and never the password', async () => {
    const port = await closedPort()
    const error = await rejectionOf(openPostgresStore({ databaseUrl: `postgres://someone:${PASSWORD}@127.0.0.1:${port}/db`, busyTimeoutMs: 2_000 }))
    expect(error.code).toBe('unavailable')
    expect(error.message).toContain(`127.0.0.1:${port}`)
    expect(error.message).not.toContain(PASSWORD)
  })

  it('refused credentials are invalid-argument naming databaseUrl, without the password', async () => {
    const url = new URL(inject('pgUrl'))
    url.password = 'wrong-password-123'
    const error = await rejectionOf(openPostgresStore({ databaseUrl: url.href }))
    expect(error.code).toBe('invalid-argument')
    expect(error.message).toContain('databaseUrl')
    expect(error.message).not.toContain('wrong-password-123')
  })
})

describe('the PostgreSQL session', () => {
  it('bumpLayers bumps each layer once per write, in the write’s transaction, and audits it without the path', async () => {
    const store = await postgres.open()
    const s = await pgSessionOn(postgres.location(store))
    await s.write((tx) => s.bumpLayers(tx, ['global', 'global', 'workspace:/work/alpha', undefined], { actor: 'distill' }, 5))
    await s.write((tx) => s.bumpLayers(tx, ['workspace:/work/alpha'], undefined, 3))
    expect((await store.layers.list()).map((layer) => [layer.key, layer.revision, layer.updatedAt])).toEqual([
      // The stored 'global' key is the unattributed part of every user's global layer.
      [`global:${store.user}`, 1, 5],
      ['workspace:/work/alpha', 2, 5],
    ])
    expect((await store.layers.revision({ scope: 'workspace', workspace: '/work/alpha ' })).revision).toBe(2)
    await rejectionOf(
      s.transaction(async () => {
        await s.write((tx) => s.bumpLayers(tx, ['global'], undefined))
        throw new Error('boom')
      }),
    )
    expect((await store.layers.revision({ scope: 'global' })).revision).toBe(1)
    const audit = await store.audit.list({ entity: 'layer' })
    expect(audit.map((entry) => [entry.entityId.replace(/ws_[0-9a-f]{16}/, 'ws'), entry.revision, entry.actor])).toEqual([
      ['global', 1, 'distill'],
      ['workspace:ws', 1, 'distill'],
      ['workspace:ws', 2, null],
    ])
  })

  it('record writes the audit and change-log rows; reads join a transaction and see its writes', async () => {
    const store = await postgres.open()
    const s = await pgSessionOn(postgres.location(store))
    await s.transaction(async () => {
      await s.write((tx) => s.record(tx, { entity: 'memory', entityId: 'm1', change: 'insert', audit: 'memory.add', revision: 1 }, { actor: 'test' }, 77))
      expect(await s.read((tx) => tx.query<{ n: number }>('SELECT count(*) AS n FROM store_changes'))).toEqual([{ n: 1 }])
    })
    expect(await postgres.sql(store, 'SELECT entity, entity_id, op, at FROM store_changes')).toEqual([{ entity: 'memory', entity_id: 'm1', op: 'insert', at: '77' }])
    expect((await store.audit.list({ entity: 'memory' })).map((e) => [e.op, e.entityId, e.actor, e.revision, e.at])).toEqual([['memory.add', 'm1', 'test', 1, 77]])
  })

  it('a connection the server drops fails the call in flight as unavailable (host:port, never the password); the next call reconnects', async () => {
    const store = await postgres.open()
    const s = await pgSessionOn(postgres.location(store))
    await s.write((tx) => tx.query(`INSERT INTO store_meta (key, value, updated_at) VALUES ('k', 'v', 1)`))
    const pidOf = async () => ((await s.read((tx) => tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid'))) as [{ pid: number }])[0].pid
    const pid = await pidOf()
    const error = await rejectionOf(
      s.write(async (tx) => {
        await tx.query(`UPDATE store_meta SET value = 'half' WHERE key = 'k'`)
        await postgres.sql(store, `SELECT pg_terminate_backend(${pid}, 10000)`)
        await tx.query('SELECT 1')
      }),
    )
    expect(error.code).toBe('unavailable')
    expect(error.message).toContain(`127.0.0.1:${new URL(inject('pgUrl')).port}`)
    expect(error.message).not.toContain(PASSWORD)
    expect(await pidOf()).not.toBe(pid)
    expect(await s.read((tx) => tx.query("SELECT value FROM store_meta WHERE key = 'k'"))).toEqual([{ value: 'v' }])
    // The store's own connection is another one: it goes on.
    expect(await store.meta.get('k')).toBe('v')
    await s.close()
  })

  it(`notifies ${CHANGES_CHANNEL} with the schema when a write that recorded a change commits`, async () => {
    const store = await postgres.open()
    const { schema } = postgres.location(store) as { schema: string }
    const listener = new pg.Client({ connectionString: inject('pgUrl') })
    await listener.connect()
    onCleanup(() => listener.end())
    const payloads: string[] = []
    const received = new Promise<void>((resolve) =>
      listener.on('notification', (message) => {
        // Other test files write other schemas on the same cluster meanwhile.
        if (message.payload !== schema) return
        payloads.push(message.payload)
        resolve()
      }),
    )
    await listener.query(`LISTEN ${CHANGES_CHANNEL}`)
    await store.meta.set('k', 'v')
    await received
    expect(payloads).toEqual([schema])
  })
})
