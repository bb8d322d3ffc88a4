/**
 * Where the DSH plugin's store lives, from its row config: the local data dir (always: the
 * stage log and other plugins' local files stay there) and, with `databaseUrl`, the PostgreSQL
 * database that holds the memory instead of `memory.db`. Pure, so the rules are unit-tested
 * without a host; the adapter (`plugin.ts`) only adds the row's name to the message.
 */
import { MemoryStoreError } from './errors.ts'
import { DEFAULT_POSTGRES_SCHEMA, resolveDataDir, resolvePostgresOptions } from './options.ts'
import { resolveUser, type UserSource } from './user.ts'

/** The location fields of a store row (`memory-store` in `cordis.yml`). */
export interface StoreRowConfig {
  readonly dataDir?: string | undefined
  readonly databaseUrl?: string | undefined
  readonly schema?: string | undefined
  /** Who the host writes as; blank: `DSH_MEMORY_USER`, else git's global `user.email`, else `<os user>@<hostname>`. */
  readonly user?: string | undefined
}

/** A store row's resolved location; frozen. */
export interface StoreRowLocation {
  /** Absolute directory of the local files (`memory.log`, and `memory.db` on SQLite). */
  readonly dataDir: string
  /** The PostgreSQL database, when the row names one. */
  readonly postgres?: {
    /** The URL as configured (with any password): only the driver sees it. */
    readonly databaseUrl: string
    readonly schema: string
    /** The URL without its password, for messages, `path` and the status page. */
    readonly shown: string
  }
  /**
   * What two rows must agree on to be one memory (one host has one): the data dir, and the
   * database (server, database and schema, password left out). Safe to print.
   */
  readonly identity: string
  /** The session user of the host's store, and where it came from. */
  readonly user: string
  readonly userSource: UserSource
}

/**
 * Resolve a store row's location. An empty `databaseUrl` means SQLite in the data dir (and
 * `schema` is ignored, so a row can keep it while switching back).
 * @throws MemoryStoreError `invalid-argument` with `details.path` naming the bad field
 *   (`databaseUrl`, `schema`, `user` or `DSH_MEMORY_USER`); the message never contains the URL's password.
 */
export function resolveStoreRow(config: StoreRowConfig, env: Record<string, string | undefined> = process.env): StoreRowLocation {
  const dataDir = resolveDataDir(config.dataDir, env)
  let who: { user: string; userSource: UserSource }
  try {
    const resolved = resolveUser(config.user, env)
    who = { user: resolved.user, userSource: resolved.source }
  } catch (error) {
    // resolveUser's message starts with the field it names (`user …`, `DSH_MEMORY_USER …`).
    const field = (error as MemoryStoreError).path ?? 'user'
    throw fieldError(field, (error as Error).message.replace(/^\S+ /, ''))
  }
  const raw = config.databaseUrl ?? ''
  if (typeof raw !== 'string') throw fieldError('databaseUrl', 'must be a string (postgres://user@host:5432/database)')
  const databaseUrl = raw.trim()
  if (databaseUrl === '') return Object.freeze({ dataDir, identity: dataDir, ...who })
  const schema = config.schema ?? DEFAULT_POSTGRES_SCHEMA
  let shown: string
  try {
    shown = resolvePostgresOptions({ databaseUrl, schema }).store.path
  } catch (error) {
    // The store's own checks name the field first ("databaseUrl must …", "schema must …") and
    // never quote the URL.
    const message = error instanceof Error ? error.message : String(error)
    const field = message.startsWith('schema') ? 'schema' : 'databaseUrl'
    throw fieldError(field, message.replace(/^(databaseUrl|schema) /, ''))
  }
  // node-postgres would fall back to a database named after the user: a typo must not land
  // a team's memory in some other database.
  if (new URL(databaseUrl).pathname.length <= 1) throw fieldError('databaseUrl', `names no database: expected postgres://user@host:5432/database, got ${shown}`)
  return Object.freeze({ dataDir, postgres: Object.freeze({ databaseUrl, schema, shown }), identity: `${dataDir} on ${databaseIdentity(shown)} schema ${schema}`, ...who })
}

/** Server, port and database of a (password-free) URL: the user does not change which database it is. */
function databaseIdentity(shown: string): string {
  const url = new URL(shown)
  const host = url.hostname || url.searchParams.get('host') || 'localhost'
  return `postgres://${host}:${url.port || '5432'}${url.pathname}`
}

function fieldError(path: string, message: string): Error {
  return new MemoryStoreError('invalid-argument', `${path}: ${message}`, { path })
}

/** What every store row of one host must agree on (one host has one memory, written as one user). */
export interface StoreRowAgreement {
  /** {@link StoreRowLocation.identity}: the data dir and the database. */
  readonly identity: string
  /** The resolved user ({@link StoreRowLocation.user}). */
  readonly user: string
  /** The row's `workspaceIdentity` (`git-remote` when not set). */
  readonly workspaceIdentity: string
}

/** A field two store rows of one host disagree on, with both rows' values (safe to print). */
export interface StoreRowDisagreement {
  readonly field: 'dataDir' | 'databaseUrl' | 'user' | 'workspaceIdentity'
  readonly mine: string
  readonly theirs: string
}

/**
 * The first field on which two store rows of one host disagree, or `undefined` when they are
 * one memory. The location is named `databaseUrl` when either row is on PostgreSQL, else `dataDir`.
 */
export function rowDisagreement(mine: StoreRowAgreement, theirs: StoreRowAgreement): StoreRowDisagreement | undefined {
  if (mine.identity !== theirs.identity) {
    const field = [mine.identity, theirs.identity].some((identity) => identity.includes(' on postgres://')) ? 'databaseUrl' : 'dataDir'
    return { field, mine: mine.identity, theirs: theirs.identity }
  }
  if (mine.user !== theirs.user) return { field: 'user', mine: mine.user, theirs: theirs.user }
  if (mine.workspaceIdentity !== theirs.workspaceIdentity) return { field: 'workspaceIdentity', mine: mine.workspaceIdentity, theirs: theirs.workspaceIdentity }
  return undefined
}
