/**
 * The JSON routes behind the browser half inside DSH's own web client (`@dsh-memory/web/client`):
 * the composer pill's state and mode switch, the memory panel's lists and edits, and the
 * settings cards' writes. Mounted on the host's web server under {@link CLIENT_API_BASE}, same
 * origin as the DSH client, so the browser half needs no token.
 *
 * Access rule: the host's own rule for its configuration plane (dsh-host-apiproxy: settings,
 * credentials and native actions are "restricted to loopback same-origin requests"), applied
 * to every route here: the peer address and the `Host` name are loopback, a browser's
 * `Sec-Fetch-Site` is `same-origin` and any `Origin` is this very host. Writes are POST with
 * a JSON body and the `X-DSH-Memory: 1` header, which a cross-origin page cannot send without
 * a preflight this handler never answers. No route returns a settings value (the settings
 * cards read the host's redacted view), so a secret never rides a response from here.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { InjectSwitch, MemoryMode } from '@dsh-memory/recall'
import type { Memory, MemoryScopeFilter } from '@dsh-memory/store'
import type { MemoryBrowser } from './browser.ts'
import { CLIENT_API_BASE, CLIENT_SETTINGS_NAMESPACES } from './client-paths.ts'
import { describeError } from './errors.ts'
import { HttpAnswer, readBody, statusOf } from './handler.ts'
import { isLoopback } from './options.ts'
import { completeQuery, didYouMean, VocabularyCache } from './suggest.ts'

/** What recall put in front of the model for a session's last turn (from `memory-recall/injected`). */
export interface LastRecall {
  readonly at: number
  readonly memoryIds: readonly string[]
  readonly chars: number
}

/** A path edit of a settings section, as the host's `settings.mutate` takes it. */
export type SettingsOp = { readonly op: 'set'; readonly path: readonly string[]; readonly value: unknown } | { readonly op: 'unset'; readonly path: readonly string[] }

/** The host facts and actions the routes need; the plugin adapter supplies them. */
export interface ClientApiDeps {
  readonly browser: MemoryBrowser
  /** The workspace id (the store's `workspaceOf` of its cwd) of a live or recorded session; undefined when unknown. */
  workspaceOf(sessionId: string): Promise<string | undefined>
  lastRecall(sessionId: string): LastRecall | undefined
  /** Distillation of a session: messages waiting and whether a job for it runs now. */
  distillOf(sessionId: string): { readonly pending: number; readonly running: boolean } | undefined
  /** The memory mode sessions get when they never chose one (recall's live setting). */
  defaultMode(): MemoryMode
  /** Write a settings section of one of our namespaces, fenced by revision; rejects with the host's message. */
  mutateSettings(namespace: string, ops: readonly SettingsOp[], expectedRevision: number | undefined): Promise<void>
  /** Run `/memory <args>` for a live session (explicit layers); undefined when the session is not live. */
  memoryCommand(sessionId: string, args: string): Promise<{ readonly kind: string; readonly text: string } | undefined>
}


const MODES: readonly MemoryMode[] = ['auto', 'chat', 'work', 'off']
const INJECTS: readonly InjectSwitch[] = ['follow', 'on', 'off']
const LAYER_ACTIONS = ['enable', 'refresh', 'disable'] as const
const LAYERS = ['global', 'workspace'] as const
const LIST_SIZE = 30

/** True when a request passes the loopback same-origin rule described above. */
export function isTrustedClientRequest(req: IncomingMessage): boolean {
  const peer = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '')
  if (!isLoopback(peer)) return false
  const host = req.headers.host ?? ''
  const hostname = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':')[0]!
  if (!isLoopback(hostname)) return false
  const site = req.headers['sec-fetch-site']
  if (site !== undefined && site !== 'same-origin') return false
  const origin = req.headers.origin
  if (origin !== undefined) {
    try {
      if (new URL(origin).host !== host) return false
    } catch {
      return false
    }
  }
  return true
}

function memoryView(memory: Memory): Record<string, unknown> {
  return {
    id: memory.id,
    kind: memory.kind,
    scope: memory.scope,
    text: memory.text,
    workspace: memory.workspace ?? null,
    sessionId: memory.sessionId ?? null,
    updatedAt: memory.updatedAt,
  }
}

async function jsonOf(req: IncomingMessage): Promise<Record<string, unknown>> {
  if ((req.headers['x-dsh-memory'] ?? '') !== '1') throw new HttpAnswer(403, 'writes need the X-DSH-Memory: 1 header')
  let value: unknown
  try {
    value = JSON.parse((await readBody(req)) || '{}')
  } catch {
    throw new HttpAnswer(400, 'the body is not valid JSON')
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new HttpAnswer(400, 'the body must be a JSON object')
  return value as Record<string, unknown>
}

function text(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.trim() === '') throw new HttpAnswer(400, `${field}: expected a non-empty string`)
  return value
}

function oneOf<T extends string>(value: unknown, allowed: readonly T[], field: string): T {
  if (!allowed.includes(value as T)) throw new HttpAnswer(400, `${field}: expected one of ${allowed.join(', ')}, got ${JSON.stringify(value)}`)
  return value as T
}

function settingsOps(value: unknown): SettingsOp[] {
  if (!Array.isArray(value) || value.length === 0) throw new HttpAnswer(400, 'ops: expected a non-empty list')
  return value.map((op, index) => {
    const path = (op as { path?: unknown })?.path
    if (!Array.isArray(path) || path.length === 0 || path.some((part) => typeof part !== 'string')) throw new HttpAnswer(400, `ops[${index}].path: expected a list of field names`)
    const kind = oneOf((op as { op?: unknown }).op, ['set', 'unset'] as const, `ops[${index}].op`)
    return kind === 'set' ? { op: 'set', path, value: (op as { value?: unknown }).value } : { op: 'unset', path }
  })
}

/** Build the handler of the client routes, mounted at `base` ({@link CLIENT_API_BASE} in the host). */
export function createClientApiHandler(deps: ClientApiDeps, base: string = CLIENT_API_BASE): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const { browser } = deps
  // The search box asks on every pause in typing: vocabularies are kept per list for a while.
  const vocabularies = new VocabularyCache(browser.store)

  /** The list a request names (`layer`, `session`) and the memory filter it stands for. */
  const listOf = async (url: URL) => {
    const layer = oneOf(url.searchParams.get('layer') ?? 'global', ['global', 'workspace', 'session'] as const, 'layer')
    const sessionId = url.searchParams.get('session') ?? ''
    const workspace = sessionId ? await deps.workspaceOf(sessionId) : undefined
    if (layer !== 'global' && !sessionId) throw new HttpAnswer(400, 'session: needed for the workspace and session lists')
    const filter =
      layer === 'global' ? ({ scope: 'global' } as const) : layer === 'workspace' ? ({ scope: 'workspace', workspace: workspace ?? '\u0000none' } as const) : { sessionId }
    return { layer, sessionId, workspace, filter }
  }

  const sessionState = async (sessionId: string) => {
    const settings = await browser.sessionMemorySettings(sessionId).catch(() => undefined)
    const last = deps.lastRecall(sessionId)
    const recalled = last ? (await Promise.all(last.memoryIds.map((id) => browser.store.memories.get(id)))).filter((memory): memory is Memory => memory !== undefined) : []
    return {
      session: {
        id: sessionId,
        workspace: (await deps.workspaceOf(sessionId)) ?? null,
        mode: settings && settings.updatedAt !== null ? settings.mode : deps.defaultMode(),
        inject: settings?.inject ?? 'follow',
        chosen: settings !== undefined && settings.updatedAt !== null,
        defaultMode: deps.defaultMode(),
      },
      recall: last ? { at: last.at, count: last.memoryIds.length, chars: last.chars, memories: recalled.map(memoryView) } : null,
      distill: deps.distillOf(sessionId) ?? null,
    }
  }

  const routes: Record<string, (req: IncomingMessage, url: URL) => Promise<unknown>> = {
    'GET state': async (_req, url) => sessionState(text(url.searchParams.get('session'), 'session')),
    'POST mode': async (req) => {
      const body = await jsonOf(req)
      const sessionId = text(body.session, 'session')
      await browser.updateSessionMemorySettings(sessionId, {
        ...(body.mode !== undefined ? { mode: oneOf(body.mode, MODES, 'mode') } : {}),
        ...(body.inject !== undefined ? { inject: oneOf(body.inject, INJECTS, 'inject') } : {}),
      })
      return sessionState(sessionId)
    },
    'GET memories': async (_req, url) => {
      const { layer, workspace, filter } = await listOf(url)
      const page = await browser.memories({ q: url.searchParams.get('q') ?? '', pageSize: LIST_SIZE, page: Number(url.searchParams.get('page') ?? 0) || 0, ...filter })
      return { layer, workspace: workspace ?? null, items: page.items.map((row) => memoryView(row.memory)), hasNext: page.hasNext }
    },
    // Completions of the word being typed and "did you mean" corrections, from the vocabulary
    // of the list's memories (a session's list: the memories visible in its workspace).
    'GET suggest': async (_req, url) => {
      const { layer, sessionId, workspace, filter } = await listOf(url)
      const q = url.searchParams.get('q') ?? ''
      const scope: MemoryScopeFilter = layer === 'session' ? { ...(workspace ? { workspace } : { scope: 'global' }), sessionId } : { ...filter, ...(layer === 'workspace' ? { includeGlobal: false } : {}) }
      const vocabulary = await vocabularies.get(scope)
      return { completions: completeQuery(q, vocabulary), didYouMean: didYouMean(q, vocabulary) }
    },
    'GET memory': async (_req, url) => {
      const detail = await browser.memory(text(url.searchParams.get('id'), 'id'))
      if (!detail) throw new HttpAnswer(404, 'no such memory')
      return {
        memory: memoryView(detail.memory),
        history: detail.history.map(memoryView),
        sources: detail.sources.map(({ message, conversation }) => ({ id: message.id, role: message.role, text: message.text, seq: message.seq, conversationId: message.conversationId, workspace: conversation?.workspace ?? null })),
      }
    },
    'POST forget': async (req) => ({ memory: memoryView(await browser.forgetMemory(text((await jsonOf(req)).id, 'id'))) }),
    'POST promote': async (req) => ({ memory: memoryView(await browser.promoteMemory(text((await jsonOf(req)).id, 'id'))) }),
    'POST edit': async (req) => {
      const body = await jsonOf(req)
      return { memory: memoryView(await browser.editMemory(text(body.id, 'id'), text(body.text, 'text'))) }
    },
    'POST layers': async (req) => {
      const body = await jsonOf(req)
      const sessionId = text(body.session, 'session')
      const action = oneOf(body.action, [...LAYER_ACTIONS, 'status'] as const, 'action')
      const args = action === 'status' ? 'status' : `${action} ${oneOf(body.layer, LAYERS, 'layer')}`
      const result = await deps.memoryCommand(sessionId, args)
      if (!result) throw new HttpAnswer(409, 'the session is not running in this host; open it first')
      return result
    },
    'POST palace-name': async (req) => {
      const body = await jsonOf(req)
      const sessionId = text(body.session, 'session')
      const workspace = await deps.workspaceOf(sessionId)
      if (!workspace) throw new HttpAnswer(409, 'this session has no workspace, so no palace')
      try {
        return { namespace: await browser.nameSessionPalace(workspace, sessionId, text(body.name, 'name')) }
      } catch (error) {
        // The palace's own refusals (a bad or taken name) are the user's to fix: say so as 400.
        throw new HttpAnswer(statusOf(error) === 500 ? 400 : statusOf(error), describeError(error))
      }
    },
    'GET palace': async (_req, url) => {
      const sessionId = text(url.searchParams.get('session'), 'session')
      const workspace = await deps.workspaceOf(sessionId)
      const names = (await browser.palace()).filter((view) => workspace === undefined || view.workspace === workspace)
      const projects = (await browser.treeProjects()) ?? []
      const views = await Promise.all(projects.map((project) => browser.treeProject(project.id)))
      const tree = views.filter((view) => view !== undefined && (workspace === undefined || view.workspaces.includes(workspace)))
      return {
        workspace: workspace ?? null,
        session: workspace ? await browser.sessionPalace(workspace, sessionId) : { namespace: null, archived: false },
        palace: names.map((view) => ({ namespace: view.namespace, turns: view.turns, months: view.months.map((month) => ({ month: month.month, volumes: month.volumes.length })) })),
        tree: tree.map((view) => ({
          project: view!.project.name,
          mainline: view!.items.slice(-8).map((item) => ({ kind: item.kind, text: item.text })),
          branches: view!.branches.filter((branch) => branch.status === 'active').map((branch) => ({ id: branch.id, title: branch.title })),
        })),
      }
    },
    'POST settings': async (req) => {
      const body = await jsonOf(req)
      const namespace = oneOf(body.namespace, CLIENT_SETTINGS_NAMESPACES, 'namespace')
      const revision = body.expectedRevision === undefined ? undefined : Number(body.expectedRevision)
      if (revision !== undefined && !Number.isInteger(revision)) throw new HttpAnswer(400, 'expectedRevision: expected an integer')
      try {
        await deps.mutateSettings(namespace, settingsOps(body.ops), revision)
      } catch (error) {
        const conflict = (error as { code?: unknown })?.code === 'SETTINGS_CONFLICT'
        throw new HttpAnswer(conflict ? 409 : 400, describeError(error))
      }
      return { ok: true }
    },
  }

  return async (req, res) => {
    let status = 200
    let body: unknown
    try {
      if (!isTrustedClientRequest(req)) throw new HttpAnswer(403, 'the memory client routes answer loopback same-origin requests only')
      const url = new URL(req.url ?? '/', 'http://localhost')
      const name = url.pathname.startsWith(`${base}/`) ? url.pathname.slice(base.length + 1) : ''
      const route = routes[`${req.method} ${name}`]
      if (!route) throw new HttpAnswer(404, `no route ${req.method} ${url.pathname}`)
      body = await route(req, url)
    } catch (error) {
      status = statusOf(error)
      body = { error: describeError(error), code: (error as { code?: unknown })?.code ?? null }
    }
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' })
    res.end(JSON.stringify(body))
  }
}
