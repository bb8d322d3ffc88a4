/**
 * The DSH adapter: a Cordis service `ctx.memoryStore` that opens `<dataDir>/memory.db` when
 * the plugin starts and closes it when the plugin is disposed. It only builds the core and
 * wires the lifecycle; everything else lives in the library (`@dsh-memory/store`).
 *
 * @module @dsh-memory/store/plugin
 */
import { join } from 'node:path'
import { type Context, Service } from '@deepseek-ai/cordis'
import z from '@deepseek-ai/schemastery'
import { MemoryStoreError } from './core/errors.ts'
import { DEFAULT_BUSY_TIMEOUT_MS, resolveDataDir } from './core/options.ts'
import { openMemoryStore } from './core/sqlite-store.ts'
import type {
  AppliedMigration,
  AuditLog,
  ConversationRepository,
  ImportResult,
  MemoryRepository,
  MemoryStore,
  MessageRepository,
  MetaRepository,
  MigrationSet,
  PersonaRepository,
  SceneRepository,
  SearchService,
  WriteOptions,
} from './core/types.ts'

declare module '@deepseek-ai/cordis' {
  interface Context {
    memoryStore: MemoryStoreService
  }
}

/** Plugin id for the DSH loader. */
export const name = 'memory-store'

/** The database file name inside `dataDir`. */
export const DATABASE_FILE = 'memory.db'

/** Plugin configuration. */
export interface Config {
  /** Directory of `memory.db`; `''` means `$DSH_HOME/memory`, or `~/.dsh/memory` when DSH_HOME is unset. */
  dataDir: string
  /** How long a write waits for another DSH process holding the database lock, in ms. */
  busyTimeoutMs: number
}

/** Schemastery schema of {@link Config}: every field optional on input, defaults applied on output (the README table mirrors it). */
export const Config: z<Partial<Config>, Config> = z.object({
  dataDir: z
    .string()
    .default('')
    .description('Directory holding memory.db. Empty: $DSH_HOME/memory, or ~/.dsh/memory when DSH_HOME is unset. A leading ~ is expanded.'),
  busyTimeoutMs: z
    .natural()
    .default(DEFAULT_BUSY_TIMEOUT_MS)
    .description('How long a write waits for another process holding the database lock before failing with code busy (ms).'),
})

/**
 * `ctx.memoryStore`: the {@link MemoryStore} API of the shared database, plus `dataDir`.
 * Repositories are live only while the plugin runs; afterwards every call fails with
 * `MemoryStoreError` code `'closed'`.
 */
export class MemoryStoreService extends Service implements MemoryStore {
  static Config = Config

  /** Absolute directory holding `memory.db`. */
  readonly dataDir: string
  /** Absolute path of the database file. */
  readonly path: string
  // A plain field, not `#store`: Cordis hands out proxies of services, and private
  // fields cannot be read through a proxy.
  private current: MemoryStore | undefined

  constructor(ctx: Context, config: Partial<Config> = {}) {
    super(ctx, 'memoryStore')
    this.dataDir = resolveDataDir(config.dataDir)
    this.path = join(this.dataDir, DATABASE_FILE)
    const busyTimeoutMs = config.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS
    ctx.effect(() => {
      const store = openMemoryStore({ path: this.path, busyTimeoutMs })
      this.current = store
      return async () => {
        this.current = undefined
        await store.close()
      }
    }, 'memory-store database')
  }

  /** The open store. @throws MemoryStoreError `closed` once the plugin is disposed. */
  get store(): MemoryStore {
    if (!this.current) throw new MemoryStoreError('closed', 'the memory-store plugin is not running')
    return this.current
  }

  get readonly(): boolean {
    return false
  }
  get closed(): boolean {
    return this.current === undefined
  }
  get conversations(): ConversationRepository {
    return this.store.conversations
  }
  get messages(): MessageRepository {
    return this.store.messages
  }
  get memories(): MemoryRepository {
    return this.store.memories
  }
  get scenes(): SceneRepository {
    return this.store.scenes
  }
  get persona(): PersonaRepository {
    return this.store.persona
  }
  get audit(): AuditLog {
    return this.store.audit
  }
  get search(): SearchService {
    return this.store.search
  }
  get meta(): MetaRepository {
    return this.store.meta
  }
  transaction<T>(fn: (store: MemoryStore) => Promise<T> | T): Promise<T> {
    return this.store.transaction(fn)
  }
  exportJsonl(): AsyncIterable<string> {
    return this.store.exportJsonl()
  }
  importJsonl(lines: string | Iterable<string> | AsyncIterable<string>, options?: WriteOptions): Promise<ImportResult> {
    return this.store.importJsonl(lines, options)
  }
  migrate(sets: MigrationSet | readonly MigrationSet[]): Promise<AppliedMigration[]> {
    return this.store.migrate(sets)
  }
  /** The database is owned by the plugin's lifecycle: dispose the plugin instead. Resolves without closing. */
  async close(): Promise<void> {}
}

/**
 * One store row as the loader mounts it. Every dsh-memory bundle inserts its own store row
 * (row ids must be unique across bundles), so that each plugin installs alone; installing
 * several of them, or one plus the preset, must still mount the database once. The rows of one
 * host therefore elect an owner: the first row to start provides `ctx.memoryStore`, the others
 * stay idle and take over, in order, if the owner is unloaded. Rows that resolve to different
 * data directories are a configuration error: one host has one memory.
 */
interface StoreRow {
  readonly ctx: Context
  readonly config: Partial<Config>
  readonly dataDir: string
  owner: boolean
}

// Keyed by the root context, so separate Cordis roots in one process (tests) stay separate.
const rowsByRoot = new WeakMap<object, StoreRow[]>()

async function elect(rows: StoreRow[]): Promise<void> {
  const next = rows[0]
  if (!next || rows.some((row) => row.owner)) return
  next.owner = true
  await next.ctx.plugin(MemoryStoreService, next.config)
}

/**
 * Loader entry of a store row: provides `ctx.memoryStore` unless another store row of this host
 * already does (see {@link MemoryStoreService} for the service itself).
 * @throws MemoryStoreError `invalid-argument` when two rows name different data directories.
 */
export async function apply(ctx: Context, config: Partial<Config> = {}): Promise<void> {
  const root = ctx.root as object
  let rows = rowsByRoot.get(root)
  if (!rows) rowsByRoot.set(root, (rows = []))
  const row: StoreRow = { ctx, config, dataDir: resolveDataDir(config.dataDir), owner: false }
  const other = rows.find((candidate) => candidate.dataDir !== row.dataDir)
  if (other) {
    throw new MemoryStoreError(
      'invalid-argument',
      `dataDir: this memory-store row resolves to ${row.dataDir} but another store row of this host uses ${other.dataDir}; ` +
        'give every memory-store row (one per installed dsh-memory bundle) the same dataDir',
    )
  }
  rows.push(row)
  ctx.effect(() => () => {
    const index = rows.indexOf(row)
    if (index >= 0) rows.splice(index, 1)
    if (row.owner) {
      row.owner = false
      // The owner's service goes with its fiber; hand the database to the next idle row.
      queueMicrotask(() => {
        elect(rows).catch((error: unknown) => {
          rows[0]?.ctx.logger('memory-store').error('the next store row could not take over: %s', String(error))
        })
      })
    }
  }, 'memory-store row')
  if (rows[0] === row) await elect(rows)
  else ctx.logger('memory-store').debug('memoryStore is already provided by another store row; this row stays idle')
}

/** The loader module's plugin: a store row (`name`, `Config`, `apply`). */
const MemoryStoreRow = { name, Config, apply }
export default MemoryStoreRow
