/**
 * `dsh-memory install` and `dsh-memory uninstall`: put the plugins into a DSH profile (and
 * take them out again) with the `dsh` launcher, then verify the host loads them. The work is
 * done by `src/install/installer.ts`; this file parses options and prints.
 */
import type { Command } from 'commander'
import { InstallError } from '../install/errors.ts'
import { type InstallReport, installPlugins, type UninstallReport, uninstallPlugins } from '../install/installer.ts'
import { parsePluginList, PLUGIN_NAMES } from '../install/packages.ts'
import { type CliIO, printJson, println } from '../io.ts'

interface TargetOptions {
  profile: string
  dshHome?: string
  dsh?: string
  json?: boolean
}

interface InstallCommandOptions extends TargetOptions {
  plugins: string
  from?: string
  repair?: boolean
}

function withTarget(command: Command): Command {
  return command
    .option('--profile <name>', 'the DSH profile (created by dsh when missing)', 'web')
    .option('--dsh-home <dir>', 'the DSH home (default: $DSH_HOME, else ~/.dsh)')
    .option('--dsh <path>', 'the dsh launcher (default: dsh on PATH)')
    .option('--json', 'print the report as one JSON object')
}

/** With `--json`, a failure is also one JSON object on stdout, so scripts read one format. */
async function reporting<T>(io: CliIO, json: boolean | undefined, work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    if (json && error instanceof InstallError) printJson(io, { ok: false, error: { reason: error.reason, message: error.message.split('\n  next: ')[0], next: error.next } })
    throw error
  }
}

/** Register `install` and `uninstall`. */
export function registerInstall(program: Command, io: CliIO): void {
  const step = (line: string) => io.stderr.write(`· ${line}\n`)
  withTarget(program.command('install'))
    .description('Install dsh-memory into a DSH profile with `dsh plugin add`, then verify that --dump-config lists its rows and a boot loads them.')
    .option('--plugins <list>', `preset (everything), or a comma-separated list of ${PLUGIN_NAMES.filter((name) => name !== 'preset').join(', ')}`, 'preset')
    .option('--from <dir>', 'install the tarballs in this folder (npm pack output) instead of this checkout or the registry')
    .option('--repair', 'add the pnpm settings DSH writes for a profile when another tool left them out')
    .action(async (options: InstallCommandOptions) => {
      const packages = parsePluginList(options.plugins)
      const report = await reporting(io, options.json, () =>
        installPlugins({ profile: options.profile, dshHome: options.dshHome, dsh: options.dsh, packages, from: options.from, repair: options.repair === true, onStep: step }),
      )
      if (options.json) printJson(io, { ok: true, ...report })
      else printInstall(io, report)
    })
  withTarget(program.command('uninstall'))
    .description('Remove dsh-memory packages and their pins from a DSH profile; the data dir (memory.db) is kept.')
    .action(async (options: TargetOptions) => {
      const report = await reporting(io, options.json, () => uninstallPlugins({ profile: options.profile, dshHome: options.dshHome, dsh: options.dsh, onStep: step }))
      if (options.json) printJson(io, { ok: true, ...report })
      else printUninstall(io, report)
    })
}

function printInstall(io: CliIO, report: InstallReport): void {
  println(io, `installed ${report.packages.join(', ')} into profile ${report.profile} (${report.profileDir})${report.createdProfile ? ', created by dsh' : ''}`)
  println(io, `  from: ${report.source === 'registry' ? 'the npm registry' : `tarballs (${report.source}), kept in the profile for pnpm`}`)
  println(io, `  rows: ${report.rows.map((row) => row.id).join(', ')}`)
  if (report.database) println(io, `  verified: a boot of the profile loaded them and opened ${report.database}`)
  println(io, `  next: dsh --profile ${report.profile}${report.profile === 'headless' ? ' "your task"' : ''}`)
}

function printUninstall(io: CliIO, report: UninstallReport): void {
  println(io, report.removed.length > 0 ? `removed ${report.removed.join(', ')} from profile ${report.profile}` : `profile ${report.profile} had no dsh-memory packages`)
  if (report.overridesRemoved.length > 0) println(io, `  unpinned: ${report.overridesRemoved.join(', ')}`)
  println(io, `  kept: ${report.dataDirKept} (your memories; delete it yourself if you want them gone)`)
}
