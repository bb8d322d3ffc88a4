/**
 * Where a data dir's files are. Shared by the `dsh-memory` CLI and the memory browser so both
 * find what the DSH plugins wrote the same way: an explicit dir, else `DSH_MEMORY_DIR`, else
 * the store plugin's default (`$DSH_HOME/memory`, else `~/.dsh/memory`).
 */
import { existsSync, statSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { resolveDataDir } from '@dsh-memory/store'
import { WebError } from './errors.ts'

/** The database file name inside a data dir (the store plugin's `DATABASE_FILE`). */
export const DATABASE_FILE = 'memory.db'

/**
 * The data dir to work on.
 * @param option - an explicit dir (`--data-dir`), if given.
 */
export function locateDataDir(option: string | undefined, env: Record<string, string | undefined> = process.env): string {
  if (option !== undefined && option.trim() !== '') return resolveDataDir(option, env)
  const fromEnv = env.DSH_MEMORY_DIR?.trim()
  if (fromEnv) return resolveDataDir(fromEnv, env)
  return resolveDataDir('', env)
}

/** The database path of a data dir, checked to exist. @throws WebError `not-found` */
export function databaseOf(dataDir: string): string {
  const path = join(resolve(dataDir), DATABASE_FILE)
  if (!existsSync(path) || !statSync(path).isFile()) {
    throw new WebError('not-found', `no dsh-memory database at ${path} (pass --data-dir, or set DSH_MEMORY_DIR)`)
  }
  return path
}
