/**
 * Independent checks of a data dir after a fault: SQLite's own `PRAGMA integrity_check`
 * (through Node's built-in SQLite, a different library from the store's driver, read-only),
 * and the committed-rows side file the writers keep.
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'

/** `PRAGMA integrity_check` and `foreign_key_check` on a database file, read-only. */
export function integrityCheck(path: string): { integrity: string[]; foreignKeyViolations: number } {
  const db = new DatabaseSync(path, { readOnly: true })
  try {
    const integrity = (db.prepare('PRAGMA integrity_check').all() as { integrity_check: string }[]).map((row) => row.integrity_check)
    const foreignKeyViolations = db.prepare('PRAGMA foreign_key_check').all().length
    return { integrity, foreignKeyViolations }
  } finally {
    db.close()
  }
}

/** One line of a writer's side file. */
export interface CommittedLine {
  readonly kind: string
  readonly fields: readonly string[]
}

/**
 * The side file's lines. The last line may be cut by the kill (the append itself was
 * interrupted), so a line without its newline is ignored: it was not reported committed.
 */
export function readCommitted(dataDir: string): CommittedLine[] {
  const path = join(dataDir, 'committed.log')
  if (!existsSync(path)) return []
  const text = readFileSync(path, 'utf8')
  const complete = text.endsWith('\n') ? text : text.slice(0, text.lastIndexOf('\n') + 1)
  return complete
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [kind, ...fields] = line.split(' ')
      return { kind: kind!, fields }
    })
}
