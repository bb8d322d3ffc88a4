/**
 * An in-process DSH host for plugin tests: the real host services (llm, session, agent,
 * agent loop, system prompt, tools, commands, token meter, compaction) from the pinned
 * install in apps/playground/host, on a real Cordis context, with the real store plugin on a
 * temp directory. The only stand-in is the remote model: an adapter that answers from a
 * script and records every request.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Context } from '@deepseek-ai/cordis'
import { createUserMessage } from '@deepseek-ai/dsh-llm/message'
import MemoryStoreService from '@dsh-memory/store/plugin'
import * as recall from '../../src/plugin.ts'

const HOST_MODULES = resolve(dirname(fileURLToPath(import.meta.url)), '../../../../apps/playground/host/node_modules/@deepseek-ai')

/** A request the scripted model received. */
export interface ModelRequest {
  readonly purpose?: string
  readonly system?: string
  readonly messages: readonly { role: string; content: { type: string; text?: string; name?: string }[]; source?: { kind: string; plugin?: string; form?: string } }[]
  readonly tools?: readonly { name: string }[]
}

/** What the scripted model answers. */
export type ModelReply = { text: string } | { toolCall: { name: string; arguments: Record<string, unknown> | string } }

/** Minimal view of a live agent. */
export interface TestAgent {
  readonly id: string
  readonly session: { readonly header: { readonly cwd?: string }; readonly events: readonly { type: string; data: unknown }[]; deriveMessages(): ModelRequest['messages'] }
  followup(message: unknown): void
  whenIdle(): Promise<void>
}

/** A running in-process host. */
export interface TestHost {
  readonly ctx: Context
  readonly dataDir: string
  /** Every model request, oldest first. */
  readonly requests: ModelRequest[]
  /** Replace the model script. */
  respond(responder: (request: ModelRequest, index: number) => ModelReply): void
  /** A fresh agent (session) in `cwd`. */
  createAgent(cwd: string, sessionId?: string): Promise<TestAgent>
  /** Resume a persisted session by id (needs `sessionsRoot`). */
  resumeAgent(sessionId: string): Promise<TestAgent>
  /** Make everything the session logged so far durable. */
  flush(agent: TestAgent): Promise<void>
  /** Send a human message and wait until the turn is over; returns the requests it caused. */
  say(agent: TestAgent, text: string): Promise<ModelRequest[]>
  /** Run a slash command through the real command registry. */
  command(agent: TestAgent, line: string): Promise<{ kind: string; text?: string } | undefined>
  /** Compact the session now (the real compaction backend, summarised by the scripted model). */
  compact(agent: TestAgent): Promise<{ kind: string; text?: string } | undefined>
  /** Unload everything (the data dir is kept until `cleanup`). */
  dispose(): Promise<void>
  /** Dispose and delete the data dir. */
  cleanup(): Promise<void>
}

async function hostModule(name: string): Promise<Record<string, any>> {
  const entry = join(HOST_MODULES, name, 'lib/index.js')
  if (!existsSync(entry)) throw new Error(`the pinned DSH host is not installed (missing ${entry}); run \`npm run setup\` first`)
  return import(entry)
}

/** Options of {@link startHost}. */
export interface StartHostOptions {
  /** Config of the recall row (merged over nothing: schemastery fills defaults). */
  readonly recall?: Record<string, unknown>
  /** Reuse a data dir (to test persistence across a restart). */
  readonly dataDir?: string
  readonly responder?: (request: ModelRequest, index: number) => ModelReply
  /** Persist sessions as JSONL under this directory (the host's own persistence backend), so they can be resumed by another host. */
  readonly sessionsRoot?: string
  /** Mount the host's file settings provider (`ctx.settings`) on this settings document before recall. */
  readonly settingsPath?: string
}

/** Boot the in-process host with the store and recall plugins. */
export async function startHost(options: StartHostOptions = {}): Promise<TestHost> {
  const [llm, session, agent, prompt, tools, meter, commands, compaction, loop] = (await Promise.all(
    ['dsh-llm', 'dsh-session', 'dsh-agent', 'dsh-system-prompt', 'dsh-tools', 'dsh-token-meter', 'dsh-commands', 'dsh-compaction-basic', 'dsh-agent-loop'].map(hostModule),
  )) as Record<string, any>[] as [any, any, any, any, any, any, any, any, any]
  const commandCompact = await import(join(HOST_MODULES, 'dsh-command-compact/lib/index.js'))
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'dshm-recall-host-'))
  const ctx = new Context()
  const errors: unknown[] = []
  ;(ctx as any).on('internal/error', (error: unknown) => errors.push(error))
  await ctx.plugin(llm.default)
  await ctx.plugin(session.default)
  await ctx.plugin(agent.default)
  await ctx.plugin(prompt.default, {})
  await ctx.plugin(tools.default, {})
  await ctx.plugin(meter.default)
  await ctx.plugin(commands.default, {})
  await ctx.plugin(compaction.BasicCompactionEngine, { auto: false })
  await ctx.plugin(commandCompact, {})
  await ctx.plugin(loop.default, { agents: [] })
  if (options.sessionsRoot) {
    const persistence = await hostModule('dsh-session-persistence-jsonl')
    await ctx.plugin(persistence.default, { root: options.sessionsRoot, compression: 'none' })
  }
  if (options.settingsPath) {
    const settings = await hostModule('dsh-settings-file')
    await ctx.plugin(settings.default, { path: options.settingsPath, watch: true, debounceMs: 20 })
  }
  await ctx.plugin(MemoryStoreService, { dataDir })
  await ctx.plugin(recall, (options.recall ?? {}) as unknown as recall.Config)

  const requests: ModelRequest[] = []
  let responder = options.responder ?? ((request: ModelRequest) => ({ text: request.purpose === 'compaction' ? 'Summary: we talked.' : 'ok' }))
  class ScriptedModel extends llm.LlmAdapter {
    async *stream(request: ModelRequest): AsyncGenerator<unknown> {
      requests.push(request)
      const reply = responder(request, requests.length - 1)
      if ('toolCall' in reply) {
        const args = typeof reply.toolCall.arguments === 'string' ? reply.toolCall.arguments : JSON.stringify(reply.toolCall.arguments)
        const id = `call-${requests.length}`
        yield { type: 'block-start', index: 0, blockType: 'tool-call' }
        yield { type: 'tool-call-delta', index: 0, id, name: reply.toolCall.name, argumentsDelta: args }
        yield { type: 'block-end', index: 0, block: { type: 'tool-call', id, name: reply.toolCall.name, arguments: args } }
        yield { type: 'usage', usage: { inputTokens: 10, outputTokens: 5 } }
        yield { type: 'finish', reason: { kind: 'tool-calls' } }
        return
      }
      yield { type: 'block-start', index: 0, blockType: 'text' }
      yield { type: 'text-delta', index: 0, text: reply.text }
      yield { type: 'block-end', index: 0, block: { type: 'text', text: reply.text } }
      yield { type: 'usage', usage: { inputTokens: 10, outputTokens: 2 } }
      yield { type: 'finish', reason: { kind: 'stop' } }
    }
  }
  ;(ctx as any).llm.registerAdapter(['scripted'], new ScriptedModel())

  const handles: { dispose(): Promise<void> }[] = []
  let disposed = false
  const host: TestHost = {
    ctx,
    dataDir,
    requests,
    respond(next) {
      responder = next
    },
    async createAgent(cwd, sessionId = `session-${Math.random().toString(36).slice(2)}`) {
      const handle = await (ctx as any).agents.create({ sessionId, agentOptions: { provider: 'scripted', model: 'scripted-1' }, meta: { cwd } })
      handles.push(handle)
      return handle.agent as TestAgent
    },
    async resumeAgent(sessionId) {
      const handle = await (ctx as any).agents.resume({ resumeSessionId: sessionId, agentOptions: { provider: 'scripted', model: 'scripted-1' } })
      handles.push(handle)
      return handle.agent as TestAgent
    },
    async flush(target) {
      await (ctx as any).sessions.flush((target as any).session)
    },
    async say(target, text) {
      const before = requests.length
      target.followup(createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'user' } }))
      // followup wakes the driver synchronously; wait for the whole activity.
      await new Promise((resolvePromise) => setTimeout(resolvePromise, 5))
      await target.whenIdle()
      if (errors.length) throw new Error(`host reported an internal error: ${String(errors[0])}`)
      return requests.slice(before)
    },
    async command(target, line) {
      const execution = await (ctx as any).commands.execute(target, line, [], new AbortController().signal)
      return execution?.result
    },
    async compact(target) {
      return host.command(target, '/compact')
    },
    async dispose() {
      if (disposed) return
      disposed = true
      for (const handle of handles.splice(0)) await handle.dispose()
      await ctx.fiber.dispose()
    },
    async cleanup() {
      await host.dispose()
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true })
    },
  }
  return host
}

/** Text of the recall messages (source plugin memory-recall) in a request. */
export function recallMessages(request: ModelRequest): string[] {
  return request.messages
    .filter((message) => message.source?.kind === 'plugin' && message.source.plugin === 'memory-recall')
    .map((message) => message.content.map((block) => block.text ?? '').join(''))
}

/** The chat (non-compaction) requests. */
export function chatRequests(requests: readonly ModelRequest[]): ModelRequest[] {
  return requests.filter((request) => request.purpose !== 'compaction')
}
