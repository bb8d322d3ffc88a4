import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { resolveDataDir } from '@dsh-memory/store'
import { TREE_TOOLS } from './tools.js'

/** Usage text of the `dsh-memory-tree-mcp` binary. */
export const MCP_USAGE = `Usage: dsh-memory-tree-mcp [options]

The memory tree (mainline state, branches, merge, checkpoints, chit-chat isolation) as an MCP
stdio server. Tools: ${TREE_TOOLS.map((tool) => tool.name).join(', ')}.

Options:
  --data-dir DIR        directory of memory.db (default: $MEMORY_TREE_ROOT, $DSH_MEMORY_DIR,
                        $DSH_HOME/memory, ~/.dsh/memory)
  --workspace DIR       the workspace whose project the tools use (default: the current directory)
  --projection-dir DIR  where the markdown projection goes (default: <data-dir>/tree)
  --no-projection       do not write the markdown projection
  -h, --help            show this help
  -v, --version         show the version`

/** Resolved server settings (exported for tests and embedding). */
export interface McpServerSettings {
  dataDir: string
  workspace: string
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
      workspace: { type: 'string' },
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
  return { dataDir, workspace: resolve(cwd, values.workspace ?? '.'), projectionDir }
}

