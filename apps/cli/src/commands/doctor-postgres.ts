/**
 * `dsh-memory doctor [--fix]` on a PostgreSQL database (`--database-url`).
 *
 * What makes sense on a server, through the store and the packages' own declarations:
 * - schema: the store's migrations (`--fix` applies pending ones; a newer dsh-memory's schema
 *   is refused, not touched);
 * - package-tables: every package that has tables there (tree, cue bank, palace, distill,
 *   recall, and `migrate`'s ledger) at the version this dsh-memory knows (`--fix` applies pending migrations), and
 *   packages this CLI does not know (named, a warning);
 * - scene-members, distill-state: orphan references the schema does not declare (`--fix` drops them);
 * - search-index: every message and memory has its search terms (`--fix` rewrites them).
 *
 * SQLite's file checks (`integrity_check`, foreign keys written with enforcement off) do not
 * apply: the server checks its pages and enforces every declared constraint on each write.
 */
import { isMemoryStoreError, type MemoryStore, type SceneOrphans } from '@dsh-memory/store'
import { DistillStateRepository } from '@dsh-memory/distill'
import { type DataSource, openSourceStore } from '../data/data-dir.ts'
import { KNOWN_DECLARATIONS, packageOwners } from '../data/package-tables.ts'
import { checkIndex, type DoctorCheck, type DoctorReport, type Findings, orphanDistillRows, runChecks, schemaCheck, storeChecks } from './doctor.ts'

type PostgresSource = Extract<DataSource, { kind: 'postgres' }>

/** One package's tables: at this CLI's version, pending migrations, newer, or unknown to this CLI. */
interface PackageState {
  readonly owner: string
  readonly state: 'ok' | 'pending' | 'too-new' | 'unknown'
  readonly message: string
}

interface PostgresFindings {
  schema: Findings['schema']
  packages: PackageState[]
  scenes: SceneOrphans[]
  distillRows: string[]
  index: Findings['index']
}

/** Open the store, mapping schema errors to findings (as the SQLite doctor does). */
async function tryOpen(source: PostgresSource, readonly: boolean): Promise<{ store?: MemoryStore; schema: Findings['schema'] }> {
  try {
    return { store: await openSourceStore(source, { readonly }), schema: { status: 'ok', message: '', versions: '' } }
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    if (isMemoryStoreError(error, 'schema-too-old')) return { schema: { status: 'pending', message, versions: '' } }
    if (isMemoryStoreError(error, 'schema-too-new')) return { schema: { status: 'too-new', message, versions: '' } }
    // Unreachable server, refused credentials, no such database: nothing to check.
    if (isMemoryStoreError(error, 'unavailable') || isMemoryStoreError(error, 'not-found') || isMemoryStoreError(error, 'invalid-argument')) throw error
    return { schema: { status: 'error', message, versions: '' } }
  }
}

/** Each package's tables, opened through its declaration (a read-only store only checks the versions). */
async function packageStates(store: MemoryStore): Promise<PackageState[]> {
  const declarations = new Map(KNOWN_DECLARATIONS.map((declare) => declare()).map((declaration) => [declaration.migrations.owner, declaration]))
  const states: PackageState[] = []
  for (const owner of await packageOwners(store)) {
    const declaration = declarations.get(owner)
    if (!declaration) {
      states.push({ owner, state: 'unknown', message: `${owner}: tables of a package this dsh-memory does not know (not checked)` })
      continue
    }
    try {
      await store.tables(declaration)
      states.push({ owner, state: 'ok', message: '' })
    } catch (error) {
      const message = `${owner}: ${(error as Error).message}`
      if (isMemoryStoreError(error, 'schema-too-old')) states.push({ owner, state: 'pending', message })
      else if (isMemoryStoreError(error, 'schema-too-new')) states.push({ owner, state: 'too-new', message })
      else throw error
    }
  }
  return states
}

/** Scenes listing memories that no longer exist, read through the store. */
async function sceneOrphans(store: MemoryStore): Promise<SceneOrphans[]> {
  const orphans: SceneOrphans[] = []
  const known = new Map<string, boolean>()
  const exists = async (id: string): Promise<boolean> => {
    if (!known.has(id)) known.set(id, (await store.memories.get(id)) !== undefined)
    return known.get(id)!
  }
  for (let offset = 0; ; offset += 500) {
    const scenes = await store.scenes.list({ limit: 500, offset })
    for (const scene of scenes) {
      const kept: string[] = []
      const missing: string[] = []
      for (const id of scene.memoryIds) (await exists(id)) ? kept.push(id) : missing.push(id)
      if (missing.length > 0) orphans.push({ sceneId: scene.id, missing, kept })
    }
    if (scenes.length < 500) break
  }
  return orphans
}

async function inspect(source: PostgresSource): Promise<PostgresFindings> {
  const { store, schema } = await tryOpen(source, true)
  const findings: PostgresFindings = { schema, packages: [], scenes: [], distillRows: [], index: { status: 'warning', summary: 'not checked (the store cannot open)', details: [] } }
  if (!store) return findings
  try {
    const latest = new Map<string, number>()
    for (const migration of await store.meta.migrations()) latest.set(migration.owner, Math.max(latest.get(migration.owner) ?? 0, migration.version))
    schema.versions = [...latest.entries()].map(([owner, version]) => `${owner} v${version}`).join(', ')
    findings.packages = await packageStates(store)
    findings.scenes = await sceneOrphans(store)
    if (findings.packages.some((entry) => entry.owner === 'distill' && entry.state === 'ok')) findings.distillRows = await orphanDistillRows(store)
    const counts = await store.stats.counts()
    findings.index = await checkIndex(store, { messages: counts.messages.total, memories: counts.memories.current + counts.memories.superseded })
  } finally {
    await store.close()
  }
  return findings
}

function packageCheck(packages: readonly PackageState[]): DoctorCheck {
  const bad = packages.filter((entry) => entry.state === 'pending' || entry.state === 'too-new')
  const unknown = packages.filter((entry) => entry.state === 'unknown')
  const current = packages.filter((entry) => entry.state === 'ok').map((entry) => entry.owner)
  if (bad.length > 0) {
    const pending = bad.some((entry) => entry.state === 'pending')
    return {
      name: 'package-tables',
      status: 'problem',
      summary: pending ? 'package migrations pending (tables of an older plugin version)' : 'package tables written by a newer dsh-memory: upgrade dsh-memory',
      details: [...bad, ...unknown].map((entry) => entry.message),
    }
  }
  if (unknown.length > 0) return { name: 'package-tables', status: 'warning', summary: `${unknown.length} package${unknown.length > 1 ? 's' : ''} this dsh-memory does not know`, details: unknown.map((entry) => entry.message) }
  return { name: 'package-tables', status: 'ok', summary: current.length > 0 ? `current (${current.join(', ')})` : 'no package tables yet', details: [] }
}

function checksOf(findings: PostgresFindings): DoctorCheck[] {
  return [schemaCheck(findings.schema), packageCheck(findings.packages), ...storeChecks(findings.scenes, [], findings.distillRows, findings.index)]
}

async function repair(source: PostgresSource, findings: PostgresFindings): Promise<Map<string, string>> {
  const fixed = new Map<string, string>()
  if (findings.schema.status === 'too-new') return fixed
  // Opening writable applies the store's pending migrations (under the store's migration lock).
  const { store, schema } = await tryOpen(source, false)
  if (!store) {
    fixed.set('schema', `could not open the store: ${schema.message}`)
    return fixed
  }
  try {
    if (findings.schema.status === 'pending') fixed.set('schema', 'applied the pending migrations')
    const pending = findings.packages.filter((entry) => entry.state === 'pending')
    const declarations = KNOWN_DECLARATIONS.map((declare) => declare())
    for (const entry of pending) await store.tables(declarations.find((declaration) => declaration.migrations.owner === entry.owner)!)
    if (pending.length > 0) fixed.set('package-tables', `applied the pending migrations of ${pending.map((entry) => entry.owner).join(', ')}`)
    for (const scene of findings.scenes) await store.scenes.update(scene.sceneId, { memoryIds: scene.kept }, { actor: 'cli-doctor' })
    if (findings.scenes.length > 0) fixed.set('scene-members', `removed deleted memory ids from ${findings.scenes.length} scene${findings.scenes.length > 1 ? 's' : ''}`)
    if (findings.distillRows.length > 0) {
      const removed = await new DistillStateRepository(store).forgetConversations(findings.distillRows)
      fixed.set('distill-state', `deleted ${removed} state row${removed === 1 ? '' : 's'}`)
    }
    if (findings.index.status !== 'ok') {
      const status = await store.search.rebuild()
      fixed.set('search-index', `rewrote the search terms (${status.documents.messages} messages, ${status.documents.memories} memories)`)
    }
  } finally {
    await store.close()
  }
  return fixed
}

/** Run the checks on a PostgreSQL database (and with `fix`, the repairs, then the checks again). */
export function runPostgresDoctor(source: PostgresSource, options: { fix: boolean }): Promise<DoctorReport> {
  return runChecks(source.label, options.fix, { inspect: () => inspect(source), checks: checksOf, repair: (findings) => repair(source, findings) })
}
