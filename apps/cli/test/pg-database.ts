/**
 * PostgreSQL databases for the CLI's tests, on the run's throwaway cluster (the store project's
 * globalSetup, `inject('pgUrl')`): each test its own database, given as the URL a user passes.
 */
import { inject } from 'vitest'
import { runPgClient } from '../../../packages/store/test/support/pg-cluster.ts'
import type {} from '../../../packages/store/test/support/pg-global-setup.ts'

let databases = 0

/** The cluster superuser's password (every URL carries it: tests check it is never printed). */
export const clusterPassword = (): string => decodeURIComponent(new URL(inject('pgUrl')).password)

/** A fresh database on the cluster, as the URL the CLI is given. */
export async function freshDatabase(label = 'cli'): Promise<string> {
  const admin = new URL(inject('pgUrl'))
  const name = `${label}_${process.pid}_${++databases}`
  await runPgClient('createdb', admin.href, [name])
  const url = new URL(admin.href)
  url.pathname = `/${name}`
  return url.href
}

/** Run SQL on a database with `psql` (rows written behind the store's back). @returns its stdout */
export function psql(url: string, sql: string): Promise<string> {
  return runPgClient('psql', url, ['-d', new URL(url).pathname.slice(1), '-At', '-v', 'ON_ERROR_STOP=1', '-c', sql])
}
