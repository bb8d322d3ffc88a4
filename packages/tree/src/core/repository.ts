import type {
  Branch,
  BranchEvent,
  BranchEventKind,
  ChatEntry,
  Checkpoint,
  CheckpointState,
  ItemKind,
  ItemStatus,
  MainlineItem,
  MainlineTurn,
  Project,
} from './types.js'

/** An item to append to the mainline. */
export interface NewItem {
  kind: ItemKind
  text: string
  source: string
  branchId?: string | null
}

/** Result of a write that appends items. */
export interface ItemsWritten {
  project: Project
  added: MainlineItem[]
  /** Items not added because an active item already says the same (same text key). */
  skipped: NewItem[]
}

/** How the chat partition folds old messages (aggressive compression). */
export interface ChatFold {
  /** Messages kept verbatim per workspace. */
  keep: number
  /** Builds the digest text from the messages folded away and the previous digest, if any. */
  summarize(folded: readonly ChatEntry[], previous: ChatEntry | undefined): string
}

/**
 * Storage of the memory tree. Every method is one atomic unit of work (one transaction that
 * never spans an await), so two processes writing the same database never lose an update.
 * Methods taking `expectedRevision` fail with `conflict` when the project's mainline changed
 * since the caller read it: that is the optimistic-concurrency contract the tree builds on.
 *
 * Backend-neutral: the implementation on the store's session is `openStoreTreeRepository`;
 * a server database would implement the same interface.
 */
export interface TreeRepository {
  // projects -----------------------------------------------------------------------------------
  getProject(id: string): Promise<Project | undefined>
  /** The project with this name (case- and width-insensitive), if any. */
  findProject(name: string): Promise<Project | undefined>
  listProjects(): Promise<Project[]>
  /**
   * Create the project unless one with this name exists; bind `workspace` to it when given
   * (a workspace belongs to one project; rebinding moves it).
   */
  ensureProject(input: { name: string; workspace?: string | null; now: number }): Promise<{ project: Project; created: boolean }>
  /** The project bound to `workspace` or to its nearest bound ancestor directory. */
  projectForWorkspace(workspace: string): Promise<Project | undefined>
  /** Workspaces bound to a project. */
  bindings(projectId: string): Promise<string[]>

  // mainline items -----------------------------------------------------------------------------
  /** Items in creation order; default only `active` ones. */
  listItems(projectId: string, filter?: { status?: ItemStatus | 'all'; kinds?: readonly ItemKind[] }): Promise<MainlineItem[]>
  getItem(id: string): Promise<MainlineItem | undefined>
  /** Append items (skipping exact repeats of active items) and bump the revision when any was added. */
  addItems(input: { projectId: string; items: readonly NewItem[]; expectedRevision?: number; now: number }): Promise<ItemsWritten>
  /** Resolve, drop or reactivate an item; bumps the revision. */
  setItemStatus(input: { itemId: string; status: ItemStatus; expectedRevision?: number; now: number }): Promise<{ project: Project; item: MainlineItem }>

  // mainline turns -----------------------------------------------------------------------------
  /** Append a turn and trim uncleared turns beyond `keep`. Does not bump the revision. */
  appendTurn(input: { projectId: string; sessionId: string; role: 'user' | 'assistant'; text: string; keep: number; now: number }): Promise<MainlineTurn>
  /** The newest uncleared turns, oldest first, optionally without one session's own. */
  recentTurns(projectId: string, options: { limit: number; excludeSessionId?: string }): Promise<MainlineTurn[]>
  /** Id of the newest uncleared turn (0 when none) and how many there are. */
  turnWatermark(projectId: string): Promise<{ lastId: number; count: number }>

  // branches -----------------------------------------------------------------------------------
  /** Open a branch (logging an `opened` event); with `checkout`, make it the current branch. Bumps the revision. */
  createBranch(input: { projectId: string; title: string; note?: string; sessionId: string; checkout: boolean; expectedRevision?: number; now: number }): Promise<{ project: Project; branch: Branch }>
  getBranch(id: string): Promise<Branch | undefined>
  /** Branches newest first; cleared (checkpointed) ones only when asked. */
  listBranches(projectId: string, filter?: { status?: Branch['status'] | 'all'; includeCleared?: boolean }): Promise<Branch[]>
  /** The branch log, oldest first. */
  branchEvents(branchId: string): Promise<BranchEvent[]>
  /** Append to an active branch's log; bumps the branch revision. @throws conflict when the branch is closed */
  appendBranchEvent(input: { branchId: string; kind: BranchEventKind; text: string; sessionId: string; now: number }): Promise<BranchEvent>
  /** Make `branchId` (an active branch of the project) or the mainline (null) current. Bumps the revision. */
  checkout(input: { projectId: string; branchId: string | null; expectedRevision?: number; now: number }): Promise<Project>
  /**
   * Merge or abandon an active branch whose revision is still `expectedBranchRevision`:
   * append `items`, record the conclusion, archive the branch, leave it if it was current.
   * @throws conflict when the branch was closed or its log grew since the caller read it
   */
  closeBranch(input: {
    branchId: string
    expectedBranchRevision: number
    status: 'merged' | 'abandoned'
    conclusion: string | null
    items: readonly NewItem[]
    sessionId: string
    now: number
  }): Promise<ItemsWritten & { branch: Branch }>

  // checkpoints --------------------------------------------------------------------------------
  /**
   * Freeze the mainline at `expectedRevision`: store the document, make it the baseline,
   * clear the stage's closed branches and the turns up to `turnsUpTo`, open the next stage.
   * @throws conflict when the project revision moved
   */
  createCheckpoint(input: {
    projectId: string
    expectedRevision: number
    title: string
    review: string
    document: string
    state: CheckpointState
    turnsUpTo: number
    now: number
  }): Promise<{ project: Project; checkpoint: Checkpoint; clearedBranches: number; clearedTurns: number }>
  getCheckpoint(id: string): Promise<Checkpoint | undefined>
  /** Checkpoints newest first. */
  listCheckpoints(projectId: string): Promise<Checkpoint[]>

  // chat partition -----------------------------------------------------------------------------
  /** Append a chit-chat message; fold older messages of the workspace into its digest. */
  appendChat(input: { workspace: string; sessionId: string; role: 'user' | 'assistant'; text: string; now: number }, fold: ChatFold): Promise<{ entry: ChatEntry; folded: number }>
  /** The workspace's digest (if any) and newest messages, oldest first. */
  listChat(workspace: string, limit: number): Promise<ChatEntry[]>

  // settings -----------------------------------------------------------------------------------
  getSetting(key: string): Promise<string | undefined>
  setSetting(key: string, value: string, now: number): Promise<void>

  /** Close the connection. Idempotent; later calls fail with `closed`. */
  close(): Promise<void>
}
