/**
 * Carry-over from path workspaces to git ids, on both backends: a store written by a version
 * that keyed workspaces by absolute path (store rows and a package's table), then opened by the
 * DSH store row with `workspaceIdentity: git-remote` (the default). Nothing is lost: every row
 * is found under the project's id, once, with an audit entry per path.
 */
import { execFileSync } from 'node:child_process'
import { realpathSync } from 'node:fs'
import { join } from 'node:path'
import { Context } from '@deepseek-ai/cordis'
import { describe, expect, it } from 'vitest'
import type { MigrationSet, PackageTablesDeclaration, WorkspaceKeyColumn } from '../src/index.ts'
import { MemoryStoreService } from '../src/plugin.ts'
import { backends, type Backend, type StoreLocation } from './contract/backends.ts'
import { onCleanup, tempDir } from './helpers.ts'

/** A clone of a bare repository: its remote normalizes to `git:<bare path without .git>`. */
function clone(): { dir: string; id: string } {
  const root = realpathSync(tempDir())
  const env = { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' }
  execFileSync('git', ['init', '-q', '--bare', 'shop-api.git'], { cwd: root, env })
  execFileSync('git', ['clone', '-q', join(root, 'shop-api.git'), 'checkout'], { cwd: root, env, stdio: 'ignore' })
  return { dir: join(root, 'checkout'), id: `git:${join(root, 'shop-api')}` }
}

// One statement valid on both dialects: a package table keyed by workspace (like tree_bindings).
const BINDINGS: MigrationSet = { owner: 'wsdemo', migrations: [{ version: 1, name: 'init', sql: 'CREATE TABLE wsdemo_bindings (workspace TEXT PRIMARY KEY, project TEXT NOT NULL);' }] }
const BINDING_KEYS: readonly WorkspaceKeyColumn[] = [{ table: 'wsdemo_bindings', column: 'workspace', unique: [] }]
const DECLARATION: PackageTablesDeclaration = { migrations: BINDINGS, postgres: { migrations: BINDINGS, schema: {} }, workspaceKeys: BINDING_KEYS }

async function startRow(backend: Backend, dataDir: string, location: StoreLocation, workspaceIdentity?: 'path'): Promise<{ ctx: Context; service: MemoryStoreService }> {
  const ctx = new Context()
  onCleanup(() => ctx.fiber.dispose())
  const database = 'databaseUrl' in location ? { databaseUrl: location.databaseUrl, schema: location.schema } : {}
  await ctx.plugin(MemoryStoreService, { dataDir, ...database, ...(workspaceIdentity ? { workspaceIdentity } : {}) })
  expect(ctx.memoryStore.backend).toBe(backend.name === 'sqlite' ? 'sqlite' : 'postgresql')
  return { ctx, service: ctx.memoryStore }
}

async function bindings(backend: Backend, service: MemoryStoreService): Promise<string[]> {
  const tables = await service.tables(DECLARATION)
  const rows = await tables.read(async (db) => {
    const query = 'SELECT workspace, project FROM wsdemo_bindings ORDER BY workspace'
    if (backend.name === 'sqlite') return db.all<{ workspace: string; project: string }>(query)
    return (await (db as unknown as { execute(q: string): Promise<{ rows: { workspace: string; project: string }[] }> }).execute(query)).rows
  })
  return rows.map((row) => `${row.workspace}=${row.project}`)
}

describe.each(backends)('workspace carry-over ($name)', (backend) => {
  it('re-keys rows of a path that is now a git project, once and audited; other paths and taken keys stay', { timeout: 60_000 }, async () => {
    const { dir, id } = clone()
    const elsewhere = '/home/someone-else/shop-api'
    const dataDir = tempDir()
    const location: StoreLocation = backend.name === 'sqlite' ? { path: join(dataDir, 'memory.db') } : backend.fresh()

    // What an older version wrote: everything keyed by the checkout's absolute path.
    const old = await backend.openAt(location)
    await old.conversations.ensure({ id: 'session-1', workspace: dir, title: '支付服务' })
    const memory = await old.memories.add({ kind: 'decision', text: '決済は PostgreSQL に置く', scope: 'workspace', workspace: dir })
    const theirs = await old.memories.add({ kind: 'fact', text: 'another machine’s checkout', scope: 'workspace', workspace: elsewhere })
    await old.scenes.add({ title: '迁移', summary: 'moving payments', scope: 'workspace', workspace: dir, memoryIds: [memory.id] })
    await old.persona.put({ scope: 'workspace', workspace: dir, text: 'the team writes TypeScript' })
    const oldTables = await old.tables({ ...DECLARATION, workspaceKeys: undefined })
    await oldTables.write(async (db) => {
      const insert = (workspace: string, project: string) => `INSERT INTO wsdemo_bindings (workspace, project) VALUES ('${workspace}', '${project}')`
      for (const statement of [insert(dir, 'p-path'), insert(elsewhere, 'p-else')]) {
        if (backend.name === 'sqlite') db.run(statement)
        else await (db as unknown as { execute(q: string): Promise<unknown> }).execute(statement)
      }
    })
    const pathRevision = (await old.layers.revision({ scope: 'workspace', workspace: dir })).revision
    expect(pathRevision).toBeGreaterThan(0)
    await old.close()

    const { ctx, service } = await startRow(backend, dataDir, location)
    expect(service.workspaceOf(dir)).toBe(id)
    expect((await service.conversations.get('session-1'))?.workspace).toBe(id)
    expect((await service.memories.list({ scope: 'workspace', workspace: id })).map((row) => row.id)).toEqual([memory.id])
    expect(await service.memories.list({ scope: 'workspace', workspace: dir })).toEqual([])
    expect((await service.memories.get(theirs.id))?.workspace).toBe(elsewhere)
    expect((await service.scenes.list({ scope: 'workspace', workspace: id })).map((scene) => scene.title)).toEqual(['迁移'])
    expect((await service.persona.get({ scope: 'workspace', workspace: id }))?.text).toBe('the team writes TypeScript')
    expect((await service.layers.revision({ scope: 'workspace', workspace: id })).revision).toBe(pathRevision)
    expect(await service.search.memories('PostgreSQL', { scope: 'workspace', workspace: id })).toHaveLength(1)
    expect(await bindings(backend, service)).toEqual([`${elsewhere}=p-else`, `${id}=p-path`])
    const moves = await service.audit.list({ op: 'workspace-carry-over.workspace.move' as never })
    expect(moves).toHaveLength(1)
    expect(moves[0]!.entityId.startsWith(`${id.split('/')[0]}`)).toBe(true)
    expect(moves[0]!.entityId).not.toContain(dir)
    expect(await service.audit.list({ op: 'wsdemo.workspace.move' as never })).toHaveLength(1)
    await ctx.fiber.dispose()

    // Idempotent: the next start finds nothing left under the path.
    const again = await startRow(backend, dataDir, location)
    await bindings(backend, again.service)
    expect(await again.service.audit.list({ op: 'workspace-carry-over.workspace.move' as never })).toHaveLength(1)
    expect(await again.service.audit.list({ op: 'wsdemo.workspace.move' as never })).toHaveLength(1)
  })

  it('keeps a row whose key the git id already holds (another clone came first), and moves nothing with identity path', { timeout: 60_000 }, async () => {
    const { dir, id } = clone()
    const dataDir = tempDir()
    const location: StoreLocation = backend.name === 'sqlite' ? { path: join(dataDir, 'memory.db') } : backend.fresh()
    const old = await backend.openAt(location)
    await old.persona.put({ scope: 'workspace', workspace: dir, text: 'from this checkout' })
    await old.persona.put({ scope: 'workspace', workspace: id, text: 'from the team' })
    await old.memories.add({ kind: 'fact', text: 'kept by path identity', scope: 'workspace', workspace: dir })
    await old.close()

    const byPath = await startRow(backend, dataDir, location, 'path')
    expect(byPath.service.workspaceOf(dir)).toBe(dir)
    expect(await byPath.service.memories.list({ scope: 'workspace', workspace: dir })).toHaveLength(1)
    await byPath.ctx.fiber.dispose()

    const { service } = await startRow(backend, dataDir, location)
    expect((await service.persona.get({ scope: 'workspace', workspace: id }))?.text).toBe('from the team')
    expect((await service.persona.get({ scope: 'workspace', workspace: dir }))?.text).toBe('from this checkout')
    expect((await service.memories.list({ scope: 'workspace', workspace: id })).map((row) => row.text)).toEqual(['kept by path identity'])
  })
})
