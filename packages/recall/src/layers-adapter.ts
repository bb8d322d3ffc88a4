/**
 * The host side of explicit layers, the lifecycle and the projection: it turns live agents
 * into {@link LayerSessionHandle}s, feeds the layer controller the host's session events
 * (session start, step admission, logged messages, discarded inbox items), counts completed
 * user turns, runs the lifecycle on an unref'd timer and keeps the Markdown projection
 * current. Everything is registered through `ctx`, so unloading the plugin removes it, and
 * nothing here throws into the host.
 */
import { dirname, join, resolve } from 'node:path'
import type { Context } from '@deepseek-ai/cordis'
import { freezeMessage } from '@deepseek-ai/dsh-llm/message'
import { coordinatedStore, type CoordinatedMemoryStore, leaseHolderId } from '@dsh-memory/store'
import type {} from '@dsh-memory/store/plugin'
import { errorMessage } from './core/errors.ts'
import { InjectionLedger } from './core/injection-ledger.ts'
import { LayerController, type LayerSessionHandle } from './core/layer-controller.ts'
import { injectedMemoryIds, LAYER_SNAPSHOT_FORM } from './core/layers.ts'
import { Lifecycle } from './core/lifecycle.ts'
import type { RecallOptions } from './core/options.ts'
import { LayerProjection } from './core/projection.ts'
import { RECALL_PLUGIN_ID } from './core/recall-text.ts'
import { RECALL_EVENTS } from './events.ts'

/** The parts of a live agent this module reads (declared structurally: no host type dependency). */
export interface LayerAgentLike {
  readonly id: string
  readonly session?: {
    readonly header?: { readonly cwd?: string }
    readonly events?: readonly { readonly type: string; readonly seq?: number; readonly data?: unknown }[]
    deriveMessages?(): readonly unknown[]
  }
  readonly inbox?: {
    readonly nextStep?: readonly { readonly id?: string }[]
    readonly nextTurn?: readonly { readonly id?: string }[]
    remove?(id: string): boolean
  }
  inject?(message: unknown): void
}

/** What {@link applyLayers} hands back to the plugin. */
export interface LayersWiring {
  readonly controller: LayerController
  readonly lifecycle: Lifecycle
  readonly projection: LayerProjection | undefined
  /** The handle of a live agent (for the command and tools). */
  handle(agent: LayerAgentLike): LayerSessionHandle
  /** Memory ids shown to this agent's session (recall messages and layer snapshots in its log). */
  injectedIds(agent: LayerAgentLike): Set<string>
  /** Rebuild the projection soon (debounced); after writes made by this plugin. */
  projectSoon(): void
  /** Rebuild every projection file now. @returns a summary line. */
  projectNow(): Promise<string>
}

/** How often the lifecycle runs its checks (consolidation and sweeps are due in hours). */
const TICK_MS = 60_000
const PROJECTION_DEBOUNCE_MS = 250
/** Longest a session flush waits for a review (distillation) it triggered. */
const REVIEW_WAIT_MS = 10_000

function idsOf(messages: readonly unknown[] | undefined): Set<string> {
  const ids = new Set<string>()
  for (const message of messages ?? []) {
    const id = (message as { id?: unknown } | undefined)?.id
    if (typeof id === 'string') ids.add(id)
  }
  return ids
}

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
  const ledger = new InjectionLedger(() => ctx.memoryStore.meta)
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

  const handle = (agent: LayerAgentLike): LayerSessionHandle => {
    const cwd = agent.session?.header?.cwd
    return {
      sessionId: agent.id,
      workspace: typeof cwd === 'string' ? cwd : '',
      loggedIds: () => {
        const ids = new Set<string>()
        for (const event of agent.session?.events ?? []) {
          const id = (event.data as { id?: unknown } | undefined)?.id
          if (event.type === 'user/message' && typeof id === 'string') ids.add(id)
        }
        return ids
      },
      pendingIds: () => new Set([...idsOf(agent.inbox?.nextStep), ...idsOf(agent.inbox?.nextTurn)]),
      contextIds: () => {
        try {
          return idsOf(agent.session?.deriveMessages?.())
        } catch {
          return new Set()
        }
      },
      inject: (message) => {
        if (typeof agent.inject !== 'function') throw new Error('this host agent has no inject()')
        agent.inject(snapshotMessage(message.id, message.text))
      },
      cancelPending: (id) => agent.inbox?.remove?.(id) ?? false,
    }
  }

  // --- the snapshot protocol -------------------------------------------------------------
  const on = ctx.on.bind(ctx) as unknown as (event: string, listener: (...args: any[]) => unknown) => () => void

  on('agent/session-start', (payload: { agent?: LayerAgentLike }) => {
    const agent = payload?.agent
    if (agent && typeof agent.id === 'string') track(controller.atSessionStart(handle(agent)))
  })

  on('agent/pre-step', async (payload: { agent: LayerAgentLike }, next: () => Promise<{ kind: string; messages?: readonly { id?: string }[] }>) => {
    const decision = await next()
    if (decision.kind !== 'enter' || !payload?.agent) return decision
    try {
      const extra = await controller.atStep(handle(payload.agent), idsOf(decision.messages))
      if (extra.length === 0) return decision
      return { ...decision, messages: [...(decision.messages ?? []), ...extra.map((message) => snapshotMessage(message.id, message.text))] }
    } catch (error) {
      warn(`memory-recall: layer snapshots skipped for this step: ${errorMessage(error)}`)
      return decision
    }
  })

  // Turn counting for the lifecycle: a turn counts when a human message entered it and it completed.
  const humanTurns = new Map<string, number>()
  on('session/event', (session: { id?: string }, event: { type?: string; seq?: number; data?: any }) => {
    try {
      const sessionId = session?.id
      if (typeof sessionId !== 'string' || !event) return
      if (event.type === 'user/message') {
        const id = event.data?.id
        if (LayerController.isSnapshotId(id)) track(controller.noteLogged(sessionId, id, typeof event.seq === 'number' ? event.seq : null))
        if (event.data?.source?.kind === 'user') humanTurns.set(sessionId, (humanTurns.get(sessionId) ?? 0) + 1)
      } else if (event.type === 'turn/end') {
        const human = humanTurns.get(sessionId) ?? 0
        humanTurns.delete(sessionId)
        if (human > 0 && event.data?.reason?.kind === 'completed') track(lifecycle.noteUserTurn())
      }
    } catch (error) {
      warn(`memory-recall: session event not processed: ${errorMessage(error)}`)
    }
  })

  on('agent/inbox/discarded', (payload: { agent?: LayerAgentLike; message?: { id?: unknown } }) => {
    const id = payload?.message?.id
    if (payload?.agent && LayerController.isSnapshotId(id)) track(controller.noteDiscarded(payload.agent.id, id))
  })

  on('agent/disposed', (payload: { agent?: { id?: unknown } }) => {
    const id = payload?.agent?.id
    if (typeof id === 'string') humanTurns.delete(id)
  })

  // --- projection --------------------------------------------------------------------------
  let projection: LayerProjection | undefined
  let projectTimer: ReturnType<typeof setTimeout> | undefined
  if (options.layers.projection) {
    const service = ctx.memoryStore as unknown as { dataDir?: string; path?: string }
    const dataDir = service.dataDir ?? dirname(service.path ?? store().path)
    const configured = options.layers.projectionDir
    projection = new LayerProjection(store, configured ? resolve(dataDir, configured) : join(dataDir, 'layers'))
  }
  const projectSoon = () => {
    if (!projection || projectTimer) return
    projectTimer = setTimeout(() => {
      projectTimer = undefined
      track(projection!.refresh().catch((error: unknown) => warn(`memory-recall: could not update the layer projection: ${errorMessage(error)}`)))
    }, PROJECTION_DEBOUNCE_MS)
    projectTimer.unref?.()
  }
  const projectNow = async () => {
    if (!projection) return 'the Markdown projection is off (layers.projection: false)'
    const written = await projection.refresh(true)
    return `Rebuilt ${written.length} layer file${written.length === 1 ? '' : 's'} in ${projection.dir}.`
  }
  for (const event of [RECALL_EVENTS.memoryChanged, RECALL_EVENTS.feedback, RECALL_EVENTS.consolidated, RECALL_EVENTS.retentionSwept, 'distill/memories-updated', 'distill/scenes-updated', 'distill/persona-updated']) {
    on(event, () => projectSoon())
  }

  // --- lifecycle ---------------------------------------------------------------------------
  const lifecycle = new Lifecycle({
    store,
    options,
    holder: leaseHolderId(),
    onWarning: warn,
    review: async (reason, turns) => {
      emit(RECALL_EVENTS.reviewDue, { reason, turns })
      const distill = (ctx as unknown as { get(name: string): { runPending?(timeoutMs?: number): Promise<void> } | undefined }).get('distill')
      // Tracked with a bound: a session flush (a headless exit) gives the review at most
      // REVIEW_WAIT_MS; whatever is unfinished stays pending and distill resumes it on the next start.
      if (typeof distill?.runPending === 'function') {
        track(distill.runPending(REVIEW_WAIT_MS).catch((error: unknown) => warn(`memory-recall: review failed: ${errorMessage(error)}`)))
      }
    },
    onConsolidated: (result) => emit(RECALL_EVENTS.consolidated, result),
    onSwept: (result) => emit(RECALL_EVENTS.retentionSwept, result),
  })

  ctx.effect(() => {
    let running: Promise<unknown> | undefined
    const run = () => {
      if (running) return
      running = Promise.allSettled([lifecycle.tick(), projection?.refresh()]).finally(() => {
        running = undefined
      })
    }
    const interval = options.lifecycle.enabled || projection ? setInterval(run, TICK_MS) : undefined
    interval?.unref?.()
    // A first pass soon after start: a restarted host catches up with what others wrote.
    const first = setTimeout(run, 1_000)
    first.unref?.()
    return () => {
      clearInterval(interval)
      clearTimeout(first)
      clearTimeout(projectTimer)
      lifecycle.close()
    }
  }, 'memory-recall lifecycle')

  return {
    controller,
    lifecycle,
    projection,
    handle,
    injectedIds: (agent) => injectedMemoryIds(agent.session?.events ?? []),
    projectSoon,
    projectNow,
  }
}
