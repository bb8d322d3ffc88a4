/**
 * The one module of the CLI that talks SQL to `memory.db` directly. Everything else goes
 * through the store API (the counts `status` shows come from `@dsh-memory/web`, shared with
 * the overview of `dsh-memory serve`). Why it exists: the store's repository interface has no
 * counts and no health checks (SQLite's `integrity_check` / `foreign_key_check` are SQLite-specific and rows
 * broken behind the store's back are, by definition, rows its API cannot see). `status` reads
 * counts here; `doctor` reads its checks here and applies the fixes the store API cannot
 * express (a dangling `superseded_by`, orphan rows of plugin tables). Connections are opened
 * read-only unless a fix is being applied.
 */
import Database from 'better-sqlite3'

// The read-only connection and the counts are shared with the memory browser's overview.
export { openReadOnly, storeCounts } from '@dsh-memory/web'
export type { StoreCounts } from '@dsh-memory/web'

/** A read-write connection for `doctor --fix`, with foreign keys on like the store's. */
export function openForRepair(path: string): Database.Database {
  const db = new Database(path, { fileMustExist: true, timeout: 5_000 })
  db.pragma('foreign_keys = ON')
  return db
}

const count = (db: Database.Database, sql: string, ...params: unknown[]): number => Number((db.prepare(sql).get(...params) as { n: number }).n)

/** Rows per table, for the index-consistency check. */
export function documentCounts(db: Database.Database): { messages: number; memories: number } {
  return { messages: count(db, 'SELECT COUNT(*) AS n FROM store_messages'), memories: count(db, 'SELECT COUNT(*) AS n FROM store_memories') }
}

/** `PRAGMA integrity_check` lines; `['ok']` for a healthy file. */
export function integrityCheck(db: Database.Database): string[] {
  return (db.pragma('integrity_check') as { integrity_check: string }[]).map((row) => row.integrity_check)
}

/** One row that points at a parent row that does not exist. */
export interface ForeignKeyViolation {
  readonly table: string
  readonly rowid: number
  readonly parent: string
  /** The child column holding the dangling reference. */
  readonly column: string
  /** Whether that column may be NULL (then the fix clears it; otherwise it deletes the row). */
  readonly nullable: boolean
  /** The row's `id` column, when it has one. */
  readonly id: string | undefined
}

/** Every foreign-key violation of the database (`PRAGMA foreign_key_check`), with the column. */
export function foreignKeyViolations(db: Database.Database): ForeignKeyViolation[] {
  const raw = db.pragma('foreign_key_check') as { table: string; rowid: number; parent: string; fkid: number }[]
  const columns = new Map<string, { id: number; from: string }[]>()
  const info = new Map<string, { name: string; notnull: number }[]>()
  return raw.map((row) => {
    if (!columns.has(row.table)) columns.set(row.table, db.pragma(`foreign_key_list(${quote(row.table)})`) as { id: number; from: string }[])
    if (!info.has(row.table)) info.set(row.table, db.pragma(`table_info(${quote(row.table)})`) as { name: string; notnull: number }[])
    const column = columns.get(row.table)!.find((fk) => fk.id === row.fkid)?.from ?? '?'
    const nullable = info.get(row.table)!.find((col) => col.name === column)?.notnull === 0
    const hasId = info.get(row.table)!.some((col) => col.name === 'id')
    const id = hasId ? (db.prepare(`SELECT id FROM ${quote(row.table)} WHERE rowid = ?`).get(row.rowid) as { id: unknown } | undefined)?.id : undefined
    return { table: row.table, rowid: Number(row.rowid), parent: row.parent, column, nullable, id: id === undefined || id === null ? undefined : String(id) }
  })
}

/** A scene that lists memory ids that no longer exist. */
export interface SceneOrphans {
  readonly sceneId: string
  readonly missing: string[]
  readonly kept: string[]
}

/** Scenes whose `memory_ids` name deleted memories (not a declared foreign key: a JSON list). */
export function sceneOrphans(db: Database.Database): SceneOrphans[] {
  const known = new Set((db.prepare('SELECT id FROM store_memories').pluck().all() as string[]).map(String))
  const out: SceneOrphans[] = []
  for (const scene of db.prepare('SELECT id, memory_ids FROM store_scenes').all() as { id: string; memory_ids: string }[]) {
    let ids: unknown
    try {
      ids = JSON.parse(scene.memory_ids)
    } catch {
      ids = []
    }
    const list = Array.isArray(ids) ? ids.map(String) : []
    const missing = list.filter((id) => !known.has(id))
    if (missing.length > 0) out.push({ sceneId: scene.id, missing, kept: list.filter((id) => known.has(id)) })
  }
  return out
}

/** Distill bookkeeping (`distill.conversation.<id>` meta rows) of conversations that no longer exist. */
export function orphanDistillStates(db: Database.Database): string[] {
  const rows = db.prepare("SELECT key FROM store_meta WHERE key LIKE 'distill.conversation.%'").pluck().all() as string[]
  const check = db.prepare('SELECT 1 FROM store_conversations WHERE id = ?').pluck()
  // Long ids are stored hashed (64 hex characters); those cannot be matched back and are kept.
  return rows.filter((key) => {
    const id = key.slice('distill.conversation.'.length)
    return !/^[0-9a-f]{64}$/.test(id) && check.get(id) === undefined
  })
}

/** Repairs `doctor --fix` makes in SQL (the rest go through the store API). */
export function repairForeignKeys(db: Database.Database, violations: readonly ForeignKeyViolation[]): { cleared: number; deleted: number } {
  let cleared = 0
  let deleted = 0
  db.transaction(() => {
    for (const violation of violations) {
      if (violation.nullable) {
        cleared += db.prepare(`UPDATE ${quote(violation.table)} SET ${quote(violation.column)} = NULL WHERE rowid = ?`).run(violation.rowid).changes
      } else {
        deleted += db.prepare(`DELETE FROM ${quote(violation.table)} WHERE rowid = ?`).run(violation.rowid).changes
      }
    }
  })()
  return { cleared, deleted }
}

/** Rebuild every index from its table (`REINDEX`): repairs index b-trees that disagree with their table. */
export function reindex(db: Database.Database): void {
  db.exec('REINDEX')
}

function quote(identifier: string): string {
  return `"${identifier.replace(/"/g, '""')}"`
}
