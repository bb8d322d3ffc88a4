import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { pathToFileURL } from 'node:url'
import { eq } from 'drizzle-orm'
import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { describe, expect, it } from 'vitest'
import type { MigrationSet } from '../src/index.ts'
import { openTemp, rejectionOf, reopen, tempDir } from './helpers.ts'

const entry = pathToFileURL(join(import.meta.dirname, '..', 'src', 'index.ts')).href

/** A package's tables as drizzle schema, and the migrations that create them. */
const notes = sqliteTable('demo_notes', {
  id: text('id').primaryKey(),
  body: text('body').notNull(),
  hits: integer('hits').notNull().default(0),
})
const schema = { notes }
const migrations: MigrationSet = {
  owner: 'demo',
  migrations: [{ version: 1, name: 'init', sql: 'CREATE TABLE demo_notes (id TEXT PRIMARY KEY, body TEXT NOT NULL, hits INTEGER NOT NULL DEFAULT 0);' }],
}

function manualClock(start = Date.UTC(2025, 5, 1)) {
  let t = start
  return { now: () => t, advance: (ms: number) => (t += ms) }
}

describe('package tables on the store session', () => {
  it('declares and migrates a package’s tables once, and runs typed drizzle queries on them', async () => {
    const { store } = openTemp()
    const tables = await store.tables({ migrations, schema })
    expect(await store.tables({ migrations, schema })).toBe(tables)
    expect((await store.meta.migrations()).filter((m) => m.owner === 'demo').map((m) => m.version)).toEqual([1])

    await tables.write((db) => db.insert(notes).values([{ id: 'n1', body: '会议纪要：周三发布' }, { id: 'n2', body: '週末はリリースしない' }]).run())
    await tables.write((db) => db.update(notes).set({ hits: 2 }).where(eq(notes.id, 'n2')).run())
    const rows = await tables.read((db) => db.select().from(notes).orderBy(notes.id).all())
    expect(rows).toEqual([
      { id: 'n1', body: '会议纪要：周三发布', hits: 0 },
      { id: 'n2', body: '週末はリリースしない', hits: 2 },
    ])
    // The relational API is typed by the declared schema.
    expect(await tables.read((db) => db.query.notes.findFirst({ where: eq(notes.id, 'n1') }).sync())).toMatchObject({ body: '会议纪要：周三发布' })
    expect(tables.readSync((db) => db.select({ id: notes.id }).from(notes).where(eq(notes.hits, 2)).all())).toEqual([{ id: 'n2' }])
    expect(tables.writeSync((db) => db.delete(notes).where(eq(notes.id, 'n1')).run().changes)).toBe(1)
  })

  it('rejects a bad declaration with the path of the bad field, and the reserved owner', async () => {
    const { store } = openTemp()
    expect(await rejectionOf(store.tables({ migrations: { owner: 'store', migrations: [] } }))).toMatchObject({ code: 'invalid-argument', message: expect.stringContaining('migrations.owner') })
    expect(await rejectionOf(store.tables({ migrations: { owner: 'Bad Owner', migrations: [] } }))).toMatchObject({ code: 'invalid-argument' })
    expect(await rejectionOf(store.tables({ migrations, schema: 'x' as unknown as Record<string, never> }))).toMatchObject({ code: 'invalid-argument', message: expect.stringContaining('schema') })
    const tables = await store.tables({ migrations, schema })
    // The synchronous paths cannot wait: an async callback (or an unawaited query) is refused, and nothing it wrote survives.
    expect(() =>
      tables.writeSync((db) => {
        db.insert(notes).values({ id: 'async', body: 'x' }).run()
        return Promise.resolve() as unknown as void
      }),
    ).toThrow(expect.objectContaining({ code: 'invalid-argument', message: expect.stringContaining('synchronous') }))
    expect(() => tables.readSync((db, t) => db.select().from(t.notes) as unknown as void)).toThrow(expect.objectContaining({ code: 'invalid-argument' }))
    expect(await tables.read((db) => db.select().from(notes).all())).toEqual([])
    expect(await rejectionOf(tables.write(() => undefined, { audit: { op: 'other.thing', entityId: 'x' } }))).toMatchObject({ code: 'invalid-argument', message: expect.stringContaining('audit[0].op') })
  })

  it('joins store.transaction: package rows commit and roll back with the store’s own writes', async () => {
    const { store } = openTemp()
    const tables = await store.tables({ migrations, schema })
    await store.conversations.ensure({ id: 'c1', workspace: '/w' })

    await expect(
      store.transaction(async (tx) => {
        await tx.memories.add({ kind: 'fact', text: 'rolled back memory', scope: 'global' })
        await tables.write((db) => db.insert(notes).values({ id: 'gone', body: 'rolled back note' }).run())
        throw new Error('abort')
      }),
    ).rejects.toThrow('abort')
    expect(await store.memories.list()).toEqual([])
    expect(await tables.read((db) => db.select().from(notes).all())).toEqual([])

    await store.transaction(async (tx) => {
      await tx.memories.add({ kind: 'fact', text: 'kept memory', scope: 'global' })
      await tables.write((db) => db.insert(notes).values({ id: 'kept', body: 'kept note' }).run())
      // A synchronous write from inside the transaction joins it too.
      tables.writeSync((db) => db.update(notes).set({ hits: 1 }).where(eq(notes.id, 'kept')).run())
    })
    expect((await store.memories.list()).map((m) => m.text)).toEqual(['kept memory'])
    expect(await tables.read((db) => db.select().from(notes).all())).toEqual([{ id: 'kept', body: 'kept note', hits: 1 }])
  })

  it('refuses a write fenced by a lease that was taken over, writing nothing; audit rows land with the write', async () => {
    const clock = manualClock()
    const { store } = openTemp({ now: clock.now })
    const tables = await store.tables({ migrations, schema })
    const lease = (await store.leases.acquire('demo-job', 'a', 1_000))!
    await tables.write((db) => db.insert(notes).values({ id: 'fenced-ok', body: 'written under the lease' }).run(), {
      fence: lease,
      audit: { op: 'demo.note.add', entityId: 'fenced-ok' },
    })
    clock.advance(2_000)
    await store.leases.acquire('demo-job', 'b', 1_000)
    const error = await rejectionOf(tables.write((db) => db.insert(notes).values({ id: 'stale', body: 'from a stale holder' }).run(), { fence: lease }))
    expect(error).toMatchObject({ code: 'fenced' })
    expect(() => tables.writeSync((db) => db.insert(notes).values({ id: 'stale', body: 'sync' }).run(), { fence: lease })).toThrow(expect.objectContaining({ code: 'fenced' }))
    expect((await tables.read((db) => db.select().from(notes).all())).map((n) => n.id)).toEqual(['fenced-ok'])
    expect((await store.audit.list({ entity: 'demo' as never })).map((e) => [e.op, e.entityId])).toEqual([['demo.note.add', 'fenced-ok']])
  })

  it('a read-only store checks the migrations, reads, and refuses writes', async () => {
    const { store, path } = openTemp()
    await store.memories.add({ kind: 'fact', text: 'opened once', scope: 'global' })
    const reader = reopen(path, { readonly: true })
    expect(await rejectionOf(reader.tables({ migrations, schema }))).toMatchObject({ code: 'schema-too-old' })

    const tables = await store.tables({ migrations, schema })
    await tables.write((db) => db.insert(notes).values({ id: 'n', body: '只读也能读' }).run())
    const readOnly = await reader.tables({ migrations, schema })
    expect(await readOnly.read((db) => db.select().from(notes).all())).toEqual([{ id: 'n', body: '只读也能读', hits: 0 }])
    expect(await rejectionOf(readOnly.write((db) => db.delete(notes).run()))).toMatchObject({ code: 'readonly' })
    expect(() => readOnly.writeSync((db) => db.delete(notes).run())).toThrow(expect.objectContaining({ code: 'readonly' }))
  })

  it('a synchronous callback of write() commits and frees the connection before write() returns; an async one holds it until it settles', async () => {
    const { store } = openTemp()
    const tables = await store.tables({ migrations, schema })
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
    const tables = await store.tables({ migrations, schema })

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
