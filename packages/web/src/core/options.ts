/**
 * Options of the standalone server, resolved once into a frozen object. The cross-field rule
 * lives here: a non-loopback bind address is refused unless `allowRemote` says so, because
 * the browser can edit and delete memories and the token is the only lock on it.
 */
import { isIP } from 'node:net'
import { WebError } from './errors.ts'

/** Default port of `dsh-memory serve` (0 would pick a free one). */
export const DEFAULT_PORT = 7411

/** Input of {@link resolveServeOptions}. */
export interface ServeOptionsInput {
  /** Bind address; default `127.0.0.1`. */
  readonly host?: string
  /** TCP port; 0 picks a free one. Default {@link DEFAULT_PORT}. */
  readonly port?: number
  /** Allow a bind address other than loopback (the LAN can then reach the token-guarded app). */
  readonly allowRemote?: boolean
  /** A fixed token (at least 16 characters); default: a new random one per start. */
  readonly token?: string
}

/** Resolved options. */
export interface ServeOptions {
  readonly host: string
  readonly port: number
  readonly allowRemote: boolean
  readonly token: string | undefined
  /** True when `host` only accepts connections from this machine. */
  readonly loopback: boolean
}

/** True for `localhost`, `::1` and `127.0.0.0/8`. */
export function isLoopback(host: string): boolean {
  const value = host.trim().toLowerCase().replace(/^\[|\]$/g, '')
  if (value === 'localhost' || value === '::1') return true
  return isIP(value) === 4 && value.startsWith('127.')
}

/**
 * Check and freeze the serve options.
 * @throws WebError `refused` for a non-loopback host without `allowRemote`; `invalid-config` for a bad port, host or token.
 */
export function resolveServeOptions(input: ServeOptionsInput = {}): ServeOptions {
  const host = (input.host ?? '127.0.0.1').trim()
  if (host === '' || (host !== 'localhost' && isIP(host.replace(/^\[|\]$/g, '')) === 0)) {
    throw new WebError('invalid-config', `host: expected an IP address or "localhost", got ${JSON.stringify(input.host)}`)
  }
  const port = input.port ?? DEFAULT_PORT
  if (!Number.isSafeInteger(port) || port < 0 || port > 65_535) throw new WebError('invalid-config', `port: expected an integer from 0 to 65535, got ${JSON.stringify(input.port)}`)
  if (input.token !== undefined && (input.token.length < 16 || /\s/.test(input.token))) throw new WebError('invalid-config', 'token: expected at least 16 characters without spaces')
  const loopback = isLoopback(host)
  const allowRemote = input.allowRemote === true
  if (!loopback && !allowRemote) {
    throw new WebError('refused', `refusing to listen on ${host}: the memory browser can read, edit and delete memories, so it only binds to loopback unless you pass --allow-remote (then anyone who can reach ${host} and has the token can use it)`)
  }
  return Object.freeze({ host, port, allowRemote, token: input.token, loopback })
}
