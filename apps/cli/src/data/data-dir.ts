/**
 * Where the data lives and how a command opens it. The CLI works on a data dir without a
 * running host: `--data-dir`, else `DSH_MEMORY_DIR`, else the plugin's own default
 * (`$DSH_HOME/memory`, else `~/.dsh/memory`), so it finds what the DSH plugins wrote.
 */
import { existsSync, statSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { type MemoryStore, openMemoryStore, resolveDataDir } from '@dsh-memory/store'
import { type Command, Option } from 'commander'
import { CliError } from '../io.ts'

/** The database file name inside a data dir (the store plugin's `DATABASE_FILE`). */
export const DATABASE_FILE = 'memory.db'

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
  if (option !== undefined && option.trim() !== '') return resolveDataDir(option, env)
  const fromEnv = env.DSH_MEMORY_DIR?.trim()
  if (fromEnv) return resolveDataDir(fromEnv, env)
  return resolveDataDir('', env)
}

/** The database path of a data dir, checked to exist. @throws CliError `not-found` */
export function existingDatabase(dataDir: string): string {
  const path = join(resolve(dataDir), DATABASE_FILE)
  if (!existsSync(path) || !statSync(path).isFile()) {
    throw new CliError('not-found', `no dsh-memory database at ${path} (pass --data-dir, or set DSH_MEMORY_DIR)`)
  }
  return path
}

/**
 * Open the store of a data dir. Read commands open it read-only, so they never migrate or
 * write; `create` lets `import` start a fresh data dir.
 * @throws CliError `not-found` when the database does not exist (and `create` is not set)
 */
export function openDataStore(dataDir: string, options: { readonly?: boolean; create?: boolean } = {}): MemoryStore {
  const path = options.create ? join(resolve(dataDir), DATABASE_FILE) : existingDatabase(dataDir)
  return openMemoryStore({ path, readonly: options.readonly === true, actor: 'cli' })
}

/** Run `fn` with an open store and close it afterwards, whatever happens. */
export async function withStore<T>(dataDir: string, options: { readonly?: boolean; create?: boolean }, fn: (store: MemoryStore) => Promise<T>): Promise<T> {
  const store = openDataStore(dataDir, options)
  try {
    return await fn(store)
  } finally {
    await store.close()
  }
}
