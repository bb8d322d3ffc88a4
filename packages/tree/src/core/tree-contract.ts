/**
 * The memory tree's public contract: who calls it, what recording a message returns, the
 * changes it reports, and the inputs and results of merge and status. Kept apart from the
 * engine so adapters (DSH plugin, MCP server) depend on the shapes only.
 */
import type { Conclusion } from './extract.js'
import type { TreeOptions } from './options.js'
import type { TreeRepository } from './repository.js'
import type { RouteDecision } from './router.js'
import type { Branch, Checkpoint, ItemKind, MainlineItem, Project } from './types.js'

/** Who is asking: the workspace selects the project, the session tags what is written. */
export interface Caller {
  /** Absolute working directory ('' or absent: the workspace-less active project). */
  workspace?: string
  /** Host session id (or any stable id of the client); '' when unknown. */
  sessionId?: string
  /** Label recorded as the source of items this caller writes (`model`, `mcp`, `user`, …). */
  source?: string
}

/** Where a recorded message went. */
export type Destination = 'mainline' | 'branch' | 'chat' | 'skipped'

/** Result of {@link MemoryTree.recordMessage}. */
export interface RecordResult {
  decision: RouteDecision | undefined
  destination: Destination
  project: Project | undefined
  branchId: string | null
  /** Items auto-extracted from this message (constraints/decisions of a project message). */
  extracted: MainlineItem[]
  /** True when the same text of the same session was already the newest entry there. */
  duplicate: boolean
  /** The branch this message opened by itself (a side question or a trial, `autoBranch`). */
  openedBranch?: Branch
}

/** Something that changed, reported after the write committed. */
export type TreeChange =
  | { type: 'routed'; destination: Destination; projectId: string | null; branchId: string | null; route: RouteDecision['route'] | null; role: 'user' | 'assistant' }
  | { type: 'items-added'; projectId: string; revision: number; items: MainlineItem[] }
  | { type: 'item-updated'; projectId: string; revision: number; item: MainlineItem }
  | { type: 'project-set'; projectId: string; workspace: string; created: boolean }
  | { type: 'branched'; projectId: string; revision: number; branch: Branch }
  | { type: 'merged'; projectId: string; revision: number; branch: Branch; items: MainlineItem[] }
  | { type: 'checkpointed'; projectId: string; revision: number; checkpoint: Checkpoint }

/** Dependencies and options of a {@link MemoryTree}. */
export interface MemoryTreeInit {
  repository: TreeRepository
  options?: Partial<TreeOptions>
  /** Epoch-ms clock; tests pass a fake one. */
  now?: () => number
  /** Root of the markdown projection; null or absent disables it. */
  projectionDir?: string | null
  /** Called with failures of best-effort work (the projection); never throws into callers. */
  onError?: (error: unknown, where: string) => void
  /** Called after each committed change (the DSH adapter turns these into Cordis events). */
  onChange?: (change: TreeChange) => void
}

/** Input of {@link MemoryTree.merge}. */
export interface MergeInput {
  /** Defaults to the project's current branch. */
  branchId?: string
  /** A summary in free text; lines may be labelled (`Decision: …`, `约束：…`) or grouped under headings. */
  summary?: string
  constraints?: readonly string[]
  decisions?: readonly string[]
  outcomes?: readonly string[]
  questions?: readonly string[]
  /** Close the branch without adding anything to the mainline. */
  abandon?: boolean
}

/** Result of {@link MemoryTree.merge}. */
export interface MergeResult {
  project: Project
  branch: Branch
  added: MainlineItem[]
  /** Conclusions not added because the mainline already says the same. */
  skipped: Conclusion[]
  /** Conclusions beyond `maxMergeItems`, not added. */
  truncated: Conclusion[]
  /** True when the conclusions came from the branch log rather than from the caller. */
  heuristic: boolean
}

/** A compact state report (mt_status). */
export interface TreeStatus {
  project: Project | undefined
  workspace: string
  workspaces: string[]
  counts: Record<ItemKind, number>
  items: MainlineItem[]
  currentBranch: Branch | undefined
  openBranches: Branch[]
  baseline: Checkpoint | undefined
  turns: number
  projects: Array<Pick<Project, 'id' | 'name' | 'revision' | 'stage'>>
  routing: { chatKeywords: number; projectKeywords: number; routeMargin: number; unknownRoute: string; samples: { chat: string[]; project: string[] } }
  projectionDir: string | null
}
