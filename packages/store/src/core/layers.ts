/**
 * Memory layers: the global layer and one layer per workspace. A layer key names one of them
 * as a string (`'global'`, `'workspace:<path>'`), the primary key of `store_layer_revisions`.
 *
 * Global memories are private to their writer, so the global layer is per user: writes to a
 * user's global rows bump `'global:<user>'`, writes to unattributed ones (from before user
 * identities, visible to everyone) bump `'global'`. What one user sees as the global layer is
 * both: its revision is the sum of the two (each only grows, so the sum does too) and its key
 * `'global:<user>'`.
 */
import { MemoryStoreError } from './errors.ts'
import { prepareLabel } from './text.ts'
import type { Scope } from './types-common.ts'
import type { LayerKey, LayerRevision } from './types-coordination.ts'
import type { CoordinatedMemoryStore, MemoryStore } from './types-store.ts'

const WORKSPACE_PREFIX = 'workspace:'
const GLOBAL_PREFIX = 'global:'

/** The stored key of the global layer part `createdBy` writes (`'global'` for unattributed rows). */
export function globalLayerKey(createdBy: string): string {
  return createdBy ? GLOBAL_PREFIX + createdBy : 'global'
}

/** The stored keys whose revisions make up `user`'s global layer: the shared unattributed part, then the user's own. */
export function globalLayerParts(user: string): [string, string] {
  return ['global', globalLayerKey(user)]
}

/**
 * The key of a layer: `'global'` or `'workspace:<path>'` (the layer as such; the stored keys of
 * the global layer are per user, see {@link storedLayerKeys}).
 * @throws MemoryStoreError `invalid-argument` for another scope, or a workspace layer without a workspace.
 */
export function layerKeyOf(key: LayerKey): string {
  if (!key || typeof key !== 'object') throw new MemoryStoreError('invalid-argument', 'layer key must be an object')
  if (key.scope === 'global') {
    if (key.workspace !== undefined && key.workspace !== null && key.workspace !== '') {
      throw new MemoryStoreError('invalid-argument', 'the global layer has no workspace')
    }
    return 'global'
  }
  if (key.scope === 'workspace') {
    if (typeof key.workspace !== 'string' || key.workspace.length === 0) throw new MemoryStoreError('invalid-argument', 'a workspace layer needs a workspace')
    return WORKSPACE_PREFIX + key.workspace
  }
  throw new MemoryStoreError('invalid-argument', `layer scope must be 'global' or 'workspace', got ${JSON.stringify((key as { scope?: unknown }).scope)}`)
}

/**
 * The stored layer key of a row's placement and author (`createdBy` matters for global rows
 * only); `undefined` for session-scoped rows (no layer).
 */
export function layerKeyOfRow(scope: Scope | string, workspace: string | null | undefined, createdBy: string): string | undefined {
  if (scope === 'global') return globalLayerKey(createdBy)
  if (scope === 'workspace' && workspace) return WORKSPACE_PREFIX + workspace
  return undefined
}

/** The layer a key names (`'global:<user>'` is a global layer), or `undefined` for a string that is not a layer key. */
export function parseLayerKey(key: string): { scope: 'global'; workspace: null } | { scope: 'workspace'; workspace: string } | undefined {
  if (key === 'global' || (key.startsWith(GLOBAL_PREFIX) && key.length > GLOBAL_PREFIX.length)) return { scope: 'global', workspace: null }
  if (key.startsWith(WORKSPACE_PREFIX) && key.length > WORKSPACE_PREFIX.length) return { scope: 'workspace', workspace: key.slice(WORKSPACE_PREFIX.length) }
  return undefined
}

/**
 * The stored keys of a caller's layer as `user` sees it: the workspace's (with the same
 * normalisation as the rows' workspace column, `maxLabel` being the store's label limit, so the
 * keys agree), or the two parts of the user's global layer ({@link globalLayerParts}).
 * @throws MemoryStoreError `invalid-argument`
 */
export function storedLayerKeys(key: LayerKey, maxLabel: number, user: string): string[] {
  layerKeyOf(key)
  return key.scope === 'global' ? globalLayerParts(user) : [layerKeyOf({ scope: 'workspace', workspace: prepareLabel(key.workspace, 'workspace', maxLabel) })]
}

type LayerRow = { layerKey: string; revision: number; updatedAt: number }

/**
 * The revision record of a layer from its stored rows (those of {@link storedLayerKeys}; none:
 * the layer never changed). `key` is the last stored key: the user's own for the global layer.
 */
export function layerRevisionOf(keys: readonly string[], rows: readonly LayerRow[]): LayerRevision {
  const key = keys[keys.length - 1]!
  const layer = parseLayerKey(key)!
  const mine = rows.filter((row) => keys.includes(row.layerKey))
  const revision = mine.reduce((sum, row) => sum + row.revision, 0)
  const updatedAt = mine.reduce((latest, row) => Math.max(latest, row.updatedAt), 0)
  return { scope: layer.scope, workspace: layer.workspace, key, revision, updatedAt }
}

/**
 * The layers `user` sees from every stored row: the user's global layer first (when either of
 * its parts ever changed; other users' global layers are not theirs to see), then workspaces
 * by key.
 */
export function layerRevisionsOf(rows: readonly LayerRow[], user: string): LayerRevision[] {
  const parts = globalLayerParts(user)
  const global = rows.some((row) => parts.includes(row.layerKey)) ? [layerRevisionOf(parts, rows)] : []
  const workspaces = rows
    .filter((row) => parseLayerKey(row.layerKey)?.scope === 'workspace')
    .sort((a, b) => (a.layerKey < b.layerKey ? -1 : a.layerKey > b.layerKey ? 1 : 0))
    .map((row) => layerRevisionOf([row.layerKey], [row]))
  return [...global, ...workspaces]
}

/** True when `store` tracks layer revisions and leases (see {@link CoordinatedMemoryStore}). */
export function isCoordinatedStore(store: unknown): store is CoordinatedMemoryStore {
  const candidate = store as Partial<CoordinatedMemoryStore> | undefined
  return !!candidate && typeof candidate === 'object' && typeof candidate.layers?.revision === 'function' && typeof candidate.leases?.acquire === 'function'
}

/**
 * The coordinated store behind `store`: the store itself, or the one a service wrapper
 * exposes as `.store` (the `ctx.memoryStore` service of `@dsh-memory/store/plugin`). Resolve it
 * per use: a service reload swaps the underlying store.
 * @throws MemoryStoreError `invalid-argument` when neither tracks layers and leases.
 */
export function coordinatedStore(store: MemoryStore): CoordinatedMemoryStore {
  if (isCoordinatedStore(store)) return store
  const inner = (store as { store?: unknown }).store
  if (isCoordinatedStore(inner)) return inner
  throw new MemoryStoreError('invalid-argument', 'this memory store does not track layer revisions and leases (open it with openMemoryStore from @dsh-memory/store)')
}
