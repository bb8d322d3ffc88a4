/**
 * `@dsh-memory/tree`: the memory tree as a plain library (no DSH import). Chit-chat
 * isolation, a structured mainline, branches, merge and checkpoints over the shared memory
 * store. The DSH plugin is `@dsh-memory/tree/plugin`; the MCP server is the
 * `dsh-memory-tree-mcp` binary.
 *
 * @module @dsh-memory/tree
 */
export { MemoryTree } from './core/tree.js'
export type { Caller, Destination, MemoryTreeInit, MergeInput, MergeResult, RecordResult, TreeChange, TreeStatus } from './core/tree-contract.js'
export { openMemoryTree } from './core/open.js'
export { importReferenceTree, isReferenceTreeRoot, REFERENCE_IMPORT_SOURCE } from './core/reference-import.js'
export type { ReferenceImportReport } from './core/reference-import.js'
export type { OpenMemoryTreeOptions, OpenedMemoryTree } from './core/open.js'
export { DEFAULT_CHAT_KEYWORDS, DEFAULT_PROJECT_KEYWORDS, DEFAULT_TREE_OPTIONS, resolveTreeOptions } from './core/options.js'
export type { CheckpointBranches, TreeOptions, UnknownRoute } from './core/options.js'
export { detectBranchCue } from './core/branch-cue.js'
export type { BranchCue, BranchCueKind } from './core/branch-cue.js'
export { MessageRouter } from './core/router.js'
export type { RouteDecision, RouterOptions } from './core/router.js'
export { cueOf, dedupe, extractFromBranch, extractStatements, labelOf, parseSummary } from './core/extract.js'
export type { Conclusion } from './core/extract.js'
export { CONTEXT_TAG, renderCheckpointDocument, renderMainlineContext, renderMainlineMarkdown, summarizeChat } from './core/render.js'
export type { MainlineSnapshot } from './core/render.js'
export { ProjectionWriter } from './core/projection.js'
export { openStoreTreeRepository, treeTables } from './core/store-repository.js'
export type { TreeTablesHost } from './core/store-repository.js'
export type { ChatFold, ItemsWritten, NewItem, TreeRepository } from './core/repository.js'
export { TREE_MIGRATION_OWNER, treeMigrations, treePgMigrations } from './core/migrations.js'
export { runTreeTool, TREE_GUIDE, TREE_HELP, TREE_TOOL_NAMES, TREE_TOOLS, toolParametersSchema } from './core/tools.js'
export type { JsonValue, TreeToolResult, TreeToolSpec } from './core/tools.js'
export { isTreeError, TreeError } from './core/errors.js'
export type { TreeErrorCode } from './core/errors.js'
export { CHECKPOINT_STATE_VERSION, ITEM_KINDS } from './core/types.js'
export type {
  Branch,
  BranchEvent,
  BranchEventKind,
  BranchStatus,
  ChatEntry,
  Checkpoint,
  CheckpointState,
  ItemKind,
  ItemStatus,
  MainlineItem,
  MainlineTurn,
  Project,
  RouteKind,
} from './core/types.js'
