/**
 * The DSH adapter of the cue bank: builds the core over `ctx.memoryStore`, feeds it the
 * host's session events and claimed user messages, serves the prepared block through
 * `ctx.systemPrompt.context()`, registers the `cue_bank_open` tool and the `ctx.memoryCueBank`
 * service. Nothing here throws into the host after startup.
 *
 * @module @dsh-memory/cue-bank/plugin
 */
import type { Context } from '@deepseek-ai/cordis'
import z from '@deepseek-ai/schemastery'
import type {} from '@dsh-memory/store/plugin'
import { emitRenamed } from '@dsh-memory/store/kit'
import { claimPluginRow } from '@dsh-memory/store/plugin'
import { CueBank } from './core/cue-bank.js'
import type { CueWokenEvent, CueWrittenEvent, SessionRef, TurnMessage } from './core/cue-bank-contract.js'
import { createEmbeddingClient } from './core/embedding.js'
import { applyCueBankSettings } from './settings.js'
import { resolveCueBankOptions, type CueBankOptions, type CueBlockFormat, type MatchMode, type PartitionMode } from './core/options.js'
import { openCueRepository } from './core/store-cue-repository.js'
import { messageText } from './core/text.js'
import { CUE_BANK_EVENT_ALIASES, CUE_BANK_EVENTS, type AgentLike, type AssembleContextLike, type MessageLike, type SessionLike } from './events.js'
import { CueBankService, OPEN_TOOL_NAME, openToolDefinition } from './service.js'

export { CUE_BANK_EVENTS } from './events.js'
export { CueBankService, OPEN_TOOL_NAME } from './service.js'

declare module '@deepseek-ai/cordis' {
  interface Context {
    /** The cue bank of `@dsh-memory/cue-bank`. */
    memoryCueBank: CueBankService
    /** @deprecated Use `ctx.memoryCueBank` (the same instance); removed in 1.0. */
    cueBank: CueBankService
  }
}

/** Plugin id, as the bundle row names it. */
export const name = 'memory-cue-bank'

/** Services this plugin needs before it starts (system prompt and tools are used when present). */
export const inject = ['memoryStore'] as const

/** The runtime-context contribution's name. */
export const CONTEXT_NAME = 'memory-cue-bank'

/** Config of the cue-bank row; every field has a default (see the README table). */
export interface Config extends CueBankOptions {}

/** Schemastery schema of {@link Config}: every field has a default and a description (the README table is checked against it). */
export const Config: z<Config> = z.object({
  partition: z
    .union(['workspace', 'user', 'global'] as PartitionMode[])
    .default('workspace')
    .description("Whose cues a session sees: its workspace's, its user's (one bank per person across workspaces: 'feishu:<user>' session ids, else userId or the OS account), or one global bank."),
  userId: z.string().default('').description("The person whose bank partition 'user' fills when the session id names none; empty: the OS account (USER)."),
  includeGlobal: z.boolean().default(true).description('Also read the global partition (e.g. imported cues); writes always go to the own partition.'),
  matchMode: z
    .union(['auto', 'keyword', 'vector'] as MatchMode[])
    .default('auto')
    .description('auto: vectors when an embedding endpoint and key are configured, else keywords. keyword: TF-IDF keyword overlap only. vector: cosine only.'),
  embedding: z
    .object({
      baseURL: z.string().default('https://api.siliconflow.cn/v1').description('OpenAI-compatible endpoint; requests go to {baseURL}/embeddings. Empty disables vectors.'),
      apiKey: z.string().default('').description('API key. Empty: read it from the environment variable apiKeyEnv.'),
      apiKeyEnv: z.string().default('SILICONFLOW_API_KEY').description('Environment variable holding the API key.'),
      model: z.string().default('BAAI/bge-m3').description('Embedding model.'),
      dimensions: z.natural().default(1024).description('Expected vector length; answers of another length are rejected. 0 accepts any.'),
      timeoutMs: z.natural().default(5000).description('Abort one embedding request after this many ms.'),
      waitMs: z.natural().default(1500).description('Longest wait of prompt assembly for the query embedding before keyword matching is used for that message.'),
    })
    .description('Embedding source of vector matching.'),
  topic: z
    .object({
      switchDetection: z.boolean().default(true).description('Detect topic switches (keyword overlap with the previous user turn). Off: only scanEveryTurn scans.'),
      switchThreshold: z.number().min(0).max(1).default(0.25).description('Overlap below this value is a topic switch (0..1).'),
      scanEveryTurn: z.boolean().default(false).description('Scan the cue bank on every user message, not only on a switch.'),
      maxKeywords: z.natural().min(1).default(10).description('Keywords taken from a new user message for detection and matching.'),
    })
    .description('Topic-switch detection.'),
  inject: z
    .object({
      enabled: z.boolean().default(true).description('Inject woken cues as runtime context.'),
      maxCues: z.natural().min(1).max(20).default(3).description('Most cues injected at once.'),
      maxDetailChars: z.natural().default(400).description('Longest detail excerpt per cue, in characters.'),
      minScore: z.number().min(0).max(1).default(0.15).description('Lowest keyword match score (after decay) that wakes a cue.'),
      minVectorScore: z.number().min(0).max(1).default(0.3).description('Lowest cosine similarity (after decay) that wakes a cue.'),
      order: z.number().default(400).description('Order of the block among runtime contexts.'),
      format: z
        .union(['tagged', 'reference'] as CueBlockFormat[])
        .default('tagged')
        .description("tagged: our <memory-cues> block with cue ids. reference: the cue-bank reference's <system-reminder> block (📌 记忆唤醒, 触点命中 / 最近提及 / 细节)."),
    })
    .description('The wake block.'),
  extract: z
    .object({
      enabled: z.boolean().default(true).description('Write cues at the end of each turn.'),
      maxKeywordsPerTurn: z.natural().min(1).default(12).description('Keywords stored per conversation cue (task cues keep twice as many).'),
      keywordMinLen: z.natural().min(1).default(2).description('Shortest keyword, in characters.'),
      userIdiomWindowTurns: z.natural().min(2).default(10).description('User idioms are counted over this many recent user turns.'),
      maxIdiomHints: z.natural().default(5).description('Most idioms offered in the hint line.'),
    })
    .description('The write side.'),
  decay: z
    .object({
      halfLifeDays: z.number().min(0).default(30).description('An untouched cue counts half after this many days. 0 disables decay.'),
      pruneBelow: z.number().min(0).max(0.99).default(0.02).description('Cues whose decay factor falls below this are deleted. 0 never deletes.'),
    })
    .description('Forgetting untouched cues.'),
  maxTopics: z.natural().min(1).default(200).description('Topic cues kept per partition; the least recently touched are evicted.'),
  maxIdioms: z.natural().default(50).description('Idioms kept per partition; the least recently seen are evicted.'),
  dbg: z.boolean().default(false).description('Log every write and wake decision.'),
})

/** Host objects reached through services this plugin does not hard-depend on. */
interface PromptServiceLike {
  context(context: { name: string; order: number; text: (context: AssembleContextLike) => string }): () => void
}
interface ToolServiceLike {
  register(definition: unknown): () => void
}

/**
 * Start the cue bank: migrate its tables, wire the write side to `session/event`, the wake side
 * to `agent/inbox/claimed` + `ctx.systemPrompt`, and provide `ctx.memoryCueBank`.
 * @throws CueBankError `invalid-config` naming the field, `unsupported-store`
 */
export async function apply(ctx: Context, config: Config): Promise<void> {
  // Installed twice (the preset plus this bundle)? Only the first row runs; see claimPluginRow.
  if (!claimPluginRow(ctx, name)) return
  const options = resolveCueBankOptions(config)
  const logger = ctx.logger('memory-cue-bank')
  // On PostgreSQL the wake reads a view of the bank, polled for other hosts' writes.
  const workspaceOf = (cwd: string): string => ctx.memoryStore.workspaceOf(cwd)
  const repository = await openCueRepository(ctx.memoryStore, {
    onError: (error) => logger.warn('catching up with cues written by other processes failed (retrying): %s', error instanceof Error ? error.message : String(error)),
  })
  let toolRegistered = false
  const embedder = options.vectorAvailable
    ? createEmbeddingClient({
        baseURL: options.embedding.baseURL,
        apiKey: options.embeddingKey,
        model: options.embedding.model,
        dimensions: options.embedding.dimensions,
        timeoutMs: options.embedding.timeoutMs,
      })
    : null
  const bank = new CueBank({
    repository,
    options,
    embedder,
    // Through the service on every call: its repositories are live only while the store runs.
    messages: { getByHostId: (conversationId, hostMessageId) => ctx.memoryStore.messages.getByHostId(conversationId, hostMessageId) },
    openTool: () => (toolRegistered ? OPEN_TOOL_NAME : undefined),
    hooks: {
      // Both hooks run after the commit; the core guards them, so a throwing listener cannot break a turn.
      onWritten: (event: CueWrittenEvent) => emitRenamed(ctx, CUE_BANK_EVENT_ALIASES, CUE_BANK_EVENTS.written, event),
      onWoken: (event: CueWokenEvent) => emitRenamed(ctx, CUE_BANK_EVENT_ALIASES, CUE_BANK_EVENTS.woken, event),
      onError: (error, where) => logger.warn('%s failed: %s', where, error instanceof Error ? error.message : String(error)),
      debug: (message) => logger.info(message),
    },
  })
  ctx.effect(() => () => bank.close(), 'cue-bank repository')
  // Switches and thresholds are live settings (namespace memory-cue-bank): the bank reads them per message.
  applyCueBankSettings(ctx, Config, config, bank, (message) => logger.warn(message))
  if (options.matchMode !== 'keyword' && !options.vectorAvailable) {
    logger.info('no embedding key (%s): matching by keywords', options.embedding.apiKeyEnv || 'embedding.apiKey')
  }

  // Write side: collect each turn's human and assistant text, record it at turn end.
  const turns = new Map<string, { turn: number; user: TurnMessage[]; assistant: TurnMessage[] }>()
  ctx.on('session/event', (session, event) => {
    try {
      if (!session || typeof session.id !== 'string' || !event) return
      const data = event.data as Record<string, unknown> | undefined
      if (event.type === 'turn/start') {
        turns.set(session.id, { turn: typeof data?.turn === 'number' ? data.turn : 0, user: [], assistant: [] })
      } else if (event.type === 'user/message') {
        const message = data as MessageLike | undefined
        // Only human input: recalled memory, compaction checkpoints and other plugin messages are not conversation.
        if (message?.source?.kind !== 'user') return
        const text = messageText(message.content)
        if (text) buffer(session.id).user.push({ id: message.id ?? '', text })
      } else if (event.type === 'assistant/message') {
        const message = (data as { message?: MessageLike } | undefined)?.message
        const text = messageText(message?.content)
        if (text) buffer(session.id).assistant.push({ id: message?.id ?? '', text })
      } else if (event.type === 'compaction/end') {
        // The turns before the current one now live only in the summary.
        const current = turns.get(session.id)?.turn ?? 0
        bank.observeCompaction(sessionRef(session, workspaceOf), Math.max(0, current - 1))
      } else if (event.type === 'turn/end') {
        const record = turns.get(session.id)
        turns.delete(session.id)
        if (record) void bank.recordTurn(sessionRef(session, workspaceOf), record)
      }
    } catch (error) {
      logger.warn('session event %s not handled: %s', event?.type, error instanceof Error ? error.message : String(error))
    }
  })
  const buffer = (id: string) => {
    let record = turns.get(id)
    if (!record) turns.set(id, (record = { turn: 0, user: [], assistant: [] }))
    return record
  }
  // The host awaits session/flush before a headless run exits: commit the last turn first, and
  // give its cue vectors up to embedding.waitMs (work after the flush races the exit).
  ctx.on('session/flush', () => bank.flush(options.embedding.waitMs))
  ctx.on('agent/disposed', (payload) => {
    const id = payload?.agent?.id
    if (typeof id !== 'string') return
    turns.delete(id)
    bank.forget(id)
  })

  // Wake side: decide when the message is claimed, which happens just before the step's prompt is assembled.
  ctx.on('agent/inbox/claimed', (payload) => {
    try {
      const message = payload?.message
      const agent = payload?.agent
      if (!agent || message?.source?.kind !== 'user') return
      const text = messageText(message.content)
      if (!text) return
      bank.observeUserMessage(sessionRef(agent.session ?? { id: agent.id }, workspaceOf), { id: message.id ?? '', text }, payload.turn)
    } catch (error) {
      logger.warn('wake failed: %s', error instanceof Error ? error.message : String(error))
    }
  })

  ctx.inject(['systemPrompt'], (sub) => {
    const prompt = (sub as unknown as { systemPrompt: PromptServiceLike }).systemPrompt
    // The provider contract is synchronous: it only reads the block prepared at claim time.
    prompt.context({ name: CONTEXT_NAME, order: options.inject.order, text: (context) => bank.injection(sessionIdOf(context)) })
    // A query embedding still in flight gets at most embedding.waitMs here (the only async seam
    // before the request); the finished decision replaces the provider's keyword-based text.
    sub.on('system-prompt/assemble', async (_assembly, context, next) => {
      const out = await next()
      try {
        const id = sessionIdOf(context)
        if (id) {
          await bank.settle(id)
          const entry = out?.contexts?.find((candidate) => candidate.name === CONTEXT_NAME)
          if (entry) entry.text = bank.injection(id)
        }
      } catch (error) {
        logger.warn('settling the wake block failed: %s', error instanceof Error ? error.message : String(error))
      }
      return out
    })
  })

  ctx.inject(['tools'], (sub) => {
    const tools = (sub as unknown as { tools: ToolServiceLike }).tools
    tools.register(openToolDefinition(bank, workspaceOf))
    toolRegistered = true
    sub.effect(() => () => {
      toolRegistered = false
    }, 'cue_bank_open availability')
  })

  const service = new CueBankService(bank, ctx.memoryStore)
  ctx.provide('memoryCueBank', service)
  // The name published before the naming rule, kept until 1.0: the same instance, and owned by
  // this plugin's fiber like the new one, so unloading removes both.
  ctx.provide('cueBank', service)
}

/** The session and its workspace id (`workspaceOf` of its cwd: the project's git id, or the path). */
function sessionRef(session: SessionLike, workspaceOf: (cwd: string) => string): SessionRef {
  const cwd = session.header?.cwd ?? ''
  return { id: session.id, workspace: cwd ? workspaceOf(cwd) : '' }
}

function sessionIdOf(context: AssembleContextLike | undefined): string {
  const agent: AgentLike | undefined = context?.agent
  return agent?.session?.id ?? agent?.id ?? ''
}
