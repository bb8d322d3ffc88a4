/**
 * The DSH adapter of recall: builds the core from config and wires it to the host — the
 * `agent/pre-step` injection, the persona and scene sections of the system prompt, the model
 * tools and the `/memory` command. Nothing here throws into the host; every registration is
 * made through `ctx`, so unloading the plugin removes it.
 *
 * @module @dsh-memory/recall/plugin
 */
import type { Context } from '@deepseek-ai/cordis'
import { createUserMessage } from '@deepseek-ai/dsh-llm/message'
import z from '@deepseek-ai/schemastery'
import { BackgroundWork } from '@dsh-memory/store/kit'
import type {} from '@dsh-memory/store/plugin'
import { claimPluginRow, stageLog } from '@dsh-memory/store/plugin'
import { runMemoryCommand, MEMORY_COMMAND_USAGE } from './core/command.ts'
import { createEmbedder } from './core/embedding.ts'
import { errorMessage, isRecallError } from './core/errors.ts'
import { placeRecallMessage, RecallInjector, type StepMessageLike } from './core/injector.ts'
import { PromptSections } from './core/prompt-sections.ts'
import { DEFAULT_RECALL_OPTIONS as D, type InjectSwitch, type MemoryMode, type RecallOptionsInput, type RecallPlacement, type RecallStrategy, resolveRecallOptions } from './core/options.ts'
import { RecallEngine, type RecallScope } from './core/recall-engine.ts'
import { RECALL_PLUGIN_ID } from './core/recall-text.ts'
import { RECALL_TOOLS } from './core/tools.ts'
import { RECALL_EVENTS } from './events.ts'
import { applyLayers } from './layers-adapter.ts'
import { applyRecallSettings } from './settings.ts'

export { RECALL_EVENTS } from './events.ts'
export type {
  RecallConsolidatedEvent,
  RecallFeedbackEvent,
  RecallInjectedEvent,
  RecallLayerCommittedEvent,
  RecallMemoryChangedEvent,
  RecallRetentionSweptEvent,
  RecallReviewDueEvent,
  RecallSettingsChangedEvent,
} from './events.ts'

/** Plugin id, as the bundle row names it (also `source.plugin` of every recall message). */
export const name = RECALL_PLUGIN_ID

/** Services this plugin needs before it starts. Prompt, tools and commands are used when present. */
export const inject = ['memoryStore'] as const

/** Section names and orders in the system prompt: after the host's own sections, so a persona change only invalidates the tail of the cached prefix. */
export const PERSONA_SECTION = { name: 'memory-recall:persona', order: 900 } as const
/** See {@link PERSONA_SECTION}. */
export const SCENES_SECTION = { name: 'memory-recall:scenes', order: 910 } as const

/** How long `session/flush` waits for background embedding work before letting the host exit. */
const FLUSH_BACKGROUND_LIMIT_MS = 1_000

/** Config of the recall row (the reference's `family`, `recall.*`, `embedding.*` and `tools`). */
export interface Config {
  defaultMode: MemoryMode
  tools: boolean
  command: boolean
  recall: {
    enabled: boolean
    maxResults: number
    maxCharsPerMemory: number
    maxTotalRecallChars: number
    timeoutMs: number
    includePersona: boolean
    includeSceneNav: boolean
    strategy: RecallStrategy
    scoreThreshold: number
    decayHalfLifeDays: number
    placement: RecallPlacement
  }
  embedding: {
    enabled: boolean
    baseUrl: string
    apiKey: string
    model: string
    dimensions: number
    maxInputChars: number
    timeoutMs: number
  }
  layers: {
    snapshotMaxEntries: number
    snapshotMaxChars: number
    titleChars: number
    readChunkChars: number
    projection: boolean
    projectionDir: string
  }
  lifecycle: {
    enabled: boolean
    reviewEveryUserTurns: number
    idleDelayMinutes: number
    consolidationCooldownHours: number
    globalConsolidationCooldownDays: number
    retentionSweepHours: number
    consolidationSimilarity: number
    leaseTtlSeconds: number
  }
  retention: {
    rules: { kind: string; maxAgeDays: number; maxCount: number }[]
  }
  limits: {
    memoryChars: number
  }
}

const R = D.recall
const E = D.embedding
const L = D.layers
const C = D.lifecycle

/** Schemastery schema of {@link Config}; the README's table mirrors it (and a test checks that). */
export const Config: z<Config> = z.object({
  defaultMode: z
    .union(['auto', 'chat', 'work', 'off'])
    .default(D.defaultMode)
    .description('Memory mode of a session that has not chosen one: auto | chat | work | off (see the README).'),
  tools: z
    .boolean()
    .default(D.tools)
    .description('Register the model tools memory_search, conversation_search, memory_read_scene, memory_add, memory_delete, memory_read, memory_feedback, memory_import.'),
  command: z.boolean().default(D.command).description('Register the /memory slash command (interactive hosts).'),
  recall: z
    .object({
      enabled: z.boolean().default(R.enabled).description('Inject recalled memories before each model step that follows a new user message.'),
      maxResults: z.natural().default(R.maxResults).description('At most this many memories per injection.'),
      maxCharsPerMemory: z.natural().default(R.maxCharsPerMemory).description('Longer memories are cut to this many characters. 0 = unlimited.'),
      maxTotalRecallChars: z.natural().default(R.maxTotalRecallChars).description('Total memory characters per injection. 0 = unlimited.'),
      timeoutMs: z.natural().default(R.timeoutMs).description('Whole recall budget in ms; over it the turn goes on without injection. 0 = unlimited.'),
      includePersona: z.boolean().default(R.includePersona).description('Put the persona (L3) into the system prompt.'),
      includeSceneNav: z.boolean().default(R.includeSceneNav).description('Put the scene (L2) navigation into the system prompt.'),
      strategy: z.union(['keyword', 'embedding', 'hybrid']).default(R.strategy).description('keyword | embedding | hybrid (reciprocal rank fusion); hybrid without embeddings = keyword.'),
      scoreThreshold: z.number().min(0).max(1).default(R.scoreThreshold).description('Memories whose relevance × decay is below this are not injected (0..1).'),
      decayHalfLifeDays: z.number().min(0).default(R.decayHalfLifeDays).description('Half-life of the age weight max(0.5, 0.5^(days/halfLife)); 0 disables decay.'),
      placement: z
        .union(['before-user', 'after-user'])
        .default(R.placement)
        .description('Where the recall message enters the step: just before the new user message (as a note the user message then answers) or right after it.'),
    })
    .default({} as Config['recall'])
    .description('Automatic recall.'),
  embedding: z
    .object({
      enabled: z.boolean().default(E.enabled).description('Use an OpenAI-compatible /embeddings endpoint for the embedding and hybrid strategies.'),
      baseUrl: z.string().default(E.baseUrl).description('Base URL; requests go to <baseUrl>/embeddings.'),
      apiKey: z.string().role('secret').default(E.apiKey).description('Bearer token (optional: a local server may need none). A secret: never sent to a browser.'),
      model: z.string().default(E.model).description('Embedding model name.'),
      dimensions: z.natural().default(E.dimensions).description('Vector size (required when enabled).'),
      maxInputChars: z.natural().default(E.maxInputChars).description('Longer texts are cut before embedding.'),
      timeoutMs: z.natural().default(E.timeoutMs).description('Timeout of one embeddings call in ms.'),
    })
    .default({} as Config['embedding'])
    .description('Optional remote embeddings.'),
  layers: z
    .object({
      snapshotMaxEntries: z.natural().default(L.snapshotMaxEntries).description('Most memories one layer index snapshot lists (the rest are counted).'),
      snapshotMaxChars: z.natural().default(L.snapshotMaxChars).description('Most characters of index lines in one snapshot.'),
      titleChars: z.natural().default(L.titleChars).description('Characters of a memory title (its first line) in the index.'),
      readChunkChars: z.natural().default(L.readChunkChars).description('memory_read returns longer memories as a chunk manifest, then chunks of this size.'),
      projection: z.boolean().default(L.projection).description('Keep a Markdown file per layer beside the database (derived, rebuilt on change).'),
      projectionDir: z.string().default(L.projectionDir).description("Directory of the projection; '' = <dataDir>/layers."),
    })
    .default({} as Config['layers'])
    .description('Explicit memory layers (/memory enable global|workspace).'),
  lifecycle: z
    .object({
      enabled: z.boolean().default(C.enabled).description('Run reviews, consolidation and retention sweeps in the background.'),
      reviewEveryUserTurns: z.natural().default(C.reviewEveryUserTurns).description('Completed user turns after which a review (distillation) runs; 0 = never by count.'),
      idleDelayMinutes: z.number().min(0).default(C.idleDelayMinutes).description('A review runs this long after the last completed user turn; 0 = never by idle time.'),
      consolidationCooldownHours: z.number().min(0).default(C.consolidationCooldownHours).description('A workspace layer is consolidated this long after its first change since the last consolidation.'),
      globalConsolidationCooldownDays: z.number().min(0).default(C.globalConsolidationCooldownDays).description('The same for the global layer, in days.'),
      retentionSweepHours: z.number().min(0).default(C.retentionSweepHours).description('Hours between retention sweeps; 0 = never.'),
      consolidationSimilarity: z.number().min(0).max(1).default(C.consolidationSimilarity).description('Token-set Jaccard similarity at which two memories of one kind and layer are merged.'),
      leaseTtlSeconds: z.number().min(3).max(3600).default(C.leaseTtlSeconds).description('Lease time to live of a background writer (renewed every third of it).'),
    })
    .default({} as Config['lifecycle'])
    .description('Background upkeep shared by every process on the data dir.'),
  retention: z
    .object({
      rules: z
        .array(
          z.object({
            kind: z.string().required().description('Memory kind (category) the rule applies to.'),
            maxAgeDays: z.number().min(0).default(0).description('Delete when unused (not updated or recalled) this long; 0 = no age limit.'),
            maxCount: z.natural().default(0).description('Keep at most this many per layer (least recently used go first); 0 = no limit.'),
          }),
        )
        .default(D.retention.rules.map((rule) => ({ ...rule })))
        .description('Retention rules by memory kind.'),
    })
    .default({} as Config['retention'])
    .description('Retention by category.'),
  limits: z
    .object({
      memoryChars: z.natural().default(D.limits.memoryChars).description('Most characters of one memory written by /memory or memory_add; longer input is refused.'),
    })
    .default({} as Config['limits'])
    .description('Length limits on what users and the model write.'),
})

/** The parts of the host's agent that recall reads (declared structurally: no host type dependency). */
interface AgentLike {
  readonly id: string
  readonly session?: {
    readonly header?: { readonly cwd?: string }
    readonly events?: readonly { readonly type: string; readonly data?: unknown }[]
    deriveMessages?(): readonly unknown[]
  }
}

interface ToolRegistryLike {
  register(definition: Record<string, unknown>): () => void
}
interface CommandRegistryLike {
  register(definition: Record<string, unknown>): () => void
}
interface SystemPromptLike {
  section(section: { name: string; order: number; text: (context: { agent?: { id?: string } }) => string }): () => void
}

declare module '@deepseek-ai/cordis' {
  interface Events {
    /** The host's step admission waterfall (dsh-agent owns it; declared structurally). */
    'agent/pre-step'(
      payload: { agent: AgentLike; messages: unknown[]; turn: number; step: number; signal: AbortSignal },
      next: () => Promise<{ kind: 'reject' } | { kind: 'enter'; messages: unknown[] }>,
    ): Promise<{ kind: 'reject' } | { kind: 'enter'; messages: unknown[] }>
    /** The host's awaited durability checkpoint for a session (dsh-session owns it). */
    'session/flush'(session: { readonly id: string }): Promise<void> | void
    /** An agent left the host's registry (dsh-agent owns it). */
    'agent/disposed'(payload: { agent: AgentLike }): void
    /** The host's prompt assembly waterfall (dsh-system-prompt owns it; declared structurally). */
    'system-prompt/assemble'(
      assembly: { sections: { name: string; text: string }[] },
      context: { agent?: AgentLike },
      next: () => Promise<{ sections: { name: string; text: string }[] }>,
    ): Promise<{ sections: { name: string; text: string }[] }>
  }
}

/** Which user turn an agent is in (the last `turn/start`), so sections refresh once per turn. */
function turnKey(agent: AgentLike): string {
  const events = agent.session?.events ?? []
  for (let index = events.length - 1; index >= 0; index--) {
    const event = events[index]
    if (event?.type === 'turn/start') return String((event.data as { turn?: unknown } | undefined)?.turn ?? index)
  }
  return 'none'
}

/** The session and workspace an agent runs in. */
function scopeOf(agent: AgentLike | undefined): RecallScope | undefined {
  if (!agent || typeof agent.id !== 'string') return undefined
  const cwd = agent.session?.header?.cwd
  return { sessionId: agent.id, workspace: typeof cwd === 'string' ? cwd : '' }
}

function historyOf(agent: AgentLike): readonly unknown[] {
  try {
    return agent.session?.deriveMessages?.() ?? []
  } catch {
    return []
  }
}

/**
 * Wire recall into the host. Invalid config throws here (the host fails boot naming the
 * field); after that, nothing recall does can fail a turn.
 */
export function apply(ctx: Context, config: Config): void {
  // Installed twice (the preset plus this bundle)? Only the first row runs; see claimPluginRow.
  if (!claimPluginRow(ctx, name)) return
  const options = resolveRecallOptions(config as RecallOptionsInput)
  const logger = ctx.logger('memory-recall')
  const warn = (message: string) => logger.warn(message)
  const stage = stageLog(ctx)
  const engine = new RecallEngine(ctx.memoryStore, options, {
    embedder: options.embedding.enabled ? createEmbedder(options.embedding) : null,
    onWarning: warn,
  })
  // Live settings (namespace memory-recall): mode default, budgets, embeddings, next turn on.
  applyRecallSettings(ctx, Config, config, engine, warn)
  const injector = new RecallInjector(engine, { onWarning: warn, explicitLayers: (sessionId) => layers.controller.isExplicit(sessionId) })
  const sections = new PromptSections(engine, { onWarning: warn })
  const pending = new BackgroundWork()
  const track = (job: Promise<unknown>) => void pending.track(job)
  const emit = (event: string, payload: unknown) => {
    try {
      ;(ctx.emit as (name: string, ...args: unknown[]) => void)(event, payload)
    } catch (error) {
      warn(`memory-recall: a ${event} listener failed: ${errorMessage(error)}`)
    }
  }
  // Explicit layers, the lifecycle and the Markdown projection (see layers-adapter.ts).
  const layers = applyLayers(ctx, options, { warn, emit, track })

  ctx.on('agent/pre-step', async (payload, next) => {
    const decision = await next()
    if (decision.kind !== 'enter') return decision
    try {
      const scope = scopeOf(payload.agent)
      if (!scope) return decision
      const result = await injector.prepare(scope, decision.messages as never[], historyOf(payload.agent) as never[], payload.signal)
      if (result.skipped) {
        logger.debug('no recall for session %s: %s', scope.sessionId, result.skipped)
        stage('recall', 'miss', { session: scope.sessionId, reason: result.miss, ms: result.ms })
      }
      const plan = result.plan
      if (!plan) return decision
      const message = createUserMessage({
        content: [{ type: 'text', text: plan.text }],
        source: { kind: 'plugin', plugin: RECALL_PLUGIN_ID, form: 'recall' },
      })
      // Recording recall time is bookkeeping: it must not hold the step back.
      track(
        engine
          .touch(plan.memoryIds)
          .then(() =>
            emit(RECALL_EVENTS.injected, {
              sessionId: scope.sessionId,
              workspace: scope.workspace,
              memoryIds: plan.memoryIds,
              chars: plan.chars,
              strategy: plan.strategy,
              ms: plan.ms,
            }),
          )
          .catch((error: unknown) => warn(`memory-recall: could not record recall time: ${errorMessage(error)}`)),
      )
      logger.debug('recalled %d memories (%d chars) for session %s', plan.memoryIds.length, plan.chars, scope.sessionId)
      stage('recall', 'hit', { session: scope.sessionId, memories: plan.memoryIds.length, chars: plan.chars, strategy: plan.strategy, placement: options.recall.placement, ms: plan.ms })
      return { kind: 'enter', messages: placeRecallMessage(decision.messages as StepMessageLike[], message, options.recall.placement) }
    } catch (error) {
      warn(`memory-recall: recall failed, the step goes on without it: ${errorMessage(error)}`)
      return decision
    }
  })

  // Headless runs exit right after the turn: finish bookkeeping writes before the store closes.
  ctx.on('session/flush', async () => {
    // Tracked work may track more (a counted turn starts a review): wait until none is left.
    await pending.settled()
    // Embedding backfill is opportunistic network work: a stalled endpoint must not hold the
    // process open after the turn. What is not embedded now is picked up by a later recall.
    let timer: NodeJS.Timeout | undefined
    const limit = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, FLUSH_BACKGROUND_LIMIT_MS)
    })
    await Promise.race([engine.whenIdle(), limit]).finally(() => clearTimeout(timer))
  })
  ctx.on('agent/disposed', (payload: unknown) => {
    const id = (payload as { agent?: { id?: unknown } })?.agent?.id ?? (payload as { id?: unknown })?.id
    if (typeof id !== 'string') return
    sections.forget(id)
    injector.forget(id)
  })

  ctx.inject(['systemPrompt'], (prompt) => {
    const registry = (prompt as unknown as { systemPrompt: SystemPromptLike }).systemPrompt
    // Providers are synchronous, so they read the cache; the assemble waterfall below (which
    // may await) refreshes it once per user turn and patches the texts into the assembly.
    registry.section({ ...PERSONA_SECTION, text: (context) => sections.current(context?.agent?.id ?? '').persona })
    registry.section({ ...SCENES_SECTION, text: (context) => sections.current(context?.agent?.id ?? '').scenes })
    prompt.on('system-prompt/assemble', async (assembly, context, next) => {
      const result = await next()
      try {
        const agent = context?.agent
        const scope = scopeOf(agent)
        if (!agent || !scope) return result
        const texts = await sections.forTurn(scope, turnKey(agent))
        // Other listeners may hand back frozen sections: build new objects, never mutate.
        return {
          ...result,
          sections: result.sections.map((section) =>
            section.name === PERSONA_SECTION.name ? { ...section, text: texts.persona } : section.name === SCENES_SECTION.name ? { ...section, text: texts.scenes } : section,
          ),
        }
      } catch (error) {
        warn(`memory-recall: could not refresh the memory sections: ${errorMessage(error)}`)
        return result
      }
    })
  })

  if (options.tools) {
    ctx.inject(['tools'], (toolsCtx) => {
      const registry = (toolsCtx as unknown as { tools: ToolRegistryLike }).tools
      for (const spec of RECALL_TOOLS) {
        registry.register({
          name: spec.name,
          description: spec.description,
          parameters: spec.parameters,
          output: {
            schema: spec.outputSchema,
            render: (_args: unknown, value: unknown) => [{ type: 'text', text: spec.render(value as never) }],
          },
          async execute(args: unknown, exec: { agent?: AgentLike }) {
            const scope = scopeOf(exec?.agent)
            if (!scope) throw new Error(`${spec.name} needs a session (no calling agent)`)
            const started = Date.now()
            try {
              const agent = exec.agent!
              const value = await spec.run(engine, scope, args, { injectedIds: () => layers.injectedIds(agent) })
              stage('tool', spec.name, { session: scope.sessionId, ok: true, ms: Date.now() - started })
              if (spec.name === 'memory_add' || spec.name === 'memory_delete') {
                const id = (value as { id?: string; deleted?: string }).id ?? (value as { deleted?: string }).deleted ?? ''
                emit(RECALL_EVENTS.memoryChanged, { op: spec.name === 'memory_add' ? 'add' : 'delete', id, sessionId: scope.sessionId, actor: 'model' })
              }
              if (spec.name === 'memory_import') {
                for (const memory of (value as { memories: { id?: string }[] }).memories) {
                  if (memory.id) emit(RECALL_EVENTS.memoryChanged, { op: 'add', id: memory.id, sessionId: scope.sessionId, actor: 'model' })
                }
              }
              if (spec.name === 'memory_feedback') {
                const rated = value as { id: string; rating: 'helpful' | 'unhelpful' | 'incorrect'; review: boolean }
                emit(RECALL_EVENTS.feedback, { sessionId: scope.sessionId, memoryId: rated.id, rating: rated.rating, review: rated.review })
              }
              return value
            } catch (error) {
              stage('tool', spec.name, { session: scope.sessionId, ok: false, code: isRecallError(error) ? error.code : 'error', ms: Date.now() - started })
              // The registry turns a thrown error into an error result the model reads.
              throw new Error(isRecallError(error) ? error.message : `${spec.name} failed: ${errorMessage(error)}`)
            }
          },
        })
      }
    })
  }

  if (options.command) {
    ctx.inject(['commands'], (commandsCtx) => {
      const registry = (commandsCtx as unknown as { commands: CommandRegistryLike }).commands
      registry.register({
        name: 'memory',
        description: 'Long-term memory: status, list, remember, correct, forget, mode, inject, enable/refresh/disable a layer, promote, review.',
        input: {
          hint: 'status | list [n] | remember [--global] <text> | correct <id> <text> | forget <id> | mode <auto|chat|work|off> | inject <follow|on|off> | enable <global|workspace> | refresh [layer] | disable [layer] | promote <id> | review | project',
        },
        async handler(invocation: { agent: AgentLike; rawInput: string }) {
          const scope = scopeOf(invocation.agent)
          if (!scope) return { kind: 'error', text: `no session for /memory\n${MEMORY_COMMAND_USAGE}` }
          const handle = layers.handle(invocation.agent)
          return runMemoryCommand(engine, scope, invocation.rawInput ?? '', {
            lastRecall: (sessionId) => injector.lastRecall(sessionId),
            onSettingsChanged: (sessionId, settings) => emit(RECALL_EVENTS.settingsChanged, { sessionId, mode: settings.mode, inject: settings.inject as InjectSwitch }),
            onMemoryChanged: (change) => emit(RECALL_EVENTS.memoryChanged, { ...change, actor: 'user' }),
            layers: {
              enable: (layer) => layers.controller.enable(handle, layer),
              disable: (layer) => layers.controller.disable(handle, layer),
              refresh: (layer) => layers.controller.refresh(handle, layer),
              statusLines: () => layers.controller.statusLines(scope.sessionId),
            },
            ...(layers.projection ? { project: () => layers.projectNow() } : {}),
          })
        },
      })
    })
  }
}
