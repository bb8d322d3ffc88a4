/**
 * `dsh-memory migrate`: move the store core from one backend to another (a SQLite data dir, a
 * PostgreSQL database, either direction, or SQLite to SQLite) through the store contract only,
 * so it works for any pair of backends that implement it.
 *
 * - **Copy in pages.** The source's versioned export (`exportJsonl`, one consistent snapshot)
 *   is cut into pages; each page goes into the target with `importJsonl`, which is one
 *   transaction, idempotent on ids and checks every record like a live write (redaction,
 *   limits) and bumps the layer revisions, so readers see the layers changed. A run that is
 *   interrupted (Ctrl-C, a killed process, a dropped connection) loses at most the page in
 *   flight; running it again skips what is there and copies the rest.
 * - **Verify.** A second pass over the source looks every record up in the target and counts
 *   per record type: source, target and missing. The run is good when nothing is missing;
 *   the target may hold more (several data dirs merged into one team database).
 * - **Say what is not moved.** Package tables (tree, cue bank, palace, distill, recall) are
 *   not on PostgreSQL in this version; when the source has rows in them, the report names
 *   them instead of dropping them silently.
 */
import { realpathSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { cueBankMigrations } from '@dsh-memory/cue-bank'
import { distillMigrations } from '@dsh-memory/distill'
import { palaceMigrations } from '@dsh-memory/palace'
import { recallMigrations } from '@dsh-memory/recall'
import type { MemoryStore, MigrationSet, RecordCounts } from '@dsh-memory/store'
import { treeMigrations } from '@dsh-memory/tree'
import { CliError, CliUsageError } from '../io.ts'
import { type DataSource, DATABASE_FILE, openSourceStore, postgresSource, resolveCliDataDir } from './data-dir.ts'
import { databaseIdentity, isDatabaseUrl } from './database-url.ts'

/** The record types of the store core, in export order. */
export const RECORD_TYPES = ['conversations', 'messages', 'memories', 'scenes', 'persona'] as const
export type RecordType = (typeof RECORD_TYPES)[number]

/** Records per page (one target transaction each) unless `pageSize` says otherwise. */
export const DEFAULT_PAGE_SIZE = 1_000

/** One record type's line of the verification. */
export interface VerifiedCount {
  /** Records in the source. */
  readonly source: number
  /** Records in the target after the copy (it may hold more than the source). */
  readonly target: number
  /** Source records not found in the target; 0 when verified. */
  readonly missing: number
}

/** A package's tables that hold rows in the source and were not moved. */
export interface NotMoved {
  /** The package's migration owner (`tree`, `cue-bank`, `palace`, `distill`, `recall`, or another package's). */
  readonly owner: string
  /** Its tables with rows; `rows` is null when they could not be counted. */
  readonly tables: readonly { readonly name: string; readonly rows: number | null }[]
}

/** What one `migrate` run did. */
export interface MigrateReport {
  /** The source and target as printed (a URL without its password). */
  readonly from: string
  readonly to: string
  /** True for `--check`: nothing was copied, only verified. */
  readonly checkOnly: boolean
  /** False when the run was interrupted before it finished copying (nothing was verified). */
  readonly completed: boolean
  /** True when it was interrupted while verifying, after copying everything. */
  readonly verifyInterrupted: boolean
  /** Records written by this run. */
  readonly copied: RecordCounts
  /** Records the target already had (an earlier, interrupted run; or a merge). */
  readonly alreadyPresent: RecordCounts
  /** Null when the run did not get to verify, or when copying was skipped for `checkOnly`. */
  readonly verified: Readonly<Record<RecordType, VerifiedCount>> | null
  /** True when every source record is in the target. */
  readonly ok: boolean
  readonly notMoved: readonly NotMoved[]
  /** Why the package tables were not moved (printed with them). */
  readonly notMovedReason: string
}

/** Options of {@link runMigrate}. */
export interface MigrateOptions {
  /** Records per page; default {@link DEFAULT_PAGE_SIZE}. */
  readonly pageSize?: number
  /** Only verify: copy nothing. */
  readonly checkOnly?: boolean
  /** Stops the copy after the page in flight is committed (Ctrl-C does this). */
  readonly signal?: AbortSignal
  /** Progress: a phase starts (`total` records), records are done, the phase ends. */
  readonly progress?: { start(phase: string, total: number): void; tick(detail?: string): void; stop(): void }
  /** Called after each page is committed, with the number of pages so far. */
  readonly onPage?: (pages: number) => void
}

/** Why package tables stay behind in this version. */
export const NOT_MOVED_REASON = 'this version of migrate moves the store core only; package tables (tree, cue bank, palace, distill, recall) stay in the source'

/**
 * Let the event loop turn. SQLite answers without I/O waits, so a copy would otherwise run to
 * its end in microtasks and Ctrl-C (a signal handler is an event-loop callback) would wait for it.
 */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve))

const emptyCounts = (): RecordCounts => ({ conversations: 0, messages: 0, memories: 0, scenes: 0, persona: 0 })

const TYPE_OF_RECORD: Readonly<Record<string, RecordType>> = { conversation: 'conversations', message: 'messages', memory: 'memories', scene: 'scenes', persona: 'persona' }

/**
 * A `--from`/`--to` value: a PostgreSQL URL, else a data dir.
 * @throws CliUsageError for a bad URL, naming `flag`
 */
export function migrateEndpoint(value: string, flag: '--from' | '--to'): DataSource {
  if (value.trim() === '') throw new CliUsageError(`${flag} expects a data dir or a postgres:// URL`)
  if (isDatabaseUrl(value)) return postgresSource(value, flag)
  const dataDir = resolveCliDataDir(value)
  return { kind: 'sqlite', dataDir, label: dataDir }
}

/** Where an endpoint's data is, for telling whether two name the same database. */
function identityOf(source: DataSource): string {
  if (source.kind === 'postgres') return databaseIdentity(source.databaseUrl)
  const file = join(resolve(source.dataDir), DATABASE_FILE)
  try {
    return `sqlite:${realpathSync(file)}`
  } catch {
    // Not there yet (a new target): its folder may still be the source's under another name.
    try {
      return `sqlite:${join(realpathSync(resolve(source.dataDir)), DATABASE_FILE)}`
    } catch {
      return `sqlite:${file}`
    }
  }
}

/** The packages this CLI knows, for counting their rows in a source. */
const KNOWN_PACKAGES: readonly (() => MigrationSet)[] = [treeMigrations, cueBankMigrations, palaceMigrations, distillMigrations, recallMigrations]

/** Table names a migration set creates (its own `CREATE TABLE` statements). */
function tablesOf(set: MigrationSet): string[] {
  const names = new Set<string>()
  for (const migration of set.migrations) {
    for (const match of migration.sql.matchAll(/create\s+table\s+(?:if\s+not\s+exists\s+)?["`]?([a-z_][a-z0-9_]*)/gi)) names.add(match[1]!)
  }
  return [...names]
}

/** Package tables of the source that hold rows (owners other than the store's own). */
async function packageRows(store: MemoryStore): Promise<NotMoved[]> {
  const owners = [...new Set((await store.meta.migrations()).map((migration) => migration.owner).filter((owner) => owner !== 'store'))]
  const known = new Map(KNOWN_PACKAGES.map((load) => load()).map((set) => [set.owner, set]))
  const result: NotMoved[] = []
  for (const owner of owners) {
    const set = known.get(owner)
    if (!set) {
      // A package this CLI does not know: its tables cannot be named, but it is not hidden.
      result.push({ owner, tables: [] })
      continue
    }
    let tables: { name: string; rows: number | null }[]
    try {
      const handle = await store.tables({ migrations: set })
      tables = await handle.read((db) =>
        tablesOf(set).map((name) => {
          try {
            return { name, rows: Number(db.get<{ n: number }>(`SELECT count(*) AS n FROM "${name}"`).n) }
          } catch {
            // Dropped by a later migration of the package.
            return { name, rows: 0 }
          }
        }),
      )
    } catch {
      // Another version of the package (pending or newer migrations): name them, uncounted.
      tables = tablesOf(set).map((name) => ({ name, rows: null }))
    }
    const withRows = tables.filter((table) => table.rows !== 0)
    if (withRows.length > 0) result.push({ owner, tables: withRows })
  }
  return result
}

/** Total records of a store, from its counts. */
async function recordTotal(store: MemoryStore): Promise<number> {
  const counts = await store.stats.counts()
  return counts.conversations + counts.messages.total + counts.memories.current + counts.memories.superseded + counts.scenes.total + counts.persona.total
}

interface ExportLine {
  readonly line: string
  readonly type: RecordType
  readonly data: { readonly id?: string; readonly supersededBy?: string | null; readonly scope?: string; readonly workspace?: string | null }
}

/** The source's export, the header apart, one parsed record per line. */
async function* sourceRecords(store: MemoryStore, onHeader: (line: string) => void): AsyncGenerator<ExportLine> {
  let first = true
  for await (const line of store.exportJsonl()) {
    if (first) {
      first = false
      onHeader(line)
      continue
    }
    const record = JSON.parse(line) as { type: string; data: ExportLine['data'] }
    const type = TYPE_OF_RECORD[record.type]
    if (type === undefined) throw new CliError('failed', `the source exported an unknown record type ${JSON.stringify(record.type)}`)
    yield { line, type, data: record.data }
  }
}

/**
 * Copy every record of `source` into `target`, page by page. A superseded memory is held back
 * until the page holding its successor: each page is checked on its own, so a version may not
 * point at a row the target does not have yet.
 * @returns false when `signal` stopped it.
 */
async function copyRecords(source: MemoryStore, target: MemoryStore, options: MigrateOptions, copied: RecordCounts, present: RecordCounts): Promise<boolean> {
  const pageSize = options.pageSize ?? DEFAULT_PAGE_SIZE
  let header = ''
  let page: ExportLine[] = []
  let held: ExportLine[] = []
  const seenMemories = new Set<string>()
  let pages = 0
  const flush = async (): Promise<void> => {
    const ready = held.filter((record) => seenMemories.has(record.data.supersededBy!))
    held = held.filter((record) => !seenMemories.has(record.data.supersededBy!))
    const lines = [...page, ...ready]
    page = []
    if (lines.length === 0) return
    // Unattributed rows (from before user identities) become the target user's (`--user`).
    const result = await target.importJsonl([header, ...lines.map((record) => record.line)], { actor: 'cli', unattributedAs: target.user })
    for (const type of RECORD_TYPES) {
      copied[type] += result.inserted[type]
      present[type] += result.skipped[type]
    }
    for (let index = 0; index < lines.length; index++) options.progress?.tick()
    options.onPage?.(++pages)
    await turn()
  }
  for await (const record of sourceRecords(source, (line) => (header = line))) {
    if (record.type === 'memories') seenMemories.add(record.data.id!)
    if (record.type === 'memories' && record.data.supersededBy && !seenMemories.has(record.data.supersededBy)) held.push(record)
    else page.push(record)
    if (page.length >= pageSize) {
      await flush()
      if (options.signal?.aborted) return false
    }
  }
  await flush()
  if (held.length > 0) {
    // Successors the source does not have: importing them reports the dangling reference.
    page = held
    held = []
    await flush()
  }
  return true
}

/** Look every source record up in the target. @returns undefined when `signal` stopped it. */
async function verifyRecords(source: MemoryStore, target: MemoryStore, options: MigrateOptions): Promise<Record<RecordType, VerifiedCount> | undefined> {
  const sourceCounts = emptyCounts()
  const missing = emptyCounts()
  let messageIds: string[] = []
  const checkMessages = async (): Promise<void> => {
    if (messageIds.length === 0) return
    const found = new Set((await target.messages.around(messageIds, 0)).map((message) => message.id))
    missing.messages += messageIds.filter((id) => !found.has(id)).length
    for (let index = 0; index < messageIds.length; index++) options.progress?.tick()
    messageIds = []
    await turn()
  }
  for await (const record of sourceRecords(source, () => {})) {
    if (options.signal?.aborted) return undefined
    sourceCounts[record.type]++
    if (record.type === 'messages') {
      messageIds.push(record.data.id!)
      if (messageIds.length >= 1_000) await checkMessages()
      continue
    }
    const id = record.data.id!
    const there =
      record.type === 'conversations'
        ? await target.conversations.get(id)
        : record.type === 'memories'
          ? await target.memories.get(id)
          : record.type === 'scenes'
            ? await target.scenes.get(id)
            : await target.persona.get({ scope: record.data.scope as 'global' | 'workspace', workspace: record.data.workspace ?? null })
    if (there === undefined) missing[record.type]++
    options.progress?.tick()
    if (sourceCounts[record.type] % 1_000 === 0) await turn()
  }
  await checkMessages()
  const counts = await target.stats.counts()
  const targetCounts: RecordCounts = {
    conversations: counts.conversations,
    messages: counts.messages.total,
    memories: counts.memories.current + counts.memories.superseded,
    scenes: counts.scenes.total,
    persona: counts.persona.total,
  }
  return Object.fromEntries(RECORD_TYPES.map((type) => [type, { source: sourceCounts[type], target: targetCounts[type], missing: missing[type] }])) as Record<RecordType, VerifiedCount>
}

/**
 * Move the store core from `from` to `to` (see the module comment).
 * @throws CliUsageError when both name the same database; CliError `not-found` when a SQLite source has no database; store errors
 */
export async function runMigrate(from: DataSource, to: DataSource, options: MigrateOptions = {}): Promise<MigrateReport> {
  if (identityOf(from) === identityOf(to)) throw new CliUsageError(`--from and --to name the same database (${from.label}); there is nothing to move`)
  const source = await openSourceStore(from, { readonly: true })
  try {
    const target = await openSourceStore(to, { create: options.checkOnly !== true, readonly: options.checkOnly === true })
    try {
      const copied = emptyCounts()
      const alreadyPresent = emptyCounts()
      const notMoved = await packageRows(source)
      const total = await recordTotal(source)
      const base = { from: from.label, to: to.label, copied, alreadyPresent, notMoved, notMovedReason: NOT_MOVED_REASON, verifyInterrupted: false, checkOnly: options.checkOnly === true }
      if (options.checkOnly !== true) {
        options.progress?.start('migrate: copy', total)
        let finished: boolean
        try {
          finished = await copyRecords(source, target, options, copied, alreadyPresent)
        } finally {
          options.progress?.stop()
        }
        if (!finished) return { ...base, completed: false, verified: null, ok: false }
      }
      options.progress?.start('migrate: verify', total)
      let verified: Record<RecordType, VerifiedCount> | undefined
      try {
        verified = await verifyRecords(source, target, options)
      } finally {
        options.progress?.stop()
      }
      if (verified === undefined) return { ...base, completed: true, verifyInterrupted: true, verified: null, ok: false }
      return { ...base, completed: true, verified, ok: RECORD_TYPES.every((type) => verified[type].missing === 0) }
    } finally {
      await target.close()
    }
  } finally {
    await source.close()
  }
}
