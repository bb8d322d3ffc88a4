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
 *   the target may hold more (several data dirs merged into one team database). The lookups
 *   and counts are every user's (`store.transfer`), whoever `--user` is: in a team database
 *   another user's global rows, private to them in every normal read, are found all the same.
 * - **Message vectors** next (`migrate-vectors.ts`): derived data the export leaves out, copied
 *   so the target need not embed every message again; verified bit for bit.
 * - **Package tables too.** Then every plugin's tables (tree, cue bank, palace index, distill,
 *   recall) through their packages' declarations, page by page, verified per table
 *   (`package-tables.ts`; rows keyed by identity numbers are renumbered when merging, through
 *   the target's ledger, `migrate-ledger.ts`). Tables of a package this CLI does not know are
 *   named in the report, not dropped silently.
 * - **Meta rows and the audit log** last (`migrate-history.ts`): the source's settings but the
 *   per-store ones, and its whole history, resumable through the ledger.
 * - **Not moved**: the change log and layer revisions (the target keeps its own; the import
 *   bumps them) and leases.
 */
import { realpathSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { DEFAULT_POSTGRES_SCHEMA, type MemoryStore, type RecordCounts } from '@dsh-memory/store'
import { CliError, CliUsageError } from '../io.ts'
import { type DataSource, DATABASE_FILE, openSourceStore, postgresSource, resolveCliDataDir } from './data-dir.ts'
import { databaseIdentity, isDatabaseUrl } from './database-url.ts'
import { type AuditReport, copyAudit, type MetaReport, migrateMeta, verifyAudit } from './migrate-history.ts'
import { SourceLedger, sourceFingerprint } from './migrate-ledger.ts'
import { copyMessageVectors, type VectorReport, verifyMessageVectors } from './migrate-vectors.ts'
import { migratePackageTables, type PackageTableReport, unknownOwners } from './package-tables.ts'

export type { AuditReport, MetaReport } from './migrate-history.ts'
export type { PackageTableReport } from './package-tables.ts'
export type { VectorReport } from './migrate-vectors.ts'

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

/** A package of the source whose tables were not moved: one this CLI has no declaration of. */
export interface NotMoved {
  /** The package's migration owner. */
  readonly owner: string
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
  /** The messages' vectors (every model's); null when the run stopped before them. */
  readonly vectors: VectorReport | null
  /** Every known package's tables in the source: copied, already present and (once verified) counts. */
  readonly packages: readonly PackageTableReport[]
  /** The meta rows (the per-store ones apart); null when the run stopped before them. */
  readonly meta: MetaReport | null
  /** The audit log; null when the run stopped before it. */
  readonly audit: AuditReport | null
  /** True when every source record, package row, meta key and audit entry is in the target. */
  readonly ok: boolean
  readonly notMoved: readonly NotMoved[]
  /** Why those packages' tables were not moved (printed with them). */
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

/** Why some packages' tables stay behind. */
export const NOT_MOVED_REASON = 'packages this dsh-memory does not know: their tables stay in the source; migrate with the dsh-memory that comes with them'

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
export function migrateEndpoint(value: string, flag: '--from' | '--to', schema?: string): DataSource {
  if (value.trim() === '') throw new CliUsageError(`${flag} expects a data dir or a postgres:// URL`)
  if (isDatabaseUrl(value)) return postgresSource(value, flag, schema === undefined ? undefined : { name: schema, origin: `${flag}-schema` })
  if (schema !== undefined) throw new CliUsageError(`${flag}-schema applies to a postgres:// ${flag} only; ${flag} names a data dir`)
  const dataDir = resolveCliDataDir(value)
  return { kind: 'sqlite', dataDir, label: dataDir }
}

/** Where an endpoint's data is, for telling whether two name the same database. */
function identityOf(source: DataSource): string {
  if (source.kind === 'postgres') return `${databaseIdentity(source.databaseUrl)} schema ${source.schema ?? DEFAULT_POSTGRES_SCHEMA}`
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

/** Total records of a store, every user's. */
async function recordTotal(store: MemoryStore): Promise<number> {
  const counts = await store.transfer.counts()
  return RECORD_TYPES.reduce((sum, type) => sum + counts[type], 0)
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
async function copyRecords(source: MemoryStore, target: MemoryStore, options: MigrateOptions, copied: RecordCounts, present: RecordCounts, nextPage: () => void): Promise<boolean> {
  const pageSize = options.pageSize ?? DEFAULT_PAGE_SIZE
  let header = ''
  let page: ExportLine[] = []
  let held: ExportLine[] = []
  const seenMemories = new Set<string>()
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
    nextPage()
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

/** Records looked up in the target at once. */
const VERIFY_PAGE = 1_000

/**
 * Look every source record up in the target, whoever wrote it (`transfer.present`: an
 * unattributed global persona as the target user, as the copy stored it).
 * @returns undefined when `signal` stopped it.
 */
async function verifyRecords(source: MemoryStore, target: MemoryStore, options: MigrateOptions): Promise<Record<RecordType, VerifiedCount> | undefined> {
  const sourceCounts = emptyCounts()
  const missing = emptyCounts()
  let batch: ExportLine[] = []
  const check = async (): Promise<void> => {
    if (batch.length === 0) return
    const found = await target.transfer.present(batch.map((record) => record.line), { unattributedAs: target.user })
    for (const [index, record] of batch.entries()) if (!found[index]) missing[record.type]++
    for (let index = 0; index < batch.length; index++) options.progress?.tick()
    batch = []
    await turn()
  }
  for await (const record of sourceRecords(source, () => {})) {
    if (options.signal?.aborted) return undefined
    sourceCounts[record.type]++
    batch.push(record)
    if (batch.length >= VERIFY_PAGE) await check()
  }
  await check()
  const targetCounts = await target.transfer.counts()
  return Object.fromEntries(RECORD_TYPES.map((type) => [type, { source: sourceCounts[type], target: targetCounts[type], missing: missing[type] }])) as Record<RecordType, VerifiedCount>
}

/**
 * Move the store core from `from` to `to` (see the module comment).
 * @throws CliUsageError when both name the same database; CliError `not-found` when a SQLite source has no database; store errors
 */
export async function runMigrate(from: DataSource, to: DataSource, options: MigrateOptions = {}): Promise<MigrateReport> {
  if (identityOf(from) === identityOf(to)) throw new CliUsageError(`--from and --to name the same database (${from.label}); there is nothing to move`)
  const checkOnly = options.checkOnly === true
  const source = await openSourceStore(from, { readonly: true })
  try {
    const target = await openSourceStore(to, { create: !checkOnly, readonly: checkOnly })
    try {
      const copied = emptyCounts()
      const alreadyPresent = emptyCounts()
      const notMoved = (await unknownOwners(source)).map((owner) => ({ owner }))
      const total = await recordTotal(source)
      const ledger = await SourceLedger.open(target, await sourceFingerprint(source), checkOnly, Date.now())
      let vectors: VectorReport | null = null
      let packages: PackageTableReport[] = []
      let meta: MetaReport | null = null
      let audit: AuditReport | null = null
      const base = () => ({ from: from.label, to: to.label, copied, alreadyPresent, vectors, packages, meta, audit, notMoved, notMovedReason: NOT_MOVED_REASON, verifyInterrupted: false, checkOnly })
      const stopped = () => ({ ...base(), completed: false, verified: null, ok: false })
      let pages = 0
      const nextPage = () => options.onPage?.(++pages)
      if (!checkOnly) {
        options.progress?.start('migrate: copy', total)
        let finished: boolean
        try {
          finished = await copyRecords(source, target, options, copied, alreadyPresent, nextPage)
        } finally {
          options.progress?.stop()
        }
        if (!finished) return stopped()
      }
      // The vectors after the messages they belong to.
      vectors = { copied: 0, alreadyPresent: 0, verified: null }
      if (!checkOnly) {
        options.progress?.start('migrate: message vectors', await source.transfer.messageVectorCount())
        let finished: boolean
        try {
          finished = await copyMessageVectors(source, target, vectors, {
            ...(options.pageSize ? { pageSize: options.pageSize } : {}),
            ...(options.signal ? { signal: options.signal } : {}),
            onPage: nextPage,
            tick: (count) => {
              for (let index = 0; index < count; index++) options.progress?.tick()
            },
          })
        } finally {
          options.progress?.stop()
        }
        if (!finished) return stopped()
      }
      // The package tables after the store core: a package row may name a conversation or a memory.
      const moved = await migratePackageTables(source, target, {
        ...(options.pageSize ? { pageSize: options.pageSize } : {}),
        checkOnly,
        ...(options.signal ? { signal: options.signal } : {}),
        onPage: nextPage,
        ledger,
      })
      packages = moved.tables
      if (!moved.completed) return stopped()
      meta = await migrateMeta(source, target, checkOnly)
      audit = { copied: 0, verified: null }
      if (!checkOnly && !(await copyAudit(source, target, ledger, audit, { ...(options.pageSize ? { pageSize: options.pageSize } : {}), ...(options.signal ? { signal: options.signal } : {}), onPage: nextPage }))) return stopped()
      options.progress?.start('migrate: verify', total)
      let verified: Record<RecordType, VerifiedCount> | undefined
      try {
        verified = await verifyRecords(source, target, options)
      } finally {
        options.progress?.stop()
      }
      if (verified !== undefined && !options.signal?.aborted) audit.verified = await verifyAudit(source, target, ledger)
      if (verified !== undefined && !options.signal?.aborted) vectors.verified = await verifyMessageVectors(source, target)
      if (verified === undefined || audit.verified === null || vectors.verified === null || packages.some((line) => line.verified === null)) return { ...base(), completed: true, verifyInterrupted: true, verified: verified ?? null, ok: false }
      const ok =
        RECORD_TYPES.every((type) => verified[type].missing === 0) &&
        packages.every((line) => line.verified!.missing === 0) &&
        meta.verified!.missing === 0 &&
        audit.verified.missing === 0 &&
        vectors.verified.missing === 0
      return { ...base(), completed: true, verified, ok }
    } finally {
      await target.close()
    }
  } finally {
    await source.close()
  }
}
