import type { WorkspaceKeyColumn } from '@dsh-memory/store'

/** The distiller's per-layer counters (`workspace:<id>`), re-keyed by the store service when a path becomes a git workspace id. */
export const DISTILL_WORKSPACE_KEYS: readonly WorkspaceKeyColumn[] = Object.freeze([{ table: 'distill_layers', column: 'scope_key', prefix: 'workspace:', unique: [] }])
