/**
 * Who the store session writes as: the user identity stamped on every row (`created_by`) and
 * the one global memories are private to. Resolved once per process for the default, so a
 * host that opens several stores does not ask git each time.
 */
import { execFileSync } from 'node:child_process'
import { hostname, userInfo } from 'node:os'
import { MemoryStoreError } from './errors.ts'

/** The longest user identity the store accepts (an e-mail address fits many times over). */
export const MAX_USER_CHARS = 200

/** How long the store waits for `git config` before falling back to the OS identity. */
const GIT_TIMEOUT_MS = 3_000

// Control characters would make the identity unprintable in logs and the browser.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/

/** Where a resolved user came from, for `status` and the host's status page. */
export type UserSource = 'configured' | 'env' | 'git' | 'os'

/** A resolved identity and where it came from. */
export interface ResolvedUser {
  readonly user: string
  readonly source: UserSource
}

/**
 * Check a configured identity: a trimmed, non-empty string of at most {@link MAX_USER_CHARS}
 * characters without control characters. `field` names the option in the message (`user`,
 * `DSH_MEMORY_USER`, …).
 * @throws MemoryStoreError `invalid-argument` with `details.path` = `field`
 */
export function requireUser(value: unknown, field = 'user'): string {
  if (typeof value !== 'string') throw new MemoryStoreError('invalid-argument', `${field} must be a string (e.g. an e-mail address)`, { path: field })
  const user = value.trim()
  if (user.length === 0 || user.length > MAX_USER_CHARS || CONTROL.test(user)) {
    throw new MemoryStoreError('invalid-argument', `${field} must be a non-empty identity of at most ${MAX_USER_CHARS} characters without control characters`, { path: field })
  }
  return user
}

/**
 * The session's user, in order: `configured` (the `user` option or store row field; blank
 * counts as unset), else `DSH_MEMORY_USER`, else git's global `user.email` (the one identity a
 * developer has on every machine), else `<os user>@<hostname>`.
 * @throws MemoryStoreError `invalid-argument` naming `user` or `DSH_MEMORY_USER`
 */
export function resolveUser(configured: unknown, env: Record<string, string | undefined> = process.env): ResolvedUser {
  if (configured !== undefined && configured !== null && !(typeof configured === 'string' && configured.trim() === '')) {
    return { user: requireUser(configured), source: 'configured' }
  }
  const fromEnv = env.DSH_MEMORY_USER
  if (fromEnv !== undefined && fromEnv.trim() !== '') return { user: requireUser(fromEnv, 'DSH_MEMORY_USER'), source: 'env' }
  return defaultUser()
}

let cachedDefault: ResolvedUser | undefined

/** git's global e-mail, else `<os user>@<hostname>`; asked once per process. */
export function defaultUser(): ResolvedUser {
  cachedDefault ??= gitUser() ?? { user: osUser(), source: 'os' }
  return cachedDefault
}

function gitUser(): ResolvedUser | undefined {
  try {
    // `--global`: the repository the process happens to run in must not change who writes.
    const out = execFileSync('git', ['config', '--global', '--get', 'user.email'], { encoding: 'utf8', timeout: GIT_TIMEOUT_MS, stdio: ['ignore', 'pipe', 'ignore'], windowsHide: true })
    const email = out.trim()
    if (email.length === 0 || email.length > MAX_USER_CHARS || CONTROL.test(email)) return undefined
    return { user: email, source: 'git' }
  } catch {
    // No git installed, no global config, or no user.email in it (exit 1): not an error.
    return undefined
  }
}

function osUser(): string {
  let name: string
  try {
    name = userInfo().username
  } catch {
    // A uid without a passwd entry (some containers).
    name = process.env.USER ?? process.env.USERNAME ?? 'user'
  }
  return `${name || 'user'}@${hostname() || 'localhost'}`.slice(0, MAX_USER_CHARS)
}
