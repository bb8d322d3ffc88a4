/**
 * L2: applying the model's scene operations. The model proposes, this code disposes: ids
 * are checked at validation, the scene cap is enforced here, deletions and merges run first
 * so they free slots for creations.
 */
import type { Memory, MemoryStore, Scene } from '@dsh-memory/store'
import { globalLayerKey, tokenize } from '@dsh-memory/store'
import type { SceneOp } from './schemas.js'
import type { LayerState } from './state-types.js'

const GLOBAL_PREFIX = 'global:'

/** The scope a scene pass works on. */
export interface SceneScope {
  readonly scope: 'global' | 'workspace'
  readonly workspace: string | null
}

/**
 * The counter key of a scope, as the host of `user` (`store.user`) counts and runs it:
 * `global:<user>` or `workspace:<id>`. The global layer is per user, like the store's layer
 * revisions: global memories are private to their writer, so each user's global scenes and
 * persona are built by that user's host from what that user sees. `'global'` (no user) is the
 * unattributed key an older version counted under; see {@link adoptUnattributedGlobal}.
 */
export function layerKey(scope: SceneScope, user: string): string {
  return scope.scope === 'global' ? globalLayerKey(user) : `workspace:${scope.workspace}`
}

/** A counter key read back: the scope, and for the global layer whose it is (`''`: unattributed). */
export interface LayerOwner extends SceneScope {
  readonly user: string
}

/** Inverse of {@link layerKey}; `undefined` for a string that is not a counter key. */
export function parseLayerKey(key: string): LayerOwner | undefined {
  if (key === 'global') return { scope: 'global', workspace: null, user: '' }
  if (key.startsWith(GLOBAL_PREFIX) && key.length > GLOBAL_PREFIX.length) return { scope: 'global', workspace: null, user: key.slice(GLOBAL_PREFIX.length) }
  if (key.startsWith('workspace:') && key.length > 'workspace:'.length) return { scope: 'workspace', workspace: key.slice('workspace:'.length), user: '' }
  return undefined
}

/** Whether the host of `user` runs the passes of counter `key`: every workspace (the team's), and its own global layer only. */
export function runsLayer(key: LayerOwner, user: string): boolean {
  return key.scope === 'workspace' || key.user === user
}

/**
 * Give the unattributed `'global'` counter (what a version before per-user keys counted, for
 * every user of the database) to `user`'s global layer: it becomes the user's counter when the
 * user has none, else its counts are added to the user's (whose watermarks and retry state
 * stay). The memories it counted are the adopter's or unattributed (visible to everyone), so
 * the adopter's pass sees them; other users' passes start from their own first memories.
 * Mutates `all`. @returns whether anything changed.
 */
export function adoptUnattributedGlobal(all: Record<string, LayerState>, user: string): boolean {
  const legacy = all.global
  const mine = globalLayerKey(user)
  if (!legacy || mine === 'global') return false
  const current = all[mine]
  all[mine] = current ? { ...current, sinceL2: current.sinceL2 + legacy.sinceL2, sinceL3: current.sinceL3 + legacy.sinceL3 } : legacy
  delete all.global
  return true
}

/**
 * Rank scenes by how many distinct tokens (store tokenizer, CJK-aware) they share with the
 * new memories; the first `limit` go to the prompt in full.
 */
export function relatedScenes(scenes: readonly Scene[], memories: readonly Memory[], limit: number): { context: Scene[]; others: Scene[] } {
  const wanted = new Set(memories.flatMap((memory) => tokenize(memory.text)))
  const scored = scenes.map((scene, index) => {
    const tokens = new Set(tokenize(`${scene.title} ${scene.summary}`))
    let overlap = 0
    for (const token of tokens) if (wanted.has(token)) overlap++
    return { scene, overlap, index }
  })
  scored.sort((a, b) => b.overlap - a.overlap || a.index - b.index)
  const context = scored.slice(0, limit).filter((entry) => entry.overlap > 0 || scored.length <= limit).map((entry) => entry.scene)
  const chosen = new Set(context.map((scene) => scene.id))
  return { context, others: scenes.filter((scene) => !chosen.has(scene.id)) }
}

/** What an L2 pass changed. */
export interface AppliedSceneOps {
  readonly created: readonly Scene[]
  readonly updated: readonly Scene[]
  readonly deleted: readonly string[]
  /** Ops the cap or a vanished scene refused. */
  readonly refused: readonly { readonly op: SceneOp['op']; readonly reason: string }[]
}

/**
 * Apply validated ops inside the caller's transaction.
 * @param sceneAliases - `s#` → scene id (as validated).
 * @param memoryAliases - `n#` → memory id (as validated).
 * @param sceneCount - scenes of this scope before the pass.
 */
export async function applySceneOps(
  tx: Pick<MemoryStore, 'scenes'>,
  ops: readonly SceneOp[],
  sceneAliases: ReadonlyMap<string, string>,
  memoryAliases: ReadonlyMap<string, string>,
  scope: SceneScope,
  sceneCount: number,
  maxScenes: number,
): Promise<AppliedSceneOps> {
  const created: Scene[] = []
  const updated: Scene[] = []
  const deleted: string[] = []
  const refused: { op: SceneOp['op']; reason: string }[] = []
  let count = sceneCount
  const memoryIds = (aliases: readonly string[]) => aliases.map((alias) => memoryAliases.get(alias)!).filter(Boolean)
  const order: Record<SceneOp['op'], number> = { delete: 0, merge: 1, update: 2, create: 3 }
  const sorted = [...ops].sort((a, b) => order[a.op] - order[b.op])
  for (const op of sorted) {
    if (op.op === 'delete') {
      if (await tx.scenes.delete(sceneAliases.get(op.scene)!, { actor: 'distill' })) {
        deleted.push(sceneAliases.get(op.scene)!)
        count--
      } else refused.push({ op: op.op, reason: 'scene no longer exists' })
      continue
    }
    if (op.op === 'merge') {
      const ids = op.scenes.map((alias) => sceneAliases.get(alias)!)
      const scenes = (await Promise.all(ids.map((id) => tx.scenes.get(id)))).filter((scene): scene is Scene => Boolean(scene))
      if (scenes.length < 2) {
        refused.push({ op: op.op, reason: 'fewer than two of the merged scenes still exist' })
        continue
      }
      const [keep, ...rest] = scenes
      const union = [...new Set([...scenes.flatMap((scene) => scene.memoryIds), ...memoryIds(op.memories)])]
      updated.push(await tx.scenes.update(keep!.id, { title: op.title, summary: op.summary, memoryIds: union }, { actor: 'distill' }))
      for (const scene of rest) {
        if (await tx.scenes.delete(scene.id, { actor: 'distill' })) {
          deleted.push(scene.id)
          count--
        }
      }
      continue
    }
    if (op.op === 'update') {
      const scene = await tx.scenes.get(sceneAliases.get(op.scene)!)
      if (!scene) {
        refused.push({ op: op.op, reason: 'scene no longer exists' })
        continue
      }
      updated.push(
        await tx.scenes.update(
          scene.id,
          {
            ...(op.title !== undefined ? { title: op.title } : {}),
            ...(op.summary !== undefined ? { summary: op.summary } : {}),
            memoryIds: [...new Set([...scene.memoryIds, ...memoryIds(op.memories)])],
          },
          { actor: 'distill' },
        ),
      )
      continue
    }
    if (count >= maxScenes) {
      refused.push({ op: op.op, reason: `scene cap ${maxScenes} reached` })
      continue
    }
    created.push(
      await tx.scenes.add(
        { title: op.title, summary: op.summary, scope: scope.scope, workspace: scope.workspace, memoryIds: memoryIds(op.memories), flags: { distill: { layer: 'l2' } } },
        { actor: 'distill' },
      ),
    )
    count++
  }
  return { created, updated, deleted, refused }
}
