import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, inject, it } from 'vitest'
import { openMemoryTree } from '../src/core/open.js'
import { resolveMcpSettings } from '../src/core/mcp-settings.js'
import { runTreeTool, TREE_TOOL_NAMES } from '../src/core/tools.js'
import { openTestTree, tempDirEachTest } from './helpers.js'
import { callTool, connect, requireServerBuild, SERVER } from './mcp-client.js'

describe('dsh-memory-tree-mcp over stdio with the MCP SDK client', () => {
  const temp = tempDirEachTest('tree-mcp')
  const workspace = '/work/search-engine'
  requireServerBuild()

  it('serves every tool and runs branch → merge → checkpoint on the shared database', async () => {
    const server = await connect({ env: { MEMORY_TREE_ROOT: temp.dir }, args: ['--workspace', workspace] })
    try {
      const { tools } = await server.client.listTools()
      expect(tools.map((tool) => tool.name).sort()).toEqual([...TREE_TOOL_NAMES].sort())
      expect(tools.find((tool) => tool.name === 'mt_merge')?.inputSchema).toMatchObject({ type: 'object', properties: { branchId: { type: 'string' } } })

      const branch = await callTool(server.client, 'mt_branch', { title: '索引结构调研', note: 'BM25 vs learned sparse' })
      expect(branch.isError).toBe(false)
      const branchId = branch.structuredContent!.data!.branchId as string
      expect(branchId).toMatch(/^br-/)

      const merged = await callTool(server.client, 'mt_merge', {
        branchId,
        summary: '決定:検索は BM25 と CJK バイグラムで行う\nConstraint: the index must rebuild in under a minute\nQuestion: do we need vectors at all?',
      })
      expect(merged.isError).toBe(false)
      expect(merged.content[0]!.text).toContain('Merged branch')
      expect((merged.structuredContent!.data!.added as unknown[]).length).toBe(3)

      const checkpoint = await callTool(server.client, 'mt_checkpoint', { title: '阶段1复盘', review: 'Index design settled.' })
      expect(checkpoint.isError).toBe(false)
      const data = checkpoint.structuredContent!.data!
      expect(data.document).toContain('検索は BM25 と CJK バイグラムで行う')
      expect(data.document).toContain(`\`${branchId}\` "索引结构调研" — merged`)
      expect(data.clearedBranches).toBe(1)
      expect(existsSync(data.path as string)).toBe(true)
      expect(readFileSync(data.path as string, 'utf8')).toBe(data.document)

      // Errors are tool results with a code, not protocol failures.
      const again = await callTool(server.client, 'mt_merge', { branchId, summary: 'Decision: again' })
      expect(again.isError).toBe(true)
      expect(again.content[0]!.text).toMatch(/conflict/)
      const bad = await callTool(server.client, 'mt_checkpoint', {})
      expect(bad.isError).toBe(true)
      expect(bad.content[0]!.text).toMatch(/title/)
    } finally {
      await server.close()
    }

    // The same data, read through the library: the plugin would inject this.
    const reader = await openTestTree(temp.dir)
    try {
      const context = await reader.tree.getContext({ workspace })
      expect(context.text).toContain('Baseline: checkpoint "阶段1复盘"')
      expect(context.text).toContain('the index must rebuild in under a minute')
      expect(context.text).not.toContain('BM25 vs learned sparse')
    } finally {
      await reader.close()
    }
  })

  it('uses the launch directory as the workspace and answers --help and --version', async () => {
    const server = await connect({ env: { DSH_MEMORY_DIR: temp.dir }, cwd: temp.dir })
    try {
      const status = await callTool(server.client, 'mt_set_project', { name: 'launch-dir' })
      expect(status.isError).toBe(false)
    } finally {
      await server.close()
    }
    const reader = await openTestTree(temp.dir)
    try {
      expect((await reader.tree.resolveProject({ workspace: temp.dir }, { create: false }))?.name).toBe('launch-dir')
    } finally {
      await reader.close()
    }
    const { execFileSync } = await import('node:child_process')
    expect(execFileSync(process.execPath, [SERVER, '--help'], { encoding: 'utf8' })).toContain('--data-dir DIR')
    expect(execFileSync(process.execPath, [SERVER, '--version'], { encoding: 'utf8' }).trim()).toMatch(/^\d+\.\d+\.\d+/)
  })

  it('--database-url keeps the tree on PostgreSQL (in the --schema given): what the server writes, the library reads there; the password is never printed', async () => {
    // The run's throwaway cluster, in a schema of its own (as a second team would use it).
    const url = inject('pgUrl')
    const server = await connect({ args: ['--database-url', url, '--schema', 'tree_mcp', '--workspace', workspace, '--projection-dir', join(temp.dir, 'tree')] })
    try {
      const noted = await callTool(server.client, 'mt_note', { kind: 'decision', text: '数据库选 PostgreSQL、チーム全員で共有する' })
      expect(noted.isError).toBe(false)
    } finally {
      await server.close()
    }
    expect(server.stderr()).not.toContain(decodeURIComponent(new URL(url).password))
    expect(server.stderr()).toContain('schema tree_mcp')
    expect(existsSync(join(temp.dir, 'memory.db'))).toBe(false)
    for (const [schema, found] of [['tree_mcp', true], ['tree_mcp_other', false]] as const) {
      const reader = await openMemoryTree({ databaseUrl: url, schema, projectionDir: null })
      try {
        expect((await reader.tree.getContext({ workspace })).text.includes('数据库选 PostgreSQL、チーム全員で共有する')).toBe(found)
      } finally {
        await reader.close()
      }
    }
  })
})

/** A git clone (its `.git/config` names a remote; `workspaceOf` reads files, runs no git): its workspace id is the project's. */
function gitClone(root: string): { dir: string; id: string } {
  const dir = join(root, 'shop')
  mkdirSync(join(dir, '.git'), { recursive: true })
  writeFileSync(join(dir, '.git', 'config'), '[core]\n\tbare = false\n[remote "origin"]\n\turl = git@github.com:acme/shop.git\n')
  return { dir, id: 'git:github.com/acme/shop' }
}

describe('dsh-memory-tree-mcp runs the workspace carry-over the host runs at store start', () => {
  const temp = tempDirEachTest('tree-mcp-carry')
  requireServerBuild()

  const where = {
    sqlite: () => ({ open: { dataDir: temp.dir }, args: ['--data-dir', temp.dir] }),
    postgres: () => {
      const schema = `tree_carry_${process.pid}_${randomBytes(3).toString('hex')}`
      return { open: { databaseUrl: inject('pgUrl'), schema }, args: ['--database-url', inject('pgUrl'), '--schema', schema] }
    },
  }

  it.each(['sqlite', 'postgres'] as const)('on %s: rows an older host keyed by the clone\'s path move to its git id; the server and the library find them there', async (backend) => {
    const clone = gitClone(temp.dir)
    const { open, args } = where[backend]()
    // What an older host (or tool) wrote under the path: a binding, a chat message, a memory.
    const before = await openMemoryTree({ ...open, projectionDir: null })
    const legacy = { workspace: clone.dir, sessionId: 'old-session', source: 'mcp' as const }
    try {
      expect((await runTreeTool(before.tree, 'mt_set_project', { name: 'shop-legacy' }, legacy)).ok).toBe(true)
      expect((await runTreeTool(before.tree, 'mt_chat', { message: '午饭吃拉面' }, legacy)).ok).toBe(true)
      await before.store!.memories.add({ kind: 'fact', text: 'The shop deploys with Kamal.', scope: 'workspace', workspace: clone.dir })
    } finally {
      await before.close()
    }

    const server = await connect({ args: [...args, '--workspace', clone.dir, '--projection-dir', join(temp.dir, 'tree')] })
    try {
      const status = await callTool(server.client, 'mt_status', {})
      expect(status.isError).toBe(false)
      // The server's caller is the git id, and the binding made under the path moved to it.
      expect(status.content[0]!.text).toContain('Project "shop-legacy"')
      expect(status.structuredContent!.data!.workspaces).toEqual([clone.id])
    } finally {
      await server.close()
    }
    expect(server.stderr()).toMatch(/carried \d+ store row\(s\) over to workspace git:github.com\/acme\/shop/)
    expect(server.stderr()).toMatch(/carried \d+ tree row\(s\) over to workspace git:github.com\/acme\/shop/)

    const after = await openMemoryTree({ ...open, projectionDir: null })
    try {
      expect((await after.tree.resolveProject({ workspace: clone.id }, { create: false }))?.name).toBe('shop-legacy')
      expect((await after.tree.resolveProject({ workspace: clone.dir }, { create: false }))?.name).toBeUndefined()
      expect((await after.store!.memories.list({ workspace: clone.id, includeGlobal: false })).map((memory) => memory.text)).toEqual(['The shop deploys with Kamal.'])
      expect(await after.store!.memories.list({ workspace: clone.dir, includeGlobal: false })).toEqual([])
    } finally {
      await after.close()
    }
  })

  it('with --workspace-identity path keys the caller by the path and moves nothing', async () => {
    const clone = gitClone(temp.dir)
    const before = await openMemoryTree({ dataDir: temp.dir, projectionDir: null })
    try {
      await runTreeTool(before.tree, 'mt_set_project', { name: 'by-path' }, { workspace: clone.dir, sessionId: 'old-session', source: 'mcp' })
    } finally {
      await before.close()
    }
    const server = await connect({ args: ['--data-dir', temp.dir, '--workspace', clone.dir, '--workspace-identity', 'path', '--no-projection'] })
    try {
      const status = await callTool(server.client, 'mt_status', {})
      expect(status.structuredContent!.data!.workspaces).toEqual([clone.dir])
    } finally {
      await server.close()
    }
    expect(server.stderr()).not.toContain('carried')
  })
})

describe('MCP settings', () => {
  it('resolves the data directory: flag, MEMORY_TREE_ROOT, DSH_MEMORY_DIR, $DSH_HOME/memory', () => {
    const env = { MEMORY_TREE_ROOT: '/data/tree', DSH_MEMORY_DIR: '/data/dsh', DSH_HOME: '/home/u/.dsh' }
    expect(resolveMcpSettings(['--data-dir', '/flag'], env, '/cwd')).toEqual({ dataDir: '/flag', workspace: '/cwd', workspaceIdentity: 'git-remote', projectionDir: '/flag/tree' })
    expect(resolveMcpSettings([], env, '/cwd')).toMatchObject({ dataDir: '/data/tree' })
    expect(resolveMcpSettings([], { DSH_MEMORY_DIR: '/data/dsh', DSH_HOME: '/h' }, '/cwd')).toMatchObject({ dataDir: '/data/dsh' })
    expect(resolveMcpSettings(['--no-projection', '--workspace', 'sub'], { DSH_HOME: '/h' }, '/cwd')).toEqual({ dataDir: '/h/memory', workspace: '/cwd/sub', workspaceIdentity: 'git-remote', projectionDir: null })
    expect(resolveMcpSettings(['--workspace-identity', 'path'], { DSH_HOME: '/h' }, '/cwd')).toMatchObject({ workspaceIdentity: 'path' })
    expect(() => resolveMcpSettings(['--workspace-identity', 'remote'], {}, '/')).toThrow('--workspace-identity must be one of git-remote, path, got "remote"')
    expect(resolveMcpSettings(['--help'], {}, '/')).toBe('help')
    expect(() => resolveMcpSettings(['--nope'], {}, '/')).toThrow(/nope/)
    expect(resolveMcpSettings(['--projection-dir', '/p'], { DSH_HOME: '/h' }, '/')).toMatchObject({ dataDir: '/h/memory', projectionDir: '/p' })
  })

  it('resolves the PostgreSQL database as the CLI does: --database-url, else DSH_MEMORY_DATABASE_URL unless --data-dir', () => {
    const team = 'postgres://tree:s3cret@db.internal:5432/team'
    expect(resolveMcpSettings(['--database-url', team], { DSH_HOME: '/h' }, '/cwd')).toEqual({ dataDir: '/h/memory', workspace: '/cwd', workspaceIdentity: 'git-remote', projectionDir: '/h/memory/tree', databaseUrl: team })
    expect(resolveMcpSettings([], { DSH_MEMORY_DATABASE_URL: ` ${team} `, DSH_HOME: '/h' }, '/')).toMatchObject({ databaseUrl: team })
    expect(resolveMcpSettings(['--data-dir', '/d'], { DSH_MEMORY_DATABASE_URL: team }, '/')).not.toHaveProperty('databaseUrl')
    expect(() => resolveMcpSettings(['--database-url', team, '--data-dir', '/d'], {}, '/')).toThrow(/--database-url and --data-dir/)
    // --schema: the store row's rule, and only with a database.
    expect(resolveMcpSettings(['--database-url', team, '--schema', 'team_b'], { DSH_HOME: '/h' }, '/')).toMatchObject({ databaseUrl: team, schema: 'team_b' })
    expect(() => resolveMcpSettings(['--database-url', team, '--schema', 'Team B'], {}, '/')).toThrow('--schema must match /^[a-z_][a-z0-9_]{0,62}$/ (lower-case letters, digits, _), got "Team B"')
    expect(() => resolveMcpSettings(['--schema', 'team_b'], { DSH_HOME: '/h' }, '/')).toThrow('--schema applies to a PostgreSQL database only (--database-url or $DSH_MEMORY_DATABASE_URL)')
    // A bad URL names where it came from, and never echoes the password.
    for (const [argv, env, source] of [
      [['--database-url', 'mysql://tree:s3cret@db/team'], {}, '--database-url'],
      [[], { DSH_MEMORY_DATABASE_URL: 'postgres://tree:s3cret@db' }, 'DSH_MEMORY_DATABASE_URL'],
      [['--database-url', 'tree:s3cret@db/team'], {}, '--database-url'],
    ] as const) {
      let message = ''
      try {
        resolveMcpSettings([...argv], env, '/')
      } catch (error) {
        message = (error as Error).message
      }
      expect(message).toMatch(new RegExp(`^${source} expects a URL such as postgres://`))
      expect(message).not.toContain('s3cret')
    }
  })
})
