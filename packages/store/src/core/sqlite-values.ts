/**
 * Input → column values shared by several repositories of the SQLite store (live writes and
 * import check input the same way), and the SQL scope filter that memory and scene reads and
 * memory search share.
 */
import { eq, type SQL } from 'drizzle-orm'
import { MemoryStoreError } from './errors.ts'
import { layerKeyOfRow } from './layers.ts'
import * as schema from './schema.ts'
import type { SqliteSession } from './sqlite-session.ts'
import { scopeCondition } from './scope-sql.ts'
import { prepareLabel, prepareText } from './text.ts'
import type { TextLimits } from './text.ts'
import type { Scope, WriteOptions } from './types-common.ts'
import type { AddMemoryInput, MemoryScopeFilter } from './types-memories.ts'
import type { PersonaKey } from './types-persona.ts'
import { embeddingToBuffer, embeddingValue, flagsObject, idList, requireFinite, requireId, requireScope, requireTime } from './validate.ts'

/** Memory columns derived from input (all but id, revision and times). */
export type MemoryValues = Omit<typeof schema.memories.$inferInsert, 'id' | 'revision' | 'createdAt' | 'updatedAt' | 'lastRecalledAt' | 'supersededBy'> & {
  scope: Scope
}

/** The workspace/session columns for a scope, enforcing which are required or forbidden. */
export function placementOf(limits: TextLimits, scope: Scope, workspaceInput: unknown, sessionInput: unknown): { workspace: string | null; sessionId: string | null } {
  const workspace =
    workspaceInput === undefined || workspaceInput === null || workspaceInput === '' ? null : prepareLabel(workspaceInput, 'workspace', limits.label)
  const sessionId = sessionInput === undefined || sessionInput === null ? null : requireId(sessionInput, 'sessionId')
  if (scope === 'global' && workspace !== null) {
    throw new MemoryStoreError('invalid-argument', 'a global memory must not have a workspace (use scope "workspace")')
  }
  if (scope === 'workspace' && workspace === null) throw new MemoryStoreError('invalid-argument', 'a workspace memory needs a workspace')
  if (scope === 'session' && sessionId === null) throw new MemoryStoreError('invalid-argument', 'a session memory needs a sessionId')
  return { workspace, sessionId }
}

/** Validate and normalise memory input into column values (everything but ids and times). */
export function memoryValuesOf(limits: TextLimits, input: AddMemoryInput): MemoryValues {
  if (!input || typeof input !== 'object') throw new MemoryStoreError('invalid-argument', 'memory input must be an object')
  const scope = requireScope(input.scope)
  const placement = placementOf(limits, scope, input.workspace, input.sessionId)
  const embedding = embeddingValue(input.embedding)
  return {
    kind: prepareLabel(input.kind, 'kind', limits.label),
    text: prepareText(input.text, 'text', limits.memory).text,
    scope,
    ...placement,
    sourceMessageIds: idList(input.sourceMessageIds, 'sourceMessageIds'),
    priority: input.priority === undefined ? 0 : requireFinite(input.priority, 'priority'),
    flags: flagsObject(input.flags),
    embedding: embedding ? embeddingToBuffer(embedding) : null,
    embeddingDims: embedding ? embedding.length : null,
    embeddingModel:
      embedding && input.embeddingModel !== undefined && input.embeddingModel !== null
        ? prepareLabel(input.embeddingModel, 'embeddingModel', limits.label)
        : null,
  }
}

/** The row key of a persona document (`''` is the global persona's workspace). */
export function personaKeyOf(limits: TextLimits, key: PersonaKey): { scope: 'global' | 'workspace'; workspace: string } {
  if (!key || typeof key !== 'object') throw new MemoryStoreError('invalid-argument', 'persona key must be an object')
  if (key.scope === 'global') {
    if (key.workspace !== undefined && key.workspace !== null && key.workspace !== '') {
      throw new MemoryStoreError('invalid-argument', 'the global persona has no workspace')
    }
    return { scope: 'global', workspace: '' }
  }
  if (key.scope === 'workspace') {
    return { scope: 'workspace', workspace: prepareLabel(key.workspace, 'workspace', limits.label) }
  }
  throw new MemoryStoreError('invalid-argument', `persona scope must be 'global' or 'workspace', got ${JSON.stringify(key.scope)}`)
}

/** The audit/change-log id of a persona document. */
export function personaEntityId(key: { scope: string; workspace: string }): string {
  return key.scope === 'global' ? 'global' : `workspace:${key.workspace}`
}

/** The scope filter of memory and scene reads and memory search (see {@link scopeCondition}). */
export function memoryScopeCondition(filter: MemoryScopeFilter, table: typeof schema.memories | typeof schema.scenes = schema.memories): SQL | undefined {
  const t = table
  const memoryOnly = t === schema.memories ? { kind: schema.memories.kind, supersededBy: schema.memories.supersededBy } : {}
  return scopeCondition(filter, { scope: t.scope, workspace: t.workspace, sessionId: t.sessionId, createdAt: t.createdAt, ...memoryOnly })
}

/** A repository's `get(id)`: check the id, read the row, map it (`undefined` when absent). */
export function readById<Row, R>(s: SqliteSession, getRow: (id: string) => Row | undefined, map: (row: Row) => R): (id: string) => Promise<R | undefined> {
  return async (id: string) => {
    requireId(id, 'id')
    return s.read(() => {
      const row = getRow(id)
      return row ? map(row) : undefined
    })
  }
}

/**
 * Write `set` to a versioned row (a memory or a scene) inside the caller's write: its revision
 * grows by one and `updatedAt` never goes backwards. @returns the new revision.
 */
export function updateVersioned(
  s: SqliteSession,
  table: typeof schema.memories | typeof schema.scenes,
  existing: { id: string; revision: number; updatedAt: number },
  set: Record<string, unknown>,
  now: number,
): number {
  const revision = existing.revision + 1
  // The two tables share these columns; drizzle cannot type an update over a union of tables.
  const t = table as typeof schema.memories
  s.db
    .update(t)
    .set({ ...set, revision, updatedAt: Math.max(now, existing.updatedAt) })
    .where(eq(t.id, existing.id))
    .run()
  return revision
}

/** How a repository's `update(id, patch)` of a versioned row differs between memories and scenes. */
export interface VersionedUpdate<Row, R> {
  readonly table: typeof schema.memories | typeof schema.scenes
  readonly entity: 'memory' | 'scene'
  readonly getRow: (id: string) => Row | undefined
  readonly map: (row: Row) => R
  /** Runs right after the row is written, before the change is recorded (the memory's search text). */
  readonly afterWrite?: (existing: Row) => void
  /** Whether the change alters what the row's layer holds; default always. */
  readonly changesLayer?: () => boolean
}

/**
 * The write of `update(id, patch)` on a memory or a scene, once `set` holds the checked
 * columns: the row must exist (`not-found`); an empty `set` returns it unchanged; otherwise
 * `set` becomes the next revision ({@link updateVersioned}), the change is recorded and the
 * row's layer bumped, all in one write.
 */
export function writeVersionedUpdate<Row extends { id: string; revision: number; updatedAt: number; scope: string; workspace: string | null }, R>(
  s: SqliteSession,
  spec: VersionedUpdate<Row, R>,
  id: string,
  set: Record<string, unknown>,
  options: WriteOptions | undefined,
): Promise<R> {
  return s.write(() => {
    const existing = spec.getRow(id)
    if (!existing) throw new MemoryStoreError('not-found', `${spec.entity} ${id} does not exist`)
    if (Object.keys(set).length === 0) return spec.map(existing)
    const now = s.now()
    const revision = updateVersioned(s, spec.table, existing, set, now)
    spec.afterWrite?.(existing)
    s.record({ entity: spec.entity, entityId: id, change: 'update', audit: `${spec.entity}.update`, revision }, options, now)
    if (spec.changesLayer?.() ?? true) s.bumpLayers([layerKeyOfRow(existing.scope, existing.workspace)], options, now)
    return spec.map(spec.getRow(id)!)
  }, options)
}
