/**
 * The standalone server behind `dsh-memory serve`: node:http (no framework: the app has a
 * dozen routes and the security checks are easier to audit in one handler), bound to loopback
 * by default, guarded by a random token.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { MemoryStore } from '@dsh-memory/store'
import { MemoryBrowser } from './browser.ts'
import { createMemoryBrowserHandler } from './handler.ts'
import { resolveServeOptions, type ServeOptionsInput } from './options.ts'
import { newToken } from './token.ts'

/** Options of {@link startMemoryBrowser}. */
export interface StartMemoryBrowserOptions extends ServeOptionsInput {
  /** The data dir holding `memory.db` (with `store`: the local data dir shown on the overview). */
  readonly dataDir: string
  /** Workspaces whose `memory-palace/` folders to show besides those the store knows. */
  readonly palaceWorkspaces?: readonly string[]
  /**
   * A store the caller opened (a PostgreSQL database, `openStore({ databaseUrl })`) to serve
   * instead of `dataDir`'s `memory.db`. The server takes it over: {@link RunningMemoryBrowser.close}
   * closes it, and so does a failed start.
   */
  readonly store?: MemoryStore
  /** Whose global memories the browser shows (the store's `user`; default: the store's default identity). */
  readonly user?: string
}

/** A running memory browser. */
export interface RunningMemoryBrowser {
  /** The URL to open, token included (`http://127.0.0.1:<port>/?token=…`). */
  readonly url: string
  /** The URL without the token. */
  readonly origin: string
  readonly token: string
  readonly host: string
  readonly port: number
  readonly browser: MemoryBrowser
  readonly server: Server
  /** Stop listening, drop connections, close the store. Idempotent. */
  close(): Promise<void>
}

function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return '127.0.0.1'
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host
}

/**
 * Open the data dir and serve the memory browser.
 * @throws WebError `refused` (remote bind without `allowRemote`), `invalid-config`, `not-found` (no database); listen errors (EADDRINUSE) as thrown by node:http
 */
export async function startMemoryBrowser(options: StartMemoryBrowserOptions): Promise<RunningMemoryBrowser> {
  const given = options.store
  let serve: ReturnType<typeof resolveServeOptions>
  let browser: MemoryBrowser
  try {
    serve = resolveServeOptions(options)
    const palace = options.palaceWorkspaces ? { palaceWorkspaces: options.palaceWorkspaces } : {}
    browser = given ? MemoryBrowser.fromStore(given, { dataDir: options.dataDir, ...palace }) : MemoryBrowser.open({ dataDir: options.dataDir, ...palace, ...(options.user === undefined ? {} : { user: options.user }) })
  } catch (error) {
    await given?.close()
    throw error
  }
  const token = serve.token ?? newToken()
  // A given store stays the caller's for the browser, so the server closes it after the browser.
  const closeBrowser = async () => {
    await browser.close()
    await given?.close()
  }
  let handler: ReturnType<typeof createMemoryBrowserHandler> | undefined
  const server = createServer((req, res) => {
    if (!handler) {
      res.writeHead(503).end()
      return
    }
    void handler(req, res)
  })
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(serve.port, serve.host, () => {
        server.off('error', reject)
        resolve()
      })
    })
  } catch (error) {
    await closeBrowser()
    throw error
  }
  const port = (server.address() as AddressInfo).port
  // On loopback only the loopback names are served: a DNS-rebinding page gets 421 before any token check.
  const allowedHosts = serve.loopback ? ['127.0.0.1', 'localhost', '[::1]'].flatMap((name) => [`${name}:${port}`]) : undefined
  handler = createMemoryBrowserHandler({ browser, token, ...(allowedHosts ? { allowedHosts } : {}) })
  const origin = `http://${urlHost(serve.host)}:${port}`
  let closing: Promise<void> | undefined
  return {
    url: `${origin}/?token=${token}`,
    origin,
    token,
    host: serve.host,
    port,
    browser,
    server,
    close: () =>
      (closing ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve())
          server.closeAllConnections()
        })
        await closeBrowser()
      })()),
  }
}
