import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Context } from '@deepseek-ai/cordis'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { isMemoryStoreError, openMemoryStore } from '../src/index.ts'
import MemoryStoreDefault, { Config, DATABASE_FILE, MemoryStoreService, apply, name } from '../src/plugin.ts'
import { onCleanup, rejectionOf, tempDir } from './helpers.ts'

describe('memory-store plugin', () => {
  it('exports the loader module shape', () => {
    expect(name).toBe('memory-store')
    expect(MemoryStoreDefault).toEqual({ name, Config, apply })
    expect(MemoryStoreService.Config).toBe(Config)
    expect(Config({})).toEqual({ dataDir: '', busyTimeoutMs: 5000 })
  })

  it('the README Config table matches the schema', () => {
    const readme = readFileSync(join(import.meta.dirname, '..', 'README.md'), 'utf8')
    const section = readme.slice(readme.indexOf('## Config'), readme.indexOf('## Service API'))
    const rows = [...section.matchAll(/^\| `(\w+)` \| (\w+) \| `([^`]*)` \| (.+) \|$/gm)].map((match) => ({
      key: match[1]!,
      type: match[2]!,
      fallback: match[3]!,
      description: match[4]!,
    }))
    const dict = (Config as unknown as { dict: Record<string, { meta: { default: unknown; description: string } }> }).dict
    expect(rows.map((row) => row.key)).toEqual(Object.keys(dict))
    for (const row of rows) {
      expect(row.fallback, row.key).toBe(JSON.stringify(dict[row.key]!.meta.default).replace(/^"(.*)"$/, "'$1'"))
      // The README may say more, but starts with the schema's first sentence.
      expect(row.description.replace(/`/g, ''), row.key).toContain(dict[row.key]!.meta.description.split('. ')[0]!)
    }
  })

  it('opens <dataDir>/memory.db on start, serves the repositories, closes on dispose', async () => {
    const dataDir = join(tempDir(), 'data')
    const ctx = new Context()
    onCleanup(() => ctx.fiber.dispose())
    const fiber = await ctx.plugin(MemoryStoreService, { dataDir })
    const service = ctx.memoryStore
    expect(service.dataDir).toBe(dataDir)
    expect(existsSync(join(dataDir, DATABASE_FILE))).toBe(true)

    await service.conversations.ensure({ id: 'session-1', workspace: '/repo' })
    const { inserted } = await ctx.memoryStore.messages.append({ conversationId: 'session-1', hostMessageId: 'h1', role: 'user', text: 'remember the deploy key rotation' })
    expect(inserted).toBe(true)
    const memory = await ctx.memoryStore.memories.add({ kind: 'fact', text: 'Deploys happen on Fridays', scope: 'workspace', workspace: '/repo' })
    expect((await ctx.memoryStore.search.memories('deploys', { workspace: '/repo' }))[0]?.memory.id).toBe(memory.id)
    const messages = ctx.memoryStore.messages

    await fiber.dispose()

    // The database is closed: no lock is held, so another connection can take an exclusive one.
    const other = new Database(join(dataDir, DATABASE_FILE), { timeout: 0 })
    other.pragma('locking_mode = EXCLUSIVE')
    other.exec('BEGIN EXCLUSIVE; COMMIT')
    other.close()
    // Further calls through the service, or through a repository kept from before, fail with 'closed'.
    expect(() => service.memories).toThrowError(expect.objectContaining({ code: 'closed' }))
    const error = await rejectionOf(messages.list())
    expect(isMemoryStoreError(error, 'closed')).toBe(true)

    // The data survived and is readable by the plain library.
    const store = openMemoryStore({ path: join(dataDir, DATABASE_FILE) })
    onCleanup(() => store.close())
    expect((await store.messages.list()).map((m) => m.text)).toEqual(['remember the deploy key rotation'])
  })

  it('fails to start, providing no service, on a database written by a newer version', async () => {
    const dataDir = tempDir()
    const path = join(dataDir, DATABASE_FILE)
    await openMemoryStore({ path }).close()
    const raw = new Database(path)
    raw.prepare(`INSERT INTO store_schema (owner, version, name, checksum, applied_at) VALUES ('store', 9, 'future', '-', 0)`).run()
    raw.close()
    const ctx = new Context()
    onCleanup(() => ctx.fiber.dispose())
    const error = await rejectionOf(async () => await ctx.plugin(MemoryStoreService, { dataDir }))
    expect(isMemoryStoreError(error, 'schema-too-new')).toBe(true)
    expect(ctx.get('memoryStore')).toBeUndefined()
  })

  it('resolves an empty dataDir through DSH_HOME', async () => {
    const home = tempDir()
    const previous = process.env.DSH_HOME
    process.env.DSH_HOME = home
    onCleanup(() => {
      if (previous === undefined) delete process.env.DSH_HOME
      else process.env.DSH_HOME = previous
    })
    const ctx = new Context()
    onCleanup(() => ctx.fiber.dispose())
    await ctx.plugin(MemoryStoreService, {})
    expect(ctx.memoryStore.dataDir).toBe(join(home, 'memory'))
    expect(existsSync(join(home, 'memory', DATABASE_FILE))).toBe(true)
  })

  it('mounts the database once when several bundles each mount a store row', async () => {
    const dataDir = tempDir()
    const ctx = new Context()
    onCleanup(() => ctx.fiber.dispose())
    const first = await ctx.plugin(MemoryStoreDefault, { dataDir })
    const second = await ctx.plugin(MemoryStoreDefault, { dataDir })
    const third = await ctx.plugin(MemoryStoreDefault, { dataDir, busyTimeoutMs: 100 })
    const service = ctx.memoryStore
    await service.conversations.ensure({ id: 's', workspace: '/w' })
    // The first row owns the service; unloading it hands the database to the next row.
    await first.dispose()
    await expect.poll(() => ctx.get('memoryStore') !== undefined && ctx.memoryStore !== service).toBe(true)
    expect((await ctx.memoryStore.conversations.list()).map((c) => c.id)).toEqual(['s'])
    await second.dispose()
    await third.dispose()
    expect(ctx.get('memoryStore')).toBeUndefined()
  })

  it('refuses store rows that disagree on the data directory, naming the field', async () => {
    const ctx = new Context()
    onCleanup(() => ctx.fiber.dispose())
    await ctx.plugin(MemoryStoreDefault, { dataDir: tempDir() })
    const error = await rejectionOf(async () => await ctx.plugin(MemoryStoreDefault, { dataDir: tempDir() }))
    expect(isMemoryStoreError(error, 'invalid-argument')).toBe(true)
    expect(String((error as Error).message)).toMatch(/^dataDir: /)
  })
})
