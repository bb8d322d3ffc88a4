/** L1 of the store contract: atomic memories and the scope filter memory reads share. */
import type { Flags, MemoryKind, PageOptions, Scope, WriteOptions } from './types-common.ts'

/** An atomic L1 memory. */
export interface Memory {
  /** Store id (UUIDv7, time-sortable). */
  id: string
  kind: MemoryKind
  text: string
  scope: Scope
  /** Set for workspace scope; may be set for session scope; always null for global scope. */
  workspace: string | null
  /** Set for session scope. */
  sessionId: string | null
  sourceMessageIds: string[]
  /** Higher is more important; the store does not interpret it. */
  priority: number
  /** 1 on insert, +1 on every update. */
  revision: number
  createdAt: number
  updatedAt: number
  lastRecalledAt: number | null
  /** Id of the memory that replaced this one; superseded memories are hidden by default. */
  supersededBy: string | null
  embedding: Float32Array | null
  /** Identifies the model that produced `embedding`, so vectors of different models are never compared. */
  embeddingModel: string | null
  flags: Flags
  /**
   * The user whose session wrote it (see `MemoryStoreOptions.user`), kept by updates and new
   * versions; `''` for rows from before user identities. A global memory is visible only to
   * this user (and to everyone when `''`); workspace and session memories are the team's.
   */
  createdBy: string
}

/** Input of {@link MemoryRepository.add}. */
export interface AddMemoryInput {
  kind: MemoryKind
  text: string
  scope: Scope
  /** Required for workspace scope; recorded for session scope; must be absent for global scope. */
  workspace?: string | null
  /** Required for session scope. */
  sessionId?: string | null
  sourceMessageIds?: string[]
  priority?: number
  flags?: Flags
  embedding?: Float32Array | null
  embeddingModel?: string | null
  /** Defaults to the store clock. */
  createdAt?: number
}

/** Patch of {@link MemoryRepository.update}; absent fields are unchanged. */
export interface UpdateMemoryPatch {
  text?: string
  kind?: MemoryKind
  priority?: number
  flags?: Flags
  /** `null` clears the embedding. */
  embedding?: Float32Array | null
  embeddingModel?: string | null
}

/**
 * Scope filter shared by memory list and search.
 *
 * With `workspace` set the result holds global memories (unless `includeGlobal` is false)
 * plus workspace- and session-scoped memories of that workspace, never another
 * workspace's. With `sessionId` set, session-scoped memories are limited to that session.
 */
export interface MemoryScopeFilter {
  scope?: Scope | Scope[]
  workspace?: string
  sessionId?: string
  kind?: MemoryKind | MemoryKind[]
  /** Only memories created at or after this epoch-ms time. */
  since?: number
  /** Only memories created at or before this epoch-ms time. */
  until?: number
  /** Default true. */
  includeGlobal?: boolean
  /** Default false: superseded memories are history, not current knowledge. */
  includeSuperseded?: boolean
}

/** Filter of {@link MemoryRepository.list}. */
export interface MemoryFilter extends MemoryScopeFilter, PageOptions {
  /** `'created'` (default) or `'updated'`, newest first. */
  orderBy?: 'created' | 'updated' | 'priority'
}

/** L1 memory repository. */
export interface MemoryRepository {
  /** Store a new memory (redacted, capped). @throws MemoryStoreError `invalid-argument` */
  add(input: AddMemoryInput, options?: WriteOptions): Promise<Memory>
  get(id: string): Promise<Memory | undefined>
  /** Change text/kind/priority/flags/embedding in place; bumps `revision`. @throws MemoryStoreError `not-found` */
  update(id: string, patch: UpdateMemoryPatch, options?: WriteOptions): Promise<Memory>
  /**
   * Replace a memory by a new one, keeping history: the old row stays with
   * `supersededBy` = the new id. Missing input fields default to the old memory's.
   * @returns the new memory.
   * @throws MemoryStoreError `not-found`; `conflict` when the old memory is already superseded
   */
  supersede(oldId: string, input: Partial<AddMemoryInput> & { text: string }, options?: WriteOptions): Promise<Memory>
  /** The version chain containing `id`, oldest first; empty when `id` is unknown. */
  history(id: string): Promise<Memory[]>
  /**
   * Hard-delete a memory together with every older version it superseded, so a forgotten
   * fact cannot resurface from history. Audited without content.
   * @returns the number of rows deleted (0 when it did not exist).
   */
  delete(id: string, options?: WriteOptions): Promise<number>
  list(filter?: MemoryFilter): Promise<Memory[]>
  /**
   * How many memories match the scope filter (no paging). Recall uses it as the collection
   * size when it ranks search candidates.
   */
  count(filter?: MemoryScopeFilter): Promise<number>
  /** Set `lastRecalledAt` (default now) on the given memories. @returns how many existed. */
  touchRecalled(ids: readonly string[], at?: number, options?: WriteOptions): Promise<number>
  /**
   * Fold near-duplicates into one existing memory (consolidation): every source keeps its
   * row as history with `supersededBy` = the target, and the target gains the sources'
   * `sourceMessageIds`. Unlike {@link MemoryRepository.supersede} no new row is written.
   * @returns the updated target.
   * @throws MemoryStoreError `not-found`; `conflict` when the target or a source is already
   *   superseded; `invalid-argument` when a source is the target.
   */
  mergeInto(targetId: string, sourceIds: readonly string[], options?: WriteOptions): Promise<Memory>
}
