/**
 * The host seam: `@dsh-memory/web/plugin` on a real Cordis context with the real store
 * service and the host's real web server plugin (`@deepseek-ai/dsh-host-webserver` from the
 * pinned DSH install in apps/playground/host), reached over HTTP.
 */
import { existsSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { format } from 'node:util'
import { Context } from '@deepseek-ai/cordis'
import { MemoryStoreService } from '@dsh-memory/store/plugin'
import { afterEach, describe, expect, it } from 'vitest'
import { tokenCookieName } from '../src/index.ts'
import * as webPlugin from '../src/plugin.ts'
import { buildWebFixture, scratch } from './fixture.ts'

const HOST_WEBSERVER = join(import.meta.dirname, '..', '..', '..', 'apps', 'playground', 'host', 'node_modules', '@deepseek-ai', 'dsh-host-webserver', 'lib', 'index.js')

const cleanups: (() => unknown)[] = []
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!()
})

/** A Cordis context with the real store service over the web fixture and the host's real web server on a free port. */
async function hostWithStore(label: string, prepare: (ctx: Context) => void = () => {}) {
  expect(existsSync(HOST_WEBSERVER), `the pinned DSH host is installed (${HOST_WEBSERVER})`).toBe(true)
  const { default: WebServer } = (await import(pathToFileURL(HOST_WEBSERVER).href)) as { default: Parameters<Context['plugin']>[0] }
  const temp = scratch(label)
  cleanups.push(temp.cleanup)
  const fixture = await buildWebFixture(temp.dir)
  const ctx = new Context()
  cleanups.push(() => ctx.fiber.dispose())
  prepare(ctx)
  await ctx.plugin(MemoryStoreService, { dataDir: fixture.dataDir })
  await ctx.plugin(WebServer, { host: '127.0.0.1', port: 0 })
  return { ctx, fixture }
}

describe('@dsh-memory/web/plugin', () => {
  it('declares its name, injections and config defaults', () => {
    expect(webPlugin.name).toBe('memory-web')
    expect(webPlugin.inject).toEqual(['memoryStore', 'webServer'])
    expect(webPlugin.Config({} as webPlugin.Config)).toEqual({ path: '/memory', token: '', palaceWorkspaces: [] })
    expect(() => webPlugin.Config({ path: 'memory/' } as webPlugin.Config)).toThrow()
  })

  it('the README config table matches the schema', () => {
    const readme = readFileSync(join(import.meta.dirname, '..', 'README.md'), 'utf8')
    const section = readme.slice(readme.indexOf('### Plugin config'), readme.indexOf('## Security model'))
    const keys = [...section.matchAll(/^\| `(\w+)` \|/gm)].map((match) => match[1])
    const dict = (webPlugin.Config as unknown as { dict: Record<string, unknown> }).dict
    expect(keys).toEqual(Object.keys(dict))
  })

  it('mounts the browser under the host web server, token-guarded, and unmounts on dispose', async () => {
    const logged: string[] = []
    const { ctx, fixture } = await hostWithStore('plugin', (ctx) => {
      ;(ctx as unknown as { logger: (name: string) => unknown }).logger = () => ({ info: (...args: unknown[]) => logged.push(format(...args)), warn: () => {} })
    })
    const fiber = await ctx.plugin(webPlugin, { path: '/memory', token: 'a-fixed-token-for-the-test-0123', palaceWorkspaces: [] })
    const webServer = (ctx as unknown as { webServer: { port: number } }).webServer
    const origin = `http://127.0.0.1:${webServer.port}`
    expect(logged.join('\n')).toContain(`/memory/?token=a-fixed-token-for-the-test-0123`)
    const urlFile = join(fixture.dataDir, webPlugin.URL_FILE)
    expect(readFileSync(urlFile, 'utf8').trim()).toBe(`${origin}/memory/?token=a-fixed-token-for-the-test-0123`)
    expect(statSync(urlFile).mode & 0o777).toBe(0o600)

    expect((await fetch(`${origin}/memory/memories`)).status).toBe(401)
    const login = await fetch(`${origin}/memory/?token=a-fixed-token-for-the-test-0123`, { redirect: 'manual' })
    expect(login.status).toBe(303)
    expect(login.headers.get('location')).toBe('/memory/')
    expect(login.headers.get('set-cookie')).toContain('Path=/memory')
    const cookie = `${tokenCookieName('a-fixed-token-for-the-test-0123')}=a-fixed-token-for-the-test-0123`
    const page = await fetch(`${origin}/memory/memories?q=${encodeURIComponent('数据库')}`, { headers: { cookie } })
    expect(page.status).toBe(200)
    const body = await page.text()
    expect(body).toContain('主数据库使用 PostgreSQL')
    // Links and assets stay under the mount path.
    expect(body).toContain('href="/memory/assets/app.css"')
    expect(body).toContain(`href="/memory/memories/${fixture.memories.database}"`)
    expect((await fetch(`${origin}/memory/assets/app.js`, { headers: { cookie } })).status).toBe(200)

    await fiber.dispose()
    expect((await fetch(`${origin}/memory/memories`, { headers: { cookie } })).status).toBe(404)
    expect(existsSync(urlFile)).toBe(false)
  })

  it('mounted as the bare package, serves the browser half its routes, to loopback same-origin requests only', async () => {
    const { ctx, fixture } = await hostWithStore('client-routes')
    // The row `name: '@dsh-memory/web'` loads the package root: the same plugin, loaded lazily.
    const root = await import('../src/index.ts')
    expect([root.name, root.inject]).toEqual([webPlugin.name, webPlugin.inject])
    await expect(root.apply(new Context(), { path: 'no-slash' })).rejects.toThrow(/path/)
    await expect(root.apply(new Context(), { paths: '/memory' } as never)).rejects.toThrow(/memory-web: paths: unknown option/)
    await ctx.plugin(root, {})
    const api = `http://127.0.0.1:${(ctx as unknown as { webServer: { port: number } }).webServer.port}/dsh-memory`
    const session = fixture.conversations.shop
    const post = (route: string, body: unknown, headers: Record<string, string> = { 'x-dsh-memory': '1' }) =>
      fetch(`${api}/${route}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })

    // No token: the same-origin rule is the guard. A Chinese search finds the Chinese memory.
    const search = await fetch(`${api}/memories?layer=workspace&session=${session}&q=${encodeURIComponent('数据库')}`)
    expect(search.status).toBe(200)
    const found = (await search.json()) as { workspace: string; items: { id: string; text: string }[] }
    expect(found.workspace).toBe(fixture.shop)
    expect(found.items.map((item) => item.id)).toContain(fixture.memories.database)
    // This session's list holds what was distilled from its own messages.
    const own = (await (await fetch(`${api}/memories?layer=session&session=${session}`)).json()) as { items: { id: string }[] }
    expect(own.items.map((item) => item.id)).toContain(fixture.memories.database)

    // The search box's hints: completions of the word typed and corrections of a misspelt one,
    // from the vocabulary of that list's memories (Chinese included; another workspace's words never).
    const hints = async (query: string) => (await (await fetch(`${api}/suggest?${query}`)).json()) as { completions: string[]; didYouMean: string[] }
    expect((await hints(`layer=workspace&session=${session}&q=pull%20requ`)).completions).toContain('pull requests')
    expect((await hints(`layer=workspace&session=${session}&q=${encodeURIComponent('主数剧库')}`)).didYouMean[0]).toBe('主数据库')
    expect((await hints(`layer=global&q=Helx`)).didYouMean).toEqual(['helix'])
    expect((await hints(`layer=workspace&session=${session}&q=Cloudflair`)).didYouMean).toEqual([])
    expect((await fetch(`${api}/suggest?layer=session&q=x`)).status).toBe(400)

    // Another origin, a cross-site fetch, or a write without the header: refused before any data.
    expect((await fetch(`${api}/memories?layer=global`, { headers: { origin: 'http://evil.example' } })).status).toBe(403)
    expect((await fetch(`${api}/memories?layer=global`, { headers: { 'sec-fetch-site': 'cross-site' } })).status).toBe(403)
    expect((await post('forget', { id: fixture.memories.flaky }, {})).status).toBe(403)
    expect(await ctx.memoryStore.memories.get(fixture.memories.flaky)).toBeDefined()

    // The pill's mode switch is the session's own setting, as /memory mode writes it.
    const switched = (await (await post('mode', { session, mode: 'work' })).json()) as { session: { mode: string; chosen: boolean } }
    expect(switched.session).toMatchObject({ mode: 'work', chosen: true })
    const bad = await post('mode', { session, mode: 'sometimes' })
    expect(bad.status).toBe(400)
    expect(((await bad.json()) as { error: string }).error).toContain('mode: expected one of auto, chat, work, off')

    // Forget through the route: gone from the store.
    expect((await post('forget', { id: fixture.memories.flaky })).status).toBe(200)
    expect(await ctx.memoryStore.memories.get(fixture.memories.flaky)).toBeUndefined()
    // Settings writes reach only our own namespaces (and need the host's settings service).
    const foreign = await post('settings', { namespace: 'bash', ops: [{ op: 'set', path: ['timeout'], value: 1 }] })
    expect(foreign.status).toBe(400)
    expect(((await foreign.json()) as { error: string }).error).toContain('namespace: expected one of memory-recall, memory-distill, memory-palace, memory-tree, memory-cue-bank, memory-capture')
  })
})
