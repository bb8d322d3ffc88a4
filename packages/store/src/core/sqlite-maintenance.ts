/**
 * File-level health checks and repairs of a SQLite memory database, for `dsh-memory doctor`.
 * Deliberately outside the {@link MemoryStore} contract: `integrity_check`, `foreign_key_check`
 * and `REINDEX` are SQLite's own, and the rows they find were written behind the store's back,
 * which by definition its repositories cannot see. It opens the file on its own connection so
 * it also works when the store refuses to open it (pending or newer migrations, damage):
 * read-only unless a repair is asked for, waiting for another process's writer like the store.
 */
import Database from 'better-sqlite3'
import { MemoryStoreError } from './errors.ts'
import { translateSqliteError } from './sqlite-session.ts'

/** One row that points at a parent row that does not exist. */
export interface ForeignKeyViolation {
  readonly table: string
  readonly rowid: number
  readonly parent: string
  /** The child column holding the dangling reference. */
  readonly column: string
  /** Whether that column may be NULL (then the repair clears it; otherwise it deletes the row). */
  readonly nullable: boolean
  /** The row's `id` column, when it has one. */
  readonly id: string | undefined
}

/** A scene that lists memory ids that no longer exist. */
export interface SceneOrphans {
  readonly sceneId: string
  readonly missing: string[]
  readonly kept: string[]
}

/** Options of {@link openStoreMaintenance}. */
export interface StoreMaintenanceOptions {
  /** Open read-write (for the repairs); default read-only. */
  readonly repair?: boolean
  /** How long to wait for another process's write lock (ms). Default 5 000. */
  readonly busyTimeoutMs?: number
}

/** Checks (and, opened with `repair`, repairs) on one database file. Close it when done. */
export interface StoreMaintenance {
  /** `PRAGMA integrity_check` lines; `['ok']` for a healthy file. */
  integrityCheck(): string[]
  /** Every foreign-key violation (`PRAGMA foreign_key_check`), with the column. */
  foreignKeyViolations(): ForeignKeyViolation[]
  /** Scenes whose `memory_ids` name deleted memories (a JSON list, not a declared foreign key). */
  sceneOrphans(): SceneOrphans[]
  /** Meta keys `<prefix><conversation id>` whose conversation does not exist, in key order. */
  metaKeysOfMissingConversations(prefix: string): string[]
  /** Rows of the indexed tables, to compare with the search index's document counts. */
  documentCounts(): { messages: number; memories: number }
  /** Delete each violating row, or clear its reference when the column is nullable; one transaction. */
  repairForeignKeys(violations: readonly ForeignKeyViolation[]): { cleared: number; deleted: number }
  /** Rebuild every index from its table (`REINDEX`): repairs index b-trees that disagree with their table. */
  reindex(): void
  close(): void
}

/**
 * Open a memory database file for checks and repairs (see {@link StoreMaintenance}).
 * @throws MemoryStoreError `not-found` when the file does not exist; `corrupt`, `busy`
 */
export function openStoreMaintenance(path: string, options: StoreMaintenanceOptions = {}): StoreMaintenance {
  const repair = options.repair === true
  let db: Database.Database
  try {
    db = new Database(path, { readonly: !repair, fileMustExist: true, timeout: options.busyTimeoutMs ?? 5_000 })
    // Like the store's own connection, so a repair cannot create new dangling references.
    if (repair) db.pragma('foreign_keys = ON')
  } catch (error) {
    if ((error as { code?: unknown })?.code === 'SQLITE_CANTOPEN') throw new MemoryStoreError('not-found', `no memory database at ${path}`, { cause: error })
    throw translateSqliteError(error, `cannot open ${path}`)
  }
  const count = (source: string): number => Number(db.prepare(source).pluck().get())
  const writable = (): void => {
    if (!repair) throw new MemoryStoreError('readonly', 'open the maintenance handle with { repair: true } to repair')
  }
  return {
    integrityCheck: () => (db.pragma('integrity_check') as { integrity_check: string }[]).map((row) => row.integrity_check),
    foreignKeyViolations: () => foreignKeyViolations(db),
    sceneOrphans: () => sceneOrphans(db),
    metaKeysOfMissingConversations: (prefix) => {
      const rows = db.prepare('SELECT key FROM store_meta WHERE substr(key, 1, length(?)) = ? ORDER BY key').pluck().all(prefix, prefix) as string[]
      const exists = db.prepare('SELECT 1 FROM store_conversations WHERE id = ?').pluck()
      return rows.filter((key) => exists.get(key.slice(prefix.length)) === undefined)
    },
    documentCounts: () => ({ messages: count('SELECT COUNT(*) FROM store_messages'), memories: count('SELECT COUNT(*) FROM store_memories') }),
    repairForeignKeys: (violations) => {
      writable()
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
    },
    reindex: () => {
      writable()
      db.exec('REINDEX')
    },
    close: () => db.close(),
  }
}

function foreignKeyViolations(db: Database.Database): ForeignKeyViolation[] {
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

function sceneOrphans(db: Database.Database): SceneOrphans[] {
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

function quote(identifier: string): string {
  return `"${identifier.replace(/"/g, '""')}"`
}
