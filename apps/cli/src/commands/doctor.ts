/**
 * `dsh-memory doctor [--fix]`: check a data dir and repair what can be repaired.
 *
 * Checks (read-only without `--fix`):
 * - schema: every owner's migrations applied (a database written by a newer dsh-memory is
 *   refused, not touched; pending migrations are applied by `--fix`);
 * - integrity: SQLite's `integrity_check` (`--fix` rebuilds the indexes with `REINDEX`, which
 *   repairs index pages that disagree with their table; damage to table pages is reported with
 *   how to rescue the rest);
 * - foreign keys: rows whose parent is gone, e.g. a message without its conversation written
 *   with foreign keys off (`--fix` deletes such rows, or clears a nullable reference such as a
 *   memory's `superseded_by`);
 * - orphan references the schema does not declare: scenes listing deleted memories, distill
 *   bookkeeping of deleted conversations (`--fix` drops the dangling ids / rows);
 * - the search index: the FTS5 tables in the database must be built with the current
 *   tokenizer and hold exactly the database's messages and memories (`--fix` rebuilds them).
 *
 * On PostgreSQL the checks that make sense on a server run instead (`doctor-postgres.ts`).
 */
import { DistillStateRepository } from '@dsh-memory/distill'
import { type ForeignKeyViolation, isMemoryStoreError, type MemoryStore, openMemoryStore, openStoreMaintenance, type SceneOrphans } from '@dsh-memory/store'
import { existingDatabase } from '../data/data-dir.ts'

/** One check's outcome. */
export interface DoctorCheck {
  /** `schema`, `integrity`, `foreign-keys`, `scene-members`, `distill-state`, `search-index`. */
  readonly name: string
  readonly status: 'ok' | 'warning' | 'problem'
  readonly summary: string
  readonly details: readonly string[]
  /** What `--fix` did about it (only with `--fix`). */
  readonly fixed?: string
  /** With `--fix`: what this check found before the repairs (when it was not ok). */
  readonly found?: { readonly status: 'warning' | 'problem' | 'ok'; readonly summary: string; readonly details: readonly string[] }
}

/** The whole report. */
export interface DoctorReport {
  readonly database: string
  readonly fix: boolean
  readonly checks: readonly DoctorCheck[]
  /** Problems still present after the run (fixed ones are not counted). */
  readonly problems: number
}

export interface Findings {
  schema: { status: 'ok' | 'pending' | 'too-new' | 'error'; message: string; versions: string }
  integrity: string[]
  violations: ForeignKeyViolation[]
  scenes: SceneOrphans[]
  /** Legacy `distill.conversation.<id>` meta keys of deleted conversations (data dirs not upgraded yet). */
  distillStates: string[]
  /** Conversation ids whose rows in distill's own tables outlived the conversation. */
  distillRows: string[]
  index: { status: 'ok' | 'warning' | 'problem'; summary: string; details: string[] }
}

/** Open the store the way the check needs it; maps schema errors to findings. */
function tryOpen(path: string, readonly: boolean): { store?: MemoryStore; schema: Findings['schema'] } {
  try {
    // A read-only store never writes: it reports a pending index backfill instead of running it.
    const store = openMemoryStore({ path, readonly, actor: 'cli-doctor' })
    return { store, schema: { status: 'ok', message: '', versions: '' } }
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    if (isMemoryStoreError(error, 'schema-too-old')) return { schema: { status: 'pending', message, versions: '' } }
    if (isMemoryStoreError(error, 'schema-too-new')) return { schema: { status: 'too-new', message, versions: '' } }
    return { schema: { status: 'error', message, versions: '' } }
  }
}

/**
 * Check the search index (SQLite FTS5 tables in the database): built with the current
 * tokenizer, and holding exactly the database's messages and memories. Rows written behind
 * the store's back (or FTS rows without their row) show up as a count mismatch.
 */
export async function checkIndex(store: MemoryStore, expected: { messages: number; memories: number }): Promise<Findings['index']> {
  // A read-only store reports a pending backfill or rebuild instead of running it.
  const status = await store.search.warm()
  const details: string[] = []
  let state: 'ok' | 'warning' | 'problem' = 'ok'
  if (!status.built) {
    details.push('the index is not built for every row with the current tokenizer: the next open of the store (or --fix) completes it')
    state = 'warning'
  }
  if (status.documents.messages !== expected.messages || status.documents.memories !== expected.memories) {
    details.push(
      `index holds ${status.documents.messages} messages and ${status.documents.memories} memories, the database ${expected.messages} and ${expected.memories} (rows written behind the store's back)`,
    )
    state = 'problem'
  }
  return {
    status: state,
    summary: state === 'ok' ? `index current (${status.documents.messages} messages, ${status.documents.memories} memories)` : state === 'warning' ? 'index will be completed when the store next opens' : 'index out of sync with the database',
    details,
  }
}

/** Where distill keeps a conversation's bookkeeping (meta key `<prefix><conversation id>`). */
const DISTILL_STATE_PREFIX = 'distill.conversation.'

async function inspect(path: string): Promise<Findings> {
  const db = openStoreMaintenance(path)
  let integrity: string[]
  let violations: ForeignKeyViolation[]
  let scenes: SceneOrphans[] = []
  let distillStates: string[] = []
  let distillRows: string[] = []
  let counts = { messages: 0, memories: 0 }
  try {
    integrity = db.integrityCheck()
    violations = db.foreignKeyViolations()
    try {
      scenes = db.sceneOrphans()
      // Long ids are stored hashed (64 hex characters); those cannot be matched back and are kept.
      distillStates = db.metaKeysOfMissingConversations(DISTILL_STATE_PREFIX).filter((key) => !/^[0-9a-f]{64}$/.test(key.slice(DISTILL_STATE_PREFIX.length)))
      counts = db.documentCounts()
    } catch (error) {
      // Tables a pending migration has not created yet: the schema check reports that.
      if (!/no such (table|column)/.test((error as Error).message)) integrity.push(`cannot read the store tables: ${(error as Error).message}`)
    }
  } finally {
    db.close()
  }
  const { store, schema } = tryOpen(path, true)
  let index: Findings['index'] = { status: 'warning', summary: 'not checked (the store cannot open)', details: [] }
  if (store) {
    try {
      const applied = await store.meta.migrations()
      const latest = new Map<string, number>()
      for (const migration of applied) latest.set(migration.owner, Math.max(latest.get(migration.owner) ?? 0, migration.version))
      schema.versions = [...latest.entries()].map(([owner, version]) => `${owner} v${version}`).join(', ')
      index = await checkIndex(store, counts)
      if (latest.has('distill')) distillRows = await orphanDistillRows(store)
    } finally {
      await store.close()
    }
  }
  return { schema, integrity, violations, scenes, distillStates, distillRows, index }
}

/** Distill state (through distill's own library) of conversations that no longer exist. */
export function orphanDistillRows(store: MemoryStore): Promise<string[]> {
  return new DistillStateRepository(store).orphanConversations(async (id) => (await store.conversations.get(id)) !== undefined)
}

function describeViolation(violation: ForeignKeyViolation): string {
  return `${violation.table} row ${violation.id ?? `#${violation.rowid}`}: ${violation.column} points to a missing ${violation.parent} row`
}

/** The `schema` check of the store's own tables. */
export function schemaCheck(schema: Findings['schema']): DoctorCheck {
  return schema.status === 'ok'
    ? { name: 'schema', status: 'ok', summary: `migrations applied (${schema.versions})`, details: [] }
    : schema.status === 'pending'
      ? { name: 'schema', status: 'problem', summary: 'migrations pending (the database was written by an older dsh-memory)', details: [schema.message] }
      : schema.status === 'too-new'
        ? { name: 'schema', status: 'problem', summary: 'written by a newer dsh-memory: upgrade dsh-memory (nothing here can fix it)', details: [schema.message] }
        : { name: 'schema', status: 'problem', summary: 'the store cannot open the database', details: [schema.message] }
}

/** The `scene-members`, `distill-state` and `search-index` checks (the same on both backends). */
export function storeChecks(scenes: readonly SceneOrphans[], distillStates: readonly string[], distillRows: readonly string[], index: Findings['index']): DoctorCheck[] {
  const distillOrphans = distillStates.length + distillRows.length
  return [
    scenes.length === 0
      ? { name: 'scene-members', status: 'ok', summary: 'every scene lists existing memories', details: [] }
      : {
          name: 'scene-members',
          status: 'problem',
          summary: `${scenes.length} scene${scenes.length > 1 ? 's list' : ' lists'} deleted memories`,
          details: scenes.map((scene) => `scene ${scene.sceneId}: missing ${scene.missing.join(', ')}`),
        },
    distillOrphans === 0
      ? { name: 'distill-state', status: 'ok', summary: 'no bookkeeping of deleted conversations', details: [] }
      : {
          name: 'distill-state',
          status: 'warning',
          summary: `${distillOrphans} distill state row${distillOrphans > 1 ? 's' : ''} of deleted conversations`,
          details: [...distillStates, ...distillRows.map((id) => `distill_conversations ${id}`)],
        },
    { name: 'search-index', status: index.status, summary: index.summary, details: index.details },
  ]
}

function checksOf(findings: Findings): DoctorCheck[] {
  const integrityOk = findings.integrity.length === 1 && findings.integrity[0] === 'ok'
  return [
    schemaCheck(findings.schema),
    integrityOk
      ? { name: 'integrity', status: 'ok', summary: 'integrity_check ok', details: [] }
      : { name: 'integrity', status: 'problem', summary: `integrity_check found ${findings.integrity.length} problem${findings.integrity.length > 1 ? 's' : ''}`, details: findings.integrity.slice(0, 20) },
    findings.violations.length === 0
      ? { name: 'foreign-keys', status: 'ok', summary: 'no orphan rows', details: [] }
      : { name: 'foreign-keys', status: 'problem', summary: `${findings.violations.length} orphan row${findings.violations.length > 1 ? 's' : ''}`, details: findings.violations.slice(0, 50).map(describeViolation) },
    ...storeChecks(findings.scenes, findings.distillStates, findings.distillRows, findings.index),
  ]
}

/** Apply every fix, in an order where each step sees the previous one's result. */
async function repair(path: string, findings: Findings): Promise<Map<string, string>> {
  const fixed = new Map<string, string>()
  if (findings.schema.status === 'too-new') return fixed
  const integrityOk = findings.integrity.length === 1 && findings.integrity[0] === 'ok'
  if (!integrityOk) {
    const db = openStoreMaintenance(path, { repair: true })
    try {
      db.reindex()
      fixed.set('integrity', 'rebuilt every index (REINDEX)')
    } catch (error) {
      fixed.set('integrity', `REINDEX failed: ${(error as Error).message}`)
    } finally {
      db.close()
    }
  }
  // Opening writable applies pending migrations (the store's own runner, in one transaction).
  const { store, schema } = tryOpen(path, false)
  if (!store) {
    fixed.set('schema', `could not open the store: ${schema.message}`)
    return fixed
  }
  try {
    if (findings.schema.status === 'pending') fixed.set('schema', 'applied the pending migrations')
    if (findings.violations.length > 0) {
      // Messages go through the store (audited, change-logged); other rows need SQL.
      const messages = findings.violations.filter((violation) => violation.table === 'store_messages' && violation.id !== undefined)
      for (const violation of messages) await store.messages.delete(violation.id!, { actor: 'cli-doctor' })
      const rest = findings.violations.filter((violation) => !messages.includes(violation))
      let sql = { cleared: 0, deleted: 0 }
      if (rest.length > 0) {
        const db = openStoreMaintenance(path, { repair: true })
        try {
          sql = db.repairForeignKeys(rest)
        } finally {
          db.close()
        }
      }
      fixed.set('foreign-keys', `deleted ${messages.length + sql.deleted} orphan row${messages.length + sql.deleted === 1 ? '' : 's'}, cleared ${sql.cleared} dangling reference${sql.cleared === 1 ? '' : 's'}`)
    }
    for (const scene of findings.scenes) await store.scenes.update(scene.sceneId, { memoryIds: scene.kept }, { actor: 'cli-doctor' })
    if (findings.scenes.length > 0) fixed.set('scene-members', `removed deleted memory ids from ${findings.scenes.length} scene${findings.scenes.length > 1 ? 's' : ''}`)
    // Legacy keys first: distill's tables upgrade the rest of its meta state when they open.
    for (const key of findings.distillStates) await store.meta.delete(key, { actor: 'cli-doctor' })
    const forgotten = findings.distillRows.length > 0 ? await new DistillStateRepository(store).forgetConversations(findings.distillRows) : 0
    const removed = findings.distillStates.length + forgotten
    if (removed > 0) fixed.set('distill-state', `deleted ${removed} state row${removed > 1 ? 's' : ''}`)
    // Last, after every row change: a fresh index from the rows.
    if (findings.index.status !== 'ok' || findings.violations.length > 0 || !integrityOk) {
      const status = await store.search.rebuild()
      fixed.set('search-index', `rebuilt (${status.documents.messages} messages, ${status.documents.memories} memories)`)
    }
  } finally {
    await store.close()
  }
  return fixed
}

/** How one backend's doctor finds, judges and repairs (SQLite here, PostgreSQL in `doctor-postgres.ts`). */
export interface DoctorSteps<F> {
  inspect(): Promise<F>
  checks(findings: F): DoctorCheck[]
  /** @returns what each repaired check's fix did, by check name */
  repair(findings: F): Promise<Map<string, string>>
}

/**
 * Run the checks, and with `fix` the repairs, then the checks again: each check then reports
 * what `--fix` did about it and what was found before.
 */
export async function runChecks<F>(database: string, fix: boolean, steps: DoctorSteps<F>): Promise<DoctorReport> {
  const before = await steps.inspect()
  let checks = steps.checks(before)
  if (fix && checks.some((check) => check.status !== 'ok')) {
    const fixed = await steps.repair(before)
    const previous = checks
    checks = steps.checks(await steps.inspect()).map((check) => {
      const withFix = fixed.has(check.name) ? { ...check, fixed: fixed.get(check.name)! } : check
      const found = previous.find((entry) => entry.name === check.name)
      return found && found.status !== 'ok' ? { ...withFix, found: { status: found.status, summary: found.summary, details: found.details } } : withFix
    })
  }
  const problems = checks.filter((check) => check.status === 'problem').length
  return { database, fix, checks, problems }
}

/** Run the checks of a data dir (and with `fix`, the repairs, then the checks again). */
export async function runDoctor(dataDir: string, options: { fix: boolean }): Promise<DoctorReport> {
  const path = existingDatabase(dataDir)
  return runChecks(path, options.fix, { inspect: () => inspect(path), checks: checksOf, repair: (findings) => repair(path, findings) })
}

/** The text form of a doctor report. */
export function formatDoctor(report: DoctorReport): string {
  const mark = { ok: 'ok  ', warning: 'warn', problem: 'FAIL' } as const
  const lines = [`doctor ${report.database}`]
  for (const check of report.checks) {
    lines.push(`  [${mark[check.status]}] ${check.name.padEnd(14)} ${check.summary}`)
    for (const detail of check.details) lines.push(`         ${detail}`)
    if (check.found) {
      lines.push(`         found: ${check.found.summary}`)
      for (const detail of check.found.details) lines.push(`           ${detail}`)
    }
    if (check.fixed) lines.push(`         fixed: ${check.fixed}`)
  }
  const integrity = report.checks.find((check) => check.name === 'integrity')
  if (integrity?.status === 'problem') {
    lines.push('  The file itself is damaged beyond index pages: `dsh-memory export` what is still readable, move memory.db aside, and `dsh-memory import` the export into a fresh data dir.')
  }
  if (report.problems === 0) lines.push(report.fix ? 'healthy (after fixes)' : 'healthy')
  else lines.push(`${report.problems} problem${report.problems > 1 ? 's' : ''}${report.fix ? ' left' : ': run `dsh-memory doctor --fix`'}`)
  return lines.join('\n')
}
