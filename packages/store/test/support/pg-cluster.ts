/**
 * A throwaway PostgreSQL cluster for the tests, never the machine's own server: `initdb` into a
 * temporary data dir, start it on 127.0.0.1 with its own free port and its socket inside the
 * data dir, durability off (fsync, synchronous_commit: nothing here must survive a crash), and
 * at the end stop it (`-m immediate`) and delete the dir. Root cannot run initdb, so as root
 * the server runs as the `postgres` user (`runuser`), which Debian's package creates.
 *
 * Server binaries: `DSHM_PG_BIN`, then the newest `/usr/lib/postgresql/<version>/bin`, then
 * `PATH`. When none is found the error says how to install them (`scripts/ensure-postgres.sh`,
 * which `npm test` runs).
 */
import { execFile } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir, userInfo } from 'node:os'
import { delimiter, join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** The password of the cluster's superuser: URLs carry it, so redaction is tested for real. */
const PASSWORD = 'dshm-test-secret'

export interface PgCluster {
  /** `postgres://postgres:<password>@127.0.0.1:<port>/postgres`. */
  readonly url: string
  readonly port: number
  readonly dataDir: string
  stop(): Promise<void>
}

/** The directory holding `initdb`, `pg_ctl` and `postgres`, or undefined. */
export function findPgBin(env: Record<string, string | undefined> = process.env): string | undefined {
  const has = (dir: string) => existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'pg_ctl'))
  if (env.DSHM_PG_BIN) return has(env.DSHM_PG_BIN) ? env.DSHM_PG_BIN : undefined
  const root = '/usr/lib/postgresql'
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((name) => /^\d+$/.test(name) && has(join(root, name, 'bin')))
      .sort((a, b) => Number(b) - Number(a))
    if (versions[0]) return join(root, versions[0], 'bin')
  }
  return (env.PATH ?? '').split(delimiter).find((dir) => dir && has(dir))
}

/**
 * Run one of the cluster's client programs (`psql`, `createdb`, …) against `url`: host, port,
 * user and password come from the URL, the program from the server's bin dir. Its stdout.
 */
export async function runPgClient(program: string, url: string, args: readonly string[]): Promise<string> {
  const target = new URL(url)
  const bin = findPgBin()
  const { stdout } = await run(bin ? join(bin, program) : program, ['-h', target.hostname, '-p', target.port, '-U', decodeURIComponent(target.username), ...args], {
    env: { ...process.env, PGPASSWORD: decodeURIComponent(target.password) },
  })
  return stdout
}

/** A port no one listens on right now (the OS picks it). */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))))
    })
  })
}

/**
 * Start a fresh cluster.
 * @throws Error naming the install command when no server binaries are found.
 */
export async function startPgCluster(): Promise<PgCluster> {
  const bin = findPgBin()
  if (!bin) {
    throw new Error(
      'PostgreSQL server binaries (initdb, pg_ctl) were not found in DSHM_PG_BIN, /usr/lib/postgresql/<version>/bin or PATH. ' +
        'Install them with: bash scripts/ensure-postgres.sh (apt-get install -y postgresql)',
    )
  }
  const asRoot = userInfo().uid === 0
  // As root the server runs as `postgres`, which must reach the dir: /tmp, not a private TMPDIR.
  const dataDir = mkdtempSync(join(asRoot ? '/tmp' : tmpdir(), 'dshm-pg-'))
  const as = async (file: string, args: string[]) => {
    const command = asRoot ? ['runuser', ['-u', 'postgres', '--', join(bin, file), ...args]] : [join(bin, file), args]
    return run(command[0] as string, command[1] as string[], { timeout: 60_000 })
  }
  try {
    const pwfile = join(dataDir, 'pwfile')
    writeFileSync(pwfile, PASSWORD)
    if (asRoot) {
      const { stdout } = await run('id', ['-u', 'postgres'])
      const { stdout: gid } = await run('id', ['-g', 'postgres'])
      chownSync(dataDir, Number(stdout.trim()), Number(gid.trim()))
      chownSync(pwfile, Number(stdout.trim()), Number(gid.trim()))
    }
    const data = join(dataDir, 'data')
    // C.UTF-8: UTF-8 text with code-point collation; the store's own columns say COLLATE "C"
    // anyway, so a server in another locale orders them the same.
    await as('initdb', ['-D', data, '-U', 'postgres', '-E', 'UTF8', '--locale=C.UTF-8', '--auth-local=trust', '--auth-host=scram-sha-256', `--pwfile=${pwfile}`, '--no-sync'])
    for (let attempt = 1; ; attempt++) {
      const port = await freePort()
      const options = [`-c listen_addresses=127.0.0.1`, `-p ${port}`, `-k ${data}`, '-c fsync=off', '-c synchronous_commit=off', '-c full_page_writes=off', '-c max_connections=200'].join(' ')
      try {
        await as('pg_ctl', ['-D', data, '-l', join(dataDir, 'server.log'), '-o', options, '-w', '-t', '60', 'start'])
        return {
          url: `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/postgres`,
          port,
          dataDir,
          stop: async () => {
            await as('pg_ctl', ['-D', data, '-m', 'immediate', 'stop']).catch(() => undefined)
            rmSync(dataDir, { recursive: true, force: true })
          },
        }
      } catch (error) {
        // Another process may have taken the port between the probe and the start: try another.
        if (attempt >= 3) throw new Error(`could not start PostgreSQL: ${(error as Error).message}\n${readLog(dataDir)}`)
      }
    }
  } catch (error) {
    rmSync(dataDir, { recursive: true, force: true })
    throw error
  }
}

function readLog(dataDir: string): string {
  try {
    return readFileSync(join(dataDir, 'server.log'), 'utf8').slice(-2_000)
  } catch {
    return ''
  }
}
