/**
 * The browser half's calls to its routes (core/client-api.ts): same origin, so the browser
 * sends no token and no cookie of ours; writes carry the `X-DSH-Memory: 1` header that the
 * routes require. Every failure becomes an Error with the route's own message.
 */
import { CLIENT_API_BASE } from '../core/client-paths.ts'

async function answer<T>(response: Response): Promise<T> {
  const body = (await response.json().catch(() => ({}))) as { error?: string }
  if (!response.ok) throw Object.assign(new Error(body.error ?? `HTTP ${response.status}`), { status: response.status })
  return body as T
}

/** GET `<base>/<route>?<query>`. */
export async function getJson<T>(route: string, query: Record<string, string> = {}): Promise<T> {
  const search = new URLSearchParams(query).toString()
  return answer<T>(await fetch(`${CLIENT_API_BASE}/${route}${search ? `?${search}` : ''}`, { credentials: 'same-origin' }))
}

/** POST a JSON body to `<base>/<route>`. */
export async function postJson<T>(route: string, body: unknown): Promise<T> {
  return answer<T>(
    await fetch(`${CLIENT_API_BASE}/${route}`, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', 'x-dsh-memory': '1' },
      body: JSON.stringify(body),
    }),
  )
}

/** A memory as the routes list it. */
export interface MemoryItem {
  readonly id: string
  readonly kind: string
  readonly scope: 'global' | 'workspace' | 'session'
  readonly text: string
  readonly workspace: string | null
  readonly sessionId: string | null
  readonly updatedAt: number
}

/** The pill's state of one session. */
export interface SessionState {
  readonly session: { readonly id: string; readonly workspace: string | null; readonly mode: Mode; readonly inject: 'follow' | 'on' | 'off'; readonly chosen: boolean; readonly defaultMode: Mode }
  readonly recall: { readonly at: number; readonly count: number; readonly chars: number; readonly memories: readonly MemoryItem[] } | null
  readonly distill: { readonly pending: number; readonly running: boolean } | null
}

/** Memory modes of a session. */
export type Mode = 'auto' | 'chat' | 'work' | 'off'
export const MODES: readonly Mode[] = ['auto', 'chat', 'work', 'off']

/** Message text of anything thrown. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
