/**
 * The benches' PostgreSQL side in tests: the run's throwaway cluster (the store project's
 * globalSetup, `inject('pgUrl')`) and which bench schemas this process left on it.
 */
import { inject } from 'vitest'
import { runPgClient } from '../../../packages/store/test/support/pg-cluster.ts'
import type {} from '../../../packages/store/test/support/pg-global-setup.ts'

/** The cluster's URL (its default database), as a user gives it to `--database-url`. */
export const benchDatabaseUrl = (): string => inject('pgUrl')

/** The bench schemas this test process (the CLI runs in-process) has on the cluster now. */
export async function benchSchemasLeft(): Promise<string[]> {
  const url = new URL(benchDatabaseUrl())
  const stdout = await runPgClient('psql', url.href, ['-d', url.pathname.slice(1), '-At', '-c', `SELECT nspname FROM pg_namespace WHERE nspname LIKE 'dshm\\_bench\\_${process.pid}\\_%' ORDER BY 1`])
  return stdout.split('\n').filter(Boolean)
}
