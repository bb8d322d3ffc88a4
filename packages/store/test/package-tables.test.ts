import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { pathToFileURL } from 'node:url'
import { eq } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { openTemp, reopen, tempDir } from './helpers.ts'
import { demoDeclaration, demoSchema } from './support/demo-tables.ts'

const entry = pathToFileURL(join(import.meta.dirname, '..', 'src', 'index.ts')).href

const declaration = demoDeclaration({ sqliteOnly: true })
const { notes } = demoSchema

function manualClock(start = Date.UTC(2025, 5, 1)) {
  let t = start
  return { now: () => t, advance: (ms: number) => (t += ms) }
}

// SQLite's own side of the seam: the synchronous paths and the write lock of another process.
// What holds on every backend is in test/contract/package-tables.test.ts.
describe('package tables on the SQLite session', () => {
  it('runs the synchronous drizzle API (run/all, the relational .sync(), readSync/writeSync) on the store’s connection', async () => {
    const { store } = openTemp()
    const tables = await store.tables(declaration)
    await tables.write((db) => db.insert(notes).values([{ id: 'n1', body: '会议纪要：周三发布' }, { id: 'n2', body: '週末はリリースしない' }]).run())
    expect(await tables.write((db) => db.update(notes).set({ hits: 2 }).where(eq(notes.id, 'n2')).run().changes)).toBe(1)
    // The relational API is typed by the declared schema.
    expect(await tables.read((db) => db.query.notes.findFirst({ where: eq(notes.id, 'n1') }).sync())).toMatchObject({ body: '会议纪要：周三发布' })
    expect(tables.readSync((db) => db.select({ id: notes.id }).from(notes).where(eq(notes.hits, 2)).all())).toEqual([{ id: 'n2' }])
    expect(tables.writeSync((db) => db.delete(notes).where(eq(notes.id, 'n1')).run().changes)).toBe(1)
    // The synchronous paths cannot wait: an async callback (or an unawaited query) is refused, and nothing it wrote survives.
    expect(() =>
      tables.writeSync((db) => {
        db.insert(notes).values({ id: 'async', body: 'x' }).run()
        return Promise.resolve() as unknown as void
      }),
    ).toThrow(expect.objectContaining({ code: 'invalid-argument', message: expect.stringContaining('synchronous') }))
    expect(() => tables.readSync((db, t) => db.select().from(t.notes) as unknown as void)).toThrow(expect.objectContaining({ code: 'invalid-argument' }))
    expect(tables.readSync((db) => db.select({ id: notes.id }).from(notes).all())).toEqual([{ id: 'n2' }])
  })

  it('writeSync joins store.transaction, checks the fence and refuses on a read-only store', async () => {
    const clock = manualClock()
    const { store, path } = openTemp({ now: clock.now })
    const tables = await store.tables(declaration)
    await store.transaction(async () => {
      await tables.write((db) => db.insert(notes).values({ id: 'kept', body: 'kept note' }).run())
      // A synchronous write from inside the transaction joins it too.
      tables.writeSync((db) => db.update(notes).set({ hits: 1 }).where(eq(notes.id, 'kept')).run())
    })
    expect(await tables.read((db) => db.select().from(notes).all())).toEqual([{ id: 'kept', body: 'kept note', hits: 1 }])

    const lease = (await store.leases.acquire('demo-job', 'a', 1_000))!
    tables.writeSync((db) => db.update(notes).set({ hits: 2 }).run(), { fence: lease, audit: { op: 'demo.note.bump', entityId: 'kept' } })
    clock.advance(2_000)
    await store.leases.acquire('demo-job', 'b', 1_000)
    expect(() => tables.writeSync((db) => db.insert(notes).values({ id: 'stale', body: 'sync' }).run(), { fence: lease })).toThrow(expect.objectContaining({ code: 'fenced' }))
    expect((await tables.read((db) => db.select().from(notes).all())).map((n) => [n.id, n.hits])).toEqual([['kept', 2]])
    expect((await store.audit.list({ entity: 'demo' as never })).map((e) => [e.op, e.entityId])).toEqual([['demo.note.bump', 'kept']])

    const readOnly = await reopen(path, { readonly: true }).tables(declaration)
    expect(() => readOnly.writeSync((db) => db.delete(notes).run())).toThrow(expect.objectContaining({ code: 'readonly' }))
  })

  it('a synchronous callback of write() commits and frees the connection before write() returns; an async one holds it until it settles', async () => {
    const { store } = openTemp()
    const tables = await store.tables(declaration)
    const syncWrite = tables.write((db) => db.insert(notes).values({ id: 'sync-op', body: '同步' }).run())
    // Already committed: a synchronous write (which cannot wait) goes straight through.
    tables.writeSync((db, t) => db.update(t.notes).set({ hits: 1 }).where(eq(t.notes.id, 'sync-op')).run())
    await syncWrite

    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    let inserted!: () => void
    const insertedOnce = new Promise<void>((resolve) => (inserted = resolve))
    const asyncWrite = tables.write(async (db, t) => {
      await db.insert(t.notes).values({ id: 'async-op', body: '非同期' })
      inserted()
      await gate
    })
    // The async unit holds the connection: a synchronous write cannot join it, a synchronous read sees it.
    expect(() => tables.writeSync((db) => db.delete(notes).run())).toThrow(expect.objectContaining({ code: 'busy' }))
    await insertedOnce
    expect(tables.readSync((db, t) => db.select({ id: t.notes.id }).from(t.notes).all()).map((row) => row.id).sort()).toEqual(['async-op', 'sync-op'])
    release()
    await asyncWrite
    expect(await tables.read((db, t) => db.select().from(t.notes).orderBy(t.notes.id))).toEqual([
      { id: 'async-op', body: '非同期', hits: 0 },
      { id: 'sync-op', body: '同步', hits: 1 },
    ])
  })

  it('waits for another process’s write lock (async path) and fails fast on the sync path', async () => {
    const { store, path } = openTemp({ busyTimeoutMs: 120_000 })
    const tables = await store.tables(declaration)

    // A real second process takes the write lock and holds it until told to let go.
    const script = join(tempDir(), 'holder.mjs')
    writeFileSync(
      script,
      `import { openMemoryStore } from ${JSON.stringify(entry)}
import { createInterface } from 'node:readline'
const store = openMemoryStore({ path: process.argv[2] })
await store.transaction(async (tx) => {
  await tx.meta.set('holder', 'child')
  console.log('locked')
  for await (const line of createInterface({ input: process.stdin })) if (line === 'release') break
})
await store.close()
console.log('released')
`,
    )
    const child = spawn(process.execPath, [script, path], { stdio: ['pipe', 'pipe', 'inherit'] })
    const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]()
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve))
    expect((await lines.next()).value).toBe('locked')

    expect(() => tables.writeSync((db) => db.insert(notes).values({ id: 'sync', body: 'x' }).run())).toThrow(expect.objectContaining({ code: 'busy' }))
    let settled = false
    const pending = tables.write((db) => db.insert(notes).values({ id: 'waited', body: '等锁释放后写入' }).run()).finally(() => (settled = true))
    // Let the write try (and fail busy) a few times while the child holds the lock.
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setTimeout(resolve, 20))
    expect(settled).toBe(false)
    child.stdin!.end('release\n')
    await pending
    expect(await exited).toBe(0)
    expect(await tables.read((db) => db.select({ id: notes.id }).from(notes).all())).toEqual([{ id: 'waited' }])
    expect(await store.meta.get('holder')).toBe('child')
  }, 120_000) // a child Node process on a busy 2-core machine can take several seconds to start
})
