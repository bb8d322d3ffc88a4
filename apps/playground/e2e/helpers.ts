import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type MemoryStore, openMemoryStore, openStore } from '@dsh-memory/store'
import { afterAll, beforeAll, expect, inject } from 'vitest'
import { runPgClient } from '../../../packages/store/test/support/pg-cluster.js'
// Declares `inject('pgUrl')` (the cluster's URL), provided by that global setup.
import type {} from '../../../packages/store/test/support/pg-global-setup.js'
import { DshHome, REPO_ROOT } from '../src/host.js'
import { startModelServer, type ModelServer, type Responder } from '../src/model-server.js'

/** A fresh DSH home under the OS temp dir; removed by the returned cleanup unless KEEP_E2E is set. */
export async function freshHome(label: string): Promise<{ home: DshHome; root: string; cleanup: () => Promise<void> }> {
  const root = await mkdtemp(join(tmpdir(), `dshm-${label}-`))
  const home = new DshHome(join(root, 'dsh-home'))
  return {
    home,
    root,
    cleanup: async () => {
      if (!process.env.KEEP_E2E) await rm(root, { recursive: true, force: true })
    },
  }
}

/** The packed tarballs from the global setup. */
export function tarballs(): Record<string, string> {
  return inject('tarballs')
}

/** Run `fn` on the memory store of a DSH home (`<home>/memory/memory.db`), closing it afterwards. */
export async function withHomeStore<T>(home: DshHome, fn: (store: MemoryStore) => Promise<T>, options: { readonly user?: string } = {}): Promise<T> {
  const store = openMemoryStore({ path: join(home.dir, 'memory', 'memory.db'), ...(options.user === undefined ? {} : { user: options.user }) })
  try {
    return await fn(store)
  } finally {
    await store.close()
  }
}

/** What {@link useHostProfile} gives a describe block; read it inside tests and later hooks. */
export interface HostedProfile {
  /** The scripted model server the host talks to. */
  readonly server: ModelServer
  /** The fresh DSH home. */
  readonly home: DshHome
  /** The temp dir holding the home (and any workspaces a test makes). */
  readonly root: string
  /** The profile directory, as `createProfile` returned it. */
  readonly profileDir: string
  /** The profile's name (`options.profile`, else the label). */
  readonly profile: string
}

/**
 * The setup nearly every end-to-end file needs, registered in the calling describe block: a
 * scripted model server, a fresh DSH home, and one profile with `packages` installed from the
 * packed tarballs the way a user installs them (`dsh plugin --profile <profile> add …`); the
 * server is closed and the home removed after the block. Hooks registered after this call run
 * after it, so they can seed the home.
 */
export function useHostProfile(label: string, options: { readonly packages: readonly string[]; readonly profile?: string; readonly responder?: Responder }): HostedProfile {
  const profile = options.profile ?? label
  let state: (HostedProfile & { cleanup: () => Promise<void> }) | undefined
  let server: ModelServer | undefined
  beforeAll(async () => {
    server = await startModelServer(options.responder ? { responder: options.responder } : {})
    const { home, root, cleanup } = await freshHome(label)
    state = { server, home, root, cleanup, profile, profileDir: await home.createProfile(profile, tarballs(), options.packages) }
  })
  afterAll(async () => {
    await server?.close()
    await state?.cleanup()
  })
  const ready = (): HostedProfile => {
    if (!state) throw new Error(`the ${label} host profile is not set up yet (read it inside tests and hooks)`)
    return state
  }
  return {
    get server() {
      return ready().server
    },
    get home() {
      return ready().home
    },
    get root() {
      return ready().root
    },
    get profileDir() {
      return ready().profileDir
    },
    profile,
  }
}

/**
 * Boot the hosted profile once with `patch` (a loader-config overlay that breaks one plugin's
 * config) and assert what every plugin promises for bad config: the boot fails, and the output
 * names what is wrong — each of `names` is found in stdout + stderr (a string as a substring,
 * a RegExp as a match). Returns that output for any further check.
 */
export async function expectBootRejects(hosted: HostedProfile, patch: string, names: readonly (string | RegExp)[]): Promise<string> {
  const result = await hosted.home.run({ profile: hosted.profile, cwd: join(hosted.root, 'work', 'broken'), modelUrl: hosted.server.url, patch, args: ['hello'] })
  const output = result.stdout + result.stderr
  expect(result.code).not.toBe(0)
  for (const name of names) {
    if (typeof name === 'string') expect(output).toContain(name)
    else expect(output).toMatch(name)
  }
  return output
}

/** A database of its own on the run's throwaway PostgreSQL cluster; see {@link postgresDatabase}. */
export interface PostgresDatabase {
  /** `postgres://postgres:<password>@127.0.0.1:<port>/<database>`. */
  readonly databaseUrl: string
  /**
   * A loader overlay pointing every store row that `packages` bring (each dsh-memory bundle
   * mounts its own; the preset `memory-store`) at this database, default schema `dsh_memory`.
   * Every row of a host must agree, so all of them are patched. With `user`, the rows name the
   * host's user (whose global memories it sees); without, the store's default identity.
   */
  storeRows(packages: readonly string[], options?: { readonly user?: string }): string
  /** Run `fn` on the store in this database (another process's view, as `user` when given), closing it afterwards. */
  withStore<T>(fn: (store: MemoryStore) => Promise<T>, options?: { readonly user?: string }): Promise<T>
}

/** Ids of the store rows a package's bundle patch inserts (read from its `cordis.patch.yml`). */
function storeRowIds(packageName: string): string[] {
  const folder = packageName.replace(/^@dsh-memory\//, '')
  let patch: string
  try {
    patch = readFileSync(join(REPO_ROOT, 'packages', folder, 'cordis.patch.yml'), 'utf8')
  } catch {
    return [] // no bundle patch (the store package itself): no row
  }
  return [...patch.matchAll(/- id: (\S+)\s+name: '@dsh-memory\/store\/plugin'/g)].map((match) => match[1]!)
}

/**
 * A fresh database (`createdb`) on the run's throwaway cluster (the store project's
 * `pg-global-setup.ts`, `inject('pgUrl')`), so hosts of several DSH homes can share one store
 * the way a team's machines do. The cluster and everything in it go at the end of the run.
 */
export async function postgresDatabase(label: string): Promise<PostgresDatabase> {
  const admin = inject('pgUrl')
  const name = `e2e_${label.replace(/[^a-z0-9]/gi, '_').toLowerCase()}_${randomBytes(3).toString('hex')}`
  await runPgClient('createdb', admin, [name])
  const url = new URL(admin)
  url.pathname = `/${name}`
  const databaseUrl = url.href
  return {
    databaseUrl,
    storeRows: (packages, options = {}) =>
      packages
        .flatMap(storeRowIds)
        .map((id) => `- id: ${id}\n  config:\n    dataDir: ''\n    databaseUrl: '${databaseUrl}'\n${options.user === undefined ? '' : `    user: '${options.user}'\n`}`)
        .join(''),
    withStore: async (fn, options = {}) => {
      const store = await openStore({ databaseUrl, ...(options.user === undefined ? {} : { user: options.user }) })
      try {
        return await fn(store)
      } finally {
        await store.close()
      }
    },
  }
}
