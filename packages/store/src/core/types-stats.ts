/**
 * Counts in the store contract: what an overview (the memory browser, `dsh-memory status`)
 * shows without loading rows. Backend-neutral: SQLite answers with grouped `COUNT(*)` queries,
 * a PostgreSQL backend with the same queries in its dialect.
 */

/** Row counts of the store's tables, per layer and scope. */
export interface StoreCounts {
  readonly conversations: number
  readonly messages: {
    readonly total: number
    readonly user: number
    readonly assistant: number
    /** Messages with a vector (`messages.setEmbeddings`) of any model, each counted once however many models it holds. */
    readonly withVectors: number
  }
  readonly memories: {
    /** Not superseded. */
    readonly current: number
    readonly superseded: number
    /** Current memories per scope, keys in order. */
    readonly byScope: Record<string, number>
    /** Current memories per kind, keys in order. */
    readonly byKind: Record<string, number>
  }
  readonly scenes: { readonly total: number; readonly byScope: Record<string, number> }
  readonly persona: { readonly total: number; readonly byScope: Record<string, number> }
  /**
   * Per workspace (`''` = unknown): conversations, their messages, current memories; the
   * busiest (messages + memories) first, then by path.
   */
  readonly workspaces: readonly WorkspaceCounts[]
  readonly auditEntries: number
}

/** One workspace's row of {@link StoreCounts.workspaces}. */
export interface WorkspaceCounts {
  readonly workspace: string
  readonly conversations: number
  readonly messages: number
  readonly memories: number
}

/** What was written on one UTC day (epoch-day number = floor(ms / 86 400 000)). */
export interface DayCounts {
  readonly day: number
  /** Current (not superseded) memories created that day, per scope. */
  readonly memories: Readonly<Record<string, number>>
  /** Scenes created that day. */
  readonly scenes: number
  /** Messages captured that day. */
  readonly messages: number
}

/** Read-only aggregation over the store's rows; every method is one consistent read. */
export interface StatsService {
  /** Row counts per layer, scope, kind and workspace. */
  counts(): Promise<StoreCounts>
  /** Writes per UTC day, oldest first (a scan of the creation times, not of the rows' text). */
  daily(): Promise<DayCounts[]>
  /** Kinds of current memories, most common first (ties by name). */
  kinds(): Promise<string[]>
  /** Bytes the search index takes inside the database; 0 when the backend cannot tell. */
  searchIndexBytes(): Promise<number>
}
