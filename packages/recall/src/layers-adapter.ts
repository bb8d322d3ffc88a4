/**
 * The host side of explicit layers, the lifecycle and the projection: it builds the core
 * (the layer controller over the injection ledger, the lifecycle, the projection, the
 * session-event router and the upkeep schedule) and wires it to the host's events — session
 * start, step admission, logged messages, discarded inbox items, disposed agents. Everything
 * is registered through `ctx`, so unloading the plugin removes it, and nothing here throws
 * into the host.
 */
import { dirname, join, resolve } from 'node:path'
import type { Context } from '@deepseek-ai/cordis'
import { freezeMessage } from '@deepseek-ai/dsh-llm/message'
import { coordinatedStore, type CoordinatedMemoryStore, leaseHolderId } from '@dsh-memory/store'
import { onRenamed } from '@dsh-memory/store/kit'
import type {} from '@dsh-memory/store/plugin'
import { errorMessage } from './core/errors.ts'
import { type AgentLike, layerSessionHandle, messageIds } from './core/host-agent.ts'
import { InjectionLedger } from './core/injection-ledger-repository.ts'
import { LayerController, type LayerSessionHandle } from './core/layer-controller.ts'
import { injectedMemoryIds, LAYER_SNAPSHOT_FORM } from './core/layers.ts'
import { Lifecycle } from './core/lifecycle.ts'
import type { RecallOptions } from './core/options.ts'
import { LayerProjection } from './core/projection.ts'
import { RECALL_PLUGIN_ID } from './core/recall-text.ts'
import { RecallSessionEvents, type SessionEventLike } from './core/session-events.ts'
import { Upkeep } from './core/upkeep.ts'
import { RECALL_EVENT_ALIASES, RECALL_EVENTS } from './events.ts'

/** What {@link applyLayers} hands back to the plugin. */
export interface LayersWiring {
  readonly controller: LayerController
  readonly lifecycle: Lifecycle
  readonly projection: LayerProjection | undefined
  /** The handle of a live agent (for the command and tools). */
  handle(agent: AgentLike): LayerSessionHandle
  /** Memory ids shown to this agent's session (recall messages and layer snapshots in its log). */
  injectedIds(agent: AgentLike): Set<string>
  /** Rebuild the projection soon (debounced); after writes made by this plugin. */
  projectSoon(): void
  /** Rebuild every projection file now. @returns a summary line. */
  projectNow(): Promise<string>
}

/** Longest a session flush waits for a review (distillation) it triggered. */
const REVIEW_WAIT_MS = 10_000

/**
 * Wire explicit layers, the lifecycle and the projection into the host.
 * @param track - registers background work that `session/flush` must wait for.
 */
export function applyLayers(
  ctx: Context,
  options: RecallOptions,
  deps: { warn: (message: string) => void; emit: (event: string, payload: unknown) => void; track: (job: Promise<unknown>) => void },
): LayersWiring {
  const { warn, emit, track } = deps
  const store = (): CoordinatedMemoryStore => coordinatedStore(ctx.memoryStore)
  const ledger = new InjectionLedger(store, Date.now, warn)
  const controller = new LayerController({
    store,
    ledger,
    options: options.layers,
    onWarning: warn,
    onCommitted: (sessionId, record) =>
      emit(RECALL_EVENTS.layerCommitted, { sessionId, layer: record.layer, layerKey: record.layerKey, revision: record.revision, injectionId: record.id }),
  })

  const snapshotMessage = (id: string, text: string) =>
    freezeMessage({
      id: id as never,
      role: 'user',
      content: [{ type: 'text', text }],
      source: { kind: 'plugin', plugin: RECALL_PLUGIN_ID, form: LAYER_SNAPSHOT_FORM },
    } as never)
  const handle = (agent: AgentLike): LayerSessionHandle => layerSessionHandle(agent, snapshotMessage, (cwd) => ctx.memoryStore.workspaceOf(cwd))

  // --- the snapshot protocol -------------------------------------------------------------
  const on = ctx.on.bind(ctx) as unknown as (event: string, listener: (...args: any[]) => unknown) => () => void

  on('agent/session-start', (payload: { agent?: AgentLike }) => {
    const agent = payload?.agent
    if (agent && typeof agent.id === 'string') track(controller.atSessionStart(handle(agent)))
  })

  on('agent/pre-step', async (payload: { agent: AgentLike }, next: () => Promise<{ kind: string; messages?: readonly { id?: string }[] }>) => {
    const decision = await next()
    if (decision.kind !== 'enter' || !payload?.agent) return decision
    try {
      const extra = await controller.atStep(handle(payload.agent), messageIds(decision.messages))
      if (extra.length === 0) return decision
      return { ...decision, messages: [...(decision.messages ?? []), ...extra.map((message) => snapshotMessage(message.id, message.text))] }
    } catch (error) {
      warn(`memory-recall: layer snapshots skipped for this step: ${errorMessage(error)}`)
      return decision
    }
  })

  // --- projection --------------------------------------------------------------------------
  let projection: LayerProjection | undefined
  if (options.layers.projection) {
    const service = ctx.memoryStore as unknown as { dataDir?: string; path?: string }
    const dataDir = service.dataDir ?? dirname(service.path ?? store().path)
    const configured = options.layers.projectionDir
    projection = new LayerProjection(store, configured ? resolve(dataDir, configured) : join(dataDir, 'layers'))
  }

  // --- lifecycle ---------------------------------------------------------------------------
  const lifecycle = new Lifecycle({
    store,
    options,
    holder: leaseHolderId(),
    onWarning: warn,
    review: async (reason, turns) => {
      emit(RECALL_EVENTS.reviewDue, { reason, turns })
      const distill = (ctx as unknown as { get(name: string): { runPending?(timeoutMs?: number): Promise<void> } | undefined }).get('memoryDistill')
      // Tracked with a bound: a session flush (a headless exit) gives the review at most
      // REVIEW_WAIT_MS; whatever is unfinished stays pending and distill resumes it on the next start.
      if (typeof distill?.runPending === 'function') {
        track(distill.runPending(REVIEW_WAIT_MS).catch((error: unknown) => warn(`memory-recall: review failed: ${errorMessage(error)}`)))
      }
    },
    onConsolidated: (result) => emit(RECALL_EVENTS.consolidated, result),
    onSwept: (result) => emit(RECALL_EVENTS.retentionSwept, result),
  })

  // Logged snapshots, discarded inbox items and completed user turns (see session-events.ts).
  const events = new RecallSessionEvents({ controller, lifecycle, track, onWarning: warn })
  on('session/event', (session: { id?: string }, event: SessionEventLike) => events.event(session?.id, event))
  on('agent/inbox/discarded', (payload: { agent?: AgentLike; message?: { id?: unknown } }) => events.discarded(payload?.agent?.id, payload?.message?.id))
  on('agent/disposed', (payload: { agent?: { id?: unknown } }) => events.forget(payload?.agent?.id))

  const upkeep = new Upkeep({ lifecycle, projection, lifecycleEnabled: options.lifecycle.enabled, track, onWarning: warn })
  for (const event of [RECALL_EVENTS.consolidated, RECALL_EVENTS.retentionSwept, 'memory-distill/memories-updated', 'memory-distill/scenes-updated', 'memory-distill/persona-updated']) {
    on(event, () => upkeep.projectSoon())
  }
  // Code outside this project that edits memories may still announce them under the old names;
  // heard under both, once per event (our own emits carry both names with one payload).
  for (const event of [RECALL_EVENTS.memoryChanged, RECALL_EVENTS.feedback]) {
    onRenamed({ on }, RECALL_EVENT_ALIASES, event, () => upkeep.projectSoon())
  }
  ctx.effect(() => upkeep.start(), 'memory-recall lifecycle')

  return {
    controller,
    lifecycle,
    projection,
    handle,
    injectedIds: (agent) => injectedMemoryIds(agent.session?.events ?? []),
    projectSoon: () => upkeep.projectSoon(),
    projectNow: () => upkeep.projectNow(),
  }
}
