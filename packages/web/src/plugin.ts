/**
 * `@dsh-memory/web/plugin`: the memory browser inside DSH's own web server. It mounts the
 * same handler as `dsh-memory serve` on a prefix route of the host's `ctx.webServer`
 * (`@deepseek-ai/dsh-host-webserver`, present in the `web` surface), over the host's
 * `ctx.memoryStore`, guarded by the same token. The URL with the token is logged and written
 * to `<data dir>/memory-web.url` (mode 0600; the store's local data dir, on either backend):
 * DSH does not print plugin logs, and a random token nobody can read would lock the user out.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { join } from 'node:path'
import type { Context } from '@deepseek-ai/cordis'
import z from '@deepseek-ai/schemastery'
import { findUnknownOption, optionKeysOf, strictOptionsSchema } from '@dsh-memory/store/kit'
import type {} from '@dsh-memory/store/plugin'
import { MemoryBrowser } from './core/browser.ts'
import { WebError } from './core/errors.ts'
import { createMemoryBrowserHandler } from './core/handler.ts'
import { newToken } from './core/token.ts'
import { clientApiDeps } from './client-host.ts'
import { createClientApiHandler } from './core/client-api.ts'
import { CLIENT_API_BASE } from './core/client-paths.ts'

/** Plugin id, as a bundle row would name it. */
export const name = 'memory-web'

/** The store service and the host's web server (the `web` surface provides it; headless does not, so the row then waits). */
export const inject = ['memoryStore', 'webServer'] as const

/** The part of `@deepseek-ai/dsh-host-webserver`'s `WebServer` this plugin uses. */
export interface WebServerLike {
  register(route: { kind: 'exact' | 'prefix'; path: string; handler: (req: IncomingMessage, res: ServerResponse) => void | Promise<void> }): () => void
  readonly port: number
  readonly host: string
}

/** File (in the store's data dir) holding the browser's URL with its token while the plugin runs. */
export const URL_FILE = 'memory-web.url'

/** Config of the `memory-web` row. */
export interface Config {
  path: string
  token: string
  palaceWorkspaces: string[]
}

/** The row's schema: shape, defaults and descriptions (validated by the host at load). */
export const Config: z<Config> = z.object({
  path: z
    .string()
    .pattern(/^\/[A-Za-z0-9._~-]+(?:\/[A-Za-z0-9._~-]+)*$/)
    .default('/memory')
    .description('Path prefix of the memory browser under the host web server (no trailing slash; must not collide with /api or /plugins).'),
  token: z.string().default('').description('Access token (at least 16 characters). Empty: a new random token per start, written with the URL to memory-web.url in the data dir.'),
  palaceWorkspaces: z.array(z.string()).default([]).description('Workspaces whose memory-palace/ folders to show besides those the store knows.'),
})

/** The keys of {@link Config}; any other key is refused at load. */
const CONFIG_KEYS = strictOptionsSchema(optionKeysOf(Config({} as Config)))

/** Mount the browser; the route and the browser are released when the plugin unloads. */
export function apply(ctx: Context, config: Config): void {
  const logger = ctx.logger('memory-web')
  // schemastery passes unknown keys through: a typo must fail the load, naming the key.
  const unknown = findUnknownOption(config, CONFIG_KEYS)
  if (unknown) throw new WebError('invalid-config', `memory-web: ${unknown.path}: ${unknown.message}`, { path: unknown.path })
  if (config.token !== '' && config.token.length < 16) throw new Error(`memory-web: token must have at least 16 characters (config field "token")`)
  const webServer = (ctx as unknown as { webServer: WebServerLike }).webServer
  // The data dir, not the database's location: on PostgreSQL `path` is a URL.
  const dataDir = ctx.memoryStore.dataDir
  const browser = MemoryBrowser.fromStore(ctx.memoryStore, { dataDir, palaceWorkspaces: config.palaceWorkspaces, actor: 'web' })
  const token = config.token || newToken()
  const handler = createMemoryBrowserHandler({ browser, token, base: config.path })
  ctx.effect(
    () => () => void browser.close().catch((error: unknown) => logger.warn('closing the memory browser failed: %s', error instanceof Error ? error.message : String(error))),
    'memory browser',
  )
  ctx.effect(() => webServer.register({ kind: 'prefix', path: config.path, handler }), 'memory browser route')
  // The browser half inside DSH's own client (./client) reads and writes through these routes:
  // same origin, loopback only, no token (see core/client-api.ts).
  ctx.effect(() => webServer.register({ kind: 'prefix', path: CLIENT_API_BASE, handler: createClientApiHandler(clientApiDeps(ctx, browser)) }), 'memory client routes')
  const host = webServer.host === '0.0.0.0' ? '127.0.0.1' : webServer.host
  const url = `http://${host}:${webServer.port}${config.path}/?token=${token}`
  logger.info('memory browser: %s', url)
  const file = join(dataDir, URL_FILE)
  ctx.effect(() => {
    try {
      writeFileSync(file, `${url}\n`, { mode: 0o600 })
    } catch (error) {
      logger.warn('could not write %s: %s', file, error instanceof Error ? error.message : String(error))
    }
    return () => {
      // Only our own URL: another process on the same data dir may have written its own since.
      try {
        if (readFileSync(file, 'utf8').trim() === url) rmSync(file, { force: true })
      } catch {
        // Already gone.
      }
    }
  }, 'memory browser URL file')
}
