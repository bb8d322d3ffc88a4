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
import type {} from '@dsh-memory/store/plugin'
import { BackgroundWork, emitRenamed } from '@dsh-memory/store/kit'
import { claimPluginRow, stageLog } from '@dsh-memory/store/plugin'
import { runMemoryCommand, MEMORY_COMMAND_USAGE } from './core/command.ts'
import { createEmbedder } from './core/embedding.ts'
import { errorMessage, isRecallError } from './core/errors.ts'
import { type AgentLike, scopeOf, turnKey } from './core/host-agent.ts'
import { RecallInjector, type StepMessageLike } from './core/injector.ts'
import { PromptSections } from './core/prompt-sections.ts'
import { type InjectSwitch, type RecallOptionsInput, resolveRecallOptions } from './core/options.ts'
import { RecallEngine } from './core/recall-engine.ts'
import { RecallStep, waitAtMost } from './core/recall-step.ts'
import { RECALL_PLUGIN_ID } from './core/recall-text.ts'
import { toolFacts } from './core/tool-events.ts'
import { RECALL_TOOLS } from './core/tools.ts'
import { RECALL_EVENT_ALIASES, RECALL_EVENTS } from './events.ts'
import { applyLayers } from './layers-adapter.ts'
import { applyRecallSettings } from './settings.ts'
import { Config } from './config.ts'

export { Config } from './config.ts'

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
  const workspaceOf = (cwd: string): string => ctx.memoryStore.workspaceOf(cwd)
  // A missing optional package of the in-process model fails here, at load, naming the field.
  const embedder = options.embedding.enabled ? createEmbedder(options.embedding) : null
  ctx.effect(() => () => void embedder?.close?.(), 'memory-recall embedder')
  const engine = new RecallEngine(ctx.memoryStore, options, { embedder, onWarning: warn })
  // Live settings (namespace memory-recall): mode default, budgets, embeddings, next turn on.
  applyRecallSettings(ctx, Config, config, engine, warn)
  const injector = new RecallInjector(engine, { onWarning: warn, explicitLayers: (sessionId) => layers.controller.isExplicit(sessionId) })
  const sections = new PromptSections(engine, { onWarning: warn })
  const work = new BackgroundWork()
  const track = (job: Promise<unknown>): void => void work.track(job)
  const emit = (event: string, payload: unknown) => {
    try {
      emitRenamed(ctx, RECALL_EVENT_ALIASES, event, payload)
    } catch (error) {
      warn(`memory-recall: a ${event} listener failed: ${errorMessage(error)}`)
    }
  }
  // Explicit layers, the lifecycle and the Markdown projection (see layers-adapter.ts).
  const layers = applyLayers(ctx, options, { warn, emit, track })

  const step = new RecallStep({
    workspaceOf,
    engine,
    injector,
    createMessage: (text) =>
      createUserMessage({
        content: [{ type: 'text', text }],
        source: { kind: 'plugin', plugin: RECALL_PLUGIN_ID, form: 'recall' },
      }) as StepMessageLike,
    track,
    onInjected: (fact) => emit(RECALL_EVENTS.injected, fact),
    onWarning: warn,
    debug: (message) => logger.debug(message),
    stage,
  })
  ctx.on('agent/pre-step', async (payload, next) => {
    const decision = await next()
    if (decision.kind !== 'enter') return decision
    const messages = await step.admit(payload.agent, decision.messages as StepMessageLike[], payload.signal)
    return messages ? { kind: 'enter', messages } : decision
  })

  // Headless runs exit right after the turn: finish bookkeeping writes before the store closes.
  ctx.on('session/flush', async () => {
    // Tracked work may track more (a counted turn starts a review): wait until none is left.
    await work.settled()
    // Embedding backfill is opportunistic network work: a stalled endpoint must not hold the
    // process open after the turn. What is not embedded now is picked up by a later recall.
    await waitAtMost(engine.whenIdle(), FLUSH_BACKGROUND_LIMIT_MS)
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
        const scope = scopeOf(agent, workspaceOf)
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
            const scope = scopeOf(exec?.agent, workspaceOf)
            if (!scope) throw new Error(`${spec.name} needs a session (no calling agent)`)
            const started = Date.now()
            try {
              const agent = exec.agent!
              const value = await spec.run(engine, scope, args, { injectedIds: () => layers.injectedIds(agent) })
              stage('tool', spec.name, { session: scope.sessionId, ok: true, ms: Date.now() - started })
              for (const { kind, ...fact } of toolFacts(spec.name, value, scope.sessionId)) emit(kind === 'feedback' ? RECALL_EVENTS.feedback : RECALL_EVENTS.memoryChanged, fact)
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
          const scope = scopeOf(invocation.agent, workspaceOf)
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
