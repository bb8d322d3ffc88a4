/**
 * The DSH adapter of the memory palace: it builds the core {@link Palace} and wires it to the
 * host — six tools through `ctx.tools`, the recall guidance as a system-prompt section, the
 * steering / recall / post-compaction notes through the `agent/pre-step` waterfall, and the
 * pre-compaction archive through the `llm/stream` waterfall (the compaction's summary request
 * waits until the turns it drops are on disk). Nothing here throws into the host: every
 * listener catches, logs and lets the turn go on.
 *
 * @module @dsh-memory/palace/plugin
 */
import { randomUUID } from 'node:crypto'
import type { Context } from '@deepseek-ai/cordis'
import z from '@deepseek-ai/schemastery'
import { emitRenamed, toolOutput } from '@dsh-memory/store/kit'
import { z as zod } from 'zod'
import { claimPluginRow } from '@dsh-memory/store/plugin'
import { describeError } from './core/errors.js'
import { PALACE_PLUGIN_ID } from './core/guidance.js'
import { DEFAULT_PALACE_OPTIONS, resolvePalaceOptions, type PalaceOptions, type RecallStrength } from './core/options.js'
import { applyPalaceSettings } from './settings.js'
import { Palace, type ArchivedEvent, type PressureSample, type SessionView } from './core/palace.js'
import { ArchiveIndex } from './core/archive-index.js'
import { PalaceSessions } from './core/sessions.js'
import { createPalaceTools, type ToolReply } from './core/tools.js'
import type { SessionEventLike } from './core/turns.js'
import { PALACE_EVENT_ALIASES, PALACE_EVENTS } from './events.js'

export { PALACE_EVENTS } from './events.js'
export type { ArchivedEvent } from './events.js'

/** Plugin id, as the bundle row names it. */
export const name = PALACE_PLUGIN_ID

/** Services this plugin needs before it starts (token meter, LLM runtime, compaction and agents are used when present). */
export const inject = ['memoryStore', 'tools', 'systemPrompt'] as const

/** Config of the palace row: the reference's settings plus process-wide fields. */
export interface Config {
  enabled: boolean
  triggerPressure: number
  retainFraction: number
  batchByteFraction: number
  minBatchTurns: number
  checkEveryTurns: number
  maxFileBytes: number
  selfNameSlug: string
  rootDirName: string
  includeReasoning: boolean
  compactAfterArchive: boolean
  enableSteer: boolean
  injectNotice: boolean
  recallStrength: RecallStrength
  searchTurnLimit: number
  recallBudgetRounds: number
  recallBudgetKeywords: number
  archiveBeforeCompaction: boolean
  autoArchiveCategory: string
  autoName: boolean
  archiveTimeoutMs: number
}

const d = DEFAULT_PALACE_OPTIONS

/** Schemastery schema of {@link Config}: shapes, defaults and descriptions (the README table mirrors it). */
export const Config: z<Partial<Config>, Config> = z.object({
  enabled: z.boolean().default(d.enabled).description('Master switch: archive, steer and inject only when true.'),
  triggerPressure: z.number().min(0).max(1).default(d.triggerPressure).description('Pressure gate: estimated history ÷ context window must reach this ratio.'),
  retainFraction: z
    .number()
    .min(0.02)
    .max(0.5)
    .default(d.retainFraction)
    .description('Share of the context window kept in context and never proposed for archiving (0.02–0.5; keep it below the compaction retainRatio, 0.16 by default).'),
  batchByteFraction: z.number().min(0).default(d.batchByteFraction).description('Batch gate fallback: archivable text ≥ this share of the retained budget opens the gate.'),
  minBatchTurns: z.natural().min(1).default(d.minBatchTurns).description('Batch gate: this many archivable turns open the gate.'),
  checkEveryTurns: z.natural().min(1).default(d.checkEveryTurns).description('Check the gates once every this many new turns.'),
  maxFileBytes: z.natural().min(10_000).default(d.maxFileBytes).description('Largest volume file in bytes (decimal: 5000000 = 5.0 MB); more starts a new volume, split by turn.'),
  selfNameSlug: z.string().default(d.selfNameSlug).description('File-name prefix of volumes (not the memory name).'),
  rootDirName: z.string().default(d.rootDirName).description('Name of the palace folder in the workspace.'),
  includeReasoning: z.boolean().default(d.includeReasoning).description('Archive the model\'s reasoning text too.'),
  compactAfterArchive: z.boolean().default(d.compactAfterArchive).description('After palace_archive, compact the archived span before the next request.'),
  enableSteer: z.boolean().default(d.enableSteer).description('Inject the note asking the model to archive when both gates hold.'),
  injectNotice: z
    .boolean()
    .default(d.injectNotice)
    .description('Inject notes into the conversation at all (steering, forced recall, the guidance after a compaction); off leaves only the tools and the system-prompt guidance.'),
  recallStrength: z
    .union(['off', 'low', 'medium', 'high', 'forced'] as const)
    .default(d.recallStrength)
    .description('How strongly the model is guided to read the archive back: off / low / medium / high / forced.'),
  searchTurnLimit: z.natural().min(1).max(30).default(d.searchTurnLimit).description('Turns palace_search returns by default when grouping by turn (1–30).'),
  recallBudgetRounds: z.natural().min(1).max(20).default(d.recallBudgetRounds).description('Advised search rounds per question at recall strength high/forced.'),
  recallBudgetKeywords: z.natural().min(1).max(50).default(d.recallBudgetKeywords).description('Advised keywords per search at recall strength high/forced.'),
  archiveBeforeCompaction: z.boolean().default(d.archiveBeforeCompaction).description('Archive the turns a compaction drops before its summary request is sent.'),
  autoArchiveCategory: z.string().default(d.autoArchiveCategory).description('Category of turns archived automatically before a compaction.'),
  autoName: z
    .boolean()
    .default(d.autoName)
    .description('Give a never-named session an automatic memory name (workspace folder + session hash) at its first archive, so compaction loses nothing; rename it with palace_config. Off: unnamed sessions archive nothing.'),
  archiveTimeoutMs: z.natural().min(100).default(d.archiveTimeoutMs).description('Longest wait for the pre-compaction archive before the summary request goes ahead anyway (ms).'),
})

// Structural views of the host objects the adapter reads; the host's own types live in its
// packages, which this package does not depend on at run time.
interface HostSession {
  readonly id: string
  readonly header?: { readonly cwd?: string; readonly parentSession?: string; readonly delegationDepth?: number }
  readonly events: readonly SessionEventLike[]
  requestHeader?(): { readonly config?: { readonly provider?: string; readonly model?: string } } | undefined
  requestContext?(): { readonly provider?: string; readonly model?: string; readonly contextWindow?: number } | undefined
}
interface HostAgent {
  readonly id: string
  readonly session: HostSession
  readonly options?: { readonly provider?: string; readonly model?: string }
}
interface HostMessage {
  readonly id?: string
  readonly role?: string
  readonly source?: { readonly kind?: string }
}
type PreStepDecision = { kind: 'reject' } | { kind: 'enter'; messages: readonly HostMessage[] }
interface TokenMeterLike {
  measure(session: HostSession): { readonly totalTokens: number; readonly nodes: readonly { readonly seq: number }[] }
}
interface LlmLike {
  resolveModelInfo(provider: string, model: string, signal?: AbortSignal): Promise<{ readonly context?: { readonly contextWindow?: number } }>
}
interface CompactionLike {
  compactRegion(start: number, end: number, agent: HostAgent, signal?: AbortSignal): Promise<unknown>
}
interface AgentsLike {
  get(id: string): HostAgent | undefined
}
interface ToolsLike {
  register(definition: unknown): () => void
}
interface SystemPromptLike {
  section(section: { name: string; order: number; text: (context: { agent?: HostAgent }) => string }): () => void
}
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Listener = (...args: any[]) => unknown
type On = (name: string, listener: Listener) => () => void

const OUTPUT_SCHEMA = toolOutput(
  zod.object({
    ok: zod.boolean().describe('false when the call was refused or failed'),
    code: zod.string().optional().describe('stable error code when ok is false'),
    text: zod.string(),
  }),
)

/** A durable plugin-sourced user message, the way the host expects injected context. */
function pluginMessage(text: string, summary: string): HostMessage {
  const message = {
    id: randomUUID(),
    role: 'user',
    content: [{ type: 'text', text }],
    source: { kind: 'plugin', plugin: PALACE_PLUGIN_ID, form: 'notice', summary: summary.slice(0, 120) },
  }
  return deepFreeze(message)
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const child of Object.values(value)) deepFreeze(child)
    Object.freeze(value)
  }
  return value
}

function viewOf(session: HostSession): SessionView {
  const header = session.header ?? {}
  return {
    id: session.id,
    cwd: header.cwd,
    root: header.parentSession === undefined && !(typeof header.delegationDepth === 'number' && header.delegationDepth > 0),
    events: () => session.events,
  }
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    work.finally(() => clearTimeout(timer)),
    new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), ms)
      timer.unref?.()
    }),
  ])
}

/**
 * Wire the palace to the host. Invalid config throws here, naming the field, so the host
 * refuses to boot with it.
 */
export function apply(ctx: Context, config: Config): void {
  // Validate first, so a broken row fails loudly even when another row runs the palace.
  const options: PalaceOptions = resolvePalaceOptions(config)
  // Installed twice (the preset plus this bundle)? Only the first row runs; see claimPluginRow.
  if (!claimPluginRow(ctx, name)) return
  const logger = ctx.logger('memory-palace')
  const on = ctx.on.bind(ctx) as unknown as On
  const host = ctx as unknown as { tools: ToolsLike; systemPrompt: SystemPromptLike }
  const optional = <T>(service: string): T | undefined => {
    try {
      return (ctx as unknown as { get(name: string): T | undefined }).get(service)
    } catch {
      return undefined
    }
  }
  const agents = new Map<string, HostAgent>()
  let sessions: PalaceSessions | undefined
  const palace = new Palace(options, {
    index: new ArchiveIndex(ctx.memoryStore),
    logger: { warn: (message) => logger.warn(message), debug: (message) => logger.debug(message) },
    onArchived: (event) => {
      sessions?.archived(event)
      try {
        emitRenamed(ctx, PALACE_EVENT_ALIASES, PALACE_EVENTS.archived, event)
      } catch (error) {
        logger.warn('a memory-palace/archived listener failed: %s', describeError(error))
      }
    },
  })
  // The per-agent state machines live in the core; this adapter only drives them.
  const state = (sessions = new PalaceSessions(palace))
  // Live settings (namespace memory-palace): recall strength and notes, from the next turn on.
  applyPalaceSettings(ctx, Config, config, (next) => palace.reconfigure(next), (message) => logger.warn(message))

  const agentFor = (id: string): HostAgent | undefined => agents.get(id) ?? optional<AgentsLike>('agents')?.get(id)

  /** History tokens and window for the gates; every missing piece is just `undefined`. */
  const samplePressure = async (agent: HostAgent): Promise<PressureSample> => {
    const session = agent.session
    let historyTokens: number | undefined
    try {
      historyTokens = optional<TokenMeterLike>('tokenMeter')?.measure(session).totalTokens
    } catch (error) {
      logger.debug('token meter unavailable: %s', describeError(error))
    }
    let contextWindow: number | undefined
    const route = session.requestHeader?.()?.config ?? agent.options
    const llm = optional<LlmLike>('llm')
    if (llm && route?.provider && route.model) {
      try {
        const info = await withTimeout(llm.resolveModelInfo(route.provider, route.model), 5000)
        if (info !== 'timeout') contextWindow = info.context?.contextWindow
      } catch (error) {
        logger.debug('model info unavailable: %s', describeError(error))
      }
    }
    contextWindow ??= session.requestContext?.()?.contextWindow
    return { historyTokens, contextWindow }
  }

  // --- agents -----------------------------------------------------------------------------
  on('agent/created', (payload: { agent?: HostAgent }) => {
    const agent = payload?.agent
    if (agent?.id) agents.set(agent.id, agent)
  })
  on('agent/session-start', (payload: { agent?: HostAgent }) => {
    const agent = payload?.agent
    if (!agent?.id) return
    agents.set(agent.id, agent)
    // Warm up in the background: recover an interrupted commit, catch the archive index up.
    void state.started(viewOf(agent.session)).catch((error) => logger.warn('could not open the memory palace of session %s: %s', agent.id, describeError(error)))
  })
  on('agent/disposed', (payload: { agent?: HostAgent }) => {
    const id = payload?.agent?.id
    if (!id) return
    agents.delete(id)
    state.disposed(id)
  })

  // --- tools ------------------------------------------------------------------------------
  for (const tool of createPalaceTools(palace)) {
    // Kept as an effect of this fiber, so unloading the plugin removes the tool even from a
    // registry that does not track callers.
    ctx.effect(() => host.tools.register({
      name: tool.name,
      description: tool.description,
      parameters: tool.parameters,
      output: {
        schema: OUTPUT_SCHEMA,
        render: (_args: unknown, value: unknown) => [{ type: 'text', text: (value as ToolReply).text }],
      },
      async execute(args: unknown, exec: { agent?: HostAgent }): Promise<ToolReply> {
        const agent = exec?.agent
        try {
          const reply = await tool.run(args, {
            session: agent ? viewOf(agent.session) : undefined,
            ...(agent ? { pressure: () => samplePressure(agent) } : {}),
          })
          if (agent) await state.toolReturned(agent.id, viewOf(agent.session), tool.name, reply.ok)
          return reply
        } catch (error) {
          // The core never throws; this is the last net so the host never sees an exception.
          logger.warn('%s failed: %s', tool.name, describeError(error))
          return { ok: false, code: 'internal', text: `${tool.name} failed: ${describeError(error)}` }
        }
      },
    }), `memory-palace tool ${tool.name}`)
  }

  // --- system prompt: recall guidance, stable per recall strength and archive state (KV-cache friendly)
  ctx.effect(() => host.systemPrompt.section({
    name: 'memory-palace:recall',
    order: 160,
    text: (context: { agent?: HostAgent }) => state.recallText(context?.agent?.id),
  }), 'memory-palace recall guidance')

  // --- before every step: compaction after archive, then notes ------------------------------
  on('agent/pre-step', async (payload: { agent: HostAgent; messages: readonly HostMessage[]; signal?: AbortSignal }, next: () => Promise<PreStepDecision>) => {
    const agent = payload?.agent
    if (agent?.id) {
      agents.set(agent.id, agent)
      const pending = state.takePendingCompaction(agent.id)
      if (pending) {
        await compactArchived(agent, pending, payload.signal).catch((error) =>
          logger.warn('compactAfterArchive: could not compact the archived span of session %s: %s', agent.id, describeError(error)),
        )
      }
    }
    const decision = await next()
    if (!agent?.id || decision?.kind !== 'enter') return decision
    try {
      const human = decision.messages.some((message) => message?.source?.kind === 'user')
      const notes = await state.stepNotes(viewOf(agent.session), human, () => samplePressure(agent))
      const extra = notes.map((note) => pluginMessage(note.text, note.summary))
      if (extra.length === 0) return decision
      return { kind: 'enter', messages: [...decision.messages, ...extra] }
    } catch (error) {
      logger.warn('memory palace notes skipped for session %s: %s', agent.id, describeError(error))
      return decision
    }
  })

  /** compactAfterArchive: replace the archived span that is still in context by one checkpoint. */
  const compactArchived = async (agent: HostAgent, event: ArchivedEvent, signal: AbortSignal | undefined): Promise<void> => {
    const compaction = optional<CompactionLike>('compaction')
    const meter = optional<TokenMeterLike>('tokenMeter')
    if (!compaction || !meter) return
    const region = await state.compactionRegion(viewOf(agent.session), event, meter.measure(agent.session).nodes.map((node) => node.seq))
    if (!region) return
    await compaction.compactRegion(region[0], region[1], agent, signal)
  }

  // --- right before a compaction summary: archive what it drops ------------------------------
  on('llm/stream', (requestOptions: { purpose?: string; sessionId?: string; messages?: readonly HostMessage[] }, next: () => AsyncIterable<unknown>) => {
    if (requestOptions?.purpose !== 'compaction' || !requestOptions.sessionId) return next()
    const agent = agentFor(requestOptions.sessionId)
    if (!agent) return next()
    // The last message is the compaction instruction; the rest replay what is being replaced.
    const ids = (requestOptions.messages ?? [])
      .slice(0, -1)
      .map((message) => message.id)
      .filter((id): id is string => typeof id === 'string')
    return (async function* () {
      try {
        const result = await withTimeout(state.track(palace.archiveBeforeCompaction(viewOf(agent.session), ids)), options.archiveTimeoutMs)
        if (result === 'timeout') logger.warn('pre-compaction archive of session %s is still running after %d ms; the summary request goes ahead', agent.id, options.archiveTimeoutMs)
      } catch (error) {
        logger.warn('pre-compaction archive of session %s failed (the compaction goes on): %s', agent.id, describeError(error))
      }
      yield* next()
    })()
  })

  on('session/flush', () => state.flush())

  // --- after a compaction: one guidance note ------------------------------------------------
  on('session/event', (session: HostSession, event: SessionEventLike) => {
    if (event?.type !== 'compaction/end' || (event.data as { error?: unknown } | undefined)?.error !== undefined) return
    void palace.compactionEnded(viewOf(session)).catch((error) => logger.warn('post-compaction guidance skipped: %s', describeError(error)))
  })
}
