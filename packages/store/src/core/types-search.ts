/** Full-text search in the store contract. */
import type { MessageRole } from './types-common.ts'
import type { Message } from './types-conversations.ts'
import type { Memory, MemoryScopeFilter } from './types-memories.ts'

/** Options of {@link SearchService.memories}. */
export interface MemorySearchOptions extends MemoryScopeFilter {
  /** Default 20, at most 1 000. */
  limit?: number
}

/** Options of {@link SearchService.messages}. */
export interface MessageSearchOptions {
  workspace?: string
  conversationId?: string
  role?: MessageRole
  since?: number
  until?: number
  /** Default 20, at most 1 000. */
  limit?: number
}

/** A ranked memory. `score` is BM25, comparable only within one query. */
export interface MemoryHit {
  memory: Memory
  score: number
}

/** A ranked message. `score` is BM25, comparable only within one query. */
export interface MessageHit {
  message: Message
  score: number
}

/** Why this process (re)built the search index, for diagnostics and tests. */
export type IndexBuildReason =
  /** The FTS tables were new (first open after the upgrade, or a new database): existing rows were indexed. */
  | 'backfill'
  /** A backfill interrupted by a crash (or run by another process) was completed. */
  | 'resumed'
  /** The tokenizer (or ICU) version differs from the one the index was built with. */
  | 'tokenizer-changed'
  /** `search.rebuild()`. */
  | 'manual'

/** State of the search index (SQLite FTS5 tables in the database). */
export interface SearchIndexStatus {
  /** True when every row is indexed with the current tokenizer (a read-only store may see a pending backfill). */
  built: boolean
  /** What this process last did to the index (`null`: it found it current). */
  reason: IndexBuildReason | null
  /** Documents in the index; equal to the row counts unless rows were written behind the store's back. */
  documents: { messages: number; memories: number }
  tokenizerVersion: string
  /** The ICU version the CJK word boundaries come from. */
  icu: string
}

/** Full-text search over messages and memories. */
export interface SearchService {
  /**
   * Rank memories matching `query` (BM25 over the CJK-aware tokenizer). Applies the scope
   * filter; superseded memories are excluded unless asked for. Sees every committed write,
   * including writes by other processes on the same database.
   */
  memories(query: string, options?: MemorySearchOptions): Promise<MemoryHit[]>
  /** Rank messages matching `query`; same freshness guarantee as {@link SearchService.memories}. */
  messages(query: string, options?: MessageSearchOptions): Promise<MessageHit[]>
  /**
   * Finish any pending backfill (done at open already; a read-only store only reports) and
   * return the status.
   */
  warm(): Promise<SearchIndexStatus>
  /** Drop the index and rebuild it from the rows (repairs rows written behind the store's back). */
  rebuild(): Promise<SearchIndexStatus>
  status(): Promise<SearchIndexStatus>
}
