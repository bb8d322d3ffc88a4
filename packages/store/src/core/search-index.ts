/**
 * The derived full-text index over messages and memories (two MiniSearch instances, BM25).
 *
 * SQLite is the source of truth; this index is rebuildable. It is built lazily on the
 * first search, persisted to `<db>.search-index` (header line + JSON) on close and after a
 * full build, and before every search it replays `store_changes` rows newer than its
 * position, so writes by other processes on the same file become visible. The header and
 * the database's meta row both record format, tokenizer and options hash; any mismatch,
 * an unreadable file, or a file from another database triggers a rebuild.
 */
import { createHash } from 'node:crypto'
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import MiniSearch, { type Options, type SearchOptions } from 'minisearch'
import { matchesScope } from './scope-filter.ts'
import { tokenize, TOKENIZER_VERSION } from './tokenizer.ts'
import type { IndexBuildReason, MemoryScopeFilter, MessageRole, Scope, SearchIndexStatus } from './types.ts'

/** Version of the persisted index file layout. */
export const INDEX_FILE_FORMAT = 'dsh-memory-search-index'
export const INDEX_FILE_VERSION = 1

/** A message as the index sees it. */
export interface MessageDocument {
  id: string
  text: string
  conversationId: string
  workspace: string
  role: MessageRole
  createdAt: number
}

/** A memory as the index sees it. */
export interface MemoryDocument {
  id: string
  text: string
  kind: string
  scope: Scope
  workspace: string | null
  sessionId: string | null
  createdAt: number
  superseded: boolean
}

/** One row of `store_changes`. */
export interface ChangeRow {
  seq: number
  entity: string
  entityId: string
  op: 'insert' | 'update' | 'delete'
}

/** What the index needs from the database; implemented by the SQLite store. */
export interface IndexSource {
  /** A random id fixed when the database was created; ties a persisted file to its database. */
  instanceId(): string
  /** Highest `store_changes.seq` (0 when empty). */
  currentSeq(): number
  /** Changes with seq > `after`, ascending, at most `limit`. */
  changesSince(after: number, limit: number): ChangeRow[]
  allMessages(): Iterable<MessageDocument>
  allMemories(): Iterable<MemoryDocument>
  message(id: string): MessageDocument | undefined
  messageIdsOfConversation(conversationId: string): string[]
  memory(id: string): MemoryDocument | undefined
  /** True while a transaction is open: its changes may still roll back, so nothing is persisted. */
  inTransaction(): boolean
  /** The manifest recorded in the database, if any. */
  readManifest(): string | undefined
  /** Record the manifest (skipped for read-only stores). */
  writeManifest(manifest: string): void
}

// Prefix and fuzzy matching for Latin-ish terms only: CJK bigrams are already partial
// matches, and edit distance on two-character terms only adds noise. The exception is a
// lone CJK character (a one-character query such as 猫): it has no bigram of its own, so it
// matches as a prefix of the bigrams and words that start with it.
const isAsciiTerm = (term: string): boolean => /^[a-z0-9]/.test(term)
const isLoneCjk = (term: string): boolean => term.length === 1 && /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u.test(term)
/** The query options every store search uses (exported for the benchmark). */
export const SEARCH_OPTIONS: SearchOptions = {
  combineWith: 'OR',
  prefix: (term) => (isAsciiTerm(term) && term.length >= 4) || isLoneCjk(term),
  fuzzy: (term) => (isAsciiTerm(term) && term.length >= 6 ? 0.15 : false),
}
// Describes SEARCH_OPTIONS and the fields for the options hash (functions do not stringify).
const OPTIONS_DESCRIPTION = {
  messages: { fields: ['text'], store: ['conversationId', 'workspace', 'role', 'createdAt'] },
  memories: { fields: ['text'], store: ['kind', 'scope', 'workspace', 'sessionId', 'createdAt', 'superseded'] },
  search: { combineWith: 'OR', prefix: 'ascii>=4|lone-cjk', fuzzy: 'ascii>=6:0.15' },
}

const baseOptions = {
  idField: 'id',
  fields: ['text'] as string[],
  tokenize: (text: string) => tokenize(text),
  // The tokenizer already normalises; MiniSearch's default would lower-case again.
  processTerm: (term: string) => term,
  searchOptions: SEARCH_OPTIONS,
  // Vacuuming is done explicitly (synchronously) so no timer outlives the store.
  autoVacuum: false,
} as const

const MESSAGE_OPTIONS: Options<MessageDocument> = { ...baseOptions, storeFields: OPTIONS_DESCRIPTION.messages.store }
const MEMORY_OPTIONS: Options<MemoryDocument> = { ...baseOptions, storeFields: OPTIONS_DESCRIPTION.memories.store }

/** Everything that changes which terms are indexed or how they match. */
export interface IndexManifest {
  format: number
  tokenizer: string
  optionsHash: string
}

/** The manifest of this code: a persisted index with another one is rebuilt. */
export function currentManifest(): IndexManifest {
  const hash = createHash('sha256')
    // ICU's dictionaries decide CJK word boundaries, so a Node upgrade can change tokens.
    .update(JSON.stringify({ ...OPTIONS_DESCRIPTION, icu: process.versions.icu ?? 'none', tokenizer: TOKENIZER_VERSION }))
    .digest('hex')
    .slice(0, 16)
  return { format: INDEX_FILE_VERSION, tokenizer: TOKENIZER_VERSION, optionsHash: hash }
}

interface FileHeader extends IndexManifest {
  type: typeof INDEX_FILE_FORMAT
  instanceId: string
  seq: number
}

/** A ranked id with its stored fields. */
export interface IndexHit<F> {
  id: string
  score: number
  fields: F
}

/** How often to fold, per catch-up, discarded documents out of the index. */
const VACUUM_MIN_DIRT = 500
const VACUUM_MIN_FACTOR = 0.2
const CHANGE_BATCH = 5_000

/** The lazily built, incrementally updated search index of one store. */
export class SearchIndex {
  private messages: MiniSearch<MessageDocument> | undefined
  private memories: MiniSearch<MemoryDocument> | undefined
  private seq = 0
  private reason: IndexBuildReason | null = null
  private dirty = false
  private readonly manifest = currentManifest()

  /**
   * @param source - database access.
   * @param filePath - where to persist the index; `null` keeps it in memory only.
   * @param writable - false for read-only stores (never writes file or manifest).
   */
  private readonly source: IndexSource
  private readonly filePath: string | null
  private readonly writable: boolean

  constructor(source: IndexSource, filePath: string | null, writable: boolean) {
    this.source = source
    this.filePath = filePath
    this.writable = writable
  }

  /** Build or load the index if needed, then apply every committed change since its position. */
  ensureCurrent(options: { catchUp: boolean } = { catchUp: true }): void {
    if (!this.messages || !this.memories) this.open()
    if (options.catchUp) this.catchUp()
  }

  /**
   * Forget the in-memory index (after a rollback it may hold changes that never committed);
   * the next search loads the file or rebuilds.
   */
  reset(): void {
    this.messages = undefined
    this.memories = undefined
    this.seq = 0
    this.reason = null
    this.dirty = false
  }

  /** Drop everything and rebuild from the database. */
  rebuild(reason: IndexBuildReason = 'manual'): void {
    const seq = this.source.currentSeq()
    const messages = new MiniSearch<MessageDocument>(MESSAGE_OPTIONS)
    const memories = new MiniSearch<MemoryDocument>(MEMORY_OPTIONS)
    addInBatches(messages, this.source.allMessages())
    addInBatches(memories, this.source.allMemories())
    this.messages = messages
    this.memories = memories
    this.seq = seq
    this.reason = reason
    this.dirty = true
    if (this.writable) this.source.writeManifest(JSON.stringify(this.manifest))
    // A full build is the expensive case; keep its result even if the process dies.
    this.persist()
  }

  /** Rank message ids; `accept` filters on stored fields before the limit is applied. */
  searchMessages(query: string, accept: (fields: MessageDocument) => boolean, limit: number): IndexHit<MessageDocument>[] {
    const index = this.messages!
    return index
      .search(query, { filter: (result) => accept(result as unknown as MessageDocument) })
      .slice(0, limit)
      .map((result) => ({ id: String(result.id), score: result.score, fields: result as unknown as MessageDocument }))
  }

  /** Rank memory ids under the scope filter. */
  searchMemories(query: string, filter: MemoryScopeFilter, limit: number): IndexHit<MemoryDocument>[] {
    const index = this.memories!
    return index
      .search(query, { filter: (result) => matchesScope(result as unknown as MemoryDocument, filter) })
      .slice(0, limit)
      .map((result) => ({ id: String(result.id), score: result.score, fields: result as unknown as MemoryDocument }))
  }

  status(): SearchIndexStatus {
    return {
      built: this.messages !== undefined,
      reason: this.reason,
      seq: this.seq,
      documents: { messages: this.messages?.documentCount ?? 0, memories: this.memories?.documentCount ?? 0 },
      tokenizerVersion: this.manifest.tokenizer,
      optionsHash: this.manifest.optionsHash,
    }
  }

  /** Write the index file if it changed since the last write (atomic: temp file + rename). */
  persist(): void {
    if (!this.dirty || !this.filePath || !this.writable || !this.messages || !this.memories) return
    if (this.source.inTransaction()) return
    const header: FileHeader = { type: INDEX_FILE_FORMAT, ...this.manifest, instanceId: this.source.instanceId(), seq: this.seq }
    const body = JSON.stringify({ messages: this.messages.toJSON(), memories: this.memories.toJSON() })
    const temp = `${this.filePath}.${process.pid}.tmp`
    try {
      writeFileSync(temp, `${JSON.stringify(header)}\n${body}`)
      renameSync(temp, this.filePath)
      this.dirty = false
    } catch {
      // The file is only a cache: failing to write it costs a rebuild later, nothing more.
      rmSync(temp, { force: true })
    }
  }

  private open(): void {
    const recorded = this.source.readManifest()
    const expected = JSON.stringify(this.manifest)
    if (recorded !== undefined && recorded !== expected) {
      this.rebuild(manifestChangeReason(recorded, this.manifest))
      return
    }
    if (!this.filePath || !existsSync(this.filePath)) {
      this.rebuild(recorded === undefined ? 'fresh' : 'no-file')
      return
    }
    const loaded = this.load(this.filePath)
    if (typeof loaded === 'string') {
      this.rebuild(loaded)
      return
    }
    this.messages = loaded.messages
    this.memories = loaded.memories
    this.seq = loaded.seq
    this.reason = 'loaded'
    this.dirty = false
    if (recorded === undefined && this.writable) this.source.writeManifest(expected)
  }

  private load(path: string): { messages: MiniSearch<MessageDocument>; memories: MiniSearch<MemoryDocument>; seq: number } | IndexBuildReason {
    try {
      const content = readFileSync(path, 'utf8')
      const newline = content.indexOf('\n')
      if (newline < 0) return 'corrupt-file'
      const header = JSON.parse(content.slice(0, newline)) as Partial<FileHeader>
      if (header.type !== INDEX_FILE_FORMAT || header.format !== this.manifest.format) return 'options-changed'
      if (header.tokenizer !== this.manifest.tokenizer) return 'tokenizer-changed'
      if (header.optionsHash !== this.manifest.optionsHash) return 'options-changed'
      if (header.instanceId !== this.source.instanceId()) return 'other-database'
      // A position beyond the database's means the file belongs to a newer copy (restored backup).
      if (typeof header.seq !== 'number' || header.seq > this.source.currentSeq()) return 'stale-file'
      const body = JSON.parse(content.slice(newline + 1)) as { messages: unknown; memories: unknown }
      return {
        messages: MiniSearch.loadJS(body.messages as never, MESSAGE_OPTIONS),
        memories: MiniSearch.loadJS(body.memories as never, MEMORY_OPTIONS),
        seq: header.seq,
      }
    } catch {
      return 'corrupt-file'
    }
  }

  private catchUp(): void {
    for (;;) {
      const batch = this.source.changesSince(this.seq, CHANGE_BATCH)
      if (batch.length === 0) break
      const messageIds = new Set<string>()
      const memoryIds = new Set<string>()
      for (const change of batch) {
        if (change.entity === 'message') messageIds.add(change.entityId)
        else if (change.entity === 'memory') memoryIds.add(change.entityId)
        else if (change.entity === 'conversation' && change.op === 'update') {
          // Messages carry their conversation's workspace as a stored field.
          for (const id of this.source.messageIdsOfConversation(change.entityId)) messageIds.add(id)
        }
      }
      for (const id of messageIds) refresh(this.messages!, id, this.source.message(id))
      for (const id of memoryIds) refresh(this.memories!, id, this.source.memory(id))
      this.seq = batch[batch.length - 1]!.seq
      this.dirty = true
    }
    for (const index of [this.messages!, this.memories!] as MiniSearch<unknown>[]) {
      if (index.dirtCount >= VACUUM_MIN_DIRT && index.dirtFactor >= VACUUM_MIN_FACTOR) {
        // One batch as large as the index: MiniSearch then never yields to a timer, so
        // the vacuum completes synchronously inside this call.
        void index.vacuum({ batchSize: Number.MAX_SAFE_INTEGER, batchWait: 0 })
      }
    }
  }
}

function refresh<T extends { id: string }>(index: MiniSearch<T>, id: string, document: T | undefined): void {
  if (index.has(id)) index.discard(id)
  if (document) index.add(document)
}

function addInBatches<T>(index: MiniSearch<T>, documents: Iterable<T>): void {
  let batch: T[] = []
  for (const document of documents) {
    batch.push(document)
    if (batch.length >= 1_000) {
      index.addAll(batch)
      batch = []
    }
  }
  if (batch.length) index.addAll(batch)
}

function manifestChangeReason(recorded: string, current: IndexManifest): IndexBuildReason {
  try {
    const parsed = JSON.parse(recorded) as Partial<IndexManifest>
    return parsed.tokenizer !== current.tokenizer ? 'tokenizer-changed' : 'options-changed'
  } catch {
    return 'options-changed'
  }
}
