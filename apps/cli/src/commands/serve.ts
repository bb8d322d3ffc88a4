/**
 * `dsh-memory serve`: the memory browser (`@dsh-memory/web`) over a data dir or a PostgreSQL
 * database (`--database-url`; the palace folders and the tree projection stay local files of
 * this machine's data dir), on loopback by default, behind a random token printed in the URL.
 * Runs until Ctrl+C (exit 130) or SIGTERM (exit 0).
 */
import type { Command } from 'commander'
import { DEFAULT_PORT, isWebError, startMemoryBrowser } from '@dsh-memory/web'
import { existingDatabase, openSourceStore, resolveCliDataDir, resolveDataSource, withDataDir } from '../data/data-dir.ts'
import { CliError, type CliIO, CliUsageError, println } from '../io.ts'
import { onInterrupt } from '../process-exit.ts'

interface ServeOptions {
  dataDir?: string
  databaseUrl?: string
  schema?: string
  host: string
  port: string
  allowRemote?: boolean
  palace: string[]
}

/** Register `serve`. */
export function registerServe(program: Command, io: CliIO): void {
  withDataDir(program.command('serve'))
    .description('Browse the data dir (or the PostgreSQL database) in a local web app (overview, memories, scenes, conversations, cue bank, palace, memory tree); prints a URL with an access token.')
    .option('--host <address>', 'bind address; anything but loopback needs --allow-remote', '127.0.0.1')
    .option('--port <n>', 'port to listen on (0 = any free port)', String(DEFAULT_PORT))
    .option('--allow-remote', 'allow a non-loopback --host such as 0.0.0.0 (every request still needs the token)')
    .option('--palace <workspace>', 'also show the memory palace of this workspace (repeatable)', (value: string, list: string[]) => [...list, value], [] as string[])
    .action(async (options: ServeOptions) => {
      const port = /^\d+$/.test(options.port) ? Number(options.port) : Number.NaN
      if (!Number.isSafeInteger(port) || port > 65_535) throw new CliUsageError(`--port expects an integer from 0 to 65535, got ${JSON.stringify(options.port)}`)
      const source = resolveDataSource(options)
      // On PostgreSQL the data dir is this machine's (shown on the overview; local files only).
      const dataDir = source.kind === 'sqlite' ? source.dataDir : resolveCliDataDir(undefined)
      if (source.kind === 'sqlite') existingDatabase(dataDir)
      // The browser edits memories, so the store is opened writable (the server closes it).
      const store = source.kind === 'postgres' ? await openSourceStore(source) : undefined
      let running
      try {
        running = await startMemoryBrowser({ dataDir, ...(store ? { store } : {}), host: options.host, port, allowRemote: options.allowRemote === true, palaceWorkspaces: options.palace, ...(source.user === undefined ? {} : { user: source.user }) })
      } catch (error) {
        if (isWebError(error) && (error.code === 'refused' || error.code === 'invalid-config')) throw new CliUsageError(error.message.replace(/^(host|port): /, '--$1: '), { cause: error })
        if (isWebError(error) && error.code === 'not-found') throw new CliError('not-found', error.message, undefined, { cause: error })
        const code = (error as { code?: unknown }).code
        if (code === 'EADDRINUSE') throw new CliError('failed', `port ${port} on ${options.host} is in use; pass --port 0 for a free one, or another port`, undefined, { cause: error })
        throw error
      }
      // Ctrl-C closes the server first, then exits 130; SIGTERM closes it and exits 0. Both are
      // taken before the URL is printed: a signal that arrives before a listener exists kills the
      // process at once, and whoever reads the URL may press Ctrl-C straight away.
      const stopped = new Promise<void>((resolve) => process.once('SIGTERM', () => resolve()))
      const release = onInterrupt(() => running.close())
      println(io, `dsh-memory web: ${running.url}`)
      io.stderr.write(`serving ${source.label} on ${running.origin} (only with the token above); press Ctrl+C to stop\n`)
      if (running.host !== '127.0.0.1' && running.host !== 'localhost' && running.host !== '::1') {
        io.stderr.write(`warning: listening on ${running.host}: anyone who can reach this machine and has the token can read and change your memories\n`)
      }
      try {
        await stopped
      } finally {
        release()
        await running.close()
      }
    })
}
