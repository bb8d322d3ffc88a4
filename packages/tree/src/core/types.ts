/**
 * The memory tree's data model. Backend-neutral: the SQLite repository maps these to the
 * `tree_*` tables; another backend would map them to its own.
 */

/** The four kinds of mainline state item. */
export type ItemKind = 'constraint' | 'decision' | 'outcome' | 'question'

/** Every item kind, in the order the mainline renders them. */
export const ITEM_KINDS: readonly ItemKind[] = Object.freeze(['constraint', 'decision', 'outcome', 'question'])

/** `active` items are current state; `resolved` (answered questions) and `dropped` items are history. */
export type ItemStatus = 'active' | 'resolved' | 'dropped'

/** A project: one memory-tree root with its mainline. */
export interface Project {
  id: string
  name: string
  /** Starts at 1; every checkpoint closes the stage and opens the next. */
  stage: number
  /** The newest checkpoint (the mainline's baseline), or null before the first. */
  baselineCheckpointId: string | null
  /** The branch new project messages are logged to, or null for the mainline. */
  currentBranchId: string | null
  /** Optimistic-concurrency counter of the mainline state (items, branches, baseline). */
  revision: number
  createdAt: number
  updatedAt: number
}

/** One mainline state item. */
export interface MainlineItem {
  id: string
  projectId: string
  /** Position within the project (creation order). */
  seq: number
  kind: ItemKind
  text: string
  /**
   * Where it came from: `user` (auto-extracted from a user message), `model` (a tool call),
   * `merge:<branchId>`, `mcp`, or any caller-chosen label.
   */
  source: string
  status: ItemStatus
  /** The stage the item was recorded in. */
  stage: number
  /** The branch whose merge produced it, if any. */
  branchId: string | null
  createdAt: number
  updatedAt: number
}

/** A mainline conversation turn (kept only for injection; cleared by a checkpoint). */
export interface MainlineTurn {
  id: number
  projectId: string
  sessionId: string
  role: 'user' | 'assistant'
  text: string
  stage: number
  createdAt: number
}

/** Branch lifecycle: open, merged into the mainline, or closed without conclusions. */
export type BranchStatus = 'active' | 'merged' | 'abandoned'

/** An exploration branch. */
export interface Branch {
  id: string
  projectId: string
  title: string
  status: BranchStatus
  stage: number
  /** The structured conclusion recorded at merge (markdown), or null. */
  conclusion: string | null
  /** Set when a checkpoint cleared this branch's reference from the stage. */
  checkpointId: string | null
  /** Bumps on every event; a merge computed from an older log is refused. */
  revision: number
  /** Number of events in the branch log. */
  eventCount: number
  createdAt: number
  updatedAt: number
  closedAt: number | null
}

/** Kinds of branch log events. */
export type BranchEventKind = 'opened' | 'user' | 'assistant' | 'note' | 'merged' | 'abandoned'

/** One event of a branch log. */
export interface BranchEvent {
  id: number
  branchId: string
  kind: BranchEventKind
  text: string
  sessionId: string
  createdAt: number
}

/** A frozen review document; the newest one is the mainline baseline. */
export interface Checkpoint {
  id: string
  projectId: string
  /** The stage this checkpoint closed. */
  stage: number
  title: string
  review: string
  /** The markdown review document. */
  document: string
  /** The frozen mainline state. */
  state: CheckpointState
  /** The project revision the document was frozen from. */
  revision: number
  createdAt: number
}

/** Version of the JSON persisted in `tree_checkpoints.state`. */
export const CHECKPOINT_STATE_VERSION = 1

/** The frozen mainline state of a checkpoint (persisted as versioned JSON). */
export interface CheckpointState {
  version: typeof CHECKPOINT_STATE_VERSION
  items: MainlineItem[]
  branches: Array<Pick<Branch, 'id' | 'title' | 'status' | 'conclusion'>>
  turnCount: number
}

/** One row of the chat partition. */
export interface ChatEntry {
  id: number
  workspace: string
  sessionId: string
  /** `digest` rows summarise older messages that were folded away. */
  kind: 'message' | 'digest'
  role: 'user' | 'assistant' | 'digest'
  text: string
  /** Messages represented (1 for a message, N for a digest). */
  count: number
  firstAt: number
  createdAt: number
}

/** Where a routed message went. */
export type RouteKind = 'chat' | 'project' | 'unknown'
