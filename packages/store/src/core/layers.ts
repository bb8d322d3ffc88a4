/**
 * Memory layers: the global layer and one layer per workspace. A layer key names one of them
 * as a string (`'global'`, `'workspace:<path>'`), the primary key of `store_layer_revisions`.
 */
import { MemoryStoreError } from './errors.ts'
import { prepareLabel } from './text.ts'
import type { Scope } from './types-common.ts'
import type { LayerKey, LayerRevision } from './types-coordination.ts'
import type { CoordinatedMemoryStore, MemoryStore } from './types-store.ts'

const WORKSPACE_PREFIX = 'workspace:'

/**
 * The key of a layer: `'global'` or `'workspace:<path>'`.
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

/** The layer key of a stored row's placement; `undefined` for session-scoped rows (no layer). */
export function layerKeyOfRow(scope: Scope | string, workspace: string | null | undefined): string | undefined {
  if (scope === 'global') return 'global'
  if (scope === 'workspace' && workspace) return WORKSPACE_PREFIX + workspace
  return undefined
}

/** The layer a key names, or `undefined` for a string that is not a layer key. */
export function parseLayerKey(key: string): { scope: 'global'; workspace: null } | { scope: 'workspace'; workspace: string } | undefined {
  if (key === 'global') return { scope: 'global', workspace: null }
  if (key.startsWith(WORKSPACE_PREFIX) && key.length > WORKSPACE_PREFIX.length) return { scope: 'workspace', workspace: key.slice(WORKSPACE_PREFIX.length) }
  return undefined
}

/**
 * The stored key of a caller's layer: the workspace gets the same normalisation as the rows'
 * workspace column (`maxLabel` is the store's label limit), so the keys agree.
 * @throws MemoryStoreError `invalid-argument`
 */
export function storedLayerKey(key: LayerKey, maxLabel: number): string {
  layerKeyOf(key)
  return key.scope === 'global' ? 'global' : layerKeyOf({ scope: 'workspace', workspace: prepareLabel(key.workspace, 'workspace', maxLabel) })
}

/** The revision record of a stored layer key (`row` undefined: the layer never changed). */
export function layerRevisionOf(key: string, row: { revision: number; updatedAt: number } | undefined): LayerRevision {
  const layer = parseLayerKey(key)!
  return { scope: layer.scope, workspace: layer.workspace, key, revision: row?.revision ?? 0, updatedAt: row?.updatedAt ?? 0 }
}

/** The revision records of stored rows (in the database's order), without rows that are not layer keys. */
export function layerRevisionsOf(rows: readonly { layerKey: string; revision: number; updatedAt: number }[]): LayerRevision[] {
  return rows.filter((row) => parseLayerKey(row.layerKey) !== undefined).map((row) => layerRevisionOf(row.layerKey, row))
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
