import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { eq, sql } from 'drizzle-orm'
import { describe, expect, it } from 'vitest'
import { packageDeclaration, sqlGreatest } from '../../src/index.ts'
import { rejectionOf, tempDir } from '../helpers.ts'
import { demoDeclaration, demoMigrations, demoPgSchema, demoSchema } from '../support/demo-tables.ts'
import { backends } from './backends.ts'

/** A clock the test moves by hand (lease expiry). */
function manualClock(start = Date.UTC(2025, 5, 1)) {
  let now = start
  return { now: () => now, advance: (ms: number) => (now += ms) }
}

// The package-tables seam's contract, in the portable query style (awaited builders, tables from `t`).
describe.each(backends)('package tables ($name)', (backend) => {
  it('migrates a package’s tables once, hands out one handle per owner, and runs portable queries on them', async () => {
    const store = await backend.open()
    const tables = await store.tables(demoDeclaration())
    expect(await store.tables(demoDeclaration())).toBe(tables)
    expect(tables.owner).toBe('demo')
    expect(tables.dialect).toBe(backend.name === 'sqlite' ? 'sqlite' : 'postgresql')
    expect(Object.keys(tables.t)).toEqual(['notes'])
    expect((await store.meta.migrations()).filter((m) => m.owner === 'demo').map((m) => m.version)).toEqual([1])

    const { notes } = tables.t
    await tables.write((db, t) => db.insert(t.notes).values([{ id: 'n1', body: '会议纪要：周三发布' }, { id: 'n2', body: '週末はリリースしない' }]))
    const bumped = await tables.write((db, t) => db.update(t.notes).set({ hits: sql`${t.notes.hits} + 2` }).where(eq(t.notes.id, 'n2')).returning({ id: t.notes.id }))
    expect(bumped).toEqual([{ id: 'n2' }])
    // An unawaited query returned from the callback runs inside the unit too.
    expect(await tables.read((db) => db.select().from(notes).orderBy(notes.id))).toEqual([
      { id: 'n1', body: '会议纪要：周三发布', hits: 0 },
      { id: 'n2', body: '週末はリリースしない', hits: 2 },
    ])
    const first = await tables.read(async (db, t) => (await db.select({ body: t.notes.body }).from(t.notes).where(eq(t.notes.hits, 2)).limit(1))[0])
    expect(first).toEqual({ body: '週末はリリースしない' })
  })

  it('an async write is one unit: when it throws after an await nothing it wrote survives, audit rows included', async () => {
    const store = await backend.open()
    const tables = await store.tables(demoDeclaration())
    const error = await rejectionOf(
      tables.write(
        async (db, t) => {
          await db.insert(t.notes).values({ id: 'half', body: '写了一半' })
          expect(await db.select().from(t.notes)).toHaveLength(1)
          await db.insert(t.notes).values({ id: 'half-2', body: '半分だけ' })
          throw new Error('after two awaits')
        },
        { audit: { op: 'demo.note.add', entityId: 'half' } },
      ),
    )
    expect(error.message).toBe('after two awaits')
    expect(await tables.read((db, t) => db.select().from(t.notes))).toEqual([])
    expect(await store.audit.list({ entity: 'demo' as never })).toEqual([])
  })

  it('two async writes of one store never interleave, and the store’s own calls wait for a running unit', async () => {
    const store = await backend.open()
    const tables = await store.tables(demoDeclaration())
    await tables.write((db, t) => db.insert(t.notes).values({ id: 'counter', body: '计数器' }))
    const events: string[] = []
    // Read, await, write back plus one: any interleaving loses an increment or splits a start/end pair.
    const bump = (name: string) =>
      tables.write(async (db, t) => {
        events.push(`${name}:start`)
        const [row] = await db.select().from(t.notes).where(eq(t.notes.id, 'counter'))
        await db.insert(t.notes).values({ id: `mark-${name}`, body: name })
        await db.update(t.notes).set({ hits: row!.hits + 1 }).where(eq(t.notes.id, 'counter'))
        events.push(`${name}:end`)
      })
    const a = bump('a')
    // Issued while a's unit runs: the store's own call waits for it to end.
    const meta = store.meta.set('after-a', '1').then(() => events.push('meta'))
    await Promise.all([a, meta, bump('b'), bump('c')])
    const counter = await tables.read(async (db, t) => (await db.select().from(t.notes).where(eq(t.notes.id, 'counter')))[0])
    expect(counter?.hits).toBe(3)
    const units = events.filter((event) => event !== 'meta')
    expect(units).toHaveLength(6)
    for (let index = 0; index < units.length; index += 2) expect(units[index + 1]).toBe(units[index]!.replace(':start', ':end'))
    expect(events.indexOf('meta')).toBeGreaterThan(events.indexOf('a:end'))
  })

  it('joins store.transaction: async package writes commit and roll back with the store’s own writes', async () => {
    const store = await backend.open()
    const tables = await store.tables(demoDeclaration())
    await expect(
      store.transaction(async (tx) => {
        await tx.memories.add({ kind: 'fact', text: 'rolled back memory', scope: 'global' })
        await tables.write(async (db, t) => {
          await db.insert(t.notes).values({ id: 'gone', body: '回滚的笔记' })
        })
        throw new Error('abort')
      }),
    ).rejects.toThrow('abort')
    expect(await store.memories.list()).toEqual([])
    expect(await tables.read((db, t) => db.select().from(t.notes))).toEqual([])

    await store.transaction(async (tx) => {
      await tx.memories.add({ kind: 'fact', text: 'kept memory', scope: 'global' })
      await tables.write(async (db, t) => {
        await db.insert(t.notes).values({ id: 'kept', body: '保留' })
      })
      // A failing package write inside is its own savepoint: only its rows roll back.
      const inner = await rejectionOf(
        tables.write(async (db, t) => {
          await db.insert(t.notes).values({ id: 'inner', body: 'x' })
          throw new Error('inner fails')
        }),
      )
      expect(inner.message).toBe('inner fails')
      // Reads inside see the transaction's own writes.
      expect((await tables.read((db, t) => db.select({ id: t.notes.id }).from(t.notes))).map((row) => row.id)).toEqual(['kept'])
    })
    expect((await store.memories.list()).map((m) => m.text)).toEqual(['kept memory'])
    expect(await tables.read((db, t) => db.select().from(t.notes))).toEqual([{ id: 'kept', body: '保留', hits: 0 }])
  })

  it('refuses an async write fenced by a lease that was taken over, writing nothing; audit rows land with the write', async () => {
    const clock = manualClock()
    const store = await backend.open({ now: clock.now })
    const tables = await store.tables(demoDeclaration())
    const lease = (await store.leases.acquire('demo-job', 'a', 1_000))!
    await tables.write(
      async (db, t) => {
        await db.insert(t.notes).values({ id: 'fenced-ok', body: 'written under the lease' })
      },
      { fence: lease, audit: [{ op: 'demo.note.add', entityId: 'fenced-ok' }, { op: 'demo.note.check', entityId: 'fenced-ok', revision: 2 }] },
    )
    clock.advance(2_000)
    await store.leases.acquire('demo-job', 'b', 1_000)
    let ran = false
    const error = await rejectionOf(
      tables.write(
        async (db, t) => {
          ran = true
          await db.insert(t.notes).values({ id: 'stale', body: 'from a stale holder' })
        },
        { fence: lease, audit: { op: 'demo.note.add', entityId: 'stale' } },
      ),
    )
    expect(error).toMatchObject({ code: 'fenced' })
    expect(ran).toBe(false)
    expect((await tables.read((db, t) => db.select().from(t.notes))).map((n) => n.id)).toEqual(['fenced-ok'])
    const audit = await store.audit.list({ entity: 'demo' as never })
    expect(audit.map((e) => [e.op, e.entityId, e.revision]).sort()).toEqual([
      ['demo.note.add', 'fenced-ok', null],
      ['demo.note.check', 'fenced-ok', 2],
    ])
    expect(await rejectionOf(tables.write(() => undefined, { audit: { op: 'other.thing', entityId: 'x' } }))).toMatchObject({ code: 'invalid-argument', message: expect.stringContaining('audit[0].op') })
  })

  it('a read-only store checks the migrations, reads, and refuses writes', async () => {
    const store = await backend.open()
    await store.memories.add({ kind: 'fact', text: 'opened once', scope: 'global' })
    const reader = await backend.reopen(store, { readonly: true })
    expect(await rejectionOf(reader.tables(demoDeclaration()))).toMatchObject({ code: 'schema-too-old' })

    const tables = await store.tables(demoDeclaration())
    await tables.write((db, t) => db.insert(t.notes).values({ id: 'n', body: '只读也能读' }))
    const readOnly = await reader.tables(demoDeclaration())
    expect(await readOnly.read((db, t) => db.select().from(t.notes))).toEqual([{ id: 'n', body: '只读也能读', hits: 0 }])
    expect(await rejectionOf(readOnly.write((db, t) => db.delete(t.notes)))).toMatchObject({ code: 'readonly' })
  })

  it('refuses a declaration whose applied migration was edited (migration-mismatch), and bad declarations with the path of the bad field', async () => {
    const store = await backend.open()
    await store.tables(demoDeclaration())
    const other = await backend.reopen(store)
    expect(await rejectionOf(other.tables(demoDeclaration({ edit: ' -- edited' })))).toMatchObject({ code: 'migration-mismatch' })
    expect(await rejectionOf(store.tables({ migrations: { owner: 'store', migrations: [] } }))).toMatchObject({ code: 'invalid-argument', message: expect.stringContaining('migrations.owner') })
    expect(await rejectionOf(store.tables({ migrations: { owner: 'Bad Owner', migrations: [] } }))).toMatchObject({ code: 'invalid-argument' })
    expect(await rejectionOf(store.tables({ ...demoDeclaration(), schema: 'x' as never }))).toMatchObject({ code: 'invalid-argument', message: expect.stringContaining('schema') })
    const wrongOwner = { ...demoDeclaration(), postgres: { migrations: { owner: 'other', migrations: [] }, schema: {} } }
    expect(await rejectionOf(store.tables(wrongOwner))).toMatchObject({ code: 'invalid-argument', path: 'postgres.migrations.owner' })
    expect(await rejectionOf(store.tables({ ...demoDeclaration(), postgres: { migrations: demoDeclaration().migrations, schema: null as never } }))).toMatchObject({ path: 'postgres.schema' })
  })

  it('the synchronous paths answer on SQLite and refuse with unsupported on PostgreSQL; a declaration without a postgres part is SQLite-only', async () => {
    const store = await backend.open()
    const tables = await store.tables(demoDeclaration())
    await tables.write((db, t) => db.insert(t.notes).values({ id: 's', body: '同期' }))
    const readSync = () => tables.readSync((db, t) => db.select({ id: t.notes.id }).from(t.notes).all())
    const writeSync = () => tables.writeSync((db, t) => db.delete(t.notes).run())
    const other = await backend.open()
    if (backend.name === 'sqlite') {
      expect(readSync()).toEqual([{ id: 's' }])
      writeSync()
      expect(await tables.read((db, t) => db.select().from(t.notes))).toEqual([])
      expect((await other.tables(demoDeclaration({ sqliteOnly: true }))).dialect).toBe('sqlite')
    } else {
      expect(readSync).toThrow(expect.objectContaining({ code: 'unsupported', message: expect.stringContaining("'demo'") }))
      expect(writeSync).toThrow(expect.objectContaining({ code: 'unsupported' }))
      expect(await tables.read((db, t) => db.select({ id: t.notes.id }).from(t.notes))).toEqual([{ id: 's' }])
      expect(await rejectionOf(other.tables(demoDeclaration({ sqliteOnly: true })))).toMatchObject({ code: 'unsupported', message: expect.stringContaining("'demo'") })
      // Nothing was migrated for the refused declaration.
      expect((await other.meta.migrations()).filter((m) => m.owner === 'demo')).toEqual([])
    }
  })

  it('packageDeclaration finds both migration trees from a package module, and sqlGreatest is the larger value on both dialects', async () => {
    // A package laid out as installed: <root>/migrations{,-postgres}/demo/ and a module in src/core/.
    const root = tempDir()
    for (const tree of ['migrations', 'migrations-postgres']) {
      mkdirSync(join(root, tree, 'demo'), { recursive: true })
      writeFileSync(join(root, tree, 'demo', '0001_init.sql'), demoMigrations().migrations[0]!.sql)
    }
    const moduleUrl = pathToFileURL(join(root, 'src', 'core', 'tables.js')).href
    const declaration = packageDeclaration(moduleUrl, 'demo', { schema: demoSchema, pgSchema: demoPgSchema })
    expect(declaration.postgres?.migrations.owner).toBe('demo')
    const store = await backend.open()
    const tables = await store.tables(declaration)
    await tables.write((db, t) => db.insert(t.notes).values([{ id: 'a', body: '早い', hits: 5 }, { id: 'b', body: '晚', hits: 1 }]))
    await tables.write((db, t) => db.update(t.notes).set({ hits: sqlGreatest(tables.dialect, t.notes.hits, 3) }))
    expect(await tables.read((db, t) => db.select({ id: t.notes.id, hits: t.notes.hits }).from(t.notes).orderBy(t.notes.id))).toEqual([
      { id: 'a', hits: 5 },
      { id: 'b', hits: 3 },
    ])

    // A package installed without a tree fails with the package's own error, default the store's not-found.
    const bare = pathToFileURL(join(tempDir(), 'dist', 'index.js')).href
    expect(() => packageDeclaration(bare, 'demo', { schema: demoSchema, pgSchema: demoPgSchema })).toThrow(expect.objectContaining({ code: 'not-found', message: expect.stringContaining('migrations folder is missing') }))
    const own = (message: string) => Object.assign(new Error(message), { code: 'demo-missing' })
    expect(() => packageDeclaration(bare, 'demo', { pgSchema: demoPgSchema, missing: own })).toThrow(expect.objectContaining({ code: 'demo-missing' }))
  })
})
