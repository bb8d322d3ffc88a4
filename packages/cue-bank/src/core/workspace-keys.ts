import type { WorkspaceKeyColumn } from '@dsh-memory/store'

/**
 * The cue bank's columns keyed by a workspace (partition `workspace:<id>`), re-keyed by the
 * store service when a path becomes a git workspace id. The unique keys of the tables include
 * the session (and turn, word): a row whose new key is taken stays in the path's partition.
 */
export const CUE_BANK_WORKSPACE_KEYS: readonly WorkspaceKeyColumn[] = Object.freeze([
  { table: 'cue_bank_topics', column: 'partition', prefix: 'workspace:', unique: ['session_id'] },
  { table: 'cue_bank_idioms', column: 'partition', prefix: 'workspace:', unique: ['word'] },
  { table: 'cue_bank_user_turns', column: 'partition', prefix: 'workspace:', unique: ['session_id', 'turn'] },
])
