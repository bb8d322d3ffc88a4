/**
 * What recall reads of the host's live agent, declared structurally (no host type
 * dependency): its session and workspace, its history, which user turn it is in, and the
 * ids the explicit-layer protocol compares (session log, inbox, context). Pure reads; the
 * adapter hands the agents the host passes to it.
 */
import type { LayerSessionHandle } from './layer-controller.ts'
import type { RecallScope } from './scope.ts'

/** The parts of a live agent recall reads. */
export interface AgentLike {
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

/** How a session directory becomes its workspace id (the store service's `workspaceOf`). */
export type WorkspaceOf = (cwd: string) => string

/**
 * The session and workspace an agent runs in (`undefined` without an agent id). The workspace
 * is `workspaceOf(cwd)` (the project's git id, or the path); without it, the cwd itself.
 */
export function scopeOf(agent: AgentLike | undefined, workspaceOf?: WorkspaceOf): RecallScope | undefined {
  if (!agent || typeof agent.id !== 'string') return undefined
  const cwd = agent.session?.header?.cwd
  const directory = typeof cwd === 'string' ? cwd : ''
  const workspace = directory !== '' && workspaceOf ? workspaceOf(directory) : directory
  return workspace === directory ? { sessionId: agent.id, workspace } : { sessionId: agent.id, workspace, directory }
}

/** The agent's current context messages; empty when the host cannot derive them. */
export function historyOf(agent: AgentLike): readonly unknown[] {
  try {
    return agent.session?.deriveMessages?.() ?? []
  } catch {
    return []
  }
}

/** Which user turn an agent is in (the last `turn/start`), so sections refresh once per turn. */
export function turnKey(agent: AgentLike): string {
  const events = agent.session?.events ?? []
  for (let index = events.length - 1; index >= 0; index--) {
    const event = events[index]
    if (event?.type === 'turn/start') return String((event.data as { turn?: unknown } | undefined)?.turn ?? index)
  }
  return 'none'
}

/** The string ids of `messages`. */
export function messageIds(messages: readonly unknown[] | undefined): Set<string> {
  const ids = new Set<string>()
  for (const message of messages ?? []) {
    const id = (message as { id?: unknown } | undefined)?.id
    if (typeof id === 'string') ids.add(id)
  }
  return ids
}

/**
 * The explicit-layer protocol's view of a live agent.
 * @param toMessage - builds the host message of a snapshot (the adapter freezes it with the host's message API).
 */
export function layerSessionHandle(agent: AgentLike, toMessage: (id: string, text: string) => unknown, workspaceOf?: WorkspaceOf): LayerSessionHandle {
  const scope = scopeOf(agent, workspaceOf) ?? { sessionId: agent.id, workspace: '' }
  return {
    ...scope,
    loggedIds: () => {
      const ids = new Set<string>()
      for (const event of agent.session?.events ?? []) {
        const id = (event.data as { id?: unknown } | undefined)?.id
        if (event.type === 'user/message' && typeof id === 'string') ids.add(id)
      }
      return ids
    },
    pendingIds: () => new Set([...messageIds(agent.inbox?.nextStep), ...messageIds(agent.inbox?.nextTurn)]),
    contextIds: () => messageIds(historyOf(agent)),
    inject: (message) => {
      if (typeof agent.inject !== 'function') throw new Error('this host agent has no inject()')
      agent.inject(toMessage(message.id, message.text))
    },
    cancelPending: (id) => agent.inbox?.remove?.(id) ?? false,
  }
}
