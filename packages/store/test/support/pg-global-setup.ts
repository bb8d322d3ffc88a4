/**
 * vitest `globalSetup` of the store project: one throwaway PostgreSQL cluster per run (see
 * `pg-cluster.ts`), its URL handed to the tests as `inject('pgUrl')`. Each test gets its own
 * schema on it (`test/contract/backends.ts`), which is cheap isolation. Other projects whose
 * tests need PostgreSQL can list this file as their `globalSetup` too.
 */
import type { TestProject } from 'vitest/node'
import { startPgCluster } from './pg-cluster.ts'

declare module 'vitest' {
  export interface ProvidedContext {
    /** The throwaway cluster's superuser URL (with its password). */
    pgUrl: string
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const cluster = await startPgCluster()
  project.provide('pgUrl', cluster.url)
  return () => cluster.stop()
}
