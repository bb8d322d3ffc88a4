/**
 * The cue bank's repository on the store's seam: its tables are declared through
 * `store.tables(...)` (owner `cue-bank`, SQLite and PostgreSQL migrations run by the store's
 * runner) in the shared database, and every query is a typed drizzle query on the store's own
 * session: no second connection, no driver of our own.
 *
 * Writes, and reads that may wait, are async units of the seam (`cue-queries.ts`, the same code
 * on both backends). The three reads of a wake are synchronous, because the host's
 * runtime-context provider is: on SQLite they read the database (`readSync`, the freshest
 * state, other DSH processes included); on PostgreSQL they answer from the repository's view
 * (`cue-view.ts`), which is eventually consistent with other processes' writes.
 */
import { and, desc, eq } from 'drizzle-orm'
import { CUE_BANK_WORKSPACE_KEYS } from './workspace-keys.js'
import { type ChangeFeed, isMemoryStoreError, type MemoryStore, type PackageDialect, type PackageTables, type PackageTablesHost } from '@dsh-memory/store'
import { cueBankDeclaration } from '../migrations.js'
import { cueWriter, inPartitions, toCue, type CueWriter } from './cue-queries.js'
import { CueView, DEFAULT_POLL_MS, type CueReads } from './cue-view.js'
import { CueBankError } from './errors.js'
import type { Cue, Idiom } from './model.js'
import type { CueBankSchema } from './schema.js'

export type { CueWriter } from './cue-queries.js'
export type { CueReads } from './cue-view.js'

/**
 * Persistence of cues, idioms and the idiom window. The {@link CueReads} answer synchronously;
 * each {@link CueWriter} method called on the repository is one unit of its own, and
 * {@link CueRepository.transaction} makes several one unit.
 */
export interface CueRepository extends CueReads, CueWriter {
  /** Where the database is (a file path, or the PostgreSQL URL without its password). */
  readonly path: string
  /** The store's backend. */
  readonly dialect: PackageDialect
  /**
   * Run `fn` as one write unit (all or nothing; inside `store.transaction(...)` a savepoint).
   * `fn` awaits only the writer's queries. On PostgreSQL the view has caught up with the
   * commit when this resolves.
   * @throws CueBankError `busy` (the database stayed locked), `closed`
   */
  transaction<T>(fn: (writer: CueWriter) => Promise<T>): Promise<T>
  /** Catch the synchronous reads up with the database now (PostgreSQL's view; nothing to do on SQLite). */
  refresh(): Promise<void>
  /** Stop this repository (the connection is the store's). Idempotent. */
  close(): void
}

/** Options of {@link openCueRepository}. */
export interface CueRepositoryOptions {
  /** PostgreSQL: how often the view looks for other processes' writes, in ms (0: only on {@link CueRepository.refresh}). Default 2000. */
  readonly pollMs?: number
  /** PostgreSQL: told when a poll fails (once per failure streak); the view keeps what it has. */
  readonly onError?: (error: unknown) => void
  /**
   * PostgreSQL: reload the view when the store's change feed says another process wrote the
   * cue tables, without waiting for the poll. Default true (needs the store's `changes`).
   */
  readonly follow?: boolean
}

/**
 * Declare the cue tables on the store (its migration runner brings them up to date) and
 * open the repository on the store's session; on PostgreSQL the view is loaded first.
 * @throws CueBankError `unsupported-store` for a read-only store
 */
export async function openCueRepository(
  store: Pick<MemoryStore, 'path' | 'readonly'> & PackageTablesHost & { readonly changes?: ChangeFeed },
  options: CueRepositoryOptions = {},
): Promise<CueRepository> {
  if (store.readonly) throw new CueBankError('unsupported-store', 'the cue bank needs a writable memory store')
  const tables = await store.tables({ ...cueBankDeclaration(), workspaceKeys: CUE_BANK_WORKSPACE_KEYS })
  if (tables.dialect === 'sqlite') return new StoreCueRepository(store.path, tables, new SqliteCueReads(tables))
  const view = new CueView(tables, options.onError ?? (() => undefined))
  try {
    await view.start(options.pollMs ?? DEFAULT_POLL_MS, options.follow === false ? undefined : store.changes)
  } catch (error) {
    view.close()
    throw error
  }
  return new StoreCueRepository(store.path, tables, view)
}

/** The wake's reads on SQLite: synchronous queries on the store's connection. */
class SqliteCueReads implements CueReads {
  readonly #tables: PackageTables<CueBankSchema>

  constructor(tables: PackageTables<CueBankSchema>) {
    this.#tables = tables
  }

  listCues(partitions: readonly string[] | undefined): Cue[] {
    const { topics } = this.#tables.t
    return this.#tables
      .readSync((db) => db.select().from(topics).where(inPartitions(topics.partition, partitions)).orderBy(desc(topics.lastTouchedAt), topics.id).all())
      .map(toCue)
  }

  listIdioms(partitions: readonly string[] | undefined): Idiom[] {
    const { idioms } = this.#tables.t
    return this.#tables.readSync((db) =>
      db.select().from(idioms).where(inPartitions(idioms.partition, partitions)).orderBy(desc(idioms.score), desc(idioms.lastSeen), idioms.word).all(),
    )
  }

  latestConversationCue(sessionId: string): Cue | undefined {
    const { topics } = this.#tables.t
    const row = this.#tables.readSync((db) =>
      db
        .select()
        .from(topics)
        .where(and(eq(topics.sessionId, sessionId), eq(topics.level, 'conversation')))
        .orderBy(desc(topics.turn), desc(topics.createdAt))
        .limit(1)
        .get(),
    )
    return row ? toCue(row) : undefined
  }
}

class StoreCueRepository implements CueRepository {
  readonly path: string
  readonly dialect: PackageDialect
  readonly #tables: PackageTables<CueBankSchema>
  readonly #reads: CueReads
  readonly #view: CueView | undefined
  #closed = false

  constructor(path: string, tables: PackageTables<CueBankSchema>, reads: CueReads) {
    this.path = path
    this.dialect = tables.dialect
    this.#tables = tables
    this.#reads = reads
    this.#view = reads instanceof CueView ? reads : undefined
  }

  listCues(partitions: readonly string[] | undefined): Cue[] {
    if (partitions?.length === 0) return []
    return this.#sync(() => this.#reads.listCues(partitions))
  }

  listIdioms(partitions: readonly string[] | undefined): Idiom[] {
    if (partitions?.length === 0) return []
    return this.#sync(() => this.#reads.listIdioms(partitions))
  }

  latestConversationCue(sessionId: string): Cue | undefined {
    return this.#sync(() => this.#reads.latestConversationCue(sessionId))
  }

  getCue = (id: string) => this.#read((writer) => writer.getCue(id))
  taskCue = (partition: string, sessionId: string) => this.#read((writer) => writer.taskCue(partition, sessionId))
  cuesWithoutEmbedding = (partitions: readonly string[], model: string, limit: number) =>
    this.#read((writer) => writer.cuesWithoutEmbedding(partitions, model, limit))
  recentUserTurns = (partition: string, limit: number) => this.#read((writer) => writer.recentUserTurns(partition, limit))
  insertCue = (cue: Cue) => this.transaction((writer) => writer.insertCue(cue))
  updateCue = (cue: Cue) => this.transaction((writer) => writer.updateCue(cue))
  touchCues = (ids: readonly string[], at: number) => this.transaction((writer) => writer.touchCues(ids, at))
  setEmbedding = (id: string, embedding: Float32Array, model: string) => this.transaction((writer) => writer.setEmbedding(id, embedding, model))
  deleteUntouchedSince = (partition: string, before: number) => this.transaction((writer) => writer.deleteUntouchedSince(partition, before))
  evictCues = (partition: string, keep: number) => this.transaction((writer) => writer.evictCues(partition, keep))
  upsertIdioms = (partition: string, idioms: Parameters<CueWriter['upsertIdioms']>[1]) => this.transaction((writer) => writer.upsertIdioms(partition, idioms))
  insertIdiom = (idiom: Idiom) => this.transaction((writer) => writer.insertIdiom(idiom))
  evictIdioms = (partition: string, keep: number) => this.transaction((writer) => writer.evictIdioms(partition, keep))
  addUserTurn = (partition: string, sessionId: string, turn: number, segment: string, terms: readonly string[], at: number) =>
    this.transaction((writer) => writer.addUserTurn(partition, sessionId, turn, segment, terms, at))
  pruneUserTurns = (partition: string, keep: number) => this.transaction((writer) => writer.pruneUserTurns(partition, keep))

  async transaction<T>(fn: (writer: CueWriter) => Promise<T>): Promise<T> {
    const result = await this.#unit(() => this.#tables.write((db, t) => fn(cueWriter(db, t, this.dialect))))
    if (this.#view) {
      // Committed: a failed catch-up must not make the write look failed; the next poll retries.
      await this.#view.refresh().catch(() => undefined)
    }
    return result
  }

  async refresh(): Promise<void> {
    if (this.#closed) throw new CueBankError('closed', 'the cue repository is closed')
    await this.#view?.refresh()
  }

  close(): void {
    this.#closed = true
    this.#view?.close()
  }

  #read<T>(fn: (writer: CueWriter) => Promise<T>): Promise<T> {
    return this.#unit(() => this.#tables.read((db, t) => fn(cueWriter(db, t, this.dialect))))
  }

  #sync<T>(op: () => T): T {
    if (this.#closed) throw new CueBankError('closed', 'the cue repository is closed')
    try {
      return op()
    } catch (error) {
      throw translate(error, 'cue-bank query')
    }
  }

  async #unit<T>(op: () => Promise<T>): Promise<T> {
    if (this.#closed) throw new CueBankError('closed', 'the cue repository is closed')
    try {
      return await op()
    } catch (error) {
      throw translate(error, 'cue-bank query')
    }
  }
}

/** The store's `busy` and `closed` become the cue bank's own codes, which its callers switch on. */
function translate(error: unknown, context: string): unknown {
  if (error instanceof CueBankError) return error
  if (isMemoryStoreError(error) && (error.code === 'busy' || error.code === 'closed')) {
    return new CueBankError(error.code, `${context}: ${error.message}`, { cause: error })
  }
  return error
}
