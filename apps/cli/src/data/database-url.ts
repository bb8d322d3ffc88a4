/**
 * PostgreSQL URLs on the command line: how one is recognised, checked and printed. A URL may
 * carry a password (`postgres://user:secret@host/db`, or `?password=`), and everything the CLI
 * prints — progress, reports, errors, the store's own error messages — goes through
 * {@link redactDatabaseUrl} first, so a password never reaches a terminal, a CI log or a bug report.
 */
import { CliUsageError } from '../io.ts'

/** The environment variable naming the database when `--database-url` is absent. */
export const DATABASE_URL_ENV = 'DSH_MEMORY_DATABASE_URL'

/** The schemes `pg` (node-postgres) accepts. */
const SCHEMES = ['postgres:', 'postgresql:']

/** Whether `text` names a PostgreSQL database rather than a data dir. */
export function isDatabaseUrl(text: string): boolean {
  return /^postgres(?:ql)?:\/\//i.test(text.trim())
}

/**
 * `text` with every password of a database URL removed: the `user:password@` part of any
 * `scheme://` URL in it and `password=` query parameters. Works on unparseable text too (a bad
 * URL is quoted in its own error message).
 */
export function redactDatabaseUrl(text: string): string {
  return text
    .replace(/([a-z][a-z0-9+.-]*:\/\/[^\s/?#@:]*):[^\s/?#@]*@/gi, '$1@')
    .replace(/([?&]password=)[^&#\s]*/gi, '$1***')
}

/**
 * Check a PostgreSQL URL given on the command line.
 * @param source - how the user gave it (`--database-url`, `DSH_MEMORY_DATABASE_URL`, `--from`, `--to`), named in the error.
 * @returns the URL, unchanged (the store parses it).
 * @throws CliUsageError naming `source`, with the URL's password removed
 */
export function checkDatabaseUrl(value: string, source: string): string {
  const shown = JSON.stringify(redactDatabaseUrl(value))
  let url: URL
  try {
    url = new URL(value.trim())
  } catch {
    throw new CliUsageError(`${source} expects a URL such as postgres://user@host:5432/database, got ${shown}`)
  }
  if (!SCHEMES.includes(url.protocol)) throw new CliUsageError(`${source} expects a postgres:// or postgresql:// URL, got ${shown}`)
  // No host is node-postgres's default ($PGHOST, else localhost), as for libpq; but the
  // database is named, so a typo never lands the store in the server's default database.
  if (url.pathname.length <= 1) throw new CliUsageError(`${source} names no database: expected postgres://user@host:5432/database, got ${shown}`)
  return value.trim()
}

/**
 * Where a URL points, for telling two apart: the server (host, port), the database and the
 * store's PostgreSQL schema; user and password do not change which database it is.
 */
export function databaseIdentity(value: string): string {
  const url = new URL(value)
  const host = (url.hostname || url.searchParams.get('host') || '').toLowerCase()
  const port = url.port || url.searchParams.get('port') || '5432'
  return `postgres://${host === 'localhost' ? '127.0.0.1' : host}:${port}/${decodeURIComponent(url.pathname.slice(1))}`
}

/** Commands without `--data-dir` that still take the program's `--database-url` (the benches measuring PostgreSQL). */
const TAKES_DATABASE_URL = new WeakSet<object>()

/** Mark `command` as taking the program's `--database-url` (copied into its `databaseUrl` option, like a data command's). */
export function takesDatabaseUrl<C extends object>(command: C): C {
  TAKES_DATABASE_URL.add(command)
  return command
}

/** Whether {@link takesDatabaseUrl} marked `command`. */
export function acceptsDatabaseUrl(command: object): boolean {
  return TAKES_DATABASE_URL.has(command)
}
