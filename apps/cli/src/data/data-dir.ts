/**
 * Where the data lives and how a command opens it. The CLI works without a running host on
 * either backend:
 * - a PostgreSQL database: `--database-url`, else `DSH_MEMORY_DATABASE_URL` (unless `--data-dir`
 *   is given: an explicit flag beats the environment);
 * - a SQLite data dir: `--data-dir`, else `DSH_MEMORY_DIR`, else the plugin's own default
 *   (`$DSH_HOME/memory`, else `~/.dsh/memory`), so it finds what the DSH plugins wrote.
 */
import { join, resolve } from 'node:path'
import { checkPostgresSchema, DEFAULT_POSTGRES_SCHEMA, isMemoryStoreError, type MemoryStore, type MemoryStoreError, openMemoryStore, openStore, resolveUser } from '@dsh-memory/store'
import { DATABASE_FILE, databaseOf, isWebError, locateDataDir } from '@dsh-memory/web'
import { type Command, Option } from 'commander'
import { CliError, CliUsageError } from '../io.ts'
import { checkDatabaseUrl, DATABASE_URL_ENV, redactDatabaseUrl } from './database-url.ts'

// One rule for where data lives, shared with the memory browser (`dsh-memory serve`).
export { DATABASE_FILE }

/** The `--data-dir` option every data command takes. */
export function dataDirOption(): Option {
  return new Option('--data-dir <dir>', 'the data dir holding memory.db (default: $DSH_MEMORY_DIR, else $DSH_HOME/memory, else ~/.dsh/memory)')
}

/** Add `--data-dir` to a command. */
export function withDataDir(command: Command): Command {
  return command.addOption(dataDirOption())
}

/**
 * The data dir a command works on.
 * @param option - the `--data-dir` value, if given.
 */
export function resolveCliDataDir(option: string | undefined, env: Record<string, string | undefined> = process.env): string {
  return locateDataDir(option, env)
}

/** The database path of a data dir, checked to exist. @throws CliError `not-found` */
export function existingDatabase(dataDir: string): string {
  try {
    return databaseOf(dataDir)
  } catch (error) {
    if (isWebError(error) && error.code === 'not-found') throw new CliError('not-found', error.message, undefined, { cause: error })
    throw error
  }
}

/**
 * Open the store of a data dir. Read commands open it read-only, so they never migrate or
 * write; `create` lets `import` start a fresh data dir.
 * @throws CliError `not-found` when the database does not exist (and `create` is not set)
 */
export function openDataStore(dataDir: string, options: { readonly?: boolean; create?: boolean; user?: string | undefined } = {}): MemoryStore {
  const path = options.create ? join(resolve(dataDir), DATABASE_FILE) : existingDatabase(dataDir)
  return openMemoryStore({ path, readonly: options.readonly === true, actor: 'cli', ...(options.user === undefined ? {} : { user: options.user }) })
}

/** The store a command works on: a SQLite data dir or a PostgreSQL database, and who works on it. */
export type DataSource = (
  | { readonly kind: 'sqlite'; readonly dataDir: string; readonly label: string }
  | {
      readonly kind: 'postgres'
      readonly databaseUrl: string
      /** The URL without its password: what is printed. */
      readonly label: string
      /** How the user named it (`--database-url` or the environment variable), for errors. */
      readonly origin: string
      /** The PostgreSQL schema of the store's tables (`--schema`); the store's default when absent. */
      readonly schema?: string
    }
) & {
  /**
   * The store session's user (`--user`, else `DSH_MEMORY_USER`, else git's global
   * `user.email`, else `<os user>@<hostname>`): the one whose global memories the command
   * sees, and who its writes are stamped with. Absent: the store's default.
   */
  readonly user?: string
}

/** The options a data command reads its source from (`--database-url` and `--user` are the program's, copied in by `program.ts`). */
export interface DataSourceOptions {
  readonly dataDir?: string
  readonly databaseUrl?: string
  /** The program's `--schema`. */
  readonly schema?: string
  readonly user?: string
}

/** The session user of a command: `--user`, else `DSH_MEMORY_USER`, else the default identity. @throws CliUsageError naming the flag or variable */
export function resolveCliUser(flag: string | undefined, env: Record<string, string | undefined> = process.env): string {
  try {
    return resolveUser(flag, env).user
  } catch (error) {
    if (!isMemoryStoreError(error, 'invalid-argument')) throw error
    const named = (error as MemoryStoreError).path === 'DSH_MEMORY_USER' ? 'DSH_MEMORY_USER' : '--user'
    throw new CliUsageError(`${named}: ${(error as Error).message.replace(/^\S+ /, '')}`, { cause: error })
  }
}

/**
 * A PostgreSQL source of a checked URL and schema (the store's own check, as for the store row's `schema`).
 * @throws CliUsageError naming `origin`, or `schema.origin` for a bad schema name
 */
export function postgresSource(databaseUrl: string, origin: string, schema?: { readonly name: string; readonly origin: string }): DataSource {
  const checked = checkDatabaseUrl(databaseUrl, origin)
  if (schema === undefined) return { kind: 'postgres', databaseUrl: checked, label: redactDatabaseUrl(databaseUrl.trim()), origin }
  try {
    checkPostgresSchema(schema.name)
  } catch (error) {
    throw new CliUsageError(`${schema.origin} ${(error as Error).message.replace(/^schema /, '')}`, { cause: error })
  }
  // The schema is part of which store it is: the label says it unless it is the default.
  const label = `${redactDatabaseUrl(databaseUrl.trim())}${schema.name === DEFAULT_POSTGRES_SCHEMA ? '' : ` (schema ${schema.name})`}`
  return { kind: 'postgres', databaseUrl: checked, label, origin, schema: schema.name }
}

/**
 * The source a command works on (see the module comment for the order).
 * @throws CliUsageError for a bad URL (naming the flag or the variable) or both flags at once
 */
export function resolveDataSource(options: DataSourceOptions, env: Record<string, string | undefined> = process.env): DataSource {
  const user = resolveCliUser(options.user, env)
  const flag = options.databaseUrl
  const schema = options.schema === undefined ? undefined : { name: options.schema, origin: '--schema' }
  if (flag !== undefined) {
    if (options.dataDir !== undefined) throw new CliUsageError('--database-url and --data-dir name two different stores; give one of them')
    return { ...postgresSource(flag, '--database-url', schema), user }
  }
  const fromEnv = env[DATABASE_URL_ENV]?.trim()
  if (fromEnv && options.dataDir === undefined) return { ...postgresSource(fromEnv, DATABASE_URL_ENV, schema), user }
  if (schema !== undefined) throw new CliUsageError(`--schema applies to a PostgreSQL database only (--database-url or ${DATABASE_URL_ENV}); a data dir has no schemas`)
  const dataDir = resolveCliDataDir(options.dataDir, env)
  return { kind: 'sqlite', dataDir, label: dataDir, user }
}

/**
 * Open a source's store (see {@link openDataStore} for the SQLite options; on PostgreSQL
 * `create` changes nothing: the store creates its schema when opened writable).
 * @throws CliUsageError for a URL the store rejects (naming the flag or variable); CliError
 *   `not-found` for a missing SQLite database; the store's error (`unavailable`, `schema-too-old`, …) otherwise
 */
export async function openSourceStore(source: DataSource, options: { readonly?: boolean; create?: boolean } = {}): Promise<MemoryStore> {
  if (source.kind === 'sqlite') return openDataStore(source.dataDir, { ...options, user: source.user })
  try {
    return await openStore({ databaseUrl: source.databaseUrl, ...(source.schema ? { schema: source.schema } : {}), readonly: options.readonly === true, actor: 'cli', ...(source.user === undefined ? {} : { user: source.user }) })
  } catch (error) {
    if (isMemoryStoreError(error, 'invalid-argument')) {
      throw new CliUsageError(`${source.origin}: ${redactDatabaseUrl((error as Error).message)}`, { cause: error })
    }
    throw error
  }
}

/** Run `fn` with an open store and close it afterwards, whatever happens. */
export async function withStore<T>(source: DataSource, options: { readonly?: boolean; create?: boolean }, fn: (store: MemoryStore) => Promise<T>): Promise<T> {
  const store = await openSourceStore(source, options)
  try {
    return await fn(store)
  } finally {
    await store.close()
  }
}
