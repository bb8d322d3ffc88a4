/**
 * `dsh-memory doctor`: the command, which picks the checks of the source's backend (a SQLite
 * data dir: `doctor.ts`; a PostgreSQL database: `doctor-postgres.ts`, which reuses the shared
 * checks of `doctor.ts`, so the dispatch lives here rather than in either).
 */
import type { Command } from 'commander'
import { resolveDataSource, withDataDir } from '../data/data-dir.ts'
import { formatDoctor, runDoctor } from './doctor.ts'
import { runPostgresDoctor } from './doctor-postgres.ts'
import { CliError, type CliIO, EXIT, printJson, println } from '../io.ts'

/** Register `doctor`. */
export function registerDoctor(program: Command, io: CliIO): void {
  withDataDir(program.command('doctor'))
    .description('Check schema versions, database integrity, orphan rows and search-index consistency (on PostgreSQL: schema versions of every owner, package tables, orphan references, the search terms); --fix repairs what it can. Exits 4 while problems remain.')
    .option('--fix', 'apply the repairs (migrations, REINDEX, orphan rows, index rebuild)')
    .option('--json', 'print the report as one JSON object')
    .action(async (options: { dataDir?: string; databaseUrl?: string; fix?: boolean; json?: boolean }) => {
      const source = resolveDataSource(options)
      const report = source.kind === 'sqlite' ? await runDoctor(source.dataDir, { fix: options.fix === true }) : await runPostgresDoctor(source, { fix: options.fix === true })
      if (options.json) printJson(io, report)
      else println(io, formatDoctor(report))
      if (report.problems > 0) throw new CliError('problems', `${report.problems} problem${report.problems > 1 ? 's' : ''} found${options.fix ? ' that --fix could not repair' : ''}`, EXIT.problems)
    })
}
