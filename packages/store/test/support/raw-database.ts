/**
 * A raw SQLite connection to a store's file, for tests that must write behind the store's back
 * (damage a data dir the way real life does, rewind a migration). It lives with the store
 * because the store is the one package that owns the driver: the CLI's and the web's tests use
 * it instead of importing better-sqlite3 themselves.
 */
import Database from 'better-sqlite3'

export type RawDatabase = Database.Database

/** Run `fn` on a connection of its own to `path` (read-only when asked), closed afterwards. */
export function withRawDatabase<T>(path: string, fn: (db: RawDatabase) => T, options: { readonly?: boolean } = {}): T {
  const db = new Database(path, { readonly: options.readonly === true, fileMustExist: true })
  try {
    return fn(db)
  } finally {
    db.close()
  }
}
