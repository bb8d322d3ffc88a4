import { join } from 'node:path'
import { openMemoryStore, type MemoryStore } from '@dsh-memory/store'
import { treeMigrations } from './migrations.js'
import { openStoreTreeRepository, type TreeTablesHost } from './store-repository.js'
import { MemoryTree } from './tree.js'
import type { MemoryTreeInit } from './tree-contract.js'

/** The database file name inside a data directory (the store plugin's name for it). */
export const DATABASE_FILE = 'memory.db'

/** Options of {@link openMemoryTree}: an open store, or a data directory to open one in. */
export type OpenMemoryTreeOptions = Omit<MemoryTreeInit, 'repository'> & {
  /** How long a write keeps retrying while another process holds the lock (ms). Default 5000. */
  busyTimeoutMs?: number
} & ({ store: TreeTablesHost; dataDir?: undefined } | { dataDir: string; store?: undefined })

/** A tree plus what {@link openMemoryTree} opened for it. */
export interface OpenedMemoryTree {
  tree: MemoryTree
  /** The store, when this call opened it (a `dataDir` was given); closed by `close()`. */
  store: MemoryStore | undefined
  /** Close the tree, and the store if this call opened it. Idempotent. */
  close(): Promise<void>
}

/**
 * Open the memory tree over the shared store: declare the `tree` tables through the store's
 * extension seam (its migration runner applies them) and run every query on its session. Given a
 * `dataDir`, the store is opened at `<dataDir>/memory.db` too (the MCP server's case).
 */
export async function openMemoryTree(options: OpenMemoryTreeOptions): Promise<OpenedMemoryTree> {
  const { store: given, dataDir, busyTimeoutMs, ...init } = options
  let owned: ReturnType<typeof openMemoryStore> | undefined
  let store: TreeTablesHost
  if (given) {
    store = given
  } else {
    owned = openMemoryStore({ path: join(dataDir, DATABASE_FILE), extraMigrations: [treeMigrations()], ...(busyTimeoutMs === undefined ? {} : { busyTimeoutMs }) })
    store = owned
  }
  try {
    const repository = await openStoreTreeRepository(store)
    const tree = new MemoryTree({ ...init, repository })
    let closing: Promise<void> | undefined
    return {
      tree,
      store: owned,
      close: () =>
        (closing ??= (async () => {
          try {
            await tree.close()
          } finally {
            await owned?.close()
          }
        })()),
    }
  } catch (error) {
    await owned?.close()
    throw error
  }
}
