/**
 * The L2 and L3 jobs of the distiller: scene consolidation and persona distillation of one
 * scope, run when its counter of new memories passes the threshold. A pass commits its
 * changes with the counter reset in one store transaction; a failure backs off and retries.
 */
import type { Memory, MemoryScopeFilter, Scene } from '@dsh-memory/store'
import { DistillError, describeError, isDistillError } from './errors.js'
import { askJson } from './ask-json.js'
import type { JobContext } from './job-context.js'
import { buildPersonaPrompt, buildScenePrompt, L3_SYSTEM, l2System } from './prompts.js'
import { applySceneOps, parseLayerKey, relatedScenes, runsLayer, type SceneScope } from './scenes.js'
import { validatePersonaText, validateSceneOps } from './schemas.js'
import { initialLayerState, type LayerState } from './state-types.js'
import { retryDelayMs } from './trigger.js'

/** Runs the L2/L3 jobs the scheduler hands it. */
export class LayerJobs {
  constructor(private readonly ctx: JobContext) {}

  async run(key: string, layer: 'l2' | 'l3', force = false): Promise<void> {
    const scope = parseLayerKey(key)
    if (!scope) {
      await this.ctx.state.updateLayers((all) => void delete all[key])
      return
    }
    // Another user's global layer is that user's host's to run (this one cannot see its memories).
    if (!runsLayer(scope, this.ctx.store.user)) return
    const before = (await this.ctx.state.layers())[key]
    if (!before) return
    // Queued before a failure of the same scope set its backoff: wait for it (see runJob).
    if (!force && before.notBefore > this.ctx.clock.now()) {
      this.ctx.scheduleWake(before.notBefore)
      return
    }
    const threshold = layer === 'l2' ? this.ctx.options.l2.minNewMemories : this.ctx.options.l3.interval
    if ((layer === 'l2' ? before.sinceL2 : before.sinceL3) < threshold) return
    try {
      if (layer === 'l2') await this.runScenes(key, scope, before)
      else await this.runPersona(key, scope, before)
    } catch (error) {
      if (isDistillError(error, 'aborted') || this.ctx.closed) return
      this.ctx.counters.failures++
      const message = describeError(error).slice(0, 500)
      const attempts = before.attempts + 1
      const notBefore = this.ctx.clock.now() + retryDelayMs(attempts)
      await this.ctx.guard('layer state', () =>
        this.ctx.state.updateLayers((all) => {
          all[key] = { ...(all[key] ?? initialLayerState()), attempts, notBefore, lastError: message }
        }),
      )
      this.ctx.log('warn', `${layer} ${key}: failed (attempt ${attempts}): ${message}`)
      this.ctx.scheduleWake(notBefore)
    }
  }

  private scopeFilter(scope: SceneScope): MemoryScopeFilter {
    return scope.scope === 'global' ? { scope: 'global' } : { scope: 'workspace', workspace: scope.workspace!, includeGlobal: false }
  }

  private sceneFilter(scope: SceneScope): { scope: 'global' } | { scope: 'workspace'; workspace: string; includeGlobal: false } {
    return scope.scope === 'global' ? { scope: 'global' } : { scope: 'workspace', workspace: scope.workspace!, includeGlobal: false }
  }

  /**
   * The memories created in the scope since the layer's watermark (oldest first, at most
   * `limit`) and the new watermark; with none, the counter is reset and `memories` is empty.
   */
  private async newMemories(key: string, layer: 'l2' | 'l3', scope: SceneScope, before: LayerState, limit: number): Promise<{ memories: Memory[]; newest: number }> {
    const since = layer === 'l2' ? before.lastL2At : before.lastL3At
    const memories = (await this.ctx.store.memories.list({ ...this.scopeFilter(scope), since: since + 1, orderBy: 'created', limit })).reverse()
    const newest = memories.reduce((max, memory) => Math.max(max, memory.createdAt), since)
    if (memories.length === 0) await this.resetLayer(key, layer, before, newest)
    return { memories, newest }
  }

  private async runScenes(key: string, scope: SceneScope, before: LayerState): Promise<void> {
    const { memories, newest } = await this.newMemories(key, 'l2', scope, before, 60)
    if (memories.length === 0) return
    const scenes = await this.ctx.store.scenes.list({ ...this.sceneFilter(scope), limit: 1_000 })
    const { context, others } = relatedScenes(scenes, memories, this.ctx.options.l2.sceneContextLimit)
    const built = buildScenePrompt({ memories, contextScenes: context, otherScenes: others, maxScenes: this.ctx.options.l2.maxScenes })
    const reply = await askJson(this.ctx, 'l2', l2System(this.ctx.options.l2.maxScenes), built.prompt, undefined, (value) => validateSceneOps(value, built.sceneAliases, built.memoryAliases))
    if (!reply.ok) {
      this.ctx.log('warn', `l2 ${key}: gave up on this pass after two invalid replies (${reply.error})`)
      await this.resetLayer(key, 'l2', before, newest)
      return
    }
    let changes: Awaited<ReturnType<typeof applySceneOps>> | undefined
    await this.ctx.writeStore().transaction(async (tx) => {
      const current = (await this.ctx.state.layers())[key]
      if (!current || current.lastL2At !== before.lastL2At) throw new DistillError('conflict', `scenes of ${key} changed during the pass`)
      changes = await applySceneOps(tx, reply.items, built.sceneAliases, built.memoryAliases, scope, scenes.length, this.ctx.options.l2.maxScenes)
      await this.resetLayer(key, 'l2', current, newest)
    }, this.ctx.fenced())
    const applied = changes!
    if (applied.refused.length) this.ctx.log('warn', `l2 ${key}: refused ${applied.refused.length} op(s) (${applied.refused[0]!.reason})`)
    this.ctx.log('info', `l2 ${key}: ${applied.created.length} created, ${applied.updated.length} updated, ${applied.deleted.length} deleted`)
    this.ctx.emit('scenesUpdated', {
      scope: scope.scope,
      workspace: scope.workspace,
      created: applied.created.map((scene) => scene.id),
      updated: applied.updated.map((scene) => scene.id),
      deleted: [...applied.deleted],
    })
  }

  private async runPersona(key: string, scope: SceneScope, before: LayerState): Promise<void> {
    const { memories, newest } = await this.newMemories(key, 'l3', scope, before, 40)
    if (memories.length === 0) return
    const personaKey = { scope: scope.scope, workspace: scope.workspace }
    const current = await this.ctx.store.persona.get(personaKey)
    const scenes: Scene[] = await this.ctx.store.scenes.list({ ...this.sceneFilter(scope), limit: this.ctx.options.l2.maxScenes })
    const prompt = buildPersonaPrompt({ scopeLabel: scope.scope === 'global' ? 'global' : `workspace ${scope.workspace}`, current: current?.text, scenes, memories })
    let text: string | undefined
    let error = ''
    for (let attempt = 0; attempt < 2 && text === undefined; attempt++) {
      const reply = await this.ctx.model.complete('l3', { system: L3_SYSTEM, prompt: attempt === 0 ? prompt : `${prompt}\n\n(Your previous reply was rejected: ${error}. Reply with the markdown persona only.)` }, this.ctx.signal)
      const checked = validatePersonaText(reply.text)
      if (checked.ok) text = checked.text
      else error = checked.error
    }
    if (text === undefined) {
      this.ctx.log('warn', `l3 ${key}: gave up on this pass after two invalid replies (${error})`)
      await this.resetLayer(key, 'l3', before, newest)
      return
    }
    let version = 0
    await this.ctx.writeStore().transaction(async (tx) => {
      const state = (await this.ctx.state.layers())[key]
      if (!state || state.lastL3At !== before.lastL3At) throw new DistillError('conflict', `persona of ${key} changed during the pass`)
      const saved = await tx.persona.put({ ...personaKey, text: text!, expectedVersion: current?.version ?? 0 }, { actor: 'distill' })
      version = saved.version
      await this.resetLayer(key, 'l3', state, newest)
    }, this.ctx.fenced())
    this.ctx.log('info', `l3 ${key}: persona version ${version}`)
    this.ctx.emit('personaUpdated', { scope: scope.scope, workspace: scope.workspace, version })
  }

  /** Counter back to what arrived after the pass, watermark forward, failure state cleared. */
  private async resetLayer(key: string, layer: 'l2' | 'l3', seen: LayerState, newest: number): Promise<void> {
    const update = (all: Record<string, LayerState>) => {
      const current = all[key] ?? initialLayerState()
      // Memories counted after `seen` was read belong to the next pass.
      const arrived = layer === 'l2' ? Math.max(0, current.sinceL2 - seen.sinceL2) : Math.max(0, current.sinceL3 - seen.sinceL3)
      all[key] =
        layer === 'l2'
          ? { ...current, sinceL2: arrived, lastL2At: newest, attempts: 0, notBefore: 0, lastError: null }
          : { ...current, sinceL3: arrived, lastL3At: newest, attempts: 0, notBefore: 0, lastError: null }
    }
    await this.ctx.state.updateLayers(update)
  }
}
