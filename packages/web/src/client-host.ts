/**
 * Host facts for the browser half's routes (core/client-api.ts): what recall injected per
 * session (the `memory-recall/injected` event), distillation per session
 * (`ctx.memoryDistill`), a live session's workspace and `/memory` command (`ctx.agents`,
 * `ctx.commands`), recall's live default mode and settings writes (`ctx.settings`). Every one
 * of those services is optional: a missing one makes its part of the answer empty, never an
 * error.
 */
import type { Context } from '@deepseek-ai/cordis'
import type { MemoryMode } from '@dsh-memory/recall'
import type { MemoryBrowser } from './core/browser.ts'
import type { ClientApiDeps, LastRecall, SettingsOp } from './core/client-api.ts'

interface AgentLike {
  readonly id: string
  readonly session?: { readonly header?: { readonly cwd?: string } }
}
interface SettingsLike {
  get(namespace: string): unknown
  mutate(namespace: string, ops: readonly SettingsOp[], expectedRevision?: number): Promise<void>
}
interface DistillLike {
  status(): { readonly running: string | null; readonly conversations: readonly { readonly id: string; readonly pending: number }[] } | undefined
}
interface CommandsLike {
  execute(agent: unknown, line: string, attachments: unknown[], signal: AbortSignal): Promise<{ readonly result?: { readonly kind?: string; readonly text?: string } } | undefined>
}

/** How long a `/memory` command run for the panel may take. */
const COMMAND_TIMEOUT_MS = 30_000

/** Build the route dependencies over a plugin context; recall events are followed for the context's life. */
export function clientApiDeps(ctx: Context, browser: MemoryBrowser): ClientApiDeps {
  const optional = <T>(service: string): T | undefined => {
    try {
      return (ctx as unknown as { get(name: string): T | undefined }).get(service)
    } catch {
      return undefined
    }
  }
  const agentOf = (sessionId: string) => optional<{ get(id: string): AgentLike | undefined }>('agents')?.get(sessionId)
  const recalls = new Map<string, LastRecall>()
  const on = ctx.on.bind(ctx) as unknown as (name: string, listener: (event: { sessionId?: string; memoryIds?: string[]; chars?: number; agent?: { id?: unknown } }) => void) => void
  on('memory-recall/injected', (event) => {
    if (typeof event?.sessionId === 'string') recalls.set(event.sessionId, { at: Date.now(), memoryIds: event.memoryIds ?? [], chars: event.chars ?? 0 })
  })
  // A closed session's pill is gone with it; keep the map to the sessions this host runs.
  on('agent/disposed', (event) => {
    if (typeof event?.agent?.id === 'string') recalls.delete(event.agent.id)
  })
  return {
    browser,
    async workspaceOf(sessionId) {
      const cwd = agentOf(sessionId)?.session?.header?.cwd
      // The workspace id memory is keyed by (the project's git id, or the path), as capture stores it.
      if (typeof cwd === 'string' && cwd !== '') return ctx.memoryStore.workspaceOf(cwd)
      return (await browser.store.conversations.get(sessionId))?.workspace || undefined
    },
    lastRecall: (sessionId) => recalls.get(sessionId),
    distillOf(sessionId) {
      const status = optional<DistillLike>('memoryDistill')?.status()
      if (!status) return undefined
      const pending = status.conversations.find((conversation) => conversation.id === sessionId)?.pending ?? 0
      return { pending, running: status.running?.includes(sessionId) === true }
    },
    defaultMode() {
      const value = optional<SettingsLike>('settings')?.get('memory-recall') as { defaultMode?: MemoryMode } | undefined
      return value?.defaultMode ?? 'auto'
    },
    async mutateSettings(namespace, ops, expectedRevision) {
      const settings = optional<SettingsLike>('settings')
      if (!settings) throw new Error('this host has no settings service')
      await settings.mutate(namespace, ops, expectedRevision)
    },
    async memoryCommand(sessionId, args) {
      const agent = agentOf(sessionId)
      const commands = optional<CommandsLike>('commands')
      if (!agent || !commands) return undefined
      const execution = await commands.execute(agent, `/memory ${args}`, [], AbortSignal.timeout(COMMAND_TIMEOUT_MS))
      return { kind: execution?.result?.kind ?? 'success', text: execution?.result?.text ?? '' }
    },
  }
}
