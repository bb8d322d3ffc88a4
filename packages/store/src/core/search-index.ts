/**
 * Full-text search over messages and memories in SQLite FTS5 (migration 0003).
 *
 * The index lives in the database and is written by the store's own write paths inside the
 * write's transaction: a write by any process is searchable as soon as it commits, a rolled
 * back or crashed write leaves nothing behind, and nothing is held in memory or replayed.
 *
 * Terms are the store's {@link searchTokenize} output (ICU words + CJK bigrams over text with
 * traditional Chinese folded to simplified), so CJK and mixed text match exactly as the
 * tokenizer decides, in either script. They are stored space-joined in a contentless
 * FTS5 table whose `ascii` tokenizer splits only on ASCII non-alphanumerics; a term holding
 * any such character (`foo_bar`, `user.name`, `it's`) is stored hex-encoded behind `_`, so
 * every term reaches FTS5 unchanged and no plain term can collide with an encoded one.
 *
 * Queries are planned by the backend-neutral `search-plan.ts` (shared with PostgreSQL) and
 * ranked by bm25().
 */
import type Database from 'better-sqlite3'
import {
  commonThreshold,
  type CountedTerm,
  encodeTerm,
  FUZZY_VOCAB_SCAN,
  headUpperBound,
  type IndexState,
  needsPrefixCheck,
  planQuery,
  prefixUpperBound,
  type QueryPlan,
  queryTerms,
  vocabularyHeads,
  type VocabularyEntry,
} from './search-plan.ts'
import { searchTokenize } from './tokenizer.ts'

/** Meta key recording the tokenizer the FTS tables were built with and backfill progress. */
export const FTS_META_KEY = 'store.search-fts'
/** Version of how terms are written into FTS5 (encoding, columns). */
export const FTS_FORMAT = 1

/** The recorded state of the FTS tables. */
export type FtsState = IndexState

/** The FTS column value of a text: its terms, encoded, space-joined. */
export function ftsTerms(text: string): string {
  return searchTokenize(text).map(encodeTerm).join(' ')
}

/** One kind of document: its mapping table, FTS table and vocabulary. */
interface FtsTables {
  docs: string
  idColumn: string
  fts: string
  vocab: string
}

export const MESSAGE_TABLES: FtsTables = { docs: 'store_search_messages', idColumn: 'message_id', fts: 'store_search_messages_fts', vocab: 'store_search_messages_vocab' }
export const MEMORY_TABLES: FtsTables = { docs: 'store_search_memories', idColumn: 'memory_id', fts: 'store_search_memories_fts', vocab: 'store_search_memories_vocab' }

/** A planned query: the FTS5 MATCH expression, or `undefined` when nothing can match. */
export interface PlannedQuery extends QueryPlan {
  match: string | undefined
}

/** Prepared statements of one kind of document. */
class FtsKind {
  readonly tables: FtsTables
  readonly #db: Database.Database
  readonly #insertFts: Database.Statement
  readonly #deleteFts: Database.Statement
  readonly #docOf: Database.Statement
  readonly #deleteDoc: Database.Statement
  readonly #cappedDocs: Database.Statement
  readonly #maxDoc: Database.Statement
  readonly #count: Database.Statement
  readonly #neighbourTerms: Database.Statement
  readonly #commonWithPrefix: Database.Statement

  constructor(db: Database.Database, tables: FtsTables) {
    this.#db = db
    this.tables = tables
    this.#insertFts = db.prepare(`INSERT INTO ${tables.fts} (rowid, terms) VALUES (?, ?)`)
    this.#deleteFts = db.prepare(`DELETE FROM ${tables.fts} WHERE rowid = ?`)
    this.#docOf = db.prepare(`SELECT doc FROM ${tables.docs} WHERE ${tables.idColumn} = ?`).pluck()
    this.#deleteDoc = db.prepare(`DELETE FROM ${tables.docs} WHERE doc = ?`)
    // Counting stops at the cap: the cost of asking is bounded however common the term is.
    this.#cappedDocs = db.prepare(`SELECT count(*) FROM (SELECT 1 FROM ${tables.fts} WHERE ${tables.fts} MATCH ? LIMIT ?)`).pluck()
    this.#maxDoc = db.prepare(`SELECT max(doc) FROM ${tables.docs}`).pluck()
    this.#count = db.prepare(`SELECT count(*) FROM ${tables.docs}`).pluck()
    this.#neighbourTerms = db.prepare(`SELECT term, doc FROM ${tables.vocab} WHERE term >= ? AND term < ? LIMIT ${FUZZY_VOCAB_SCAN}`)
    this.#commonWithPrefix = db.prepare(`SELECT 1 FROM ${tables.vocab} WHERE term > ? AND term < ? AND doc > ? LIMIT 1`).pluck()
  }

  /** Index a document whose mapping row was just inserted as `doc`. */
  insertTerms(doc: number | bigint, text: string): void {
    this.#insertFts.run(doc, ftsTerms(text))
  }

  /** Remove a document (no-op when it is not indexed). */
  remove(id: string): void {
    const doc = this.#docOf.get(id) as number | undefined
    if (doc === undefined) return
    this.#deleteFts.run(doc)
    this.#deleteDoc.run(doc)
  }

  /** Replace the terms of an indexed document (indexing it via `insert` when it is not). */
  replaceTerms(id: string, text: string, insert: () => number | bigint): void {
    const doc = this.#docOf.get(id) as number | undefined
    if (doc === undefined) {
      this.insertTerms(insert(), text)
      return
    }
    this.#deleteFts.run(doc)
    this.#insertFts.run(doc, ftsTerms(text))
  }

  count(): number {
    return Number(this.#count.get() ?? 0)
  }

  /**
   * Merge FTS5's segments a step further (up to `pages` pages of work; call inside a write
   * transaction). After a backfill the index is many small segments; left alone, FTS5 would
   * merge them inside some later write (a "crisis merge" at 16 segments of a level), so one
   * captured message would pay for the whole backfill's merge.
   * @returns false when everything is merged.
   */
  mergeStep(pages: number): boolean {
    const before = this.#db.prepare('SELECT total_changes()').pluck().get() as number
    this.#db.prepare(`INSERT INTO ${this.tables.fts} (${this.tables.fts}, rank) VALUES ('merge', ?)`).run(-pages)
    const after = this.#db.prepare('SELECT total_changes()').pluck().get() as number
    // FTS5's documented test: fewer than two changed rows means there was nothing to merge.
    return after - before >= 2
  }

  /** Drop every document (mapping rows and FTS content). */
  clear(): void {
    this.#db.exec(`DELETE FROM ${this.tables.docs}; INSERT INTO ${this.tables.fts} (${this.tables.fts}) VALUES ('delete-all');`)
  }

  /** The MATCH expression for `query` (see {@link planQuery}). */
  plan(query: string): PlannedQuery {
    const terms = queryTerms(query)
    if (terms.length === 0) return { match: undefined, forms: [], kept: [], dropped: [] }
    const total = Number(this.#maxDoc.get() ?? 0)
    const common = commonThreshold(total)
    // Document frequency of each exact term, counted up to just past "very common".
    const counted: CountedTerm[] = terms.map(({ term, encoded }) => ({ term, encoded, docs: Number(this.#cappedDocs.get(`"${encoded}"`, common + 1) ?? 0) }))
    for (const entry of counted) {
      if (needsPrefixCheck(entry, common, total)) entry.prefixCommon = this.#commonWithPrefix.get(entry.encoded, prefixUpperBound(entry.encoded), common) !== undefined
    }
    const vocabulary = new Map<string, VocabularyEntry[]>()
    for (const head of vocabularyHeads(counted)) {
      const rows = this.#neighbourTerms.all(head, headUpperBound(head)) as { term: string; doc: number }[]
      vocabulary.set(head, rows.map((row) => ({ term: row.term, docs: row.doc })))
    }
    const plan = planQuery(counted, common, vocabulary)
    return { ...plan, match: plan.forms.length === 0 ? undefined : plan.forms.map((form) => `"${form.term}"${form.prefix ? ' *' : ''}`).join(' OR ') }
  }
}

/** The FTS index of one store connection. */
export class FtsIndex {
  readonly messages: FtsKind
  readonly memories: FtsKind
  readonly #insertMessageDoc: Database.Statement
  readonly #insertMemoryDoc: Database.Statement

  constructor(db: Database.Database) {
    this.messages = new FtsKind(db, MESSAGE_TABLES)
    this.memories = new FtsKind(db, MEMORY_TABLES)
    this.#insertMessageDoc = db.prepare('INSERT INTO store_search_messages (message_id, conversation_id, role, created_at) VALUES (?, ?, ?, ?)')
    this.#insertMemoryDoc = db.prepare('INSERT INTO store_search_memories (memory_id) VALUES (?)')
  }

  /** Index a new message (call inside the transaction that inserts it). */
  addMessage(row: { id: string; conversationId: string; role: string; createdAt: number; text: string }): void {
    const doc = this.#insertMessageDoc.run(row.id, row.conversationId, row.role, row.createdAt).lastInsertRowid
    this.messages.insertTerms(doc, row.text)
  }

  /** Index a new memory (call inside the transaction that inserts it). */
  addMemory(id: string, text: string): void {
    this.memories.insertTerms(this.#insertMemoryDoc.run(id).lastInsertRowid, text)
  }

  /** Re-index a memory whose text changed. */
  updateMemory(id: string, text: string): void {
    this.memories.replaceTerms(id, text, () => this.#insertMemoryDoc.run(id).lastInsertRowid)
  }
}
