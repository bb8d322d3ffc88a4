/**
 * The HTTP handler of the memory browser: routing, the token guard, CSRF checks and security
 * headers. It is a plain `(req, res)` function so the standalone server ({@link
 * startMemoryBrowser}) and the DSH host's web server (`@dsh-memory/web/plugin`) mount the
 * very same thing.
 *
 * Security model, in order of the checks:
 * 1. Host allow-list (standalone on loopback: `127.0.0.1`, `localhost`, `[::1]` with the port),
 *    so a DNS-rebinding page cannot even reach the token check under a foreign name.
 * 2. Every request needs the token: `?token=` once (answered with a redirect that sets an
 *    HttpOnly SameSite=Strict cookie and drops the token from the address bar), then the
 *    cookie, or an `X-DSHM-Token` / `Authorization: Bearer` header for scripts. Otherwise 401.
 * 3. Mutations are POST only, and need a CSRF proof: the form's `csrf` field (an HMAC of the
 *    token) or the token header, plus a same-origin `Origin` / `Sec-Fetch-Site` when present.
 * 4. Every page is rendered with escaping by default and served with a strict CSP
 *    (`script-src 'self'`, no inline script), `nosniff`, `same-origin` referrers (a `no-referrer` policy makes Chromium send `Origin: null` on form posts, which the CSRF check must refuse) and `no-store`.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { SCRIPT, STYLESHEET } from './assets.ts'
import type { MemoryBrowser, MemoryQuery } from './browser.ts'
import { describeError } from './errors.ts'
import { pickLang, translator } from './i18n.ts'
import { didYouMean, VocabularyCache } from './suggest.ts'
import {
  conversationPage,
  conversationsPage,
  cuesPage,
  memoriesPage,
  memoryPage,
  messagePage,
  overviewPage,
  type PageContext,
  palacePage,
  palaceReadPage,
  scenePage,
  scenesPage,
  treeBranchPage,
  treeCheckpointPage,
  treePage,
  treeProjectPage,
  unauthorizedPage,
} from './pages.ts'

/** Options of {@link createMemoryBrowserHandler}. */
export interface MemoryBrowserHandlerOptions {
  readonly browser: MemoryBrowser
  /** The access token (at least 16 characters; {@link newToken} makes one). */
  readonly token: string
  /** Mount path without a trailing slash (`''` standalone, `/memory` in the host). */
  readonly base?: string
  /** Accepted `Host` header values; undefined accepts any (behind a trusted front server). */
  readonly allowedHosts?: readonly string[]
}

/** A request handler that never throws (failures become 4xx/5xx answers). */
export type MemoryBrowserHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>

const MAX_BODY = 1_000_000
const KINDS_CACHE_MS = 10_000
/** Below this many hits on a search's first page, the memories page also says what may have been meant. */
const FEW_MATCHES = 3

/** The CSRF proof forms carry: an HMAC of the token, so the token itself never sits in the page. */
export function csrfToken(token: string): string {
  return createHmac('sha256', token).update('dsh-memory-web csrf').digest('hex')
}

/** Name of the token cookie: per token, so two browsers on two ports of one host do not clobber each other. */
export function tokenCookieName(token: string): string {
  return `dshm_${createHash('sha256').update(token).digest('hex').slice(0, 10)}`
}

function sameSecret(given: string | undefined, expected: string): boolean {
  if (given === undefined) return false
  const a = Buffer.from(given)
  const b = Buffer.from(expected)
  return a.length === b.length && timingSafeEqual(a, b)
}

function parseCookies(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  for (const part of (header ?? '').split(';')) {
    const index = part.indexOf('=')
    if (index <= 0) continue
    const key = part.slice(0, index).trim()
    try {
      out[key] = decodeURIComponent(part.slice(index + 1).trim())
    } catch {
      // A malformed cookie is ignored, as if absent.
    }
  }
  return out
}

const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'x-frame-options': 'DENY',
  'cache-control': 'no-store',
  'cross-origin-resource-policy': 'same-origin',
}

/** A deliberate HTTP answer (status + message) thrown out of a route. */
export class HttpAnswer extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message)
  }
}

/** The request body as text, refused over 1 MB. */
export async function readBody(req: IncomingMessage): Promise<string> {
  let size = 0
  const chunks: Buffer[] = []
  for await (const chunk of req) {
    size += (chunk as Buffer).length
    if (size > MAX_BODY) throw new HttpAnswer(413, 'request body too large')
    chunks.push(chunk as Buffer)
  }
  return Buffer.concat(chunks).toString('utf8')
}

async function formOf(req: IncomingMessage): Promise<Record<string, string>> {
  const text = await readBody(req)
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
  if (type === 'application/json') {
    let value: unknown
    try {
      value = JSON.parse(text || '{}')
    } catch {
      throw new HttpAnswer(400, 'the body is not valid JSON')
    }
    if (!value || typeof value !== 'object' || Array.isArray(value)) throw new HttpAnswer(400, 'the body must be a JSON object')
    return Object.fromEntries(Object.entries(value).filter(([, v]) => typeof v === 'string')) as Record<string, string>
  }
  return Object.fromEntries(new URLSearchParams(text))
}

/** The HTTP status of a thrown error (by its stable code). */
export function statusOf(error: unknown): number {
  if (error instanceof HttpAnswer) return error.status
  const code = (error as { code?: unknown })?.code
  if (code === 'not-found') return 404
  if (code === 'invalid-argument' || code === 'ambiguous-id') return 400
  return 500
}

/** Build the handler. */
export function createMemoryBrowserHandler(options: MemoryBrowserHandlerOptions): MemoryBrowserHandler {
  const { browser, token } = options
  if (token.length < 16) throw new TypeError('the access token must have at least 16 characters')
  const base = (options.base ?? '').replace(/\/+$/, '')
  const cookieName = tokenCookieName(token)
  const csrf = csrfToken(token)
  const allowedHosts = options.allowedHosts ? new Set(options.allowedHosts.map((host) => host.toLowerCase())) : undefined
  let kindsCache: { at: number; kinds: string[] } | undefined
  // "Did you mean" under a thin search: the vocabulary of the memories the same filters list.
  const vocabularies = new VocabularyCache(browser.store)
  const corrections = async (query: MemoryQuery, found: number): Promise<string[]> => {
    const q = query.q?.trim() ?? ''
    if (q === '' || found >= FEW_MATCHES) return []
    const filter = {
      ...(query.scope ? { scope: query.scope } : {}),
      ...(query.kind ? { kind: query.kind } : {}),
      ...(query.workspace ? { workspace: query.workspace, includeGlobal: false } : {}),
      includeSuperseded: query.includeSuperseded === true,
    }
    return didYouMean(q, await vocabularies.get(filter))
  }

  const kinds = async (): Promise<string[]> => {
    if (kindsCache && Date.now() - kindsCache.at < KINDS_CACHE_MS) return kindsCache.kinds
    kindsCache = { at: Date.now(), kinds: await browser.kinds() }
    return kindsCache.kinds
  }

  const send = (res: ServerResponse, status: number, type: string, body: string, extra: Record<string, string | string[]> = {}): void => {
    res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': type, 'content-length': Buffer.byteLength(body), ...extra })
    res.end(body)
  }
  const redirect = (res: ServerResponse, location: string, extra: Record<string, string | string[]> = {}): void => {
    res.writeHead(303, { ...SECURITY_HEADERS, location, 'content-length': 0, ...extra })
    res.end()
  }
  const json = (res: ServerResponse, status: number, value: unknown): void => send(res, status, 'application/json; charset=utf-8', JSON.stringify(value, (_key, v: unknown) => (v instanceof Float32Array ? { dims: v.length } : v)))

  return async (req, res) => {
    let isApi = false
    // Until the token checked out, failures answer in plain text: no page chrome, no data.
    let authed = false
    try {
      const url = new URL(req.url ?? '/', 'http://localhost')
      if (allowedHosts && !allowedHosts.has(String(req.headers.host ?? '').toLowerCase())) throw new HttpAnswer(421, `host ${JSON.stringify(req.headers.host ?? '')} is not served here`)
      if (base && url.pathname !== base && !url.pathname.startsWith(`${base}/`)) throw new HttpAnswer(404, 'not found')
      const path = url.pathname.slice(base.length) || '/'
      isApi = path.startsWith('/api/')
      const cookies = parseCookies(req.headers.cookie)

      // 1. The token, once from the URL: remember it in a cookie and drop it from the address.
      const fromQuery = url.searchParams.get('token') ?? undefined
      if (fromQuery !== undefined && sameSecret(fromQuery, token) && (req.method === 'GET' || req.method === 'HEAD')) {
        url.searchParams.delete('token')
        const rest = url.searchParams.toString()
        redirect(res, `${base}${path}${rest ? `?${rest}` : ''}`, {
          'set-cookie': `${cookieName}=${encodeURIComponent(token)}; HttpOnly; SameSite=Strict; Path=${base || '/'}; Max-Age=2592000`,
        })
        return
      }
      const bearer = /^Bearer\s+(.+)$/i.exec(String(req.headers.authorization ?? ''))?.[1]
      const fromHeader = (req.headers['x-dshm-token'] as string | undefined) ?? bearer
      const authorized = sameSecret(cookies[cookieName], token) || sameSecret(fromHeader, token)
      if (!authorized) {
        if (isApi) json(res, 401, { error: 'unauthorized', message: 'this memory browser needs its access token (cookie, X-DSHM-Token header or ?token=)' })
        else send(res, 401, 'text/html; charset=utf-8', unauthorizedPage())
        return
      }
      authed = true

      const lang = pickLang(cookies.dshm_lang, req.headers['accept-language'] as string | undefined)
      const theme = cookies.dshm_theme === 'dark' || cookies.dshm_theme === 'light' ? cookies.dshm_theme : undefined
      const t = translator(lang)
      const done = url.searchParams.get('done')
      const flashText = done === 'saved' ? t('saved') : done === 'forgotten' ? t('forgotten') : done === 'promoted' ? t('promoted') : undefined
      const current = `${path}${url.search}`.replace(/([?&])done=[^&]*&?/, '$1').replace(/[?&]$/, '')
      const ctx: PageContext = { lang, theme, base, current, csrf, ...(flashText ? { flash: { kind: 'ok' as const, text: flashText } } : {}) }
      const page = (body: string, status = 200) => send(res, status, 'text/html; charset=utf-8', body)
      const num = (name: string) => {
        const value = url.searchParams.get(name)
        return value !== null && /^\d{1,9}$/.test(value) ? Number(value) : undefined
      }
      const segments = path.split('/').filter(Boolean).map((part) => decodeURIComponent(part))

      // 2. Mutations: POST with a CSRF proof.
      if (req.method === 'POST') {
        const origin = req.headers.origin
        if (origin !== undefined && origin !== 'null' && new URL(origin).host !== req.headers.host) throw new HttpAnswer(403, 'cross-origin request refused')
        if (origin === 'null') throw new HttpAnswer(403, 'cross-origin request refused')
        const site = req.headers['sec-fetch-site']
        if (site !== undefined && site !== 'same-origin' && site !== 'none') throw new HttpAnswer(403, 'cross-site request refused')
        const form = await formOf(req)
        if (!sameSecret(form.csrf, csrf) && !sameSecret(fromHeader, token)) throw new HttpAnswer(403, 'missing or wrong CSRF token')
        const apiPrefix = isApi ? 1 : 0
        const [resource, id, action] = segments.slice(apiPrefix)
        if (resource !== 'memories' || !id || !action || segments.length !== 3 + apiPrefix) throw new HttpAnswer(404, 'not found')
        let target: string | undefined
        let outcome: 'saved' | 'forgotten' | 'promoted'
        if (action === 'edit') {
          const text = form.text
          if (typeof text !== 'string') throw new HttpAnswer(400, 'the form needs a "text" field')
          target = (await browser.editMemory(id, text)).id
          outcome = 'saved'
        } else if (action === 'forget') {
          await browser.forgetMemory(id)
          outcome = 'forgotten'
        } else if (action === 'promote') {
          target = (await browser.promoteMemory(id)).id
          outcome = 'promoted'
        } else throw new HttpAnswer(404, 'not found')
        kindsCache = undefined
        if (isApi) json(res, 200, { ok: true, outcome, id: target ?? null })
        else redirect(res, `${base}${target ? `/memories/${encodeURIComponent(target)}` : '/memories'}?done=${outcome}`)
        return
      }
      if (req.method !== 'GET' && req.method !== 'HEAD') throw new HttpAnswer(405, 'method not allowed')

      // 3. Reads.
      const [first, second, third] = segments
      if (first === 'assets' && second === 'app.css') return send(res, 200, 'text/css; charset=utf-8', STYLESHEET)
      if (first === 'assets' && second === 'app.js') return send(res, 200, 'text/javascript; charset=utf-8', SCRIPT)
      if (first === 'lang') {
        const set = url.searchParams.get('set') === 'zh' ? 'zh' : 'en'
        const back = url.searchParams.get('back') ?? '/'
        const safeBack = back.startsWith('/') && !back.startsWith('//') && !back.includes('\\') ? back : '/'
        return redirect(res, `${base}${safeBack}`, { 'set-cookie': `dshm_lang=${set}; Path=${base || '/'}; Max-Age=31536000; SameSite=Strict` })
      }
      const memoryQuery = (): MemoryQuery => {
        const scope = url.searchParams.get('scope')
        const sort = url.searchParams.get('sort')
        return {
          q: url.searchParams.get('q') ?? '',
          ...(scope === 'global' || scope === 'workspace' || scope === 'session' ? { scope } : {}),
          ...(url.searchParams.get('kind') ? { kind: url.searchParams.get('kind')! } : {}),
          ...(url.searchParams.get('workspace') ? { workspace: url.searchParams.get('workspace')! } : {}),
          ...(sort === 'updated' || sort === 'priority' || sort === 'created' ? { sort } : {}),
          includeSuperseded: url.searchParams.get('history') === '1',
          page: num('page') ?? 0,
        }
      }
      if (isApi) {
        const [, resource, id] = segments
        if (resource === 'overview' && !id) return json(res, 200, await browser.overview())
        if (resource === 'memories' && !id) return json(res, 200, await browser.memories(memoryQuery()))
        if (resource === 'memories' && id && segments.length === 3) {
          const detail = await browser.memory(id)
          return detail ? json(res, 200, detail) : json(res, 404, { error: 'not-found', message: `no memory with id ${id}` })
        }
        throw new HttpAnswer(404, 'not found')
      }
      if (!first) return page(overviewPage(ctx, await browser.overview()))
      if (first === 'memories' && !second) {
        const query = memoryQuery()
        const found = await browser.memories(query)
        return page(memoriesPage(ctx, query, found, await kinds(), await corrections(query, found.page === 0 ? found.items.length : FEW_MATCHES)))
      }
      if (first === 'memories' && second && !third) {
        const detail = await browser.memory(second)
        return detail ? page(memoryPage(ctx, detail)) : page(messagePage(ctx, t('notFound'), second), 404)
      }
      if (first === 'scenes' && !second) return page(scenesPage(ctx, await browser.scenes(num('page')), await browser.persona()))
      if (first === 'scenes' && second && !third) {
        const found = await browser.scene(second)
        return found ? page(scenePage(ctx, found.scene, found.memories)) : page(messagePage(ctx, t('notFound'), second), 404)
      }
      if (first === 'conversations' && !second) return page(conversationsPage(ctx, await browser.conversations(num('page'))))
      if (first === 'conversations' && second && !third) {
        const seq = num('seq')
        const pageNumber = num('page') ?? (seq !== undefined ? await browser.conversationPageOf(second, seq) : 0)
        const found = await browser.conversation(second, pageNumber)
        return found ? page(conversationPage(ctx, found.conversation, found.messages, seq)) : page(messagePage(ctx, t('notFound'), second), 404)
      }
      if (first === 'cues' && !second) {
        const partition = url.searchParams.get('partition') || undefined
        return page(cuesPage(ctx, await browser.cues({ ...(partition ? { partition } : {}), page: num('page') ?? 0 }), partition))
      }
      if (first === 'palace' && !second) return page(palacePage(ctx, await browser.palace()))
      if (first === 'palace' && second === 'read' && !third) {
        const workspace = url.searchParams.get('ws') ?? ''
        const namespace = url.searchParams.get('ns') ?? ''
        const file = url.searchParams.get('path') ?? ''
        const read = await browser.palaceRead(workspace, namespace, file, num('offset') ?? 0)
        return page(palaceReadPage(ctx, { workspace, namespace, path: file, text: read.text, nextOffset: read.nextOffset }))
      }
      if (first === 'tree' && !second) return page(treePage(ctx, await browser.treeProjects()))
      if (first === 'tree' && second === 'branch' && third) {
        const found = await browser.treeBranch(third)
        return found ? page(treeBranchPage(ctx, found.branch, found.events)) : page(messagePage(ctx, t('notFound'), third), 404)
      }
      if (first === 'tree' && second === 'checkpoint' && third) {
        const found = await browser.treeCheckpoint(third)
        return found ? page(treeCheckpointPage(ctx, found)) : page(messagePage(ctx, t('notFound'), third), 404)
      }
      if (first === 'tree' && second && !third) {
        const found = await browser.treeProject(second)
        return found ? page(treeProjectPage(ctx, found)) : page(messagePage(ctx, t('notFound'), second), 404)
      }
      page(messagePage(ctx, t('notFound'), path), 404)
    } catch (error) {
      const status = statusOf(error)
      const message = describeError(error)
      if (res.headersSent) {
        res.destroy()
        return
      }
      try {
        if (!authed) send(res, status, 'text/plain; charset=utf-8', `${message}\n`)
        else if (isApi) json(res, status, { error: status === 404 ? 'not-found' : status === 400 ? 'invalid-argument' : 'failed', message })
        else {
          const cookies = parseCookies(req.headers.cookie)
          const lang = pickLang(cookies.dshm_lang, req.headers['accept-language'] as string | undefined)
          const ctx: PageContext = { lang, theme: undefined, base, current: '/', csrf, flash: { kind: 'error', text: message } }
          send(res, status, 'text/html; charset=utf-8', messagePage(ctx, `${status}`, translator(lang)('error')))
        }
      } catch {
        res.destroy()
      }
    }
  }
}
