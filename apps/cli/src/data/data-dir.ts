/**
 * Where the data lives and how a command opens it. The CLI works on a data dir without a
 * running host: `--data-dir`, else `DSH_MEMORY_DIR`, else the plugin's own default
 * (`$DSH_HOME/memory`, else `~/.dsh/memory`), so it finds what the DSH plugins wrote.
 */
import { join, resolve } from 'node:path'
import { type MemoryStore, openMemoryStore } from '@dsh-memory/store'
import { DATABASE_FILE, databaseOf, isWebError, locateDataDir } from '@dsh-memory/web'
import { type Command, Option } from 'commander'
import { CliError } from '../io.ts'

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
