/**
 * The DSH adapter of @dsh-memory/distill: builds the {@link Distiller} core over the shared
 * store and the host's `ctx.llm`, feeds it host events, and exposes `ctx.memoryDistill`.
 *
 * When work runs: a conversation's slice becomes due after its agent goes idle (the turn has
 * ended) or by the idle fallback, and runs in the background. At `session/flush` (a headless
 * run flushes right before it exits) the flush waits at most `extract.flushWaitMs` for due
 * work; whatever is unfinished stays persisted and is distilled on the next start.
 *
 * @module @dsh-memory/distill/plugin
 */
import { type Context, Service } from '@deepseek-ai/cordis'
import z from '@deepseek-ai/schemastery'
import type {} from '@deepseek-ai/dsh-llm'
import type {} from '@dsh-memory/store/plugin'
import { emitRenamed } from '@dsh-memory/store/kit'
import { claimPluginRow, stageLog } from '@dsh-memory/store/plugin'
import { Distiller, type DistillStatus } from './core/distiller.js'
import { describeError } from './core/errors.js'
import type { LedgerFilter, LedgerRow } from './core/ledger.js'
import { DEFAULT_DISTILL_OPTIONS as D, type DistillOptions, type ModelRoute, resolveDistillOptions } from './core/options.js'
import { DISTILL_EVENT_ALIASES, DISTILL_EVENTS, type AgentLike, type SessionLike } from './events.js'
import { hostTransport } from './llm-transport.js'
import { applyDistillSettings } from './settings.js'

export { DISTILL_EVENTS } from './events.js'
export type { MemoriesUpdatedEvent, PersonaUpdatedEvent, ScenesUpdatedEvent } from './core/distiller.js'

declare module '@deepseek-ai/cordis' {
  interface Context {
    /** Background distillation of `@dsh-memory/distill`. */
    memoryDistill: DistillService
    /** @deprecated Use `ctx.memoryDistill` (the same instance); removed in 1.0. */
    distill: DistillService
  }
}

/** Plugin id, as the bundle row names it. */
export const name = 'memory-distill'

/** Services this plugin needs before it starts. */
export const inject = ['memoryStore', 'llm'] as const

/** Config of the distill row: the reference's extract / l2 / l3 / llm / tokenCost blocks. */
export interface Config extends DistillOptions {}

const route = z.object({
  provider: z.string().required().description('Provider route id registered in the host (e.g. deepseek-official).'),
  model: z.string().required().description('Model id of that provider.'),
})

/** Schemastery schema of {@link Config}; the README table mirrors it. */
export const Config: z<Config> = z.object({
  extract: z
    .object({
      enabled: z.boolean().default(D.extract.enabled).description('L1 extraction of atomic memories from captured messages.'),
      minMessages: z
        .natural()
        .min(1)
        .default(D.extract.minMessages)
        .description('Steady-state trigger: new messages per session before one extraction. The first extractions ramp 1→2→4→…→N.'),
      idleSeconds: z.natural().default(D.extract.idleSeconds).description('Idle fallback: extract a pending slice once the session was silent this long. 0 disables.'),
      backgroundMessages: z.natural().default(D.extract.backgroundMessages).description('Earlier messages sent along as context (marked, never extracted from).'),
      candidatePool: z.natural().default(D.extract.candidatePool).description('Similar existing memories (same scope) each new memory is compared with for dedup.'),
      maxBatchMessages: z.natural().min(1).default(D.extract.maxBatchMessages).description('Most new messages read by one extraction call; longer backlogs are split.'),
      flushWaitMs: z
        .natural()
        .default(D.extract.flushWaitMs)
        .description('How long a session flush (a headless run right before exit) waits for due work. Unfinished work resumes on the next start.'),
      maxAttempts: z
        .natural()
        .min(1)
        .max(1_000)
        .default(D.extract.maxAttempts)
        .description('Consecutive failed extractions of one conversation before it is given up on; a new message in it gives one more try.'),
    })
    .description('L1 extraction triggers and batching.'),
  l2: z
    .object({
      enabled: z.boolean().default(D.l2.enabled).description('L2 scene consolidation.'),
      minNewMemories: z.natural().min(1).default(D.l2.minNewMemories).description('New memories in a scope since the last scene pass that trigger the next one.'),
      maxScenes: z.natural().min(1).default(D.l2.maxScenes).description('Most scenes per scope.'),
      sceneContextLimit: z.natural().default(D.l2.sceneContextLimit).description('Related scenes shown in full to the L2 prompt (others by title only).'),
    })
    .description('L2 scenes.'),
  l3: z
    .object({
      enabled: z.boolean().default(D.l3.enabled).description('L3 persona distillation.'),
      interval: z.natural().min(1).default(D.l3.interval).description('New memories in a scope since the last persona that trigger a rewrite.'),
    })
    .description('L3 persona.'),
  llm: z
    .object({
      provider: z.string().default(D.llm.provider).description('Static distillation route (with model). Empty: the session\'s route, else the agent default model.'),
      model: z.string().default(D.llm.model).description('Model of the static route (with provider).'),
      fallbacks: z.array(route).default([]).description('Routes tried in order when the primary route fails.'),
      layerRoutes: z
        .object({
          l1: z.array(route).default([]).description('Complete route chain for L1 extraction and dedup.'),
          l2: z.array(route).default([]).description('Complete route chain for L2 scenes.'),
          l3: z.array(route).default([]).description('Complete route chain for L3 persona.'),
        })
        .description('Per-layer route chains; an empty list uses the primary route + fallbacks.'),
      maxTokens: z.natural().min(256).default(D.llm.maxTokens).description('Output cap of one distillation call, in tokens.'),
      reasoningEffort: z.string().default(D.llm.reasoningEffort).description('Reasoning effort of distillation calls ("off" saves tokens); empty = provider default.'),
      temperature: z.number().min(0).max(2).default(D.llm.temperature).description('Sampling temperature of distillation calls.'),
      maxInputChars: z.natural().min(2000).default(D.llm.maxInputChars).description('Input budget of one call, in characters.'),
      timeoutMs: z.natural().min(1000).default(D.llm.timeoutMs).description('Timeout of one call on one route, in milliseconds.'),
    })
    .description('Model routing and call limits.'),
  tokenCost: z
    .object({
      retentionDays: z.natural().default(D.tokenCost.retentionDays).description('Days of token-cost ledger kept; 0 = forever.'),
    })
    .description('Token-cost ledger.'),
}) as unknown as z<Config>

/**
 * `ctx.memoryDistill`: background distillation of captured conversations into L1 memories, L2
 * scenes and L3 persona. All work runs off the turn's path; nothing here throws into the host.
 */
export class DistillService extends Service {
  static Config = Config
  static inject = ['memoryStore', 'llm']

  /** Resolved options in force (frozen; replaced by a live settings change). */
  options!: DistillOptions
  // A plain field: Cordis hands out proxies of services and private fields break through them.
  private distiller: Distiller | undefined
  private lastRoute: ModelRoute | undefined

  constructor(ctx: Context, config: Partial<Config> = {}) {
    // Installed twice (the preset plus this bundle)? Only the first row runs; an idle row must not
    // call super(), which would register the service a second time. See claimPluginRow.
    if (!claimPluginRow(ctx, name)) return Object.create(null)
    super(ctx, 'memoryDistill')
    // The name published before the naming rule, kept until 1.0: the same instance, and owned by
    // this plugin's fiber like the new one, so unloading removes both.
    ctx.provide('distill', this)
    // Cross-field rules; throws DistillError 'invalid-config' naming the field.
    this.options = resolveDistillOptions(config)
    const logger = ctx.logger('memory-distill')
    const stage = stageLog(ctx)
    const log = {
      debug: (message: string) => logger.debug(message),
      info: (message: string) => logger.info(message),
      warn: (message: string) => logger.warn(message),
    }

    ctx.effect(() => {
      const distiller = new Distiller({
        store: ctx.memoryStore,
        transport: hostTransport(() => ctx.llm),
        options: this.options,
        logger: log,
        defaultRoute: () => this.defaultRoute(ctx),
        events: {
          batchEnded: (event) =>
            stage('distill', 'batch', { session: event.conversationId, reason: event.reason, outcome: event.outcome, messages: event.messages, added: event.added, replaced: event.replaced, ms: event.ms }),
          memoriesUpdated: (event) => emitRenamed(ctx, DISTILL_EVENT_ALIASES, DISTILL_EVENTS.memoriesUpdated, event),
          scenesUpdated: (event) => {
            stage('distill', 'scenes', { scope: event.scope, created: event.created.length, updated: event.updated.length, deleted: event.deleted.length })
            emitRenamed(ctx, DISTILL_EVENT_ALIASES, DISTILL_EVENTS.scenesUpdated, event)
          },
          personaUpdated: (event) => {
            stage('distill', 'persona', { scope: event.scope, version: event.version })
            emitRenamed(ctx, DISTILL_EVENT_ALIASES, DISTILL_EVENTS.personaUpdated, event)
          },
        },
      })
      this.distiller = distiller
      void distiller.start()
      return async () => {
        this.distiller = undefined
        await distiller.close()
      }
    }, 'memory-distill worker')
    // Live settings (namespace memory-distill): routes, budgets, triggers, from the next job on.
    applyDistillSettings(ctx, Config, this.options, (options) => {
      this.options = options
      this.distiller?.reconfigure(options)
    }, log.warn)

    ctx.on('memory-capture/captured', (message) => {
      try {
        this.distiller?.noteCaptured(message)
      } catch (error) {
        logger.warn('memory-capture/captured: %s', describeError(error))
      }
    })
    ctx.on('agent/status', (payload) => {
      try {
        const agent = payload?.agent
        const cwd = agent?.session?.header?.cwd
        // The workspace id (the project's git id, or the path), as capture keys the conversation.
        if (typeof agent?.id === 'string') this.distiller?.noteAgentStatus(agent.id, payload.status === 'running', cwd ? ctx.memoryStore.workspaceOf(cwd) : undefined)
      } catch (error) {
        logger.warn('agent/status: %s', describeError(error))
      }
    })
    ctx.on('agent/disposed', (payload) => {
      try {
        // The payload is `{agent}`; tolerate a bare agent as well.
        const agent = (payload?.agent ?? payload) as AgentLike | undefined
        if (typeof agent?.id === 'string') this.distiller?.noteAgentGone(agent.id)
      } catch (error) {
        logger.warn('agent/disposed: %s', describeError(error))
      }
    })
    ctx.on('session/event', (session, event) => {
      if (event?.type !== 'request/context') return
      const data = event.data as Partial<ModelRoute> | undefined
      if (typeof session?.id === 'string' && typeof data?.provider === 'string' && typeof data?.model === 'string') {
        const route = { provider: data.provider, model: data.model }
        this.lastRoute = route
        this.distiller?.noteRoute(session.id, route)
      }
    })
    // Awaited by the host before a headless exit: a bounded wait, never a rejection.
    ctx.on('session/flush', (session: SessionLike) => this.distiller?.settle(session?.id, this.options.extract.flushWaitMs))
  }

  /** What the distiller is doing right now. */
  status(): DistillStatus | undefined {
    return this.distiller?.status()
  }

  /** Token-cost totals per (provider, model, layer) from the ledger. */
  async costs(filter: LedgerFilter = {}): Promise<LedgerRow[]> {
    return this.distiller ? this.distiller.costs(filter) : []
  }

  /** Distill everything pending now (ignores thresholds and backoff) and wait for it; never rejects. */
  async runPending(timeoutMs?: number): Promise<void> {
    await this.distiller?.runPending(timeoutMs)
  }

  /** The agent default model (when the host provides `agentDefaultModel`), else the last route a session used. */
  private defaultRoute(ctx: Context): ModelRoute | undefined {
    const service = ctx.get('agentDefaultModel') as { currentSelection?: () => { provider?: string; model?: string } } | undefined
    const selection = service?.currentSelection?.()
    if (selection?.provider && selection?.model) return { provider: selection.provider, model: selection.model }
    return this.lastRoute
  }
}

export default DistillService
