import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Context, Service } from '@deepseek-ai/cordis'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { isMemoryStoreError, openMemoryStore } from '../src/index.ts'
import MemoryStoreDefault, { Config, DATABASE_FILE, MemoryStoreService, apply, claimPluginRow, name, pluginRows } from '../src/plugin.ts'
import { onCleanup, rejectionOf, tempDir } from './helpers.ts'

describe('memory-store plugin', () => {
  it('exports the loader module shape', () => {
    expect(name).toBe('memory-store')
    expect(MemoryStoreDefault).toEqual({ name, Config, apply })
    expect(MemoryStoreService.Config).toBe(Config)
    expect(Config({})).toEqual({ dataDir: '', databaseUrl: '', schema: 'dsh_memory', user: '', busyTimeoutMs: 30000, cacheMiB: 64, workspaceIdentity: 'git-remote', logMaxKiB: 1024, logFiles: 3 })
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

  it('refuses store rows that disagree on the user or the workspace identity, naming the field; rows that agree share one store', async () => {
    const dataDir = tempDir()
    const ctx = new Context()
    onCleanup(() => ctx.fiber.dispose())
    await ctx.plugin(MemoryStoreDefault, { dataDir, user: 'alice@example.com' })
    // The same user written with blanks around it is the same user.
    await ctx.plugin(MemoryStoreDefault, { dataDir, user: ' alice@example.com ', workspaceIdentity: 'git-remote' })
    const byUser = await rejectionOf(async () => await ctx.plugin(MemoryStoreDefault, { dataDir, user: '山田@example.jp' }))
    expect(byUser).toMatchObject({ code: 'invalid-argument', path: 'user' })
    expect(byUser.message).toMatch(/^user: this memory-store row writes as 山田@example.jp but store row memory-store#1 of this host writes as alice@example.com; give every memory-store row .*the same user/)
    const byIdentity = await rejectionOf(async () => await ctx.plugin(MemoryStoreDefault, { dataDir, user: 'alice@example.com', workspaceIdentity: 'path' }))
    expect(byIdentity).toMatchObject({ code: 'invalid-argument', path: 'workspaceIdentity' })
    expect(byIdentity.message).toMatch(/^workspaceIdentity: this memory-store row has workspaceIdentity path but store row memory-store#1 of this host has git-remote/)
    // The running row's config is the one that applies.
    expect(ctx.memoryStore.user).toBe('alice@example.com')
    expect(pluginRows(ctx).find((entry) => entry.plugin === 'memory-store')!.rows).toEqual([
      { label: 'memory-store#1', active: true },
      { label: 'memory-store#2', active: false },
    ])
  })

  it('refuses a misspelt config key at load, naming it', async () => {
    const ctx = new Context()
    onCleanup(() => ctx.fiber.dispose())
    const error = await rejectionOf(async () => await ctx.plugin(MemoryStoreDefault, { dataDir: tempDir(), busyTimeout: 5 } as never))
    expect(error).toMatchObject({ code: 'invalid-argument', path: 'busyTimeout', message: expect.stringContaining('memory-store: busyTimeout: unknown option') })
  })

  it('reports one active store row however many bundles mounted one', async () => {
    const dataDir = tempDir()
    const ctx = new Context()
    onCleanup(() => ctx.fiber.dispose())
    await ctx.plugin(MemoryStoreDefault, { dataDir })
    await ctx.plugin(MemoryStoreDefault, { dataDir })
    expect(pluginRows(ctx)).toEqual([
      { plugin: 'memory-store', rows: [{ label: 'memory-store#1', active: true }, { label: 'memory-store#2', active: false }] },
    ])
    // Another root in the same process has rows of its own.
    const other = new Context()
    onCleanup(() => other.fiber.dispose())
    expect(pluginRows(other)).toEqual([])
  })
})

describe('claimPluginRow', () => {
  /** A plugin whose rows count how often they really start, the way every adapter uses the helper. */
  function countingPlugin(pluginName: string, started: string[]) {
    return {
      name: pluginName,
      apply(ctx: Context, config: { tag: string }) {
        if (!claimPluginRow(ctx, pluginName)) return
        started.push(config.tag)
        ctx.effect(() => () => {
          started.push(`stop ${config.tag}`)
        })
      },
    }
  }

  function captureWarnings(ctx: Context): string[] {
    const lines: string[] = []
    ctx.logger.exporter({
      levels: { default: 3 },
      export(record: { type: string; args: unknown[] }) {
        const [format, ...args] = record.args
        if (record.type === 'warn') lines.push(String(format).replace(/%[sdC]/g, () => String(args.shift())))
      },
    } as never)
    return lines
  }

  it('runs the first row of a plugin, keeps later rows idle with a warning naming the running row', async () => {
    const ctx = new Context()
    onCleanup(() => ctx.fiber.dispose())
    const warnings = captureWarnings(ctx)
    const started: string[] = []
    const plugin = countingPlugin('memory-example', started)
    await ctx.plugin(plugin, { tag: 'preset' })
    await ctx.plugin(plugin, { tag: 'standalone' })
    expect(started).toEqual(['preset'])
    expect(pluginRows(ctx)).toEqual([
      { plugin: 'memory-example', rows: [{ label: 'memory-example#1', active: true }, { label: 'memory-example#2', active: false }] },
    ])
    expect(warnings.join('\n')).toMatch(/row memory-example#2 stays idle: row memory-example#1 already runs memory-example/)
    // Different plugins do not compete.
    const other: string[] = []
    await ctx.plugin(countingPlugin('memory-other', other), { tag: 'other' })
    expect(other).toEqual(['other'])
  })

  it('names rows by the id the loader gave them, as written in cordis.patch.yml', async () => {
    const ctx = new Context()
    onCleanup(() => ctx.fiber.dispose())
    // What @cordisjs/plugin-loader does for every row: the fiber gets its entry (full id prefixed by the tree).
    const ids = ['memory-preset-capture', 'memory-capture']
    ctx.on('internal/plugin', (fiber) => {
      const id = ids.shift()
      if (id) (fiber as unknown as { entry: unknown }).entry = { id: `include:${id}`, options: { id } }
    })
    const started: string[] = []
    const plugin = countingPlugin('memory-labelled', started)
    await ctx.plugin(plugin, { tag: 'preset' })
    await ctx.plugin(plugin, { tag: 'standalone' })
    expect(pluginRows(ctx)).toEqual([
      { plugin: 'memory-labelled', rows: [{ label: 'memory-preset-capture', active: true }, { label: 'memory-capture', active: false }] },
    ])
  })

  /** Plugin `pluginName` loaded in rows a then b of a root context disposed after the test. */
  async function rowsAandB(pluginName: string) {
    const ctx = new Context()
    onCleanup(() => ctx.fiber.dispose())
    const started: string[] = []
    const plugin = countingPlugin(pluginName, started)
    const first = await ctx.plugin(plugin, { tag: 'a' })
    await ctx.plugin(plugin, { tag: 'b' })
    return { ctx, started, plugin, first }
  }

  it('hands the plugin to the next idle row when the running row is removed for good', async () => {
    const { ctx, started, plugin, first } = await rowsAandB('memory-handover')
    await ctx.plugin(plugin, { tag: 'c' })
    await first.dispose()
    await expect.poll(() => started).toEqual(['a', 'stop a', 'b'])
    expect(pluginRows(ctx)[0]!.rows).toEqual([
      { label: 'memory-handover#2', active: true },
      { label: 'memory-handover#3', active: false },
    ])
  })

  it('keeps its turn when the running row only restarts (a config reload)', async () => {
    const { ctx, started, first } = await rowsAandB('memory-reload')
    await first.update({ tag: 'a2' })
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(started).toEqual(['a', 'stop a', 'a2'])
    expect(pluginRows(ctx)[0]!.rows.map((row) => row.active)).toEqual([true, false])
  })

  it('works for a Service-class plugin whose idle rows return before super()', async () => {
    class ExampleService extends Service {
      static readonly pluginName = 'memory-service-example'
      readonly tag!: string
      constructor(ctx: Context, config: { tag: string }) {
        if (!claimPluginRow(ctx, ExampleService.pluginName)) return Object.create(null)
        super(ctx, 'exampleService')
        this.tag = config.tag
      }
    }
    const ctx = new Context()
    onCleanup(() => ctx.fiber.dispose())
    const first = await ctx.plugin(ExampleService, { tag: 'a' })
    // Without the claim, a second row would fail: 'service "exampleService" has been registered'.
    await ctx.plugin(ExampleService, { tag: 'b' })
    expect((ctx.get('exampleService') as ExampleService).tag).toBe('a')
    await first.dispose()
    await expect.poll(() => (ctx.get('exampleService') as ExampleService | undefined)?.tag).toBe('b')
  })

  it('exposes layers and leases and keeps a fence on transactions through the service', async () => {
    const ctx = new Context()
    onCleanup(() => ctx.fiber.dispose())
    await ctx.plugin(MemoryStoreService, { dataDir: tempDir() })
    const service = ctx.memoryStore
    await service.memories.add({ kind: 'fact', text: 'Global fact through the service', scope: 'global' })
    expect((await service.layers.revision({ scope: 'global' })).key).toBe(`global:${service.user}`)
    const stale = await service.leases.acquire('memory-test', 'holder-a', 1)
    expect(stale).toBeDefined()
    await new Promise((resolve) => setTimeout(resolve, 10))
    const fresh = await service.leases.acquire('memory-test', 'holder-b', 60_000)
    expect(fresh!.token).toBeGreaterThan(stale!.token)
    const error = await rejectionOf(async () => await service.transaction(async () => 'written', { fence: { name: 'memory-test', token: stale!.token } }))
    expect(isMemoryStoreError(error, 'fenced')).toBe(true)
    expect(await service.transaction(async () => 'written', { fence: { name: 'memory-test', token: fresh!.token } })).toBe('written')
  })
})
