#!/usr/bin/env node
/**
 * `dsh-memory-tree-mcp`: the memory tree as an MCP stdio server, over the same core and the
 * same database as the DSH plugin, so other agents (Claude Code, Codex, DSH's own MCP
 * manager) share one tree. stdout carries the protocol; logs go to stderr.
 *
 * Data location, first match wins: `--data-dir DIR`, `MEMORY_TREE_ROOT`, `DSH_MEMORY_DIR`,
 * `$DSH_HOME/memory`, `~/.dsh/memory`. The database is `<dir>/memory.db`, or the PostgreSQL
 * database of `--database-url` / `DSH_MEMORY_DATABASE_URL` (as for the CLI); the markdown
 * projection goes to `<dir>/tree` unless `--projection-dir` (or `--no-projection`) says
 * otherwise. The workspace (which project a call belongs to) is `--workspace DIR`, else the
 * directory the client started the server in, keyed as the hosts key it (`--workspace-identity`,
 * default `git-remote`); with `git-remote` the server runs the hosts' workspace carry-over at start.
 *
 * @module @dsh-memory/tree/mcp
 */
import { createRequire } from 'node:module'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { WorkspaceCarryOver, workspaceOf } from '@dsh-memory/store'
import { describeError } from './core/errors.js'
import { openMemoryTree } from './core/open.js'
import { describeDatabaseUrl, MCP_USAGE as USAGE, resolveMcpSettings as resolveSettings } from './core/mcp-settings.js'
import { runTreeTool, TREE_HELP, TREE_TOOLS } from './core/tools.js'
import type { Caller } from './core/tree-contract.js'

function version(): string {
  try {
    return (createRequire(import.meta.url)('../package.json') as { version: string }).version
  } catch {
    return '0.0.0'
  }
}

async function main(): Promise<void> {
  let settings: ReturnType<typeof resolveSettings>
  try {
    settings = resolveSettings(process.argv.slice(2), process.env, process.cwd())
  } catch (error) {
    process.stderr.write(`dsh-memory-tree-mcp: ${describeError(error)}\n\n${USAGE}\n`)
    process.exit(2)
  }
  if (settings === 'help') {
    process.stdout.write(`${USAGE}\n`)
    return
  }
  if (settings === 'version') {
    process.stdout.write(`${version()}\n`)
    return
  }

  const log = (message: string) => process.stderr.write(`[memory-tree] ${message}\n`)
  const identity = settings.workspaceIdentity
  // What the host's store service runs at start: rows keyed by a directory that is now a git
  // project move to its id, so this server and the hosts find the same bindings and chat.
  const carryOver =
    identity === 'git-remote'
      ? new WorkspaceCarryOver((path) => workspaceOf(path, { identity }), {
          moved: (owner, move) => log(`carried ${move.rows} ${owner} row(s) over to workspace ${move.to}`),
          failed: (owner, error) => log(`cannot carry ${owner} rows over to git workspace ids (kept under their paths, retried at the next start): ${describeError(error)}`),
        })
      : undefined
  const opened = await openMemoryTree({
    ...(settings.databaseUrl === undefined ? { dataDir: settings.dataDir } : { databaseUrl: settings.databaseUrl, ...(settings.schema ? { schema: settings.schema } : {}) }),
    projectionDir: settings.projectionDir,
    ...(carryOver ? { carryOver } : {}),
    onError: (error, where) => log(`${where} failed: ${describeError(error)}`),
  })
  // One id per server process: what this client writes is tagged with it.
  // The directory's workspace id, as the hosts key it (its git project, or the path).
  const caller: Caller = { workspace: workspaceOf(settings.workspace, { identity }), sessionId: `mcp-${process.pid}`, source: 'mcp' }

  const server = new McpServer(
    { name: 'dsh-memory-tree', version: version() },
    { instructions: TREE_HELP, capabilities: { tools: {} } },
  )
  for (const spec of TREE_TOOLS) {
    server.registerTool(spec.name, { description: spec.description, inputSchema: spec.input }, async (args: unknown) => {
      const result = await runTreeTool(opened.tree, spec.name, args, caller)
      return { content: [{ type: 'text' as const, text: result.text }], structuredContent: result as unknown as Record<string, unknown>, isError: !result.ok }
    })
  }

  let stopping = false
  const stop = async (code: number) => {
    if (stopping) return
    stopping = true
    try {
      await server.close()
    } catch (error) {
      log(`closing the transport failed: ${describeError(error)}`)
    }
    await opened.close()
    process.exit(code)
  }
  process.on('SIGINT', () => void stop(0))
  process.on('SIGTERM', () => void stop(0))
  process.stdin.on('end', () => void stop(0))
  process.on('unhandledRejection', (error) => log(`unhandled: ${describeError(error)}`))

  await server.connect(new StdioServerTransport())
  log(`serving ${settings.databaseUrl === undefined ? settings.dataDir : `${describeDatabaseUrl(settings.databaseUrl)}${settings.schema ? ` schema ${settings.schema}` : ''}`} (workspace ${caller.workspace})`)
}

main().catch((error: unknown) => {
  process.stderr.write(`dsh-memory-tree-mcp: ${describeError(error)}\n`)
  process.exit(1)
})
