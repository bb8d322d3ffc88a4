/**
 * The benches' PostgreSQL side in tests: the run's throwaway cluster (the store project's
 * globalSetup, `inject('pgUrl')`) and which bench schemas this process left on it.
 */
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { inject } from 'vitest'
import { findPgBin } from '../../../packages/store/test/support/pg-cluster.ts'
import type {} from '../../../packages/store/test/support/pg-global-setup.ts'

/** The cluster's URL (its default database), as a user gives it to `--database-url`. */
export const benchDatabaseUrl = (): string => inject('pgUrl')

/** The bench schemas this test process (the CLI runs in-process) has on the cluster now. */
export async function benchSchemasLeft(): Promise<string[]> {
  const url = new URL(benchDatabaseUrl())
  const bin = findPgBin()
  const { stdout } = await promisify(execFile)(
    bin ? join(bin, 'psql') : 'psql',
    ['-h', url.hostname, '-p', url.port, '-U', decodeURIComponent(url.username), '-d', url.pathname.slice(1), '-At', '-c', `SELECT nspname FROM pg_namespace WHERE nspname LIKE 'dshm\\_bench\\_${process.pid}\\_%' ORDER BY 1`],
    { env: { ...process.env, PGPASSWORD: decodeURIComponent(url.password) } },
  )
  return stdout.split('\n').filter(Boolean)
}
