import type { WorkspaceKeyColumn } from '@dsh-memory/store'

/** Recall's layer keys (`workspace:<id>`), re-keyed by the store service when a path becomes a git workspace id. */
export const RECALL_WORKSPACE_KEYS: readonly WorkspaceKeyColumn[] = Object.freeze([
  { table: 'recall_layer_schedules', column: 'layer_key', prefix: 'workspace:', unique: [] },
  { table: 'recall_injections', column: 'layer_key', prefix: 'workspace:' },
])
