/**
 * What the audit log may say about an entity: its operation, revision and time, never a path.
 * Memories, scenes, messages and conversations are named by generated ids (conversation ids are
 * the host's session ids); layer, persona, meta and lease keys embed workspace paths
 * (`workspace:/home/me/shop-api`), which would tell a reader of the log where a user works. The
 * path part of such a key becomes `ws_` + 16 hex digits of its SHA-256: still the same value for
 * the same workspace (so entries group and `audit.list({ entityId })` finds them), no longer a path.
 */
import { createHash } from 'node:crypto'
import type { EntityName } from './types-common.ts'

const GENERATED_IDS: ReadonlySet<string> = new Set<EntityName>(['conversation', 'message', 'memory', 'scene'])

/**
 * Where a path starts in a key: `/x`, `\x`, `~/x`, `C:\x` or `C:/x`, at the start of the key or
 * after a separator (`workspace:/x`, `schedule.workspace:/x`). A slash inside a word is a key's own
 * separator (`distill/l1/<hash>`), not a path.
 */
const PATH_START = /(?<=^|[:.=#|@\s])(?:[A-Za-z]:[\\/]|[\\/]|~[\\/])/

/** The name of the SQL function the audit migration calls (registered on every connection). */
export const AUDIT_ID_SQL_FUNCTION = 'store_audit_id'

/** The id the audit log records for `entity`/`id` (see the module comment). Pure and stable. */
export function auditEntityId(entity: string, id: string): string {
  if (GENERATED_IDS.has(entity)) return id
  const start = id.search(PATH_START)
  if (start < 0) return id
  const digest = createHash('sha256').update(id.slice(start)).digest('hex').slice(0, 16)
  return `${id.slice(0, start)}ws_${digest}`
}
