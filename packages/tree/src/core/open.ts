import { join } from 'node:path'
import { openMemoryStore, openStore, type MemoryStore, type WorkspaceCarryOver } from '@dsh-memory/store'
import { treeMigrations } from './migrations.js'
import { openStoreTreeRepository, type TreeTablesHost } from './store-repository.js'
import { MemoryTree } from './tree.js'
import type { MemoryTreeInit } from './tree-contract.js'

/** The database file name inside a data directory (the store plugin's name for it). */
export const DATABASE_FILE = 'memory.db'

/**
 * Options of {@link openMemoryTree}: an open store, a data directory to open one in, or a
 * PostgreSQL database to open one on.
 */
export type OpenMemoryTreeOptions = Omit<MemoryTreeInit, 'repository'> & {
  /** How long a write keeps retrying while another process holds the lock (ms). Default 5000. */
  busyTimeoutMs?: number
  /**
   * With `dataDir` or `databaseUrl`: run this carry-over on the store this call opens, as the
   * host's store service does at start (the store's rows, then the tree's bindings and chat),
   * so rows keyed by a directory path move to its git workspace id. A given `store` is carried
   * over by whoever opened it.
   */
  carryOver?: WorkspaceCarryOver
} & (
    | { store: TreeTablesHost; dataDir?: undefined; databaseUrl?: undefined }
    | { dataDir: string; store?: undefined; databaseUrl?: undefined }
    | {
        /** `postgres://…`: the store (and the tree's tables) on this PostgreSQL database. */
        databaseUrl: string
        /** The store's PostgreSQL schema (namespace); the store's default when absent. */
        schema?: string
        store?: undefined
        dataDir?: undefined
      }
  )

/** A tree plus what {@link openMemoryTree} opened for it. */
export interface OpenedMemoryTree {
  tree: MemoryTree
  /** The store, when this call opened it (a `dataDir` or `databaseUrl` was given); closed by `close()`. */
  store: MemoryStore | undefined
  /** Close the tree, and the store if this call opened it. Idempotent. */
  close(): Promise<void>
}

/**
 * Open the memory tree over the shared store: declare the `tree` tables through the store's
 * extension seam (its migration runner applies them, on either backend) and run every query on
 * its session. Given a `dataDir` the store is opened at `<dataDir>/memory.db`, given a
 * `databaseUrl` on that PostgreSQL database (the MCP server's cases).
 */
export async function openMemoryTree(options: OpenMemoryTreeOptions): Promise<OpenedMemoryTree> {
  const { store: given, dataDir, databaseUrl, busyTimeoutMs, carryOver, ...rest } = options
  const { schema, ...init } = rest as typeof rest & { schema?: string }
  const busy = busyTimeoutMs === undefined ? {} : { busyTimeoutMs }
  let owned: Awaited<ReturnType<typeof openStore>> | undefined
  let store: TreeTablesHost
  if (given) {
    store = given
  } else {
    owned =
      databaseUrl !== undefined
        ? await openStore({ databaseUrl, ...(schema === undefined ? {} : { schema }), ...busy })
        : openMemoryStore({ path: join(dataDir, DATABASE_FILE), extraMigrations: [treeMigrations()], ...busy })
    store = owned
  }
  try {
    if (owned && carryOver) {
      await carryOver.store(owned)
      store = carryOver.host(owned)
    }
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
