/**
 * The `dsh-memory` command line. Each command group lives in `src/commands/<group>.ts` and
 * exports one `register…(program, io)` function; adding a command is adding a file and one
 * line in {@link COMMANDS}.
 */
import { Command, CommanderError, Option } from 'commander'
import { registerBench } from './commands/bench.ts'
import { registerDoctor } from './commands/doctor-command.ts'
import { registerExport } from './commands/export.ts'
import { registerImport } from './commands/import.ts'
import { registerInstall } from './commands/install.ts'
import { registerRecords } from './commands/records.ts'
import { registerServe } from './commands/serve.ts'
import { registerReembed } from './commands/reembed.ts'
import { registerStatus } from './commands/status.ts'
import { registerMigrate } from './commands/migrate.ts'
import { acceptsDatabaseUrl, DATABASE_URL_ENV, redactDatabaseUrl } from './data/database-url.ts'
import { CliError, type CliIO, CliUsageError, EXIT, processIO } from './io.ts'
import { DEFAULT_POSTGRES_SCHEMA } from '@dsh-memory/store'

/** Registration functions of every command group, in help order. */
export const COMMANDS: readonly ((program: Command, io: CliIO) => void)[] = [registerStatus, registerRecords, registerExport, registerImport, registerMigrate, registerReembed, registerDoctor, registerBench, registerServe, registerInstall]

/** Build the program; `io` receives every byte it prints. */
export function createProgram(io: CliIO = processIO()): Command {
  const program = new Command('dsh-memory')
    .description('Inspect, search, export, import, repair and measure dsh-memory data, without a running host.')
    .version('0.1.0')
    .showHelpAfterError()
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    })
  program.addOption(
    new Option('--database-url <url>', `work on this PostgreSQL database (postgres://user@host:5432/db) instead of a data dir (default: $${DATABASE_URL_ENV}); put the password in ~/.pgpass, not in the URL`),
  )
  program.addOption(new Option('--schema <name>', `with --database-url: the PostgreSQL schema of the store's tables, as the store row's \`schema\` (default: ${DEFAULT_POSTGRES_SCHEMA})`))
  program.addOption(
    new Option('--user <identity>', 'who the command works as: the only user whose global memories it shows, and the author of what it writes (default: $DSH_MEMORY_USER, else git\'s global user.email, else <os user>@<hostname>)'),
  )
  // The URL, the schema and the user are the program's options, so they go before or after the
  // command name; every command that opens a store (those taking --data-dir) reads them from its
  // own options (`migrate` reads --user only: it takes --from and --to).
  program.hook('preAction', (_program, command) => {
    const { databaseUrl, schema, user } = program.opts<{ databaseUrl?: string; schema?: string; user?: string }>()
    const dataCommand = command.options.some((option) => option.long === '--data-dir')
    if (user !== undefined) {
      if (!dataCommand && command.name() !== 'migrate') throw new CliUsageError(`--user does not apply to \`${commandPath(command)}\``)
      command.setOptionValue('user', user)
    }
    if (databaseUrl === undefined && schema === undefined) return
    // The benches take a URL but make schemas of their own: a --schema would be ignored there.
    const refused = !dataCommand && databaseUrl !== undefined && !acceptsDatabaseUrl(command) ? '--database-url' : !dataCommand && schema !== undefined ? '--schema' : undefined
    if (refused) {
      throw new CliUsageError(`${refused} does not apply to \`${commandPath(command)}\`${command.name() === 'migrate' ? ' (it takes --from and --to, and --from-schema and --to-schema)' : ''}`)
    }
    if (databaseUrl !== undefined) command.setOptionValue('databaseUrl', databaseUrl)
    if (schema !== undefined) command.setOptionValue('schema', schema)
  })
  for (const register of COMMANDS) register(program, io)
  // Subcommands inherit the overrides so errors surface as exceptions, not process.exit.
  for (const command of allCommands(program)) command.exitOverride().configureOutput(program.configureOutput())
  return program
}

function commandPath(command: Command): string {
  const names: string[] = []
  for (let at: Command | null = command; at?.parent; at = at.parent) names.unshift(at.name())
  return names.join(' ')
}

function allCommands(command: Command): Command[] {
  return command.commands.flatMap((child) => [child, ...allCommands(child)])
}

/**
 * Run the CLI with `argv` (without the node and script paths).
 * @returns the exit code ({@link EXIT}): 0 success, 1 failure, 2 bad usage, 3 not found, 4 problems left by `doctor`.
 */
export async function runCli(argv: readonly string[], io: CliIO = processIO()): Promise<number> {
  const program = createProgram(io)
  try {
    await program.parseAsync([...argv], { from: 'user' })
    return 0
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version are "errors" only to commander.
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.code === 'commander.help') return 0
      return error.exitCode === 0 ? 0 : 2
    }
    // Whatever failed, a database URL in the message loses its password before it is printed.
    if (error instanceof CliError) {
      io.stderr.write(`error: ${redactDatabaseUrl(error.message)}\n`)
      return error.exitCode
    }
    io.stderr.write(`error: ${redactDatabaseUrl(describeFailure(error))}\n`)
    return EXIT.failure
  }
}

/** A store or library error as one line: its stable code (when it has one) and message. */
function describeFailure(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const code = (error as { code?: unknown }).code
  return typeof code === 'string' && !error.message.startsWith(code) ? `${error.message} (${code})` : error.message
}
