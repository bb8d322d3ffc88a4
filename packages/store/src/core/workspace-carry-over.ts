/**
 * Carry-over from path workspaces to project ids (see `workspace-id.ts`). Rows written before a
 * workspace was its git remote are keyed by the session's absolute path; once that path
 * resolves to `git:<host>/<o>/<r>` they are re-keyed, in place, to the new id: one audited
 * write per table set and path, so nothing a user had is lost or needs an alias lookup on every
 * read. Idempotent (a re-keyed row is no longer under the path), so it simply runs at every
 * start: a path another host of the team re-keyed already has nothing left.
 *
 * Only paths that exist on this machine are resolved: a path written by another machine of
 * the team is that machine's to re-key (here it might be some unrelated directory).
 *
 * A row whose new key is already taken (another clone wrote the same unique key under the git
 * id first) stays under its path: the unique keys involved are derived bookkeeping (a layer
 * revision, a counter row, a binding), and keeping the row is safer than merging it.
 *
 * Backend-neutral: it runs on a {@link PackageTables} handle (the store's session, its writer
 * lock and its audit) with SQL both dialects accept.
 */
import { isAbsolute } from 'node:path'
import { sql, type SQL } from 'drizzle-orm'
import type { PackageDatabase, PackageTables, PackageTablesDeclaration, PackageTablesHost, WorkspaceKeyColumn } from './package-tables.ts'
import { isGitWorkspace } from './workspace-id.ts'

/** One re-keyed path. */
export interface WorkspaceMove {
  readonly from: string
  readonly to: string
  /** Rows re-keyed, over all columns. */
  readonly rows: number
}

/** The store's own workspace-keyed columns. */
export const STORE_WORKSPACE_KEYS: readonly WorkspaceKeyColumn[] = Object.freeze([
  { table: 'store_conversations', column: 'workspace' },
  { table: 'store_memories', column: 'workspace', changeEntity: 'memory' },
  { table: 'store_scenes', column: 'workspace', changeEntity: 'scene' },
  { table: 'store_persona', column: 'workspace', unique: ['scope'] },
  { table: 'store_layer_revisions', column: 'layer_key', prefix: 'workspace:', unique: [] },
])

/** The owner the store's own carry-over writes audit rows as (no tables, no migrations). */
const STORE_OWNER = 'workspace-carry-over'
const NO_MIGRATIONS = { owner: STORE_OWNER, migrations: [] }
const STORE_DECLARATION: PackageTablesDeclaration = { migrations: NO_MIGRATIONS, postgres: { migrations: NO_MIGRATIONS, schema: {} } }

/**
 * Re-key the store's own rows (conversations, memories, scenes, persona, layer revisions) from
 * paths that `resolve` maps to a git id. Returns the moves made.
 */
export async function carryOverStoreWorkspaces(store: PackageTablesHost, resolve: (path: string) => string, now: () => number = Date.now): Promise<WorkspaceMove[]> {
  return carryOverWorkspaces(await store.tables(STORE_DECLARATION), STORE_WORKSPACE_KEYS, resolve, now)
}

/**
 * Re-key a package's workspace columns (`keys`) from paths `resolve` maps to a git id: one
 * write per path (all columns together), audited as `<owner>.workspace.move` with the new id
 * and the old path's digest. Rows whose new unique key is taken stay (see the module comment).
 */
export async function carryOverWorkspaces(
  tables: PackageTables<Record<string, unknown>>,
  keys: readonly WorkspaceKeyColumn[],
  resolve: (path: string) => string,
  now: () => number = Date.now,
): Promise<WorkspaceMove[]> {
  const run = runner(tables.dialect)
  const paths = await tables.read(async (db) => {
    const found = new Set<string>()
    for (const key of keys) {
      const prefix = key.prefix ?? ''
      const rows = await run.all(db, sql`SELECT DISTINCT ${sql.identifier(key.column)} AS value FROM ${sql.identifier(key.table)} WHERE ${sql.identifier(key.column)} LIKE ${`${escapeLike(prefix)}/%`} ESCAPE '!'`)
      for (const row of rows) {
        const value = String(row.value ?? '').slice(prefix.length)
        if (isAbsolute(value)) found.add(value)
      }
    }
    return [...found].sort()
  })
  const moves: WorkspaceMove[] = []
  for (const from of paths) {
    const to = resolve(from)
    if (to === from || !isGitWorkspace(to)) continue
    const rows = await tables.write(
      async (db) => {
        let moved = 0
        for (const key of keys) moved += await moveColumn(run, db, key, from, to, now())
        return moved
      },
      { audit: { op: `${tables.owner}.workspace.move`, entityId: `${to}|${from}` } },
    )
    moves.push({ from, to, rows })
  }
  return moves
}

/** Where {@link WorkspaceCarryOver} reports what it did. */
export interface CarryOverReports {
  /** Rows of one path moved to its id (`owner`: `store` for the store's own rows, else the package). */
  moved?(owner: string, move: WorkspaceMove): void
  /** A carry-over failed: the rows stay under their paths (nothing is lost) and the next start retries. */
  failed?(owner: string, error: unknown): void
}

/**
 * The carry-over a process runs when it opens a store for sessions in directories (the DSH
 * host's store service at start, the tree's MCP server): {@link WorkspaceCarryOver.store} moves
 * the store's own rows, {@link WorkspaceCarryOver.tables} opens a package's tables and moves their
 * declared `workspaceKeys` the first time that package opens them through this object. Never
 * throws for a failed move: it is reported and retried at the next start.
 */
export class WorkspaceCarryOver {
  // Plain fields, not `#`: the store service holds this object and Cordis hands out proxies.
  // No parameter properties: the store's sources also run under Node's type stripping.
  private readonly done = new Set<string>()
  private readonly resolve: (path: string) => string
  private readonly reports: CarryOverReports

  /**
   * @param resolve - the workspace id of a directory (`workspaceOf` with the host's identity);
   *   a path it maps to itself or to another path stays.
   */
  constructor(resolve: (path: string) => string, reports: CarryOverReports = {}) {
    this.resolve = resolve
    this.reports = reports
  }

  /** Re-key the store's own rows (see {@link carryOverStoreWorkspaces}). */
  async store(host: PackageTablesHost): Promise<void> {
    await this.run('store', () => carryOverStoreWorkspaces(host, this.resolve))
  }

  /** A package's tables on `host`; their `workspaceKeys` are carried over the first time the owner opens them here. */
  async tables<TSchema extends Record<string, unknown> = Record<string, never>>(host: PackageTablesHost, declaration: PackageTablesDeclaration<TSchema>): Promise<PackageTables<TSchema>> {
    const tables = await host.tables(declaration)
    const keys = declaration.workspaceKeys
    if (keys?.length && !this.done.has(tables.owner)) {
      this.done.add(tables.owner)
      await this.run(tables.owner, () => carryOverWorkspaces(tables as unknown as PackageTables<Record<string, unknown>>, keys, this.resolve))
    }
    return tables
  }

  /** `host` seen through {@link tables}: hand it to a package that opens its own tables. */
  host(host: PackageTablesHost): PackageTablesHost {
    return { tables: (declaration) => this.tables(host, declaration) }
  }

  private async run(owner: string, move: () => Promise<WorkspaceMove[]>): Promise<void> {
    let moves: WorkspaceMove[]
    try {
      moves = await move()
    } catch (error) {
      this.reports.failed?.(owner, error)
      return
    }
    for (const done of moves) this.reports.moved?.(owner, done)
  }
}

async function moveColumn(run: Runner, db: PackageDatabase<Record<string, unknown>>, key: WorkspaceKeyColumn, from: string, to: string, at: number): Promise<number> {
  const table = sql.identifier(key.table)
  const column = sql.identifier(key.column)
  const prefix = key.prefix ?? ''
  const source = sql`${table}.${column} = ${prefix + from}`
  let movable = source
  if (key.unique !== undefined) {
    // The row stays when its new unique key is taken; `other` is the same table, aliased.
    const same = key.unique.map((name) => sql` AND other.${sql.identifier(name)} = ${table}.${sql.identifier(name)}`)
    movable = sql`${source} AND NOT EXISTS (SELECT 1 FROM ${table} AS other WHERE other.${column} = ${prefix + to}${sql.join(same, sql``)})`
  }
  if (key.changeEntity) {
    await run.exec(db, sql`INSERT INTO store_changes (entity, entity_id, op, at) SELECT CAST(${key.changeEntity} AS TEXT), id, 'update', CAST(${at} AS BIGINT) FROM ${table} WHERE ${movable}`)
  }
  return run.exec(db, sql`UPDATE ${table} SET ${column} = CAST(${prefix + to} AS TEXT) WHERE ${movable}`)
}

/** `%`, `_` and the escape character itself, escaped for `LIKE … ESCAPE '!'`. */
function escapeLike(text: string): string {
  return text.replace(/[!%_]/g, (char) => `!${char}`)
}

interface Runner {
  all(db: PackageDatabase<Record<string, unknown>>, query: SQL): Promise<Record<string, unknown>[]>
  /** Run a write; the number of rows it changed. */
  exec(db: PackageDatabase<Record<string, unknown>>, query: SQL): Promise<number>
}

/** Raw SQL on a package handle: better-sqlite3's drizzle answers `all`/`run`, node-postgres's `execute`. */
function runner(dialect: PackageTables<Record<string, unknown>>['dialect']): Runner {
  if (dialect === 'sqlite') {
    return {
      all: async (db, query) => db.all<Record<string, unknown>>(query),
      exec: async (db, query) => db.run(query).changes,
    }
  }
  const execute = (db: PackageDatabase<Record<string, unknown>>, query: SQL) =>
    (db as unknown as { execute(query: SQL): Promise<{ rows: Record<string, unknown>[]; rowCount: number | null }> }).execute(query)
  return {
    all: async (db, query) => (await execute(db, query)).rows,
    exec: async (db, query) => (await execute(db, query)).rowCount ?? 0,
  }
}
