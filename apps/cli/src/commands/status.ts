/**
 * `dsh-memory status`: what the data dir holds (counts per layer and scope, sizes, schema),
 * where distillation stands (last run, pending work, failures) and what it cost.
 */
import { existsSync, statSync } from 'node:fs'
import type { Command } from 'commander'
import { type ConversationState, DistillStateRepository, describeError, type LedgerRow } from '@dsh-memory/distill'
import type { AppliedMigration, MemoryStore, StoreCounts } from '@dsh-memory/store'
import { type DataSource, existingDatabase, resolveDataSource, withDataDir, withStore } from '../data/data-dir.ts'
import { type CliIO, printJson, println } from '../io.ts'

/** Where distillation stands, from its persisted state. */
export interface DistillReport {
  /** Newest `lastRunAt` over all conversations (epoch ms), or null when nothing was distilled yet. */
  readonly lastRunAt: number | null
  /** Start of the last start-up scan, if any. */
  readonly lastScanAt: number | null
  /** Conversations queued for distillation and their undistilled messages. */
  readonly pending: { readonly conversations: number; readonly messages: number }
  /**
   * Conversations waiting after failures (`attempts` > 0), with their last error; `gaveUpAt` is
   * set once `extract.maxAttempts` failures in a row stopped the retries (a new message resumes).
   */
  readonly failing: { readonly conversationId: string; readonly attempts: number; readonly notBefore: number; readonly gaveUpAt: number | null; readonly lastError: string | null }[]
  /** Message ranges given up on (invalid model output twice). */
  readonly skippedRanges: number
  /** Set when the distill state could not be read (another version wrote it). */
  readonly error: string | null
}

/** Token-cost totals of the distill ledger. */
export interface CostReport {
  readonly rows: readonly LedgerRow[]
  readonly total: { readonly calls: number; readonly failures: number; readonly inputTokens: number; readonly outputTokens: number; readonly cacheReadTokens: number }
}

/** Everything `status` prints. */
export interface StatusReport {
  /** Which backend holds the data. */
  readonly backend: 'sqlite' | 'postgres'
  /** The data dir; on PostgreSQL the database URL without its password. */
  readonly dataDir: string
  /** Who the report is for: global memories, scenes and persona are counted for this user (and unattributed ones) only. */
  readonly user: string
  /** On PostgreSQL `path` is the URL without its password and the file sizes are 0. */
  readonly database: { readonly path: string; readonly bytes: number; readonly walBytes: number; readonly searchIndexBytes: number }
  readonly schema: readonly { readonly owner: string; readonly version: number }[]
  readonly counts: StoreCounts
  readonly distill: DistillReport
  readonly cost: CostReport
}

const fileSize = (path: string): number => (existsSync(path) ? statSync(path).size : 0)

/** Latest applied version per migration owner. */
function schemaVersions(migrations: readonly AppliedMigration[]): { owner: string; version: number }[] {
  const latest = new Map<string, number>()
  for (const migration of migrations) latest.set(migration.owner, Math.max(latest.get(migration.owner) ?? 0, migration.version))
  return [...latest.entries()].map(([owner, version]) => ({ owner, version })).sort((a, b) => a.owner.localeCompare(b.owner))
}

const noDistill = (error: string): DistillReport => ({ lastRunAt: null, lastScanAt: null, pending: { conversations: 0, messages: 0 }, failing: [], skippedRanges: 0, error })

/** Read the distill state of every conversation (through `@dsh-memory/distill`'s own repository). */
export async function distillReport(store: MemoryStore): Promise<DistillReport> {
  const state = new DistillStateRepository(store)
  try {
    const conversations: ConversationState[] = []
    for (let offset = 0; ; offset += 10_000) {
      const page = await store.conversations.list({ limit: 10_000, offset })
      for (const conversation of page) conversations.push(await state.conversation(conversation.id))
      if (page.length < 10_000) break
    }
    const pendingIds = await state.pendingIds()
    let pendingMessages = 0
    for (const id of pendingIds) {
      const cursor = conversations.find((entry) => entry.conversationId === id)?.cursorSeq ?? -1
      pendingMessages += (await store.messages.list({ conversationId: id, afterSeq: cursor, limit: 10_000 })).length
    }
    const runs = conversations.map((entry) => entry.lastRunAt).filter((at): at is number => at !== null)
    return {
      lastRunAt: runs.length ? Math.max(...runs) : null,
      lastScanAt: (await state.lastScan()) ?? null,
      pending: { conversations: pendingIds.length, messages: pendingMessages },
      failing: conversations
        .filter((entry) => entry.attempts > 0)
        .map((entry) => ({ conversationId: entry.conversationId, attempts: entry.attempts, notBefore: entry.notBefore, gaveUpAt: entry.gaveUpAt, lastError: entry.lastError })),
      skippedRanges: conversations.reduce((sum, entry) => sum + entry.skipped.length, 0),
      error: null,
    }
  } catch (error) {
    return noDistill(describeError(error))
  }
}

/** Ledger totals per (provider, model, layer), and overall. */
export async function costReport(store: MemoryStore): Promise<CostReport> {
  let rows: LedgerRow[] = []
  try {
    rows = await new DistillStateRepository(store).costs()
  } catch {
    rows = []
  }
  const total = { calls: 0, failures: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0 }
  for (const row of rows) {
    total.calls += row.calls
    total.failures += row.failures
    total.inputTokens += row.inputTokens
    total.outputTokens += row.outputTokens
    total.cacheReadTokens += row.cacheReadTokens
  }
  return { rows, total }
}

/**
 * Collect the status of a data dir or a PostgreSQL database (read-only).
 * @throws CliError `not-found` when a data dir has no database
 */
export async function collectStatus(source: DataSource | string): Promise<StatusReport> {
  const from: DataSource = typeof source === 'string' ? { kind: 'sqlite', dataDir: source, label: source } : source
  const path = from.kind === 'sqlite' ? existingDatabase(from.dataDir) : from.label
  return withStore(from, { readonly: true }, async (store) => {
    const counts: StoreCounts = await store.stats.counts()
    const sqlite = from.kind === 'sqlite'
    return {
      backend: from.kind,
      dataDir: from.label,
      user: store.user,
      database: { path, bytes: sqlite ? fileSize(path) : 0, walBytes: sqlite ? fileSize(`${path}-wal`) : 0, searchIndexBytes: await store.stats.searchIndexBytes() },
      schema: schemaVersions(await store.meta.migrations()),
      counts,
      distill: await distillReport(store),
      cost: await costReport(store),
    }
  })
}

const n = (value: number) => value.toLocaleString('en-US')
const breakdown = (values: Record<string, number>) =>
  Object.entries(values)
    .map(([key, value]) => `${key} ${n(value)}`)
    .join(', ')

/** Human-readable byte size. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`
  const units = ['KB', 'MB', 'GB', 'TB']
  let value = bytes / 1024
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`
}

const time = (at: number | null) => (at === null ? 'never' : new Date(at).toISOString().replace('T', ' ').slice(0, 19) + ' UTC')

/** The text form of a status report. */
export function formatStatus(report: StatusReport): string {
  const { counts, distill, cost } = report
  const index = `search index ${report.database.searchIndexBytes ? formatBytes(report.database.searchIndexBytes) : 'not built'}`
  const lines = [
    ...(report.backend === 'postgres'
      ? [`database  ${report.database.path} (PostgreSQL)${report.database.searchIndexBytes ? `, ${index}` : ''}`]
      : [
          `data dir  ${report.dataDir}`,
          `database  ${report.database.path}  ${formatBytes(report.database.bytes)}${report.database.walBytes ? ` (+ ${formatBytes(report.database.walBytes)} WAL)` : ''}, ${index}`,
        ]),
    `schema    ${report.schema.map((entry) => `${entry.owner} v${entry.version}`).join(', ')}`,
    `user      ${report.user} (global memories are counted for this user only; --user to change)`,
    '',
    `L0 conversations ${n(counts.conversations)}, messages ${n(counts.messages.total)} (user ${n(counts.messages.user)}, assistant ${n(counts.messages.assistant)}), ${n(counts.messages.withVectors)} with vectors`,
    `L1 memories ${n(counts.memories.current)} current${counts.memories.current ? ` (${breakdown(counts.memories.byScope)}; ${breakdown(counts.memories.byKind)})` : ''}, ${n(counts.memories.superseded)} superseded`,
    `L2 scenes ${n(counts.scenes.total)}${counts.scenes.total ? ` (${breakdown(counts.scenes.byScope)})` : ''}`,
    `L3 persona documents ${n(counts.persona.total)}${counts.persona.total ? ` (${breakdown(counts.persona.byScope)})` : ''}`,
  ]
  if (counts.workspaces.length > 0) {
    lines.push('', 'workspaces')
    for (const entry of counts.workspaces.slice(0, 20)) {
      lines.push(`  ${entry.workspace || '(unknown)'}  ${n(entry.conversations)} conversations, ${n(entry.messages)} messages, ${n(entry.memories)} memories`)
    }
    if (counts.workspaces.length > 20) lines.push(`  … and ${counts.workspaces.length - 20} more (--json lists all)`)
  }
  lines.push('', 'distillation')
  if (distill.error) lines.push(`  state unreadable: ${distill.error}`)
  lines.push(`  last run ${time(distill.lastRunAt)}; last start-up scan ${time(distill.lastScanAt)}`)
  lines.push(`  pending ${n(distill.pending.conversations)} conversations, ${n(distill.pending.messages)} undistilled messages`)
  for (const failing of distill.failing) {
    const state = failing.gaveUpAt !== null
      ? `gave up on ${failing.conversationId} after ${failing.attempts} failed attempts (${time(failing.gaveUpAt)}; a new message retries)`
      : `retrying ${failing.conversationId} after ${failing.attempts} failed attempts (next ${time(failing.notBefore || null)})`
    lines.push(`  ${state}: ${failing.lastError ?? 'unknown error'}`)
  }
  if (distill.skippedRanges) lines.push(`  ${n(distill.skippedRanges)} message ranges skipped after invalid model output`)
  lines.push('', 'distillation cost (token ledger)')
  if (cost.rows.length === 0) lines.push('  no model calls recorded')
  for (const row of cost.rows) {
    lines.push(
      `  ${`${row.provider}/${row.model}`.padEnd(36)} ${row.layer.padEnd(6)} ${n(row.calls).padStart(6)} calls ${n(row.inputTokens).padStart(10)} in ${n(row.outputTokens).padStart(9)} out ${n(row.cacheReadTokens).padStart(9)} cached${row.failures ? `, ${n(row.failures)} failed` : ''}`,
    )
  }
  if (cost.rows.length > 0) {
    lines.push(`  ${'total'.padEnd(43)} ${n(cost.total.calls).padStart(6)} calls ${n(cost.total.inputTokens).padStart(10)} in ${n(cost.total.outputTokens).padStart(9)} out ${n(cost.total.cacheReadTokens).padStart(9)} cached`)
  }
  return lines.join('\n')
}

/** Register `status`. */
export function registerStatus(program: Command, io: CliIO): void {
  withDataDir(program.command('status'))
    .description('Counts per layer and scope, database size, schema, last distillation, pending work and token cost of a data dir or a PostgreSQL database.')
    .option('--json', 'print the report as one JSON object')
    .action(async (options: { dataDir?: string; databaseUrl?: string; user?: string; json?: boolean }) => {
      const report = await collectStatus(resolveDataSource(options))
      if (options.json) printJson(io, report)
      else println(io, formatStatus(report))
    })
}
