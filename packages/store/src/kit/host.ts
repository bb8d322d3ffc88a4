/**
 * The parts of host objects every plugin reads, declared structurally: the host packages own
 * the real types, and a pure core must not import them.
 */

/** The part of a host session the plugins read: its id and the workspace (`header.cwd`). */
export interface SessionLike {
  readonly id: string
  readonly header?: { readonly cwd?: string }
}

/** The part of a host session event the plugins read. */
export interface SessionEventLike {
  readonly type: string
  readonly seq?: number
  readonly data?: unknown
}
