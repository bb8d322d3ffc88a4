/**
 * The contract harness: every test in `test/contract/` runs once per backend with
 * `describe.each(backends)`. `open()` gives a store on a fresh database (SQLite: a new file;
 * PostgreSQL: a new schema on the run's throwaway cluster, see `support/pg-global-setup.ts`),
 * closed after the test; `reopen(store)` opens a second store on the same database, as a
 * second process would; `location(store)` is what a real child process passes to `openStore`.
 *
 * Other packages' tests use it too (a plugin's repository tests on both backends): import it by
 * relative path (`../../store/test/contract/backends.ts`), add
 * `globalSetup: ['../store/test/support/pg-global-setup.ts']` to the package's vitest config
 * (it provides `inject('pgUrl')`) and `allowImportingTsExtensions` to its tsconfig (this file
 * and the store's sources import siblings as `./x.ts`). Stores opened here come from the
 * store's sources, not its built `dist`; they meet the package's code through the public
 * interfaces only, and errors are recognised by shape (`isMemoryStoreError`), so both agree.
 */
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import { inject } from 'vitest'
import { openStore } from '../../src/index.ts'
import type { MemoryStoreOptions, PostgresStoreOptions } from '../../src/index.ts'
import { onCleanup, type OpenedStore, tempDir } from '../helpers.ts'
// The type of `inject('pgUrl')`, for importers outside the store whose programs do not hold it.
import type {} from '../support/pg-global-setup.ts'

/** Store options a contract test may set (the location is the backend's business). */
export type BackendOptions = Omit<Partial<MemoryStoreOptions>, 'path' | 'cacheMiB'>

/** Where a store's database is: JSON, so a child process can open it with `openStore`. */
export type StoreLocation = { path: string } | { databaseUrl: string; schema: string }

export interface Backend {
  readonly name: 'sqlite' | 'postgres'
  /** A store on a fresh, empty database (closed after the test). */
  open(options?: BackendOptions): Promise<OpenedStore>
  /** A location nobody opened yet, for {@link Backend.openAt}. */
  fresh(): StoreLocation
  /** A store at `location` (closed after the test). */
  openAt(location: StoreLocation, options?: BackendOptions): Promise<OpenedStore>
  /** Another store on `store`'s database, like a second process (closed after the test). */
  reopen(store: OpenedStore, options?: BackendOptions): Promise<OpenedStore>
  /** Where `store`'s database is. */
  location(store: OpenedStore): StoreLocation
  /**
   * Run raw SQL on `store`'s database from outside the store (another connection), e.g. to
   * plant what an older or newer version left. Returns the rows of the last statement.
   */
  sql(store: OpenedStore, text: string): Promise<Record<string, unknown>[]>
  /** The column names of one of `store`'s tables, in table order. */
  columns(store: OpenedStore, table: string): Promise<string[]>
}

const locations = new WeakMap<OpenedStore, StoreLocation>()

async function openAt(location: StoreLocation, options: BackendOptions): Promise<OpenedStore> {
  const store = await openStore({ ...options, ...location } as MemoryStoreOptions | PostgresStoreOptions)
  onCleanup(() => store.close())
  locations.set(store, location)
  return store
}

function locationOf(store: OpenedStore): StoreLocation {
  const location = locations.get(store)
  if (!location) throw new Error('this store was not opened by the contract harness')
  return location
}

let schemas = 0
function freshSchema(): StoreLocation {
  return { databaseUrl: inject('pgUrl'), schema: `t${process.pid}_${++schemas}_${randomBytes(3).toString('hex')}` }
}

/** Column names in table order, from each backend's catalogue. */
const COLUMN_QUERIES = {
  sqlite: (table: string) => `SELECT name FROM pragma_table_info('${table}') ORDER BY cid`,
  postgres: (table: string) => `SELECT column_name AS name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = '${table}' ORDER BY ordinal_position`,
}

export const backends: readonly Backend[] = [
  {
    name: 'sqlite',
    fresh: () => ({ path: join(tempDir(), 'nested', 'memory.db') }),
    openAt: (location, options = {}) => openAt(location, options),
    open: (options = {}) => openAt({ path: join(tempDir(), 'nested', 'memory.db') }, options),
    reopen: (store, options = {}) => openAt(locationOf(store), options),
    location: locationOf,
    sql: async (store, text) => {
      const db = new Database((locationOf(store) as { path: string }).path)
      try {
        const statements = text.split(/;\s*(?:\n|$)/).filter((part) => part.trim())
        let rows: Record<string, unknown>[] = []
        for (const statement of statements) {
          const prepared = db.prepare(statement)
          rows = prepared.reader ? (prepared.all() as Record<string, unknown>[]) : (prepared.run(), [])
        }
        return rows
      } finally {
        db.close()
      }
    },
    columns: async (store, table) => (await backends[0]!.sql(store, COLUMN_QUERIES.sqlite(table))).map((row) => String(row.name)),
  },
  {
    name: 'postgres',
    // One schema per store: cheap isolation on the run's one cluster.
    fresh: freshSchema,
    openAt: (location, options = {}) => openAt(location, options),
    open: (options = {}) => openAt(freshSchema(), options),
    reopen: (store, options = {}) => openAt(locationOf(store), options),
    location: locationOf,
    sql: async (store, text) => {
      const { databaseUrl, schema } = locationOf(store) as { databaseUrl: string; schema: string }
      const client = new pg.Client({ connectionString: databaseUrl })
      await client.connect()
      try {
        await client.query(`SET search_path TO "${schema}"`)
        const result = await client.query(text)
        const last = Array.isArray(result) ? result[result.length - 1] : result
        return (last?.rows ?? []) as Record<string, unknown>[]
      } finally {
        await client.end()
      }
    },
    columns: async (store, table) => (await backends[1]!.sql(store, COLUMN_QUERIES.postgres(table))).map((row) => String(row.name)),
  },
]
