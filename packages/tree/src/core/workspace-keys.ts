import type { WorkspaceKeyColumn } from '@dsh-memory/store'

/**
 * The tree's workspace columns (a workspace's project binding, its chit-chat partition),
 * re-keyed by the store service when a path becomes a git workspace id. A binding whose git id
 * is bound already (another clone bound it first) keeps the path.
 */
export const TREE_WORKSPACE_KEYS: readonly WorkspaceKeyColumn[] = Object.freeze([
  { table: 'tree_bindings', column: 'workspace', unique: [] },
  { table: 'tree_chat', column: 'workspace' },
])
