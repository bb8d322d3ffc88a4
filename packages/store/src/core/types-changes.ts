import type { EntityName } from './types-common.ts'

/** One row of the change log: a committed write of an indexed entity, by any process. */
export interface StoreChange {
  /** Position in the change log: increasing in commit order. */
  readonly seq: number
  readonly entity: EntityName
  readonly entityId: string
  readonly op: 'insert' | 'update' | 'delete'
  /** Epoch ms of the write. */
  readonly at: number
}

/**
 * What a subscriber of {@link ChangeFeed} hears:
 * - `changes`: new change-log rows (this process's writes included), in `seq` order, each once;
 * - `tables`: a package's tables (owner `owner`) were written by some process (PostgreSQL only:
 *   a notification, no log row; a view of those tables reloads);
 * - `resync`: the PostgreSQL listener was down and is back: `tables` notifications may have been
 *   missed meanwhile (views of package tables reload; store changes are caught up from the log
 *   and arrive as `changes`).
 */
export type StoreChangeEvent =
  | { readonly type: 'changes'; readonly changes: readonly StoreChange[] }
  | { readonly type: 'tables'; readonly owner: string }
  | { readonly type: 'resync' }

export type StoreChangeListener = (event: StoreChangeEvent) => void

/**
 * The committed writes of every process on the store's database (`store.changes`). On
 * PostgreSQL a dedicated connection LISTENs on the store's channel, so another machine's
 * commit arrives at once; on both backends the change log is also polled (`changePollMs`,
 * default 2 000 ms) as the fallback after a missed notification. Nothing runs until the first
 * subscriber, and nothing after the last one leaves.
 */
export interface ChangeFeed {
  /**
   * Hear of changes committed from now on (after {@link ready} resolves, nothing committed
   * later is missed). A listener that throws does not stop the others.
   * @returns the unsubscribe function.
   */
  subscribe(listener: StoreChangeListener): () => void
  /** Resolves once subscribed: the feed's position is read and (PostgreSQL) the listener's first connect was tried. */
  ready(): Promise<void>
  /** Read the change log past the position now and deliver what is new (what a poll does). */
  catchUp(): Promise<void>
  /** The `seq` of the last change delivered (0 before any). */
  readonly position: number
  /** True while notifications arrive (PostgreSQL's listener connection is up); false on SQLite. */
  readonly listening: boolean
}
