/**
 * The store plugin row on PostgreSQL (`databaseUrl`): validated at load without ever printing
 * the password, opened on the run's throwaway cluster (`inject('pgUrl')`, see
 * support/pg-global-setup.ts), local files kept in the data dir.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { Context } from '@deepseek-ai/cordis'
import { describe, expect, inject, it } from 'vitest'
import { dropPostgresStore, isMemoryStoreError, openStore } from '../src/index.ts'
import { resolveStoreRow } from '../src/core/store-row.ts'
import MemoryStoreDefault, { Config, DATABASE_FILE, LOG_FILE, MemoryStoreService } from '../src/plugin.ts'
import { onCleanup, rejectionOf, tempDir } from './helpers.ts'

/** The cluster's password (support/pg-cluster.ts): nothing the row prints may contain it. */
const PASSWORD = decodeURIComponent(new URL(inject('pgUrl')).password)

function freshSchema(): string {
  const schema = `row_${process.pid}_${randomBytes(4).toString('hex')}`
  onCleanup(() => dropPostgresStore({ databaseUrl: inject('pgUrl'), schema }))
  return schema
}

function newContext(): Context {
  const ctx = new Context()
  onCleanup(() => ctx.fiber.dispose())
  return ctx
}

describe('memory-store row on PostgreSQL (databaseUrl)', () => {
  it('has databaseUrl (a secret) and schema in its Config, SQLite by default', () => {
    expect(Config({})).toMatchObject({ databaseUrl: '', schema: 'dsh_memory' })
    const dict = (Config as unknown as { dict: Record<string, { meta: { role?: string } }> }).dict
    expect(dict.databaseUrl!.meta.role).toBe('secret')
    expect(resolveStoreRow({ dataDir: '/data', databaseUrl: '  ', schema: 'Not Valid' }, { DSH_MEMORY_USER: 'me@example.com' })).toEqual({ dataDir: '/data', identity: '/data', user: 'me@example.com', userSource: 'env' })
  })

  it.each([
    ['not a URL', { databaseUrl: `postgres//dsh:${PASSWORD}@db` }, 'databaseUrl', /^memory-store: databaseUrl: must be a postgres:\/\/ URL/],
    ['another scheme', { databaseUrl: `mysql://dsh:${PASSWORD}@db/team` }, 'databaseUrl', /^memory-store: databaseUrl: must start with postgres:\/\//],
    ['no database', { databaseUrl: `postgres://dsh:${PASSWORD}@db:5432/?password=${PASSWORD}` }, 'databaseUrl', /^memory-store: databaseUrl: names no database: .*got postgres:\/\/dsh@db:5432\/$/],
    ['a bad schema', { databaseUrl: `postgres://dsh:${PASSWORD}@db/team`, schema: 'Team Memory' }, 'schema', /^memory-store: schema: must match/],
  ])('refuses %s at load, naming the field and never the password', async (_label, config, path, message) => {
    for (const load of [(ctx: Context) => ctx.plugin(MemoryStoreDefault, { dataDir: tempDir(), ...config }), (ctx: Context) => ctx.plugin(MemoryStoreService, { dataDir: tempDir(), ...config })]) {
      const ctx = newContext()
      const error = await rejectionOf(async () => await load(ctx))
      expect(error).toMatchObject({ name: 'MemoryStoreError', code: 'invalid-argument', path })
      expect(error.message).toMatch(message)
      expect(error.message).not.toContain(PASSWORD)
      expect(ctx.get('memoryStore')).toBeUndefined()
    }
  })

  it('opens the database of databaseUrl, keeps memory.log in the data dir, and another process sees the rows', { timeout: 30_000 }, async () => {
    const dataDir = join(tempDir(), 'data')
    const schema = freshSchema()
    const ctx = newContext()
    const fiber = await ctx.plugin(MemoryStoreDefault, { dataDir, databaseUrl: inject('pgUrl'), schema })
    const service = ctx.memoryStore
    expect(service.backend).toBe('postgresql')
    expect(service.dataDir).toBe(dataDir)
    expect(service.path).toMatch(/^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/)
    expect(service.path).not.toContain(PASSWORD)

    await service.conversations.ensure({ id: 'session-1', workspace: '/repo' })
    await service.messages.append({ conversationId: 'session-1', hostMessageId: 'h1', role: 'user', text: '我们决定使用 PostgreSQL 作为主数据库。' })
    const memory = await service.memories.add({ kind: 'fact', text: 'チームのメモリは PostgreSQL に置く', scope: 'global' })
    service.log.write('capture', 'stored', { messages: 1 })
    await fiber.dispose()
    expect(() => service.memories).toThrowError(expect.objectContaining({ code: 'closed' }))

    // Local files stay local; the memory itself is in the database.
    expect(readFileSync(join(dataDir, LOG_FILE), 'utf8')).toMatch(/capture stored messages=1/)
    expect(existsSync(join(dataDir, DATABASE_FILE))).toBe(false)
    const other = await openStore({ databaseUrl: inject('pgUrl'), schema })
    onCleanup(() => other.close())
    expect((await other.memories.get(memory.id))?.text).toBe('チームのメモリは PostgreSQL に置く')
    expect((await other.search.messages('数据库')).map((hit) => hit.message.conversationId)).toEqual(['session-1'])
  })

  it('elects one row per host: rows on the same database share it, a row on another store is refused naming databaseUrl', async () => {
    const schema = freshSchema()
    const dataDir = tempDir()
    const ctx = newContext()
    await ctx.plugin(MemoryStoreDefault, { dataDir, databaseUrl: inject('pgUrl'), schema })
    await ctx.plugin(MemoryStoreDefault, { dataDir, databaseUrl: ` ${inject('pgUrl')} `, schema })
    expect(ctx.memoryStore.backend).toBe('postgresql')
    for (const config of [{ dataDir }, { dataDir, databaseUrl: inject('pgUrl'), schema: `${schema}_other` }]) {
      const error = await rejectionOf(async () => await ctx.plugin(MemoryStoreDefault, config))
      expect(error).toMatchObject({ code: 'invalid-argument', path: 'databaseUrl' })
      expect(error.message).toContain(`schema ${schema}`)
      expect(error.message).not.toContain(PASSWORD)
    }
    // Rows on the one database that write as different users disagree too.
    const byUser = await rejectionOf(async () => await ctx.plugin(MemoryStoreDefault, { dataDir, databaseUrl: inject('pgUrl'), schema, user: `other-${ctx.memoryStore.user}` }))
    expect(byUser).toMatchObject({ code: 'invalid-argument', path: 'user' })
    expect(byUser.message).toContain(`writes as ${ctx.memoryStore.user};`)
    expect(byUser.message).not.toContain(PASSWORD)
  })

  it('fails to start with unavailable, naming host:port and not the password, when no server listens', async () => {
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const address = server.address() as { port: number }
        server.close(() => resolve(address.port))
      })
    })
    const ctx = newContext()
    const error = await rejectionOf(async () => await ctx.plugin(MemoryStoreService, { dataDir: tempDir(), databaseUrl: `postgres://dsh:${PASSWORD}@127.0.0.1:${port}/team` }))
    expect(isMemoryStoreError(error, 'unavailable')).toBe(true)
    expect(error.message).toContain(`127.0.0.1:${port}`)
    expect(error.message).not.toContain(PASSWORD)
    expect(ctx.get('memoryStore')).toBeUndefined()
  })
})
