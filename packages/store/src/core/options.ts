import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import { MemoryStoreError } from './errors.ts'
import { validateMigrationSet } from './migrations.ts'
import { DEFAULT_TEXT_LIMITS, type TextLimits } from './text.ts'
import { resolveUser } from './user.ts'
import type { MigrationSet } from './types-meta.ts'

/** Options of {@link openMemoryStore}. */
export interface MemoryStoreOptions {
  /** Database file (parent directories are created), or `':memory:'` for a private in-memory store. */
  path: string
  /** Open without writing anything: no migrations (fails with `schema-too-old` if some are pending), no index file. */
  readonly?: boolean
  /** The clock, epoch ms. Default `Date.now`. Tests inject a fake one. */
  now?: () => number
  /**
   * How long a call waits for another process's write lock before failing with `busy`.
   * The wait does not block the event loop (SQLite waits at most 50 ms at a time; the rest
   * is an async, jittered retry). Default 30000.
   */
  busyTimeoutMs?: number
  /**
   * How often `store.changes` reads the change log while it has subscribers and nothing woke
   * it (on PostgreSQL the fallback behind its notifications), ms; 0: never (only
   * notifications and `catchUp()`). Default {@link DEFAULT_CHANGE_POLL_MS}.
   */
  changePollMs?: number
  /**
   * SQLite's page cache of this connection, MiB (pages are cached only as they are read, so a
   * small database never fills it). Default {@link DEFAULT_CACHE_MIB}: at a million messages a
   * search reads tens of thousands of rows, and SQLite's own 2 MiB default sends most of them
   * back to the OS.
   */
  cacheMiB?: number
  /** Other packages' migrations to apply (in one transaction with the store's own). */
  extraMigrations?: readonly MigrationSet[]
  /** Per-field length caps; see {@link TextLimits}. */
  limits?: Partial<TextLimits>
  /** Audit actor for writes that do not name one. Default none. */
  actor?: string
  /**
   * Who this session writes as: stamped on every row it writes (`createdBy`) and the one its
   * reads show private global memories, scenes and persona of. Default (see `resolveUser`):
   * `DSH_MEMORY_USER`, else git's global `user.email`, else `<os user>@<hostname>`.
   */
  user?: string
  /**
   * @deprecated Ignored. The search index now lives in the database (SQLite FTS5); a
   * `<path>.search-index` file left by an older version is deleted at open.
   */
  persistSearchIndex?: boolean
}

/** {@link MemoryStoreOptions} after defaults and checks; frozen. */
export interface ResolvedStoreOptions {
  readonly path: string
  readonly readonly: boolean
  readonly now: () => number
  readonly busyTimeoutMs: number
  readonly changePollMs: number
  readonly cacheMiB: number
  readonly extraMigrations: readonly MigrationSet[]
  readonly limits: Readonly<TextLimits>
  readonly actor: string | null
  /** The session's user (never empty); see {@link MemoryStoreOptions.user}. */
  readonly user: string
  /** Where versions before FTS5 kept their search index file (deleted at open when present). */
  readonly legacyIndexPath: string | null
}

/** The default busy timeout, in milliseconds. */
export const DEFAULT_BUSY_TIMEOUT_MS = 30_000
/** How often a subscribed change feed reads the change log by default, ms. */
export const DEFAULT_CHANGE_POLL_MS = 2000
/** The default page cache per connection, in MiB. */
export const DEFAULT_CACHE_MIB = 64
/** The largest page cache `cacheMiB` accepts. */
export const MAX_CACHE_MIB = 4096

const MIN_LIMIT = 64

/**
 * Apply defaults and cross-field rules to store options.
 * @throws MemoryStoreError `invalid-argument`
 */
export function resolveStoreOptions(options: MemoryStoreOptions): ResolvedStoreOptions {
  if (!options || typeof options !== 'object') throw new MemoryStoreError('invalid-argument', 'openMemoryStore needs an options object with a path')
  const { path } = options
  if (typeof path !== 'string' || path.trim().length === 0) throw new MemoryStoreError('invalid-argument', 'path must be a non-empty string')
  const inMemory = path === ':memory:'
  const cacheMiB = options.cacheMiB ?? DEFAULT_CACHE_MIB
  if (!Number.isSafeInteger(cacheMiB) || cacheMiB < 1 || cacheMiB > MAX_CACHE_MIB) throw new MemoryStoreError('invalid-argument', `cacheMiB must be an integer from 1 to ${MAX_CACHE_MIB}`)
  const absolute = inMemory ? path : resolve(path)
  return resolveCommonOptions(options, { path: absolute, cacheMiB, legacyIndexPath: inMemory ? null : `${absolute}.search-index` })
}

/** Options of `openPostgresStore`: the SQLite options without the file's, plus the server's. */
export interface PostgresStoreOptions extends Omit<MemoryStoreOptions, 'path' | 'cacheMiB'> {
  /**
   * `postgres://user:password@host:port/database` (or `postgresql://`); query parameters such as
   * `sslmode` pass to the driver. The password never appears in `store.path` or in errors.
   */
  databaseUrl: string
  /**
   * The PostgreSQL schema (namespace) the store's tables live in, created when missing.
   * Default {@link DEFAULT_POSTGRES_SCHEMA}. Several stores can share one database in
   * different schemas.
   */
  schema?: string
}

/** The default PostgreSQL schema of the store's tables. */
export const DEFAULT_POSTGRES_SCHEMA = 'dsh_memory'
const SCHEMA_PATTERN = /^[a-z_][a-z0-9_]{0,62}$/

/**
 * Check a PostgreSQL schema name the way the store does (`openStore`'s `schema`, the store
 * row's), for front ends that take one (`--schema` of the CLI and `dsh-memory-tree-mcp`).
 * @returns the name
 * @throws MemoryStoreError `invalid-argument` whose message starts with `schema ` (callers put their flag's name first)
 */
export function checkPostgresSchema(schema: unknown): string {
  if (typeof schema !== 'string' || !SCHEMA_PATTERN.test(schema)) {
    throw new MemoryStoreError('invalid-argument', `schema must match ${SCHEMA_PATTERN} (lower-case letters, digits, _), got ${JSON.stringify(schema)}`, { path: 'schema' })
  }
  return schema
}

/** {@link PostgresStoreOptions} after checks: the shared resolved options plus the server's. */
export interface ResolvedPostgresOptions {
  readonly store: ResolvedStoreOptions
  /** The URL as given (with its password): only the driver sees it. */
  readonly databaseUrl: string
  readonly schema: string
  /** host:port (or socket directory) for messages. */
  readonly server: string
}

/**
 * Apply defaults and checks to PostgreSQL store options. `store.path` is the URL without its
 * password; `cacheMiB` does not apply (the server has its own cache) and keeps the default.
 * @throws MemoryStoreError `invalid-argument` naming `databaseUrl` or `schema`
 */
export function resolvePostgresOptions(options: PostgresStoreOptions): ResolvedPostgresOptions {
  if (!options || typeof options !== 'object') throw new MemoryStoreError('invalid-argument', 'openPostgresStore needs an options object with a databaseUrl')
  const { databaseUrl } = options
  let url: URL
  try {
    if (typeof databaseUrl !== 'string') throw new TypeError('not a string')
    url = new URL(databaseUrl)
  } catch {
    throw new MemoryStoreError('invalid-argument', 'databaseUrl must be a postgres:// URL (postgres://user:password@host:port/database)')
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new MemoryStoreError('invalid-argument', `databaseUrl must start with postgres:// or postgresql://, got ${url.protocol}//`)
  }
  const schema = checkPostgresSchema(options.schema ?? DEFAULT_POSTGRES_SCHEMA)
  const redacted = new URL(url.href)
  if (redacted.password) redacted.password = ''
  // node-postgres also reads a password from the query string.
  redacted.searchParams.delete('password')
  // A socket directory given as ?host=/run/postgresql counts as the server too.
  const socket = url.searchParams.get('host')
  const server = url.hostname ? `${url.hostname}:${url.port || '5432'}` : `${socket ?? 'localhost'}:${url.port || '5432'}`
  const store = resolveCommonOptions(options, { path: redacted.href, cacheMiB: DEFAULT_CACHE_MIB, legacyIndexPath: null })
  return Object.freeze({ store, databaseUrl, schema, server })
}

/** The options every backend shares (clock, busy timeout, migrations, limits, actor, user). */
function resolveCommonOptions(
  options: Omit<MemoryStoreOptions, 'path' | 'cacheMiB'>,
  location: Pick<ResolvedStoreOptions, 'path' | 'cacheMiB' | 'legacyIndexPath'>,
): ResolvedStoreOptions {
  const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS
  if (!Number.isSafeInteger(busyTimeoutMs) || busyTimeoutMs < 0) throw new MemoryStoreError('invalid-argument', 'busyTimeoutMs must be a non-negative integer')
  const changePollMs = options.changePollMs ?? DEFAULT_CHANGE_POLL_MS
  if (!Number.isSafeInteger(changePollMs) || changePollMs < 0) throw new MemoryStoreError('invalid-argument', 'changePollMs must be a non-negative integer', { path: 'changePollMs' })
  const now = options.now ?? Date.now
  if (typeof now !== 'function') throw new MemoryStoreError('invalid-argument', 'now must be a function')
  const limits = { ...DEFAULT_TEXT_LIMITS }
  for (const [key, value] of Object.entries(options.limits ?? {})) {
    if (!(key in DEFAULT_TEXT_LIMITS)) throw new MemoryStoreError('invalid-argument', `unknown text limit '${key}'`)
    if (value === undefined) continue
    if (!Number.isSafeInteger(value) || value < MIN_LIMIT) throw new MemoryStoreError('invalid-argument', `limits.${key} must be an integer >= ${MIN_LIMIT}`)
    limits[key as keyof TextLimits] = value
  }
  const extraMigrations = [...(options.extraMigrations ?? [])]
  for (const set of extraMigrations) {
    validateMigrationSet(set)
    if (set.owner === 'store') throw new MemoryStoreError('invalid-argument', "migration owner 'store' is reserved for @dsh-memory/store")
  }
  if (options.actor !== undefined && (typeof options.actor !== 'string' || options.actor.length === 0)) {
    throw new MemoryStoreError('invalid-argument', 'actor must be a non-empty string')
  }
  const { user } = resolveUser(options.user)
  return Object.freeze({
    path: location.path,
    readonly: options.readonly === true,
    now,
    busyTimeoutMs,
    changePollMs,
    cacheMiB: location.cacheMiB,
    extraMigrations: Object.freeze(extraMigrations),
    limits: Object.freeze(limits),
    actor: options.actor ?? null,
    user,
    legacyIndexPath: location.legacyIndexPath,
  })
}

/**
 * Where the DSH plugin keeps its data: `configured` when non-empty (a leading `~` is
 * expanded), else `$DSH_HOME/memory`, else `~/.dsh/memory`. A blank `DSH_HOME` counts as
 * unset, mirroring the host's own home resolution. Returns an absolute path.
 */
export function resolveDataDir(configured: string | undefined, env: Record<string, string | undefined> = process.env): string {
  const explicit = configured?.trim()
  if (explicit) return resolve(expandHome(explicit))
  const home = env.DSH_HOME?.trim()
  return resolve(home ? expandHome(home) : join(homedir(), '.dsh'), 'memory')
}

function expandHome(path: string): string {
  if (path === '~') return homedir()
  if (path.startsWith('~/') || path.startsWith('~\\')) return join(homedir(), path.slice(2))
  return path
}
