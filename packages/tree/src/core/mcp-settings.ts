import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { checkPostgresSchema, resolveDataDir, WORKSPACE_IDENTITIES, type WorkspaceIdentity } from '@dsh-memory/store'
import { TREE_TOOLS } from './tools.js'

/** Usage text of the `dsh-memory-tree-mcp` binary. */
export const MCP_USAGE = `Usage: dsh-memory-tree-mcp [options]

The memory tree (mainline state, branches, merge, checkpoints, chit-chat isolation) as an MCP
stdio server. Tools: ${TREE_TOOLS.map((tool) => tool.name).join(', ')}.

Options:
  --data-dir DIR        directory of memory.db (default: $MEMORY_TREE_ROOT, $DSH_MEMORY_DIR,
                        $DSH_HOME/memory, ~/.dsh/memory)
  --database-url URL    use this PostgreSQL database (postgres://user@host:5432/db) instead of
                        memory.db (default: $DSH_MEMORY_DATABASE_URL unless --data-dir is given);
                        put the password in ~/.pgpass, not in the URL
  --schema NAME         with --database-url: the PostgreSQL schema of the store's tables, as the
                        store row's schema (default: dsh_memory)
  --workspace DIR       the workspace whose project the tools use (default: the current directory)
  --workspace-identity git-remote|path
                        how a directory becomes its workspace id, as the store row's
                        workspaceIdentity (default: git-remote: a git clone with a remote is its
                        project, and rows keyed by its path move to that id at start)
  --projection-dir DIR  where the markdown projection goes (default: <data-dir>/tree)
  --no-projection       do not write the markdown projection
  -h, --help            show this help
  -v, --version         show the version`

/** The environment variable naming the PostgreSQL database when `--database-url` is absent (as for the CLI). */
export const DATABASE_URL_ENV = 'DSH_MEMORY_DATABASE_URL'

/** Resolved server settings (exported for tests and embedding). */
export interface McpServerSettings {
  /** Where the projection goes by default; the database too unless `databaseUrl` is set. */
  dataDir: string
  /** The PostgreSQL database holding the store, when one was named. */
  databaseUrl?: string
  /** Its schema (`--schema`); the store's default when absent. */
  schema?: string
  workspace: string
  /** How a directory becomes its workspace id (the store row's `workspaceIdentity`). */
  workspaceIdentity: WorkspaceIdentity
  projectionDir: string | null
}

/**
 * Resolve the server settings from argv and the environment.
 * @throws Error with a usage hint for unknown options.
 */
export function resolveMcpSettings(argv: readonly string[], env: Record<string, string | undefined>, cwd: string): McpServerSettings | 'help' | 'version' {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      'data-dir': { type: 'string' },
      'database-url': { type: 'string' },
      schema: { type: 'string' },
      workspace: { type: 'string' },
      'workspace-identity': { type: 'string' },
      'projection-dir': { type: 'string' },
      'no-projection': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean', short: 'v' },
    },
    strict: true,
  })
  if (values.help) return 'help'
  if (values.version) return 'version'
  const configured = values['data-dir'] ?? env.MEMORY_TREE_ROOT ?? env.DSH_MEMORY_DIR
  const dataDir = resolveDataDir(configured?.trim() ? configured : undefined, env)
  const projectionDir = values['no-projection'] ? null : resolve(values['projection-dir'] ?? join(dataDir, 'tree'))
  const fromEnv = values['data-dir'] === undefined ? env[DATABASE_URL_ENV]?.trim() || undefined : undefined
  if (values['database-url'] !== undefined && values['data-dir'] !== undefined) throw new Error('--database-url and --data-dir name two different stores; give one of them')
  const databaseUrl = values['database-url'] === undefined ? fromEnv && checkDatabaseUrl(fromEnv, DATABASE_URL_ENV) : checkDatabaseUrl(values['database-url'], '--database-url')
  if (values.schema !== undefined && !databaseUrl) throw new Error(`--schema applies to a PostgreSQL database only (--database-url or $${DATABASE_URL_ENV})`)
  const schema = values.schema === undefined ? undefined : checkSchema(values.schema)
  const workspaceIdentity = checkIdentity(values['workspace-identity'] ?? 'git-remote')
  return { dataDir, workspace: resolve(cwd, values.workspace ?? '.'), workspaceIdentity, projectionDir, ...(databaseUrl ? { databaseUrl } : {}), ...(schema ? { schema } : {}) }
}

/** One of the store's workspace identities, naming the flag. @throws Error */
function checkIdentity(value: string): WorkspaceIdentity {
  if (!(WORKSPACE_IDENTITIES as readonly string[]).includes(value)) throw new Error(`--workspace-identity must be one of ${WORKSPACE_IDENTITIES.join(', ')}, got ${JSON.stringify(value)}`)
  return value as WorkspaceIdentity
}

/** The store's own check of a schema name, naming the flag. @throws Error */
function checkSchema(value: string): string {
  try {
    return checkPostgresSchema(value)
  } catch (error) {
    throw new Error(`--schema ${(error as Error).message.replace(/^schema /, '')}`)
  }
}

/**
 * A URL's server and database, never its password: what the server prints about it.
 * @throws Error naming `source` (the flag or the variable) for anything but a postgres:// URL naming a database
 */
function checkDatabaseUrl(value: string, source: string): string {
  let url: URL | undefined
  try {
    url = new URL(value.trim())
  } catch {
    // Not echoed: an unparseable URL may still hold a password.
  }
  const example = 'a URL such as postgres://user@host:5432/database'
  if (!url || !['postgres:', 'postgresql:'].includes(url.protocol)) throw new Error(`${source} expects ${example}${url ? `, got a ${url.protocol} URL` : ''}`)
  if (url.pathname.length <= 1) throw new Error(`${source} expects ${example}; ${describeDatabaseUrl(url.href)} names no database`)
  return value.trim()
}

/** `host:port/database` of a PostgreSQL URL: what logs may show (no user, no password). */
export function describeDatabaseUrl(value: string): string {
  const url = new URL(value)
  return `postgres://${url.host}${url.pathname}`
}

