/**
 * `dsh-memory migrate --from <data dir | postgres://…> --to <postgres://… | data dir>`: move
 * the store core and every plugin's package tables between backends, resumable, then verify
 * (the work is in `data/migrate.ts` and `data/package-tables.ts`).
 */
import type { Command } from 'commander'
import type { RecordCounts } from '@dsh-memory/store'
import { resolveCliUser } from '../data/data-dir.ts'
import { migrateEndpoint, type MigrateReport, RECORD_TYPES, runMigrate } from '../data/migrate.ts'
import { CliError, type CliIO, printJson, println } from '../io.ts'
import { onInterrupt } from '../process-exit.ts'
import { createProgress } from '../progress.ts'
import { parseCount } from './records.ts'

interface MigrateFlags {
  from: string
  to: string
  fromSchema?: string
  toSchema?: string
  pageSize?: string
  check?: boolean
  json?: boolean
  quiet?: boolean
  /** The program's `--user`, copied in by `program.ts`. */
  user?: string
}

const n = (value: number) => value.toLocaleString('en-US')
const countsText = (counts: RecordCounts) => RECORD_TYPES.map((type) => `${n(counts[type])} ${type}`).join(', ')

/** The text form of a migrate report. */
export function formatMigrate(report: MigrateReport): string {
  const lines = [`migrate ${report.from} → ${report.to}`]
  if (!report.checkOnly) {
    lines.push(`  copied ${countsText(report.copied)}`)
    lines.push(`  already in the target ${countsText(report.alreadyPresent)}`)
  }
  if (!report.completed) lines.push('interrupted: every page copied so far is committed; run the same command again to copy the rest')
  else if (report.verifyInterrupted) lines.push('interrupted while verifying: the copy is complete; run it again with --check to verify')
  if (!report.checkOnly && report.vectors) lines.push(`  message vectors: copied ${n(report.vectors.copied)}, already in the target ${n(report.vectors.alreadyPresent)}`)
  if (!report.checkOnly && report.packages.length > 0) {
    const copied = report.packages.reduce((sum, line) => sum + line.copied, 0)
    const present = report.packages.reduce((sum, line) => sum + line.alreadyPresent, 0)
    const renumbered = report.packages.reduce((sum, line) => sum + line.renumbered, 0)
    lines.push(`  package tables: copied ${n(copied)} rows${renumbered > 0 ? ` (${n(renumbered)} under new numbers)` : ''}, already in the target ${n(present)}`)
  }
  if (!report.checkOnly && report.meta) lines.push(`  meta: copied ${n(report.meta.copied)} keys, already in the target ${n(report.meta.alreadyPresent)}`)
  if (!report.checkOnly && report.audit) lines.push(`  audit log: copied ${n(report.audit.copied)} entries`)
  if (report.verified) {
    // The name column fits the longest package table name (at least the record types' 28).
    const width = Math.max(28, ...report.packages.map((line) => `${line.owner}: ${line.table}`.length))
    const row = (name: string, line: { source: number; target: number; missing: number }) =>
      `  ${name.padEnd(width)} ${n(line.source).padStart(10)} ${n(line.target).padStart(10)} ${n(line.missing).padStart(8)}`
    lines.push('', `  ${'verify'.padEnd(width)} ${'source'.padStart(10)} ${'target'.padStart(10)} ${'missing'.padStart(8)}`)
    for (const type of RECORD_TYPES) lines.push(row(type, report.verified[type]))
    if (report.vectors?.verified) lines.push(row('message vectors', report.vectors.verified))
    for (const line of report.packages) if (line.verified) lines.push(row(`${line.owner}: ${line.table}`, line.verified))
    if (report.meta?.verified) lines.push(row('meta keys', report.meta.verified))
    if (report.audit?.verified) lines.push(row('audit log', report.audit.verified))
    lines.push(report.ok ? 'verified: every record and package row of the source is in the target' : 'MISMATCH: the target lacks records or rows of the source (see "missing")')
  }
  for (const line of report.packages) {
    if (line.refused > 0) lines.push(`refused by the target: ${line.owner}: ${line.table}, ${n(line.refused)} row(s) not copied (${line.refusal})`)
    if (line.differing > 0) lines.push(`kept the target's row: ${line.owner}: ${line.table}, ${n(line.differing)} source row(s) under a key the target holds with other values`)
  }
  if (report.meta && report.meta.differing.length > 0) lines.push('', `meta keys the target holds with another value (the target's kept): ${report.meta.differing.join(', ')}`)
  if (report.notMoved.length > 0) lines.push('', `not moved (${report.notMovedReason}): ${report.notMoved.map((entry) => entry.owner).join(', ')}`)
  return lines.join('\n')
}

/** Register `migrate`. */
export function registerMigrate(program: Command, io: CliIO): void {
  program
    .command('migrate')
    .description('Move the store core (conversations, messages with their vectors, memories with their history, scenes, persona), every plugin\'s tables (tree, cue bank, palace index, distill, recall), the meta rows and the audit log between a data dir and a PostgreSQL database, either way, or merge several into one; resumable, then verified per table.')
    .requiredOption('--from <source>', 'a data dir or a postgres:// URL to copy from (read only)')
    .requiredOption('--to <target>', 'a postgres:// URL or a data dir to copy into (created when missing)')
    .option('--from-schema <name>', 'with a postgres:// --from: the PostgreSQL schema of its store (default: dsh_memory)')
    .option('--to-schema <name>', 'with a postgres:// --to: the PostgreSQL schema of its store (default: dsh_memory)')
    .option('--page-size <n>', 'records per committed page (default 1000)')
    .option('--check', 'only verify: compare the source with the target, copy nothing')
    .option('--json', 'print the report as one JSON object')
    .option('--quiet', 'no progress output')
    .action(async (flags: MigrateFlags) => {
      // The target user is stamped on unattributed rows (from before user identities) it copies.
      const user = resolveCliUser(flags.user)
      const from = { ...migrateEndpoint(flags.from, '--from', flags.fromSchema), user }
      const to = { ...migrateEndpoint(flags.to, '--to', flags.toSchema), user }
      const pageSize = flags.pageSize === undefined ? undefined : parseCount('--page-size', flags.pageSize, 100_000)
      // Ctrl-C stops the copy after the page in flight is committed; the report says where it
      // stands, then the interrupt handler exits 130 (see process-exit.ts).
      const controller = new AbortController()
      let markDone = () => {}
      const done = new Promise<void>((resolve) => (markDone = resolve))
      const release = onInterrupt(() => {
        controller.abort()
        return done
      })
      try {
        const report = await runMigrate(from, to, {
          ...(pageSize ? { pageSize } : {}),
          checkOnly: flags.check === true,
          signal: controller.signal,
          progress: createProgress(io, flags.quiet === true),
        })
        if (flags.json) printJson(io, report)
        else println(io, formatMigrate(report))
        if (controller.signal.aborted) return
        if (!report.ok) throw new CliError('mismatch', 'the target lacks records or rows of the source (see "missing"); run migrate again to copy them')
      } finally {
        release()
        markDone()
      }
    })
}
