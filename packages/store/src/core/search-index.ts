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
 * A query is the OR of its terms (ASCII terms of 4+ characters and lone CJK characters also as
 * prefixes unless a very common query term starts with them, ASCII terms of 6+ characters
 * also with typos) ranked by bm25(). Very common terms are dropped while rarer ones exist,
 * and the ranked set is capped to the newest matches, so a search costs about the same on
 * 10 thousand rows as on a million.
 */
import type Database from 'better-sqlite3'
import { searchTokenize, TOKENIZER_VERSION } from './tokenizer.ts'

/** Meta key recording the tokenizer the FTS tables were built with and backfill progress. */
export const FTS_META_KEY = 'store.search-fts'
/** Version of how terms are written into FTS5 (encoding, columns). */
export const FTS_FORMAT = 1

/** What the FTS tables were built with; a different one means a rebuild. */
export interface FtsManifest {
  format: number
  tokenizer: string
  /** ICU's dictionaries decide CJK word boundaries, so a Node upgrade can change tokens. */
  icu: string
}

/** The recorded state: the manifest plus the backfill cursors (`null` = done). */
export interface FtsState extends FtsManifest {
  /** Last message id backfilled, `''` before the first, `null` once every message is indexed. */
  messagesAfter: string | null
  memoriesAfter: string | null
}

/** The manifest of this code. */
export function currentFtsManifest(): FtsManifest {
  return { format: FTS_FORMAT, tokenizer: TOKENIZER_VERSION, icu: process.versions.icu ?? 'none' }
}

// Terms FTS5's ascii tokenizer keeps whole: no ASCII character other than a-z and 0-9.
const PLAIN_TERM = /^[a-z0-9\u0080-\u{10ffff}]+$/u

/** The FTS5 form of one tokenizer term (exported for tests). */
export function encodeTerm(term: string): string {
  return PLAIN_TERM.test(term) ? term : `_${Buffer.from(term, 'utf8').toString('hex')}`
}

/** The FTS column value of a text: its terms, encoded, space-joined. */
export function ftsTerms(text: string): string {
  return searchTokenize(text).map(encodeTerm).join(' ')
}

// Prefix matching for Latin-ish terms of four or more characters, and for a lone CJK
// character (a one-character query such as 猫 has no bigram of its own, so it matches as the
// prefix of the bigrams and words that start with it).
const isAsciiTerm = (term: string): boolean => /^[a-z0-9]/.test(term)
const isLoneCjk = (term: string): boolean => term.length === 1 && /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u.test(term)
const isPrefixTerm = (term: string): boolean => (isAsciiTerm(term) && term.length >= 4) || isLoneCjk(term)

/** A term is "very common" above this share of the documents (and {@link COMMON_MIN_DOCS}). */
const COMMON_SHARE = 0.005
const COMMON_MIN_DOCS = 500
/** Matches ranked per query at most: the newest ones when a query matches more. */
export const RANK_CAP = 1_000
/** Typo tolerance for ASCII terms of six or more characters: edit distance ≤ 15 % of the length. */
const FUZZY_MIN_LENGTH = 6
const FUZZY_SHARE = 0.15
/**
 * Vocabulary entries (sharing the term's first three characters) compared per fuzzy term.
 * fts5vocab reads each entry's whole document list, so this stays small.
 */
const FUZZY_VOCAB_SCAN = 64

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
export interface PlannedQuery {
  match: string | undefined
  /** Terms kept and dropped (for tests and diagnostics). */
  kept: string[]
  dropped: string[]
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

  /**
   * The MATCH expression for `query`: its distinct terms, minus very common ones while rarer
   * ones exist, minus terms no document has.
   */
  plan(query: string): PlannedQuery {
    const terms = [...new Set(searchTokenize(query))]
    if (terms.length === 0) return { match: undefined, kept: [], dropped: [] }
    const total = Number(this.#maxDoc.get() ?? 0)
    const common = Math.ceil(Math.max(COMMON_MIN_DOCS, total * COMMON_SHARE))
    // Document frequency of each exact term, counted up to just past "very common".
    const counted = terms.map((term) => {
      const encoded = encodeTerm(term)
      return { term, encoded, docs: Number(this.#cappedDocs.get(`"${encoded}"`, common + 1) ?? 0) }
    })
    const vocabulary = new Map<string, { term: string; doc: number }[]>()
    const entries = counted.map(({ term, encoded, docs }) => {
      // A term no document has may be a typo: try indexed terms within the edit distance.
      // Not when the query itself holds the word it varies: another term is a prefix of it
      // ("databas" for "database": recall adds stems), or an indexed query term differs from
      // it only from its last letter on ("gateway" for the stem "gatewai"). The vocabulary
      // scan reads the whole document list of every neighbouring term, the costliest step of
      // planning.
      const covered = counted.some(
        (other) => other.term !== term && ((isPrefixTerm(other.term) && term.startsWith(other.term)) || (other.docs > 0 && other.term.startsWith(term.slice(0, -1)))),
      )
      const variants = docs === 0 && !covered ? this.#fuzzyVariants(term, vocabulary) : []
      // Prefix expansion only for terms that are not very common themselves, nor start a very
      // common query term ("kubernet*" is as common as "kubernetes", 猫* as 猫カフェ; the longer
      // term stands for it): FTS5 merges the document lists of every term with the prefix,
      // which is what makes common ones slow.
      const prefix = isPrefixTerm(term) && docs <= common && !counted.some((other) => other.term !== term && other.term.startsWith(term) && other.docs > common)
      const forms = [`"${encoded}"${prefix ? ' *' : ''}`, ...variants.map((variant) => `"${variant.term}"`)]
      return { term, docs: docs + variants.reduce((sum, variant) => sum + variant.docs, 0), forms, prefix }
    })
    // A prefix term with no exact match may still match longer terms (猫 in 猫カフェ, deploy in deployment).
    const present = entries.filter((entry) => entry.docs > 0 || entry.prefix)
    const rare = present.filter((entry) => entry.docs <= common)
    // No rare term that surely matches (only prefixes without an exact match, which may match
    // nothing): keep the rarest common term too; the newest-matches cap bounds the work.
    const chosen = rare.some((entry) => entry.docs > 0)
      ? rare
      : [...rare, ...present.filter((entry) => entry.docs > common).sort((a, b) => a.docs - b.docs).slice(0, 1)]
    // A term another kept prefix term already covers ("database" under "databas*") adds only
    // another pass over the same document lists.
    const kept = chosen.filter((entry) => !chosen.some((other) => other !== entry && other.prefix && entry.term !== other.term && entry.term.startsWith(other.term)))
    const keptTerms = new Set(kept.map((entry) => entry.term))
    return {
      match: kept.length === 0 ? undefined : kept.flatMap((entry) => entry.forms).join(' OR '),
      kept: [...keptTerms],
      dropped: terms.filter((term) => !keptTerms.has(term)),
    }
  }

  /** Indexed terms within the typo distance of a long ASCII term (not the term itself); `vocabulary` caches scans per three-letter head within one plan. */
  #fuzzyVariants(term: string, vocabulary: Map<string, { term: string; doc: number }[]>): { term: string; docs: number }[] {
    if (term.length < FUZZY_MIN_LENGTH || !/^[a-z0-9]+$/.test(term)) return []
    const distance = Math.round(term.length * FUZZY_SHARE)
    const head = term.slice(0, 3)
    let rows = vocabulary.get(head)
    if (!rows) {
      const upper = head.slice(0, 2) + String.fromCharCode(head.charCodeAt(2) + 1)
      rows = this.#neighbourTerms.all(head, upper) as { term: string; doc: number }[]
      vocabulary.set(head, rows)
    }
    const out: { term: string; docs: number }[] = []
    for (const row of rows) {
      if (row.term === term || Math.abs(row.term.length - term.length) > distance) continue
      if (withinDistance(term, row.term, distance)) out.push({ term: row.term, docs: row.doc })
    }
    return out
  }
}

/** True when the Levenshtein distance of `a` and `b` is at most `max`. */
export function withinDistance(a: string, b: string, max: number): boolean {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    let best = i
    for (let j = 1; j <= b.length; j++) {
      const value = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
      current.push(value)
      best = Math.min(best, value)
    }
    if (best > max) return false
    previous = current
  }
  return previous[b.length]! <= max
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

/** Parse the recorded state; `undefined` when absent or unreadable. */
export function parseFtsState(value: string | undefined): FtsState | undefined {
  if (value === undefined) return undefined
  try {
    const parsed = JSON.parse(value) as Partial<FtsState>
    if (typeof parsed.format !== 'number' || typeof parsed.tokenizer !== 'string' || typeof parsed.icu !== 'string') return undefined
    const cursor = (v: unknown) => (typeof v === 'string' ? v : null)
    return { format: parsed.format, tokenizer: parsed.tokenizer, icu: parsed.icu, messagesAfter: cursor(parsed.messagesAfter), memoriesAfter: cursor(parsed.memoriesAfter) }
  } catch {
    return undefined
  }
}

/** True when `state` was built with `manifest`. */
export function sameManifest(state: FtsManifest, manifest: FtsManifest): boolean {
  return state.format === manifest.format && state.tokenizer === manifest.tokenizer && state.icu === manifest.icu
}
