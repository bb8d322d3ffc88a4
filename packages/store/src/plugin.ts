/**
 * The DSH adapter: a Cordis service `ctx.memoryStore` that opens the store when the plugin
 * starts (`<dataDir>/memory.db`, or the PostgreSQL database of `databaseUrl`) and closes it
 * when the plugin is disposed. It only builds the core and wires the lifecycle; everything
 * else lives in the library (`@dsh-memory/store`).
 *
 * @module @dsh-memory/store/plugin
 */
import { join } from 'node:path'
import { type Context, Service } from '@deepseek-ai/cordis'
import z from '@deepseek-ai/schemastery'
import { ActivityLog, type ActivityValue } from './core/activity-log.ts'
import { MemoryStoreError } from './core/errors.ts'
import { findUnknownOption, optionKeysOf, strictOptionsSchema } from './kit/options.ts'
import { DEFAULT_BUSY_TIMEOUT_MS, DEFAULT_CACHE_MIB, DEFAULT_POSTGRES_SCHEMA, MAX_CACHE_MIB, resolveDataDir } from './core/options.ts'
import { openPostgresStore } from './core/open-store.ts'
import type { PackageTables, PackageTablesDeclaration, PackageTablesHost } from './core/package-tables.ts'
import { resolveStoreRow, rowDisagreement, type StoreRowAgreement, type StoreRowDisagreement, type StoreRowLocation } from './core/store-row.ts'
import { openMemoryStore } from './core/sqlite-store.ts'
import type { TransactionOptions } from './core/types-common.ts'
import type { ConversationRepository, MessageRepository } from './core/types-conversations.ts'
import type { ChangeFeed } from './core/types-changes.ts'
import type { LayerRepository, LeaseRepository } from './core/types-coordination.ts'
import type { MemoryRepository } from './core/types-memories.ts'
import type { AppliedMigration, AuditLog, MetaRepository, MigrationSet } from './core/types-meta.ts'
import type { PersonaRepository } from './core/types-persona.ts'
import type { SceneRepository } from './core/types-scenes.ts'
import type { SearchService } from './core/types-search.ts'
import type { StatsService } from './core/types-stats.ts'
import type { CoordinatedMemoryStore, ImportOptions, ImportResult, MemoryStore, TransferService } from './core/types-store.ts'
import { WorkspaceCarryOver } from './core/workspace-carry-over.ts'
import { WORKSPACE_IDENTITIES, workspaceOf, type WorkspaceIdentity } from './core/workspace-id.ts'

declare module '@deepseek-ai/cordis' {
  interface Context {
    memoryStore: MemoryStoreService
  }
}

// Live settings: the one way every dsh-memory plugin registers a settings namespace.
export { liveFields, registerLiveSettings } from './live-settings.ts'
export type { LiveSettingsOptions, LiveSettingsScope } from './live-settings.ts'

/** Plugin id for the DSH loader. */
export const name = 'memory-store'

/** The database file name inside `dataDir`. */
export const DATABASE_FILE = 'memory.db'
/** The stage log's file name inside `dataDir` (see {@link ActivityLog}). */
export const LOG_FILE = 'memory.log'

const DEFAULT_LOG_MAX_KIB = 1024
const DEFAULT_LOG_FILES = 3

/** Plugin configuration. */
export interface Config {
  /** Directory of `memory.db`; `''` means `$DSH_HOME/memory`, or `~/.dsh/memory` when DSH_HOME is unset. */
  dataDir: string
  /** A PostgreSQL database (`postgres://user@host:5432/database`) instead of `memory.db`; `''` means SQLite. A secret. */
  databaseUrl: string
  /** The PostgreSQL schema (namespace) of the store's tables (only with `databaseUrl`). */
  schema: string
  /** Who this host writes as; `''`: `DSH_MEMORY_USER`, else git's global `user.email`, else `<os user>@<hostname>`. */
  user: string
  /** How long a write waits for another DSH process holding the database lock, in ms. */
  busyTimeoutMs: number
  /** SQLite page cache of the connection, MiB. */
  cacheMiB: number
  /** How a session's directory becomes its workspace id: its git remote (default), or its path. */
  workspaceIdentity: WorkspaceIdentity
  /** Rotate `memory.log` at this many KiB; 0 writes no log. */
  logMaxKiB: number
  /** Rotated `memory.log.N` files kept. */
  logFiles: number
}

/** Schemastery schema of {@link Config}: every field optional on input, defaults applied on output (the README table mirrors it). */
export const Config: z<Partial<Config>, Config> = z.object({
  dataDir: z
    .string()
    .default('')
    .description('Directory holding memory.db. Empty: $DSH_HOME/memory, or ~/.dsh/memory when DSH_HOME is unset. A leading ~ is expanded.'),
  databaseUrl: z
    .string()
    .role('secret')
    .default('')
    .description(
      'PostgreSQL database holding the memory instead of memory.db: postgres://user@host:5432/database (a team sharing one memory). Empty: SQLite in dataDir. A secret: never printed or sent to a browser; keep the password in ~/.pgpass or PGPASSWORD.',
    ),
  schema: z
    .string()
    .default(DEFAULT_POSTGRES_SCHEMA)
    .description('PostgreSQL schema (namespace) of the store\'s tables, created when missing. Only with databaseUrl.'),
  user: z
    .string()
    .default('')
    .description(
      'Who this host writes as: stamped on every row it writes, and the only user whose global memories, scenes and persona it sees (workspace memories are the team\'s). Empty: DSH_MEMORY_USER, else git\'s global user.email, else <os user>@<hostname>.',
    ),
  busyTimeoutMs: z
    .natural()
    .default(DEFAULT_BUSY_TIMEOUT_MS)
    .description('How long a call waits for another process holding the database write lock before failing with code busy (ms). The wait does not block the event loop.'),
  cacheMiB: z
    .natural()
    .min(1)
    .max(MAX_CACHE_MIB)
    .default(DEFAULT_CACHE_MIB)
    .description('SQLite page cache of the connection (MiB). Filled only as pages are read; large stores search faster with more.'),
  workspaceIdentity: z
    .union([...WORKSPACE_IDENTITIES])
    .default('git-remote')
    .description(
      'What makes two sessions one workspace. git-remote: the project, i.e. the git remote of the session\'s directory (origin, else the first remote), normalized to git:<host>/<owner>/<repo>, so clones at different paths or on different machines share workspace memory; directories outside a git work tree with a remote keep their path. path: the absolute directory, as before.',
    ),
  logMaxKiB: z
    .natural()
    .default(DEFAULT_LOG_MAX_KIB)
    .description('memory.log (per-stage lines: capture, distillation batches, recall hits and misses, timings; never message text) is rotated at this size in KiB. 0 writes no log.'),
  logFiles: z.natural().max(20).default(DEFAULT_LOG_FILES).description('Rotated files kept beside memory.log (memory.log.1 is the newest).'),
})

/** The keys of {@link Config}; any other key is refused at load. */
const CONFIG_KEYS = strictOptionsSchema(optionKeysOf(Config({})))

/** schemastery passes unknown keys through: a typo must fail the load, naming the key. */
function refuseUnknownKeys(config: unknown): void {
  const unknown = findUnknownOption(config, CONFIG_KEYS)
  if (unknown) throw new MemoryStoreError('invalid-argument', `memory-store: ${unknown.path}: ${unknown.message}`, { path: unknown.path })
}

/** The row's location (see {@link resolveStoreRow}); a bad field fails the load naming it, never printing a password. */
function resolveRow(config: Partial<Config>): StoreRowLocation {
  try {
    return resolveStoreRow(config)
  } catch (error) {
    if (!(error instanceof MemoryStoreError)) throw error
    throw new MemoryStoreError('invalid-argument', `memory-store: ${error.message}`, error.path === undefined ? {} : { path: error.path })
  }
}

/**
 * `ctx.memoryStore`: the {@link MemoryStore} API of the shared database, plus `dataDir`.
 * Repositories are live only while the plugin runs; afterwards every call fails with
 * `MemoryStoreError` code `'closed'`.
 */
export class MemoryStoreService extends Service implements CoordinatedMemoryStore, PackageTablesHost {
  static Config = Config

  /** Absolute directory of the host's local files (`memory.log`, and `memory.db` on SQLite). */
  readonly dataDir: string
  /**
   * Where the database is: the absolute path of `memory.db`, or on PostgreSQL the database URL
   * without its password (as `store.path`).
   */
  readonly path: string
  /** The backend the store runs on (`databaseUrl` set: PostgreSQL). */
  readonly backend: 'sqlite' | 'postgresql'
  /** Who this host writes as (the row's `user`, resolved; see {@link Config.user}). */
  readonly user: string
  // A plain field, not `#store`: Cordis hands out proxies of services, and private
  // fields cannot be read through a proxy.
  private current: (CoordinatedMemoryStore & PackageTablesHost) | undefined
  private readonly location: StoreRowLocation
  private readonly busyTimeoutMs: number
  private readonly workspaceIdentity: WorkspaceIdentity
  private readonly workspaceIds = new Map<string, string>()
  /** Moves rows keyed by a path to its git workspace id (`workspaceIdentity: git-remote` only). */
  private readonly carryOver: WorkspaceCarryOver | undefined
  /**
   * The stage log `<dataDir>/memory.log` every dsh-memory plugin of this host writes to
   * (`write(stage, event, fields)`; counts, ids and timings only, never text).
   */
  readonly log: ActivityLog

  constructor(ctx: Context, config: Partial<Config> = {}) {
    refuseUnknownKeys(config)
    const location = resolveRow(config)
    super(ctx, 'memoryStore')
    this.location = location
    this.dataDir = location.dataDir
    this.backend = location.postgres ? 'postgresql' : 'sqlite'
    this.user = location.user
    this.path = location.postgres ? location.postgres.shown : join(this.dataDir, DATABASE_FILE)
    this.busyTimeoutMs = config.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS
    this.workspaceIdentity = config.workspaceIdentity ?? 'git-remote'
    // An unknown identity fails the load here, naming the field.
    workspaceOf('', { identity: this.workspaceIdentity })
    const cacheMiB = config.cacheMiB ?? DEFAULT_CACHE_MIB
    const logger = ctx.logger('memory-store')
    this.log = new ActivityLog({
      path: join(this.dataDir, LOG_FILE),
      maxBytes: (config.logMaxKiB ?? DEFAULT_LOG_MAX_KIB) * 1024,
      files: config.logFiles ?? DEFAULT_LOG_FILES,
      onError: (error) => logger.warn('memory-store: cannot write %s: %s', join(this.dataDir, LOG_FILE), error instanceof Error ? error.message : String(error)),
    })
    this.carryOver =
      this.workspaceIdentity === 'git-remote'
        ? new WorkspaceCarryOver((path) => this.workspaceOf(path), {
            moved: (owner, move) => this.log.write('workspace', 'carry-over', { owner, rows: move.rows }),
            failed: (owner, error) =>
              logger.warn('memory-store: cannot carry %s rows over to git workspace ids (kept under their paths, retried at the next start): %s', owner, error instanceof Error ? error.message : String(error)),
          })
        : undefined
    // SQLite opens synchronously, here; PostgreSQL connects in `Service.init` (below), which
    // Cordis awaits before the service counts as available, so dependents start on an open store.
    if (location.postgres) return
    ctx.effect(() => this.hold(openMemoryStore({ path: this.path, busyTimeoutMs: this.busyTimeoutMs, cacheMiB, user: this.user })), 'memory-store database')
  }

  /**
   * Connect to PostgreSQL (a `databaseUrl` row), then carry rows keyed by a path that is now a
   * git workspace over to its id, before any dependent plugin starts.
   */
  async [Service.init](): Promise<void> {
    const postgres = this.location.postgres
    if (postgres) {
      const store = await openPostgresStore({ databaseUrl: postgres.databaseUrl, schema: postgres.schema, busyTimeoutMs: this.busyTimeoutMs, user: this.user })
      try {
        this.ctx.effect(() => this.hold(store), 'memory-store database')
      } catch (error) {
        // Disposed while connecting: nobody else will close it.
        await store.close()
        throw error
      }
    }
    await this.carryOver?.store(this.store)
  }

  /**
   * The workspace id of a session directory (`header.cwd`): its project's git remote
   * (`git:<host>/<owner>/<repo>`) or, outside a git work tree with a remote or with
   * `workspaceIdentity: path`, the directory itself. Cached per directory for the service's
   * life (a remote renamed while the host runs counts from the next start). Every plugin keys
   * workspace memory by this, never by the raw cwd; filesystem uses of cwd keep the path.
   */
  workspaceOf(cwd: string): string {
    let id = this.workspaceIds.get(cwd)
    if (id === undefined) {
      id = workspaceOf(cwd, { identity: this.workspaceIdentity })
      this.workspaceIds.set(cwd, id)
    }
    return id
  }

  private hold(store: CoordinatedMemoryStore & PackageTablesHost): () => Promise<void> {
    this.current = store
    return async () => {
      this.current = undefined
      await store.close()
    }
  }

  /** The open store. @throws MemoryStoreError `closed` once the plugin is disposed. */
  get store(): CoordinatedMemoryStore & PackageTablesHost {
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
  get stats(): StatsService {
    return this.store.stats
  }
  get transfer(): TransferService {
    return this.store.transfer
  }
  get layers(): LayerRepository {
    return this.store.layers
  }
  get leases(): LeaseRepository {
    return this.store.leases
  }
  /** The current store's feed: a subscription ends with the store (a restart opens a new one). */
  get changes(): ChangeFeed {
    return this.store.changes
  }
  /** Forwards `options` (a `fence` included), so a fenced plugin write through the service stays fenced. */
  transaction<T>(fn: (store: CoordinatedMemoryStore) => Promise<T> | T, options?: TransactionOptions): Promise<T> {
    return this.store.transaction(fn, options)
  }
  exportJsonl(): AsyncIterable<string> {
    return this.store.exportJsonl()
  }
  importJsonl(lines: string | Iterable<string> | AsyncIterable<string>, options?: ImportOptions): Promise<ImportResult> {
    return this.store.importJsonl(lines, options)
  }
  migrate(sets: MigrationSet | readonly MigrationSet[]): Promise<AppliedMigration[]> {
    return this.store.migrate(sets)
  }
  /**
   * A package's tables on this store's session; the handle fails with `closed` once the plugin
   * is disposed. The declaration's `workspaceKeys` are carried over from paths to git workspace
   * ids the first time the package opens them in this run.
   */
  async tables<TSchema extends Record<string, unknown> = Record<string, never>>(declaration: PackageTablesDeclaration<TSchema>): Promise<PackageTables<TSchema>> {
    return this.carryOver ? this.carryOver.tables(this.store, declaration) : this.store.tables(declaration)
  }
  /** The database is owned by the plugin's lifecycle: dispose the plugin instead. Resolves without closing. */
  async close(): Promise<void> {}
}

/** How a row that stays idle is logged (see {@link claimPluginRow}). */
export interface ClaimPluginRowOptions {
  /**
   * `'warn'` (default): an idle row is a misconfiguration worth telling the user about (the
   * plugin is installed twice). `'debug'`: idle rows are expected (every bundle brings a store row).
   */
  readonly idleLog?: 'warn' | 'debug'
}

/** One loader row of a plugin, as {@link pluginRows} reports it. */
export interface PluginRowState {
  /** The loader entry id of the row (e.g. `memory-capture`), or `<plugin>#<n>` outside a loader. */
  readonly label: string
  /** True for the one row of the plugin that runs in this host. */
  readonly active: boolean
}

interface PluginRow {
  readonly ctx: Context
  readonly label: string
  active: boolean
  /**
   * Row-specific data a caller attached when claiming: a store row's location identity (a
   * string, as every version of this registry has it: rows of another installed copy of this
   * module compare it).
   */
  data: unknown
  /** A store row's other terms (its user and workspace identity); absent on rows of older copies. */
  terms?: unknown
}

// Keyed by the root context, so separate Cordis roots in one process (tests) stay separate,
// and kept on a global symbol, so two copies of this module in one host (a nested install of
// another version) still elect one row per plugin.
const REGISTRY_KEY = Symbol.for('@dsh-memory/store/plugin-rows@1')
type Registry = WeakMap<object, Map<string, PluginRow[]>>

function rowsOf(ctx: Context, pluginName: string): PluginRow[] {
  const holder = globalThis as { [REGISTRY_KEY]?: Registry }
  const registry = (holder[REGISTRY_KEY] ??= new WeakMap())
  const root = ctx.root as object
  let plugins = registry.get(root)
  if (!plugins) registry.set(root, (plugins = new Map()))
  let rows = plugins.get(pluginName)
  if (!rows) plugins.set(pluginName, (rows = []))
  return rows
}

/**
 * The row id of the fiber that runs `ctx`, as the user writes it in `cordis.patch.yml` (the
 * loader sets `fiber.entry`; its full id is prefixed with the tree, e.g. `include:memory-store`).
 */
function entryId(ctx: Context): string | undefined {
  const entry = (ctx.fiber as unknown as { entry?: { id?: unknown; options?: { id?: unknown } } }).entry
  const id = entry?.options?.id ?? (typeof entry?.id === 'string' ? entry.id.split(':').pop() : undefined)
  return typeof id === 'string' && id.length > 0 ? id : undefined
}

function claim(ctx: Context, pluginName: string, options: ClaimPluginRowOptions, data: unknown, terms?: unknown): boolean {
  const rows = rowsOf(ctx, pluginName)
  // A restarted fiber (config reload, dependency back) keeps its row and its place in line.
  let row = rows.find((candidate) => candidate.ctx.fiber === ctx.fiber)
  if (!row) {
    row = { ctx, label: entryId(ctx) ?? `${pluginName}#${rows.length + 1}`, active: false, data, terms }
    rows.push(row)
  } else {
    row.data = data
    row.terms = terms
  }
  const mine = row
  const owner = rows.find((candidate) => candidate.active && candidate !== mine)
  ctx.effect(() => () => release(rows, mine, pluginName), `${pluginName} row claim`)
  if (owner) {
    const logger = ctx.logger(pluginName)
    if ((options.idleLog ?? 'warn') === 'warn') {
      logger.warn(
        'row %s stays idle: row %s already runs %s in this host (it is installed twice, e.g. by the @dsh-memory/preset and by its own bundle); ' +
          'row %s is the one whose config applies — remove one of the two, or give both the same config',
        mine.label,
        owner.label,
        pluginName,
        owner.label,
      )
    } else {
      logger.debug('row %s stays idle: row %s already runs %s in this host', mine.label, owner.label, pluginName)
    }
    return false
  }
  mine.active = true
  return true
}

function release(rows: PluginRow[], row: PluginRow, pluginName: string): void {
  const wasActive = row.active
  row.active = false
  // A fiber that is only restarting (config reload, a dependency coming back) claims again
  // when it comes back; only a disposed fiber gives up its row for good.
  if (row.ctx.fiber.uid !== null) return
  const index = rows.indexOf(row)
  if (index >= 0) rows.splice(index, 1)
  if (!wasActive) return
  const next = rows.find((candidate) => candidate.ctx.fiber.uid !== null)
  if (!next) return
  // Hand over after the old owner has fully unloaded (its services and listeners are gone),
  // by restarting the next row: its apply claims the row this time.
  const handOver = async (): Promise<void> => {
    await row.ctx.fiber.await().catch(() => undefined)
    if (next.ctx.fiber.uid === null || rows.some((candidate) => candidate.active)) return
    await next.ctx.fiber.restart()
  }
  handOver().catch((error: unknown) => {
    next.ctx.logger(pluginName).error('row %s could not take over from row %s: %s', next.label, row.label, error instanceof Error ? error.message : String(error))
  })
}

/**
 * Elect one row per plugin per host. Every dsh-memory bundle inserts its own rows so that each
 * plugin installs alone; the preset inserts a row of every plugin too. Installing the preset
 * plus a standalone bundle therefore puts two rows of the same plugin in one host. Each
 * plugin's adapter calls this first, with its plugin name: the first row to start runs and
 * gets `true`; later rows of the same plugin get `false`, log which row runs (a warning by
 * default) and must do nothing else. When the running row is removed for good, the next
 * idle row is restarted and takes over; a row that only restarts (a config reload) keeps
 * its turn.
 *
 * Keyed by `ctx.root`, so separate Cordis roots in one process (tests) never share rows.
 *
 * @param ctx - the context the plugin's `apply` or constructor received.
 * @param pluginName - the plugin's `name` export (e.g. `memory-capture`).
 * @returns whether this row runs the plugin.
 */
export function claimPluginRow(ctx: Context, pluginName: string, options: ClaimPluginRowOptions = {}): boolean {
  return claim(ctx, pluginName, options, undefined)
}

/**
 * The rows of every dsh-memory plugin of this host, in the order they started, for
 * diagnostics (`dsh-memory` tests, a status tool). At most one row per plugin is active.
 */
export function pluginRows(ctx: Context): { plugin: string; rows: PluginRowState[] }[] {
  const holder = globalThis as { [REGISTRY_KEY]?: Registry }
  const plugins = holder[REGISTRY_KEY]?.get(ctx.root as object)
  if (!plugins) return []
  return [...plugins.entries()]
    .filter(([, rows]) => rows.length > 0)
    .map(([plugin, rows]) => ({ plugin, rows: rows.map((row) => ({ label: row.label, active: row.active })) }))
}

/**
 * Loader entry of a store row: provides `ctx.memoryStore` unless another store row of this host
 * already does. Every dsh-memory bundle inserts its own store row (row ids must be unique across
 * bundles) so that each plugin installs alone; installing several of them, or one plus the
 * preset, still opens the database once: the rows elect an owner through
 * {@link claimPluginRow}, the others stay idle and take over, in order, if the owner is
 * removed. Rows that resolve to different data directories or databases, users or workspace
 * identities are a configuration error: one host has one memory, written as one user. (See
 * {@link MemoryStoreService} for the service itself.)
 * @throws MemoryStoreError `invalid-argument` naming the field two rows disagree on.
 */
export async function apply(ctx: Context, config: Partial<Config> = {}): Promise<void> {
  // Idle rows too: a typo in any row of the profile fails its load.
  refuseUnknownKeys(config)
  const location = resolveRow(config)
  const agreement: StoreRowAgreement = { identity: location.identity, user: location.user, workspaceIdentity: config.workspaceIdentity ?? 'git-remote' }
  for (const row of rowsOf(ctx, name)) {
    if (row.ctx.fiber === ctx.fiber) continue
    // A row of an older copy of this module carries only its location identity.
    const theirs = (row.terms as StoreRowAgreement | undefined) ?? { ...agreement, identity: String(row.data) }
    const disagreement = rowDisagreement(agreement, theirs)
    if (disagreement) throw rowConflict(disagreement, row.label)
  }
  if (!claim(ctx, name, { idleLog: 'debug' }, location.identity, agreement)) return
  await ctx.plugin(MemoryStoreService, config)
}

/** The load error of a store row that disagrees with another row of the host, naming the field. */
function rowConflict({ field, mine, theirs }: StoreRowDisagreement, label: string): MemoryStoreError {
  const what = {
    dataDir: ['resolves to', 'uses', 'the same dataDir, databaseUrl and schema'],
    databaseUrl: ['resolves to', 'uses', 'the same dataDir, databaseUrl and schema'],
    user: ['writes as', 'writes as', 'the same user (one host writes as one user)'],
    workspaceIdentity: ['has workspaceIdentity', 'has', 'the same workspaceIdentity (one host keys a workspace one way)'],
  }[field]
  return new MemoryStoreError(
    'invalid-argument',
    `${field}: this memory-store row ${what[0]} ${mine} but store row ${label} of this host ${what[1]} ${theirs}; give every memory-store row (one per installed dsh-memory bundle) ${what[2]}`,
    { path: field },
  )
}

/** Writes one `memory.log` line; see {@link stageLog}. */
export type StageLogger = (stage: string, event: string, fields?: Readonly<Record<string, ActivityValue>>) => void

/**
 * The `memory.log` writer for a plugin's context: each call goes to the log of the store
 * service current at that moment (the owner row may change), and does nothing when there is
 * none. Never throws.
 */
export function stageLog(ctx: Context): StageLogger {
  return (stage, event, fields) => {
    try {
      ;(ctx.get('memoryStore') as { log?: ActivityLog } | undefined)?.log?.write(stage, event, fields)
    } catch {
      // The log is diagnostics: it never fails the work it describes.
    }
  }
}

/** The loader module's plugin: a store row (`name`, `Config`, `apply`). */
const MemoryStoreRow = { name, Config, apply }
export default MemoryStoreRow
