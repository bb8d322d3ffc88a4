/**
 * The palace's archive index, in its own tables on the store's session (`palace_namespaces`,
 * `palace_turns`; migrations under `migrations/palace/`, owner `palace`), searched in memory
 * with MiniSearch per workspace. L0 (`store_conversations` / `store_messages`) holds
 * conversations only: archived turns never pose as one, so the distiller, recall and the
 * status views never see them.
 *
 * The archive files stay the source of truth. Each archived turn becomes one row holding the
 * store tokenizer's terms of its (redacted) text; a namespace whose row count is behind its
 * `index.jsonl` is caught up from disk on the next sync (after an archive, at session start,
 * before a search), so an empty or dropped index, an upgraded data dir or a folder copied from
 * elsewhere is rebuilt by itself. Rows are idempotent by (workspace, namespace, turn).
 *
 * Why MiniSearch over one workspace's rows rather than the store's FTS5: the corpus is small
 * and bounded (one workspace's archive), the index is rebuilt from the rows in milliseconds,
 * and it gives typo-tolerant suggestions FTS5 cannot; `dsh-memory bench palace` measures both.
 */
import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import { packageDeclaration, packageMigrations, redactSecrets, tokenize, type MigrationSet, type PackageTables, type PackageTablesDeclaration } from '@dsh-memory/store'
import { and, count, eq, gt, inArray } from 'drizzle-orm'
import MiniSearch, { type SearchResult } from 'minisearch'
import { PalaceError } from './errors.js'
import { palaceSchema, type PalaceSchema } from './index-schema.js'
import { palacePgSchema } from './pg-index-schema.js'
import { INDEX_FILE, STATE_FILE } from './layout.js'
import type { IndexEntry, NamespaceArchive } from './namespace.js'
import type { ParsedQuery } from './query.js'

/** Migration owner of the palace tables (their prefix and audit entity). */
export const PALACE_MIGRATION_OWNER = 'palace'
/** Bumped when what a row holds changes: rows of another version are rebuilt from disk. */
export const INDEX_VERSION = 2
/** Rows per write unit while catching up (bounded statements, short write locks). */
const WRITE_BATCH = 200
const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u

function missing(message: string): PalaceError {
  return new PalaceError('not-found', message)
}

/**
 * The palace's SQL migrations (`migrations/palace/NNNN_name.sql`) for the store's runner.
 * @throws PalaceError `not-found` when the package was installed without its migrations folder
 */
export function palaceMigrations(): MigrationSet {
  return packageMigrations(import.meta.url, PALACE_MIGRATION_OWNER, 'migrations', missing)
}

/**
 * The same tables' PostgreSQL migrations (`migrations-postgres/palace/`, same owner and versions).
 * @throws PalaceError `not-found` when the package was installed without that folder
 */
export function palacePgMigrations(): MigrationSet {
  return packageMigrations(import.meta.url, PALACE_MIGRATION_OWNER, 'migrations-postgres', missing)
}

/** The palace tables on both backends, for `store.tables(...)`. */
export function palaceTables(): PackageTablesDeclaration<PalaceSchema> {
  return packageDeclaration(import.meta.url, PALACE_MIGRATION_OWNER, { schema: palaceSchema, pgSchema: palacePgSchema, missing })
}

/** The slice of the store the index needs: the package-tables seam. */
export interface PalaceTablesHost {
  tables(declaration: PackageTablesDeclaration<PalaceSchema>): Promise<PackageTables<PalaceSchema>>
}

/** One namespace as the index sees it. */
export interface IndexedNamespace {
  readonly namespace: string
  readonly archive: NamespaceArchive
}

/** One indexed turn as MiniSearch holds it. */
interface TurnDoc {
  readonly id: string
  readonly namespace: string
  readonly turn: number
  readonly terms: string
}

/** A turn found by spelling when nothing matched exactly. */
export interface Suggestion {
  readonly namespace: string
  readonly turn: number
  /** The indexed terms that matched (the corrected spelling). */
  readonly terms: readonly string[]
}

/**
 * The terms a turn is indexed under: the store tokenizer's output of its redacted text
 * (secrets never reach the database, exactly as for the store's own rows), each once.
 */
export function turnTerms(text: string): string[] {
  return [...new Set(tokenize(redactSecrets(text).text))]
}

/**
 * Whether a query term also matches longer indexed terms: Latin-like terms of 4+ characters
 * (`deploy` → `deployment`), the rule `MatchText` applies, so candidates stay a superset.
 */
export function prefixTerm(term: string): boolean {
  return !CJK.test(term) && [...term].length >= 4
}

/** Terms are pre-tokenized and space-joined: MiniSearch must neither split nor fold them again. */
const splitTerms = (text: string): string[] => text.split(' ').filter((term) => term.length > 0)
const asIs = (term: string): string => term

/** A MiniSearch over pre-tokenized turn terms (also what `dsh-memory bench palace` measures). */
export function newTermSearch(): MiniSearch<TurnDoc> {
  return new MiniSearch<TurnDoc>({
    fields: ['terms'],
    storeFields: ['namespace', 'turn'],
    tokenize: splitTerms,
    processTerm: asIs,
    searchOptions: { tokenize: splitTerms, processTerm: asIs },
  })
}

/** A namespace's files as its last sync read them, and what that sync recorded. */
interface SyncedFiles {
  /** Size, mtime and inode of `index.jsonl` and `.state.json`. */
  readonly signature: string
  readonly turns: number
  readonly sessionId: string
}

/**
 * Size, mtime and inode of a namespace's `index.jsonl` and `.state.json`. The palace replaces
 * both by rename, so a changed file has a new inode (and mtime) even when its size is the same.
 */
async function filesSignature(dir: string): Promise<string> {
  const parts = await Promise.all(
    [INDEX_FILE, STATE_FILE].map(async (file) => {
      try {
        const info = await stat(join(dir, file))
        return `${info.size}:${info.mtimeMs}:${info.ino}`
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'none'
        throw error
      }
    }),
  )
  return parts.join('|')
}

interface WorkspaceSearch {
  readonly search: MiniSearch<TurnDoc>
  /** Highest row id loaded: later rows are added on the next refresh. */
  lastId: number
  rows: number
}

/** Maintains and queries the palace tables of one store. */
export class ArchiveIndex {
  private tablesPromise: Promise<PackageTables<PalaceSchema>> | undefined
  private readonly searches = new Map<string, WorkspaceSearch>()
  /** Per workspace + namespace folder: the files the last sync read (searches sync every time). */
  private readonly synced = new Map<string, SyncedFiles>()

  constructor(private readonly host: PalaceTablesHost) {}

  /** The palace tables (migrated on first use). */
  tables(): Promise<PackageTables<PalaceSchema>> {
    this.tablesPromise ??= this.host.tables(palaceTables())
    // A failed open (a read-only store behind on migrations, a closed store) is retried next time.
    this.tablesPromise.catch(() => (this.tablesPromise = undefined))
    return this.tablesPromise
  }

  /**
   * Bring the rows of a namespace up to its `index.jsonl`: after every archive, at session
   * start and before a search. Idempotent; rows of another index version are rebuilt.
   * @returns turns newly indexed
   */
  async sync(workspace: string, target: IndexedNamespace): Promise<{ inserted: number }> {
    const tables = await this.tables()
    const { palaceNamespaces, palaceTurns } = tables.t
    const where = and(eq(palaceNamespaces.workspace, workspace), eq(palaceNamespaces.namespace, target.namespace))
    const turnsWhere = and(eq(palaceTurns.workspace, workspace), eq(palaceTurns.namespace, target.namespace))
    const readState = () => tables.read(async (db) => (await db.select().from(palaceNamespaces).where(where).limit(1))[0])
    const upToDate = (row: Awaited<ReturnType<typeof readState>>, turns: number, sessionId: string) => row?.version === INDEX_VERSION && row.sessionId === sessionId && row.turns === turns
    // Stat before reading: a file replaced after the stat has a new signature and is read next time.
    const cacheKey = `${workspace}\0${target.namespace}\0${target.archive.dir}`
    const signature = await filesSignature(target.archive.dir)
    const seen = this.synced.get(cacheKey)
    // Unchanged files: only the rows' state is checked (another process may have rebuilt them).
    if (seen?.signature === signature && upToDate(await readState(), seen.turns, seen.sessionId)) return { inserted: 0 }
    const entries = await target.archive.entries()
    const sessionId = (await target.archive.readState())?.sessionId ?? ''
    const remember = () => this.synced.set(cacheKey, { signature, turns: entries.length, sessionId })
    const state = await readState()
    if (upToDate(state, entries.length, sessionId)) {
      remember()
      return { inserted: 0 }
    }
    // Rows of another index version, or of another folder that had this name: rebuilt.
    if (state !== undefined && (state.version !== INDEX_VERSION || state.sessionId !== sessionId)) {
      await tables.write(async (db) => {
        await db.delete(palaceTurns).where(turnsWhere)
      })
    }
    const existing = new Map(
      await tables.read(async (db) => (await db.select({ turn: palaceTurns.turn, archiveId: palaceTurns.archiveId }).from(palaceTurns).where(turnsWhere)).map((row) => [row.turn, row.archiveId] as const)),
    )
    const missing = entries.filter((entry) => existing.get(entry.turn) !== entry.archive)
    // Rows of turns this folder no longer holds, or held by another archive (a memory name
    // reused after a rename): their terms would filter wrongly, so they are replaced.
    const current = new Set(entries.map((entry) => entry.turn))
    const replaced = new Set(missing.map((entry) => entry.turn))
    const stale = [...existing.keys()].filter((turn) => !current.has(turn) || replaced.has(turn))
    if (stale.length > 0) {
      await tables.write(async (db) => {
        await db.delete(palaceTurns).where(and(turnsWhere, inArray(palaceTurns.turn, stale)))
      })
    }
    let inserted = 0
    for (let start = 0; start < missing.length; start += WRITE_BATCH) {
      const rows = await Promise.all(missing.slice(start, start + WRITE_BATCH).map((entry) => this.row(workspace, target, entry)))
      inserted += await tables.write(async (db) => (await db.insert(palaceTurns).values(rows).onConflictDoNothing().returning({ id: palaceTurns.id })).length)
    }
    const next = { workspace, namespace: target.namespace, sessionId, turns: entries.length, version: INDEX_VERSION, updatedAt: Date.now() }
    await tables.write(async (db) => {
      await db
        .insert(palaceNamespaces)
        .values(next)
        .onConflictDoUpdate({ target: [palaceNamespaces.workspace, palaceNamespaces.namespace], set: { sessionId, turns: next.turns, version: next.version, updatedAt: next.updatedAt } })
    })
    remember()
    return { inserted }
  }

  private async row(workspace: string, target: IndexedNamespace, entry: IndexEntry) {
    const text = await target.archive.turnText(entry)
    return {
      workspace,
      namespace: target.namespace,
      turn: entry.turn,
      category: entry.category,
      speaker: entry.speaker,
      archivedAt: entry.archivedAt,
      archiveId: entry.archive,
      terms: turnTerms(text).join(' '),
    }
  }

  /**
   * Turns that may match the query, per namespace (a superset of the matching turns: every
   * anchor term, with prefixes where `MatchText` allows them); undefined when a keyword has no
   * anchor term, so the index cannot filter and the caller scans the files.
   */
  async candidates(workspace: string, query: ParsedQuery, targets: readonly IndexedNamespace[]): Promise<Map<string, Set<number>> | undefined> {
    if (query.keywords.some((keyword) => keyword.anchors === undefined)) return undefined
    const search = await this.searchOf(workspace, targets)
    const terms = [...new Set(query.keywords.flatMap((keyword) => keyword.anchors ?? []))]
    const namespaces = new Set(targets.map((target) => target.namespace))
    const out = new Map<string, Set<number>>(targets.map((target) => [target.namespace, new Set<number>()]))
    const hits = search.search(terms.join(' '), { combineWith: 'AND', prefix: prefixTerm, fuzzy: false, filter: (hit) => namespaces.has(hit.namespace as string) })
    for (const hit of hits) out.get(hit.namespace as string)?.add(hit.turn as number)
    return out
  }

  /**
   * Turns that match the query's terms by spelling (typo-tolerant and by prefix), best first:
   * what `palace_search` offers when nothing matched exactly. Syncs the targets first.
   */
  async suggest(workspace: string, query: ParsedQuery, targets: readonly IndexedNamespace[], limit = 5): Promise<Suggestion[]> {
    await this.searchOf(workspace, targets)
    return this.nearest(workspace, query, new Set(targets.map((target) => target.namespace)), limit)
  }

  /**
   * {@link suggest} on the workspace's index as loaded by the last sync or lookup (no I/O):
   * MiniSearch's BM25 over the query's terms, OR-combined, with prefixes and typos (one edit
   * per four characters) for Latin-like terms of 4+ characters.
   */
  nearest(workspace: string, query: ParsedQuery, namespaces: ReadonlySet<string>, limit = 5): Suggestion[] {
    const terms = [...new Set(query.keywords.flatMap((keyword) => keyword.terms))]
    const search = this.searches.get(workspace)?.search
    if (terms.length === 0 || !search) return []
    const hits: SearchResult[] = search.search(terms.join(' '), {
      combineWith: 'OR',
      prefix: prefixTerm,
      fuzzy: (term) => (prefixTerm(term) ? 0.25 : false),
      filter: (hit) => namespaces.has(hit.namespace as string),
    })
    return hits.slice(0, limit).map((hit) => ({ namespace: hit.namespace as string, turn: hit.turn as number, terms: hit.terms }))
  }

  /** Workspaces with an indexed archive (the memory browser lists their palaces). */
  async workspaces(): Promise<string[]> {
    const tables = await this.tables()
    const { palaceNamespaces } = tables.t
    return tables.read(async (db) => (await db.selectDistinct({ workspace: palaceNamespaces.workspace }).from(palaceNamespaces).orderBy(palaceNamespaces.workspace)).map((row) => row.workspace))
  }

  /** The workspace's MiniSearch, after syncing the targets and loading rows written since (by any process). */
  private async searchOf(workspace: string, targets: readonly IndexedNamespace[]): Promise<MiniSearch<TurnDoc>> {
    for (const target of targets) await this.sync(workspace, target)
    const tables = await this.tables()
    const { palaceTurns } = tables.t
    let cached = this.searches.get(workspace)
    const { rows, total } = await tables.read(async (db) => ({
      rows: await db
        .select({ id: palaceTurns.id, namespace: palaceTurns.namespace, turn: palaceTurns.turn, terms: palaceTurns.terms })
        .from(palaceTurns)
        .where(and(eq(palaceTurns.workspace, workspace), gt(palaceTurns.id, cached?.lastId ?? 0)))
        .orderBy(palaceTurns.id),
      total: (await db.select({ n: count() }).from(palaceTurns).where(eq(palaceTurns.workspace, workspace)))[0]?.n ?? 0,
    }))
    if (cached && cached.rows + rows.length !== total) {
      // Rows were deleted (a rebuild of another index version): start over.
      this.searches.delete(workspace)
      return this.searchOf(workspace, [])
    }
    if (!cached) {
      cached = { search: newTermSearch(), lastId: 0, rows: 0 }
      this.searches.set(workspace, cached)
    }
    cached.search.addAll(rows.map((row) => ({ id: `${row.namespace}\0${row.turn}`, namespace: row.namespace, turn: row.turn, terms: row.terms })))
    cached.rows += rows.length
    if (rows.length > 0) cached.lastId = rows[rows.length - 1]!.id
    return cached.search
  }
}
