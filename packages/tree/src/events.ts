import type { TreeChange } from './core/tree-contract.js'
import type { SessionEventLike, SessionLike } from '@dsh-memory/store/kit'

/** The parts of a host session and its events the adapter reads. */
export type { SessionEventLike, SessionLike }

/** Payload of each `memory-tree/<type>` event: the committed change. */
export type TreeEventPayload<T extends TreeChange['type']> = Extract<TreeChange, { type: T }>

declare module '@deepseek-ai/cordis' {
  interface Events {
    /** The host's session firehose (declared structurally; dsh-session owns it). */
    'session/event'(session: SessionLike, event: SessionEventLike): void
    /** The host's awaited durability checkpoint for a session (dsh-session owns it). */
    'session/flush'(session: SessionLike): Promise<void> | void
    /** An agent left the host's registry (dsh-agent owns it). */
    'agent/disposed'(agent: { readonly id: string }): void
    /** A message was routed (chat partition, mainline, branch, or skipped). */
    'memory-tree/routed'(change: TreeEventPayload<'routed'>): void
    /** Items were appended to a mainline (auto-extracted or noted). */
    'memory-tree/items-added'(change: TreeEventPayload<'items-added'>): void
    /** A mainline item changed status. */
    'memory-tree/item-updated'(change: TreeEventPayload<'item-updated'>): void
    /** A workspace was bound to a project (or a project was created). */
    'memory-tree/project-set'(change: TreeEventPayload<'project-set'>): void
    /** A branch was opened. */
    'memory-tree/branched'(change: TreeEventPayload<'branched'>): void
    /** A branch was merged (or abandoned) into its mainline. */
    'memory-tree/merged'(change: TreeEventPayload<'merged'>): void
    /** A checkpoint froze a mainline into a new baseline. */
    'memory-tree/checkpointed'(change: TreeEventPayload<'checkpointed'>): void
  }
}

/** Event names this plugin emits, each only after its write committed. */
export const TREE_EVENTS = Object.freeze({
  routed: 'memory-tree/routed',
  itemsAdded: 'memory-tree/items-added',
  itemUpdated: 'memory-tree/item-updated',
  projectSet: 'memory-tree/project-set',
  branched: 'memory-tree/branched',
  merged: 'memory-tree/merged',
  checkpointed: 'memory-tree/checkpointed',
} as const)

/** The Cordis event name of a core change. */
export function eventName(change: TreeChange): `memory-tree/${TreeChange['type']}` {
  return `memory-tree/${change.type}`
}
