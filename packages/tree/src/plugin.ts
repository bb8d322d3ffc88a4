/**
 * The DSH adapter of the memory tree: the Cordis service `ctx.memoryTree`. It opens the core
 * over the shared store, routes every user message automatically (`session/event`), injects
 * the mainline as a stable system-prompt section, and registers the `mt_*` tools. Nothing
 * here throws into the host: failures are logged and the user's turn goes on.
 *
 * @module @dsh-memory/tree/plugin
 */
import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import { type Context, Service } from '@deepseek-ai/cordis'
import z from '@deepseek-ai/schemastery'
import { findUnknownOption, messageText as kitMessageText, optionKeysOf, strictOptionsSchema, toolOutput } from '@dsh-memory/store/kit'
import { z as zod } from 'zod'
import type {} from '@dsh-memory/store/plugin'
import { claimPluginRow } from '@dsh-memory/store/plugin'
import { describeError, TreeError } from './core/errors.js'
import { openMemoryTree, type OpenedMemoryTree } from './core/open.js'
import { DEFAULT_TREE_OPTIONS, resolveTreeOptions, type TreeOptions } from './core/options.js'
import { applyTreeSettings } from './settings.js'
import { renderBranchNotice, runTreeTool, toolParametersSchema, TREE_GUIDE, TREE_TOOLS, type TreeToolResult } from './core/tools.js'
import type { MemoryTree } from './core/tree.js'
import type { Caller, Destination, RecordResult, TreeChange } from './core/tree-contract.js'
import { eventName, type SessionEventLike, type SessionLike } from './events.js'

export { TREE_EVENTS } from './events.js'
export type { TreeEventPayload } from './events.js'

declare module '@deepseek-ai/cordis' {
  interface Context {
    memoryTree: MemoryTreeService
  }
}

/** Plugin id, as the bundle row names it. */
export const name = 'memory-tree'

/** Services this plugin needs before it starts (tools and the system prompt are used when present). */
export const inject = ['memoryStore'] as const

/** Name of the injected system-prompt section. */
export const SECTION_NAME = 'memory-tree:mainline'

/** Name of the static section telling the model when to branch, merge and checkpoint (with the tools). */
export const GUIDE_SECTION_NAME = 'memory-tree:guide'
// Tool guidance sits at 100-199 in the host's order.
const GUIDE_ORDER = 150

// Mainline changes the model must see on its next request, not next session: the project id, or
// '*' when a workspace moved to another project (any session may show another project now). Items
// auto-extracted from a user message are not among them: the message is already in the conversation.
function changesMainline(change: TreeChange): string | undefined {
  if (change.type === 'project-set') return '*'
  if (change.type === 'merged' || change.type === 'checkpointed' || change.type === 'branched' || change.type === 'item-updated') return change.projectId
  if (change.type === 'items-added' && change.items.some((item) => item.source !== 'user')) return change.projectId
  return undefined
}

/** Config of the memory-tree row. */
export interface Config extends TreeOptions {
  /** Route every user message (and its reply) automatically. */
  autoRoute: boolean
  /** Inject the mainline as a system-prompt section. */
  inject: boolean
  /** `session`: the section is computed once per session (byte-stable for the KV cache); `step`: every request. */
  refresh: 'session' | 'step'
  /** Order of the section in the system prompt (persona is 0, tool guidance 100–199). */
  sectionOrder: number
  /** Register the mt_* tools. */
  tools: boolean
  /** Write the markdown projection. */
  projection: boolean
  /** Where the projection goes; '' = `<store dataDir>/tree`. */
  projectionDir: string
  /** Longest a request waits for the mainline to be read before it goes out without it (ms). */
  contextTimeoutMs: number
}

const keywordList = (defaults: readonly string[], description: string) => z.array(z.string()).default([...defaults]).description(description)

/**
 * Schemastery schema of {@link Config}: shapes, defaults and descriptions (the README table is
 * checked against it). Cross-field rules (a keyword on both lists) are `resolveTreeOptions()`'s.
 */
export const Config: z<Config> = z.object({
  autoRoute: z.boolean().default(true).description('Route every user message automatically: chit-chat to the chat partition, project work to the mainline or the current branch.'),
  inject: z.boolean().default(true).description('Inject the project mainline (constraints, decisions, outcomes, open questions, baseline, recent turns of earlier sessions) as a system-prompt section.'),
  refresh: z.union(['session', 'step']).default('session').description('session: compute the section once per session, so the system prompt stays byte-stable for the KV cache; step: recompute it for every request.'),
  sectionOrder: z.number().default(60).description('Order of the section in the system prompt (persona is 0, tool guidance 100-199).'),
  tools: z.boolean().default(true).description('Register the mt_* tools (mt_help, mt_status, mt_set_project, mt_route, mt_branch, mt_merge, mt_checkpoint, mt_get_context, mt_chat, mt_list_branches, mt_note, mt_resolve).'),
  projection: z.boolean().default(true).description('Write the readable markdown projection (mainline.md, branches/, checkpoints/).'),
  projectionDir: z.string().default('').description('Directory of the markdown projection. Empty: <store dataDir>/tree. MEMORY_TREE_ROOT does not apply to the plugin.'),
  contextTimeoutMs: z.natural().default(2000).description('Longest a model request waits for the mainline to be read; after that it goes out without the section (ms).'),
  chatKeywords: keywordList(DEFAULT_TREE_OPTIONS.chatKeywords, 'Keywords marking chit-chat (any language; English, Chinese and Japanese by default).'),
  projectKeywords: keywordList(DEFAULT_TREE_OPTIONS.projectKeywords, 'Keywords marking project work (any language; English, Chinese and Japanese by default).'),
  routeMargin: z.number().default(DEFAULT_TREE_OPTIONS.routeMargin).description('How far one side must lead (keyword hits plus code signals) for a confident route.'),
  unknownRoute: z.union(['mainline', 'chat', 'skip']).default(DEFAULT_TREE_OPTIONS.unknownRoute).description('Where a message goes when neither side leads: the mainline turn log, the chat partition, or nowhere.'),
  autoExtract: z.boolean().default(DEFAULT_TREE_OPTIONS.autoExtract).description('Record constraints and decisions stated in project messages ("must…", "we decided…", "必须…", "決定…") as mainline items.'),
  recentTurns: z.natural().default(DEFAULT_TREE_OPTIONS.recentTurns).description('Recent mainline turns of earlier sessions shown in the section.'),
  maxContextTokens: z.natural().default(DEFAULT_TREE_OPTIONS.maxContextTokens).description('Token budget of the section; constraints are always kept.'),
  maxTurnChars: z.natural().default(DEFAULT_TREE_OPTIONS.maxTurnChars).description('Longest stored mainline turn or chat message (characters); branch logs keep up to 16000 because merge reads them.'),
  maxItemChars: z.natural().default(DEFAULT_TREE_OPTIONS.maxItemChars).description('Longest mainline item (characters).'),
  chatKeep: z.natural().default(DEFAULT_TREE_OPTIONS.chatKeep).description('Chat messages kept verbatim per workspace before older ones fold into a digest.'),
  maxStoredTurns: z.natural().default(DEFAULT_TREE_OPTIONS.maxStoredTurns).description('Mainline turns kept per project until a checkpoint clears them.'),
  maxMergeItems: z.natural().default(DEFAULT_TREE_OPTIONS.maxMergeItems).description('Most items one merge adds to the mainline.'),
  autoBranch: z.boolean().default(DEFAULT_TREE_OPTIONS.autoBranch).description('Open a branch by itself when a project message starts a side question or a trial ("by the way…", "let\'s try…", "顺便问一下", "试试", "ちなみに", "試して") and none is current.'),
  checkpointBranches: z.union(['close', 'carry']).default(DEFAULT_TREE_OPTIONS.checkpointBranches).description('close: a checkpoint clears every branch reference of the stage, open branches closed unmerged (their logs kept); carry: open branches stay open into the next stage.'),
})

/** The keys of {@link Config}; any other key is refused at load. */
const CONFIG_KEYS = strictOptionsSchema(optionKeysOf(Config({} as Config)))

// The host services this adapter uses, declared structurally: dsh-tools and dsh-system-prompt
// own their types, and augmenting Context with them here would clash with theirs.
interface ContentBlockLike {
  type: 'text'
  text: string
}
interface AgentLike {
  readonly id: string
  readonly session?: SessionLike
}
interface ToolRegistryLike {
  register(definition: {
    name: string
    description: string
    parameters: Record<string, unknown>
    output: { schema: Record<string, unknown>; render(args: unknown, value: unknown): ContentBlockLike[] }
    execute(args: unknown, exec: { agent?: AgentLike; signal: AbortSignal }): Promise<unknown>
  }): () => void
}
interface SystemPromptLike {
  section(section: { name: string; order: number; text: string | ((context: { agent?: AgentLike }) => string) }): () => void
}
interface AssemblyLike {
  sections: Array<{ name: string; text: string }>
}
interface HostContext {
  tools: ToolRegistryLike
  systemPrompt: SystemPromptLike
}

interface PreStepDecision {
  kind?: string
  messages?: readonly unknown[]
}

/** A durable, sourced plugin message (never routed: its source is not the user). */
function branchNoticeMessage(text: string) {
  return { id: randomUUID(), role: 'user', content: [{ type: 'text', text }], source: { kind: 'plugin', plugin: name, form: 'branch-opened' } }
}

/** The canonical output declaration of every mt_* tool. */
const TOOL_OUTPUT_SCHEMA = toolOutput(zod.looseObject({ ok: zod.boolean(), tool: zod.string(), text: zod.string() }))

/** Text of a host message's text blocks. */
function messageText(message: unknown): string {
  return kitMessageText((message as { content?: unknown } | undefined)?.content)
}

/** `workspaceOf` maps the session's directory to its workspace id (the project's git id, or the path). */
function callerOf(agent: AgentLike | undefined, source: string, workspaceOf: (cwd: string) => string): Caller {
  const cwd = agent?.session?.header?.cwd ?? ''
  return { workspace: cwd ? workspaceOf(cwd) : '', sessionId: agent?.id ?? '', source }
}

/**
 * `ctx.memoryTree`: the memory tree of this host, over the shared store. Methods wait until
 * the tree is open; after the plugin unloads they fail with `TreeError` code `closed`.
 */
export class MemoryTreeService extends Service {
  static inject = inject
  static Config = Config

  /** The config in force (frozen; the live part is replaced by a settings change, see settings.ts). */
  config!: Readonly<Config>
  /** The resolved core options (frozen). */
  readonly options!: Readonly<TreeOptions>
  private opened: OpenedMemoryTree | undefined
  private opening: Promise<OpenedMemoryTree> | undefined
  private disposed = false
  // Per session: where its last user message went (its reply follows it there).
  private readonly destinations = new Map<string, Destination>()
  // Per agent: the section text of this session (refresh: 'session') and the project it shows.
  private readonly sections = new Map<string, { text: string; projectId: string | undefined }>()
  private queue: Promise<unknown> = Promise.resolve()
  private readonly logger!: ReturnType<Context['logger']>

  constructor(ctx: Context, config: Config) {
    // schemastery passes unknown keys through: a typo must fail the load (idle rows too), naming the key.
    const unknown = findUnknownOption(config, CONFIG_KEYS)
    if (unknown) throw new TreeError('invalid-config', `memory-tree: ${unknown.path}: ${unknown.message}`, { path: unknown.path })
    // Installed twice (the preset plus this bundle)? Only the first row runs; an idle row must not
    // call super(), which would register the service a second time. See claimPluginRow.
    if (!claimPluginRow(ctx, name)) return Object.create(null)
    super(ctx, 'memoryTree')
    this.config = Object.freeze({ ...config })
    // Cross-field rules fail the load with the field named (schemastery checked the shapes).
    this.options = resolveTreeOptions({
      chatKeywords: config.chatKeywords,
      projectKeywords: config.projectKeywords,
      routeMargin: config.routeMargin,
      unknownRoute: config.unknownRoute,
      autoExtract: config.autoExtract,
      recentTurns: config.recentTurns,
      maxContextTokens: config.maxContextTokens,
      maxTurnChars: config.maxTurnChars,
      maxItemChars: config.maxItemChars,
      chatKeep: config.chatKeep,
      maxStoredTurns: config.maxStoredTurns,
      maxMergeItems: config.maxMergeItems,
      autoBranch: config.autoBranch,
      checkpointBranches: config.checkpointBranches,
    })
    this.logger = ctx.logger('memory-tree')

    // autoRoute and inject are live settings: the listeners are always there and ask the config in force.
    ctx.on('session/event', (session, event) => {
      if (this.config.autoRoute) void this.enqueue(() => this.onSessionEvent(session, event))
    })
    // A step's human messages are routed when the step admits them, before its request goes out
    // (the session logs them only later). The system prompt of this request is already assembled
    // by then, so a branch they open is announced by a short sourced message after them.
    ;(ctx.on as (name: string, listener: (...args: never[]) => unknown) => () => void)(
      'agent/pre-step',
      async (payload: { agent?: AgentLike }, next: () => Promise<PreStepDecision>) => {
        const decision = await next()
        const session = payload?.agent?.session
        if (!this.config.autoRoute || this.disposed || decision?.kind !== 'enter' || !session || typeof session.id !== 'string') return decision
        const routed = (decision.messages ?? []).map((message) => this.enqueue(() => this.routeUserMessage(session, message)))
        const results = await withTimeout(Promise.all(routed), this.config.contextTimeoutMs).catch(() => [])
        const notices = results.flatMap((result) => (result?.openedBranch ? [branchNoticeMessage(renderBranchNotice(result.openedBranch))] : []))
        return notices.length > 0 ? { ...decision, messages: [...(decision.messages ?? []), ...notices] } : decision
      },
    )
    // The host awaits session/flush before a headless exit: drain so the last reply is stored.
    ctx.on('session/flush', () => this.whenIdle())
    ctx.on('agent/disposed', (agent) => {
      if (typeof agent?.id !== 'string') return
      this.destinations.delete(agent.id)
      this.sections.delete(agent.id)
    })
    ctx.inject(['systemPrompt'], (scoped) => this.registerSection(scoped))
    if (config.tools) ctx.inject(['tools'], (scoped) => this.registerTools(scoped))
    applyTreeSettings(ctx, Config, config, (live) => {
      this.config = Object.freeze({ ...this.config, ...live })
      // A cached section was computed under the old switches.
      this.sections.clear()
    }, (message) => this.logger.warn(message))
  }

  /** Opens the tree once the store is up; the loader awaits it. */
  async [Service.init](): Promise<void> {
    await this.ready()
    this.ctx.effect(() => () => this.close(), 'memory-tree database')
  }

  /** The open core tree. @throws TreeError `closed` after unload. */
  async ready(): Promise<MemoryTree> {
    if (this.disposed) throw new TreeError('closed', 'the memory-tree plugin is not running')
    this.opening ??= openMemoryTree({
      store: this.ctx.memoryStore,
      options: this.options,
      projectionDir: this.config.projection ? this.config.projectionDir || join(this.ctx.memoryStore.dataDir, 'tree') : null,
      onError: (error, where) => this.logger.warn('%s failed: %s', where, describeError(error)),
      onChange: (change) => {
        // A merge, checkpoint, branch or explicit note mid-session: the sessions showing that
        // project recompute their section on the next request (the prompt changes once).
        const changed = changesMainline(change)
        if (changed) for (const [id, cached] of this.sections) if (changed === '*' || cached.projectId === changed || cached.projectId === undefined) this.sections.delete(id)
        try {
          ;(this.ctx.emit as (name: string, ...args: unknown[]) => void)(eventName(change), change)
        } catch (error) {
          this.logger.warn('a %s listener failed: %s', eventName(change), describeError(error))
        }
      },
    }).then((opened) => {
      this.opened = opened
      return opened
    })
    return (await this.opening).tree
  }

  /** Run one mt_* tool as the given caller (what the registered tools do). Never throws. */
  async runTool(name: string, args: unknown, caller: Caller): Promise<TreeToolResult> {
    try {
      return await runTreeTool(await this.ready(), name, args, caller)
    } catch (error) {
      return { ok: false, tool: name, text: `${name} failed: ${describeError(error)}`, error: { code: 'closed', message: describeError(error) } }
    }
  }

  /** The mainline section text for a session in `workspace` ('' when there is none). */
  async sectionText(workspace: string, sessionId: string): Promise<string> {
    return (await this.readSection(workspace, sessionId)).text
  }

  /** The workspace id of a session directory ('' stays ''): the store's, so every plugin keys a workspace alike. */
  private workspaceOf(cwd: string): string {
    return cwd ? this.ctx.memoryStore.workspaceOf(cwd) : ''
  }

  private async readSection(workspace: string, sessionId: string): Promise<{ text: string; projectId: string | undefined }> {
    const tree = await this.ready()
    const context = await tree.getContext({ workspace, sessionId }, { excludeSessionId: sessionId })
    return { text: context.text, projectId: context.project?.id }
  }

  /** Resolves when every queued routing write has settled. */
  whenIdle(): Promise<void> {
    return this.queue.then(() => undefined)
  }

  private async close(): Promise<void> {
    this.disposed = true
    await this.whenIdle()
    await this.opened?.close()
    this.opened = undefined
  }

  /** Run `job` after the queued routing writes; its result, or undefined when it failed (logged). */
  private enqueue<T>(job: () => Promise<T>): Promise<T | undefined> {
    const run = this.queue.then(job).catch((error: unknown) => {
      this.logger.warn('routing failed: %s', describeError(error))
      return undefined
    })
    this.queue = run
    return run
  }

  /**
   * Route one human message. It runs twice for most messages — at step admission and when the
   * session logs it — and the tree's repeat check makes the second a no-op.
   */
  private async routeUserMessage(session: SessionLike, message: unknown): Promise<RecordResult | undefined> {
    // Only what the human typed: plugin-made messages (memory injections, runtime context,
    // compaction checkpoints) are not conversation.
    if ((message as { source?: { kind?: string } })?.source?.kind !== 'user') return undefined
    const text = messageText(message)
    if (!text) return undefined
    const tree = await this.ready()
    const caller: Caller = { workspace: this.workspaceOf(session.header?.cwd ?? ''), sessionId: session.id, source: 'user' }
    const result = await tree.recordMessage({ role: 'user', text, caller })
    this.destinations.set(session.id, result.destination)
    return result
  }

  private async onSessionEvent(session: SessionLike, event: SessionEventLike): Promise<void> {
    if (!session || typeof session.id !== 'string' || !event || this.disposed) return
    const caller: Caller = { workspace: this.workspaceOf(session.header?.cwd ?? ''), sessionId: session.id, source: 'user' }
    if (event.type === 'user/message') {
      await this.routeUserMessage(session, event.data)
      return
    }
    if (event.type === 'assistant/message') {
      const data = event.data as { message?: unknown }
      const text = messageText(data?.message)
      const follow = this.destinations.get(session.id)
      if (!text || !follow || follow === 'skipped') return
      const tree = await this.ready()
      await tree.recordMessage({ role: 'assistant', text, caller: { ...caller, source: 'model' }, follow })
    }
  }

  private registerSection(ctx: Context): void {
    const host = ctx as unknown as HostContext
    const key = (agent: AgentLike | undefined) => agent?.id ?? ''
    // The provider must be synchronous; the fresh text is read in the assemble waterfall below
    // and patched into the assembled section, which keeps the section's place in the order.
    host.systemPrompt.section({ name: SECTION_NAME, order: this.config.sectionOrder, text: (context) => (this.config.inject ? (this.sections.get(key(context.agent))?.text ?? '') : '') })
    // Static text: it never breaks the cached prefix. Without the tools there is nothing to call.
    if (this.config.tools) host.systemPrompt.section({ name: GUIDE_SECTION_NAME, order: GUIDE_ORDER, text: () => (this.config.inject ? TREE_GUIDE : '') })
    ;(ctx.on as (name: string, listener: (...args: never[]) => unknown) => () => void)(
      'system-prompt/assemble',
      async (assembly: AssemblyLike, context: { agent?: AgentLike }, next: () => Promise<AssemblyLike>) => {
        const agent = context?.agent
        if (agent && !this.disposed && this.config.inject) {
          const id = key(agent)
          // Routing still queued (the last reply, another session's message) lands first; slow
          // routing (a locked database) only means the section shows what is stored.
          await withTimeout(this.whenIdle(), this.config.contextTimeoutMs).catch(() => undefined)
          let text = this.config.refresh === 'session' ? this.sections.get(id)?.text : undefined
          if (text === undefined) {
            try {
              const read = await withTimeout(this.readSection(this.workspaceOf(agent.session?.header?.cwd ?? ''), id), this.config.contextTimeoutMs)
              this.sections.set(id, read)
              text = read.text
            } catch (error) {
              // A locked or slow database must not hold the user's request: go without it.
              this.logger.warn('mainline context unavailable for this request: %s', describeError(error))
            }
          }
          const section = assembly?.sections?.find((entry) => entry.name === SECTION_NAME)
          if (section && text !== undefined) section.text = text
        }
        return next()
      },
    )
  }

  private registerTools(ctx: Context): void {
    const host = ctx as unknown as HostContext
    for (const spec of TREE_TOOLS) {
      host.tools.register({
        name: spec.name,
        description: spec.description,
        parameters: toolParametersSchema(spec),
        output: {
          schema: TOOL_OUTPUT_SCHEMA,
          render: (_args, value) => [{ type: 'text', text: (value as TreeToolResult | undefined)?.text ?? '' }],
        },
        execute: async (args, exec) => {
          const result = await this.runTool(spec.name, args, callerOf(exec?.agent, 'model', (cwd) => this.workspaceOf(cwd)))
          // Lossless JSON only: drop undefined fields the registry would reject.
          return JSON.parse(JSON.stringify(result)) as unknown
        },
      })
    }
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  if (ms <= 0) return promise
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new TreeError('busy', `no answer within ${ms} ms`)), ms)
    promise.then(
      (value) => {
        clearTimeout(timer)
        resolve(value)
      },
      (error: unknown) => {
        clearTimeout(timer)
        reject(error)
      },
    )
  })
}

export default MemoryTreeService
