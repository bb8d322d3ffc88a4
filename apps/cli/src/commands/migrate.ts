/**
 * `dsh-memory migrate --from <data dir | postgres://…> --to <postgres://… | data dir>`: move
 * the store core between backends, resumable, then verify (the work is in `data/migrate.ts`).
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
  if (report.verified) {
    lines.push('', `  ${'verify'.padEnd(14)} ${'source'.padStart(10)} ${'target'.padStart(10)} ${'missing'.padStart(8)}`)
    for (const type of RECORD_TYPES) {
      const line = report.verified[type]
      lines.push(`  ${type.padEnd(14)} ${n(line.source).padStart(10)} ${n(line.target).padStart(10)} ${n(line.missing).padStart(8)}`)
    }
    lines.push(report.ok ? 'verified: every record of the source is in the target' : 'MISMATCH: the target lacks records of the source (see "missing")')
  }
  if (report.notMoved.length > 0) {
    lines.push('', `not moved (${report.notMovedReason}):`)
    for (const entry of report.notMoved) {
      const tables = entry.tables.map((table) => `${table.name} ${table.rows === null ? '(not counted: another version of the package)' : `${n(table.rows)} row${table.rows === 1 ? '' : 's'}`}`).join(', ')
      lines.push(`  ${entry.owner}: ${tables || 'tables of a package this CLI does not know'}`)
    }
  }
  return lines.join('\n')
}

/** Register `migrate`. */
export function registerMigrate(program: Command, io: CliIO): void {
  program
    .command('migrate')
    .description('Move the store core (conversations, messages, memories with their history, scenes, persona) between a data dir and a PostgreSQL database, either way; resumable, then verified.')
    .requiredOption('--from <source>', 'a data dir or a postgres:// URL to copy from (read only)')
    .requiredOption('--to <target>', 'a postgres:// URL or a data dir to copy into (created when missing)')
    .option('--page-size <n>', 'records per committed page (default 1000)')
    .option('--check', 'only verify: compare the source with the target, copy nothing')
    .option('--json', 'print the report as one JSON object')
    .option('--quiet', 'no progress output')
    .action(async (flags: MigrateFlags) => {
      // The target user is stamped on unattributed rows (from before user identities) it copies.
      const user = resolveCliUser(flags.user)
      const from = { ...migrateEndpoint(flags.from, '--from'), user }
      const to = { ...migrateEndpoint(flags.to, '--to'), user }
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
        if (!report.ok) throw new CliError('mismatch', 'the target lacks records of the source (see "missing"); run migrate again to copy them')
      } finally {
        release()
        markDone()
      }
    })
}
