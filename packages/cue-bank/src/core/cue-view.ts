/**
 * The synchronous reads of the wake side, and the in-memory view that answers them on
 * PostgreSQL.
 *
 * The host asks for the wake block synchronously (its runtime-context provider, and the
 * message claim just before it), so the cues and idioms a wake reads must be at hand without a
 * round trip. On SQLite the database answers synchronously (`readSync`, the freshest state). A
 * server cannot, so on PostgreSQL the repository keeps this view: every partition's cues and
 * idioms (both capped per partition by `maxTopics` / `maxIdioms`), loaded before the bank
 * starts, reloaded after each of this process's writes commits, and reloaded when the store's
 * change feed says another process wrote the cue tables (PostgreSQL's notification at that
 * commit; and after the store's listener was down, when notifications may have been lost).
 * Every `pollMs` it also looks by itself: the fallback behind a missed notification. A reload
 * reads one small table, `cue_bank_revisions` (one revision per partition, bumped by triggers
 * in the writing transaction), and loads only the partitions whose revision moved, in the same
 * snapshot.
 */
import { inArray, sql } from 'drizzle-orm'
import type { ChangeFeed, PackageDatabase, PackageTables } from '@dsh-memory/store'
import { CUE_BANK_MIGRATION_OWNER } from '../migrations.js'
import { toCue } from './cue-queries.js'
import type { Cue, Idiom } from './model.js'
import type { CueBankSchema } from './schema.js'

/** The reads a wake makes, answered synchronously. */
export interface CueReads {
  /** Cues of the given partitions (every partition when undefined), most recently touched first. */
  listCues(partitions: readonly string[] | undefined): Cue[]
  /** Idioms of the given partitions (every partition when undefined), best first. */
  listIdioms(partitions: readonly string[] | undefined): Idiom[]
  /** The newest conversation cue of a session (any partition), e.g. to resume topic tracking. */
  latestConversationCue(sessionId: string): Cue | undefined
}

/** How often the view looks for other processes' writes, by default. */
export const DEFAULT_POLL_MS = 2000

/** What one load found: the partitions whose revision moved, with their rows. */
interface Delta {
  readonly revisions: ReadonlyMap<string, number>
  readonly cues: readonly Cue[]
  readonly idioms: readonly Idiom[]
}

/** Most recently touched first, ties by id (the SQL order of every cue list). */
function recentFirst(a: Cue, b: Cue): number {
  return b.lastTouchedAt - a.lastTouchedAt || compareText(a.id, b.id)
}

/** Best first: score, then last seen, then the word. */
function bestFirst(a: Idiom, b: Idiom): number {
  return b.score - a.score || b.lastSeen - a.lastSeen || compareText(a.word, b.word)
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/** Group rows by partition (each group keeps the input order). */
function byPartition<T extends { readonly partition: string }>(rows: readonly T[]): Map<string, T[]> {
  const groups = new Map<string, T[]>()
  for (const row of rows) {
    const group = groups.get(row.partition)
    if (group) group.push(row)
    else groups.set(row.partition, [row])
  }
  return groups
}

/** The view of a PostgreSQL cue bank. `close()` stops its poll. */
export class CueView implements CueReads {
  readonly #tables: PackageTables<CueBankSchema>
  readonly #onError: (error: unknown) => void
  #cues = new Map<string, Cue[]>()
  #idioms = new Map<string, Idiom[]>()
  readonly #revisions = new Map<string, number>()
  /** Loads run one after another, so an older snapshot never overwrites a newer one. */
  #chain: Promise<void> = Promise.resolve()
  #timer: ReturnType<typeof setInterval> | undefined
  /** Whether the last poll failed (a failure streak is reported once). */
  #failing = false
  #unfollow: (() => void) | undefined

  constructor(tables: PackageTables<CueBankSchema>, onError: (error: unknown) => void) {
    this.#tables = tables
    this.#onError = onError
  }

  /**
   * Load every partition, then reload on `changes`' notifications about the cue tables (when
   * given) and poll every `pollMs` (0: never; the caller refreshes).
   */
  async start(pollMs: number, changes?: ChangeFeed): Promise<void> {
    if (changes) {
      this.#unfollow = changes.subscribe((event) => {
        if (event.type === 'resync' || (event.type === 'tables' && event.owner === CUE_BANK_MIGRATION_OWNER)) void this.#poll()
      })
      // Listening before the first load: a write committed after it is never missed.
      await changes.ready()
    }
    await this.refresh()
    if (pollMs > 0) {
      this.#timer = setInterval(() => void this.#poll(), pollMs)
      // The poll alone must not keep a process alive.
      this.#timer.unref?.()
    }
  }

  /** Catch up with the database: reload the partitions whose revision moved. Rejects when the read fails. */
  refresh(): Promise<void> {
    const run = this.#chain.then(async () => this.#apply(await this.#tables.read((db, t) => loadDelta(db, t, this.#revisions))))
    // A failed load must not break the chain for the next one.
    this.#chain = run.catch(() => undefined)
    return run
  }

  listCues(partitions: readonly string[] | undefined): Cue[] {
    return this.#collect(this.#cues, partitions).sort(recentFirst)
  }

  listIdioms(partitions: readonly string[] | undefined): Idiom[] {
    return this.#collect(this.#idioms, partitions).sort(bestFirst)
  }

  latestConversationCue(sessionId: string): Cue | undefined {
    let latest: Cue | undefined
    for (const cues of this.#cues.values()) {
      for (const cue of cues) {
        if (cue.sessionId !== sessionId || cue.level !== 'conversation') continue
        if (!latest || cue.turn > latest.turn || (cue.turn === latest.turn && cue.createdAt > latest.createdAt)) latest = cue
      }
    }
    return latest
  }

  /** Stop polling and following. Idempotent. */
  close(): void {
    clearInterval(this.#timer)
    this.#timer = undefined
    this.#unfollow?.()
    this.#unfollow = undefined
  }

  async #poll(): Promise<void> {
    try {
      await this.refresh()
      this.#failing = false
    } catch (error) {
      // The view keeps answering from what it has; the next poll tries again.
      if (!this.#failing) this.#onError(error)
      this.#failing = true
    }
  }

  #apply(delta: Delta | undefined): void {
    if (!delta) return
    const cues = byPartition(delta.cues)
    const idioms = byPartition(delta.idioms)
    for (const [partition, revision] of delta.revisions) {
      this.#cues.set(partition, cues.get(partition) ?? [])
      this.#idioms.set(partition, idioms.get(partition) ?? [])
      this.#revisions.set(partition, revision)
    }
  }

  #collect<T>(groups: ReadonlyMap<string, readonly T[]>, partitions: readonly string[] | undefined): T[] {
    const keys = partitions === undefined ? [...groups.keys()] : [...new Set(partitions)]
    return keys.flatMap((partition) => groups.get(partition) ?? [])
  }
}

/** The database of a PostgreSQL unit: drizzle node-postgres, which runs raw SQL with `execute`. */
interface RawDatabase {
  execute(query: ReturnType<typeof sql>): Promise<{ rows: Record<string, unknown>[] }>
}

/** One snapshot: the partitions whose revision differs from `known`, with their cues and idioms. */
async function loadDelta(db: PackageDatabase<CueBankSchema>, t: CueBankSchema, known: ReadonlyMap<string, number>): Promise<Delta | undefined> {
  // cue_bank_revisions is PostgreSQL-only (not in the shared drizzle schema): raw SQL.
  const { rows } = await (db as unknown as RawDatabase).execute(sql`SELECT partition, revision FROM cue_bank_revisions`)
  const revisions = new Map<string, number>()
  for (const row of rows) {
    const revision = Number(row.revision)
    if (known.get(String(row.partition)) !== revision) revisions.set(String(row.partition), revision)
  }
  if (revisions.size === 0) return undefined
  const changed = [...revisions.keys()]
  const cues = await db.select().from(t.topics).where(inArray(t.topics.partition, changed))
  const idioms = await db.select().from(t.idioms).where(inArray(t.idioms.partition, changed))
  return { revisions, cues: cues.map(toCue), idioms }
}
