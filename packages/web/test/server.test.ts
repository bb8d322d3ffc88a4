import { request } from 'node:http'
import { join } from 'node:path'
import { openMemoryStore } from '@dsh-memory/store'
import { describe, expect, it } from 'vitest'
import { csrfToken, isWebError, pickLang, resolveServeOptions, startMemoryBrowser, tokenCookieName } from '../src/index.ts'
import { scratch, servedFixture } from './fixture.ts'

const served = servedFixture('server')

const cookie = () => `${tokenCookieName(served.app.token)}=${encodeURIComponent(served.app.token)}`
const get = (path: string, headers: Record<string, string> = {}) => fetch(`${served.app.origin}${path}`, { headers: { cookie: cookie(), ...headers }, redirect: 'manual' })

describe('token guard', () => {
  it('prints a loopback URL with a 43-character random token', () => {
    expect(served.app.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]{43}$/)
    expect(served.app.host).toBe('127.0.0.1')
  })

  it('answers 401 without the token, for pages, assets and the API', async () => {
    for (const path of ['/', '/memories', '/assets/served.app.css', `/memories/${served.fixture.memories.database}`]) {
      const res = await fetch(`${served.app.origin}${path}`, { redirect: 'manual' })
      expect(res.status, path).toBe(401)
      expect(await res.text()).not.toContain('PostgreSQL')
    }
    const api = await fetch(`${served.app.origin}/api/memories?q=PostgreSQL`)
    expect(api.status).toBe(401)
    expect(await api.json()).toMatchObject({ error: 'unauthorized' })
    const wrong = await fetch(`${served.app.origin}/api/overview`, { headers: { 'x-dshm-token': `${served.app.token.slice(0, -1)}x` } })
    expect(wrong.status).toBe(401)
  })

  it('trades ?token= for an HttpOnly SameSite=Strict cookie and drops it from the URL', async () => {
    const res = await fetch(`${served.app.origin}/memories?token=${served.app.token}&q=x`, { redirect: 'manual' })
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('/memories?q=x')
    const set = res.headers.get('set-cookie') ?? ''
    expect(set).toContain(`${tokenCookieName(served.app.token)}=`)
    expect(set).toMatch(/HttpOnly/)
    expect(set).toMatch(/SameSite=Strict/)
  })

  it('accepts the token header for API calls', async () => {
    const res = await fetch(`${served.app.origin}/api/memories?q=${encodeURIComponent('数据库')}`, { headers: { 'x-dshm-token': served.app.token } })
    expect(res.status).toBe(200)
    const body = (await res.json()) as { items: { memory: { id: string } }[] }
    expect(body.items.map((row) => row.memory.id)).toContain(served.fixture.memories.database)
  })

  it('refuses a foreign Host header (DNS rebinding) before anything else', async () => {
    // fetch() cannot set Host; node:http can, as a rebinding browser would send it.
    const status = await new Promise<number>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: served.app.port, path: '/', headers: { host: 'evil.example:80', cookie: cookie() } }, (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
      })
      req.on('error', reject)
      req.end()
    })
    expect(status).toBe(421)
  })

  it('shows who wrote a memory: a workspace memory names its author', async () => {
    const page = await (await get(`/memories/${served.fixture.memories.database}`)).text()
    const store = openMemoryStore({ path: join(served.fixture.dataDir, 'memory.db'), readonly: true })
    try {
      const author = (await store.memories.get(served.fixture.memories.database))!.createdBy
      expect(author.length).toBeGreaterThan(0)
      expect(page).toContain(`<dd class="mono" data-field="author">${author}</dd>`)
    } finally {
      await store.close()
    }
  })

  it('sends a strict CSP and a same-origin referrer policy on pages', async () => {
    const res = await get('/')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'")
    expect(res.headers.get('referrer-policy')).toBe('same-origin')
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
  })
})

describe('mutations', () => {
  it('refuses a POST without the CSRF proof, and a cross-origin one', async () => {
    const before = await served.app.browser.store.memories.get(served.fixture.memories.blogHost)
    const noCsrf = await fetch(`${served.app.origin}/memories/${served.fixture.memories.blogHost}/forget`, { method: 'POST', headers: { cookie: cookie(), 'content-type': 'application/x-www-form-urlencoded' }, body: '' })
    expect(noCsrf.status).toBe(403)
    const crossOrigin = await fetch(`${served.app.origin}/memories/${served.fixture.memories.blogHost}/forget`, {
      method: 'POST',
      headers: { cookie: cookie(), origin: 'http://evil.example', 'content-type': 'application/x-www-form-urlencoded' },
      body: `csrf=${csrfToken(served.app.token)}`,
    })
    expect(crossOrigin.status).toBe(403)
    expect(await served.app.browser.store.memories.get(served.fixture.memories.blogHost)).toEqual(before)
  })

  it('refuses GET on a mutation route (nothing changes)', async () => {
    const res = await get(`/memories/${served.fixture.memories.blogHost}/forget`)
    expect(res.status).toBe(404)
    expect(await served.app.browser.store.memories.get(served.fixture.memories.blogHost)).toBeDefined()
  })

  it('edits through the API with the token header; the database holds the new version and the old one as history', async () => {
    const res = await fetch(`${served.app.origin}/api/memories/${served.fixture.memories.blogHost}/edit`, {
      method: 'POST',
      headers: { 'x-dshm-token': served.app.token, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'ブログは Cloudflare Pages と R2 でホストしている。' }),
    })
    expect(res.status).toBe(200)
    const { id } = (await res.json()) as { id: string }
    // Read back through a second, read-only store on the same file (what another process sees).
    const store = openMemoryStore({ path: join(served.fixture.dataDir, 'memory.db'), readonly: true })
    try {
      expect((await store.memories.get(id))?.text).toBe('ブログは Cloudflare Pages と R2 でホストしている。')
      expect((await store.memories.get(served.fixture.memories.blogHost))?.supersededBy).toBe(id)
    } finally {
      await store.close()
    }
  })
})

describe('did you mean', () => {
  it('the memories page offers corrections of a misspelt search, each a link that searches it; none when the search finds enough', async () => {
    const page = await (await get(`/memories?q=${encodeURIComponent('Helx')}`)).text()
    expect(page).toMatch(/data-did-you-mean>Did you mean: <a href="\/memories\?q=helix">helix<\/a>/)
    const zh = await (await get(`/memories?q=${encodeURIComponent('主数剧库')}`)).text()
    expect(zh).toContain(`q=${encodeURIComponent('主数据库')}">主数据库</a>`)
    expect(await (await get(`/memories?q=${encodeURIComponent('Helix')}`)).text()).not.toContain('data-did-you-mean')
  })
})

describe('escaping', () => {
  it('renders a memory holding <script> as text', async () => {
    for (const path of [`/memories/${served.fixture.memories.hostile}`, `/memories?q=${encodeURIComponent('script')}`, '/memories']) {
      const page = await (await get(path)).text()
      expect(page, path).not.toContain('<script>window.__pwned')
      expect(page, path).not.toContain('<img src=x')
    }
    const detail = await (await get(`/memories/${served.fixture.memories.hostile}`)).text()
    expect(detail).toContain('&#60;script&#62;window.__pwned = true&#60;/script&#62;')
  })
})

describe('options', () => {
  it('refuses a non-loopback bind without allowRemote, with a clear error', async () => {
    expect(() => resolveServeOptions({ host: '0.0.0.0' })).toThrowError(/--allow-remote/)
    let caught: unknown
    try {
      await startMemoryBrowser({ dataDir: served.fixture.dataDir, host: '0.0.0.0', port: 0 })
    } catch (error) {
      caught = error
    }
    expect(isWebError(caught) && caught.code).toBe('refused')
    expect(resolveServeOptions({ host: '0.0.0.0', allowRemote: true }).loopback).toBe(false)
    expect(resolveServeOptions({ host: '::1' }).loopback).toBe(true)
    expect(() => resolveServeOptions({ port: 70_000 })).toThrowError(/port/)
    expect(() => resolveServeOptions({ host: 'not a host' })).toThrowError(/host/)
  })

  it('serves with allowRemote on all interfaces, still token-guarded', async () => {
    const remote = await startMemoryBrowser({ dataDir: served.fixture.dataDir, host: '0.0.0.0', port: 0, allowRemote: true })
    try {
      expect((await fetch(`http://127.0.0.1:${remote.port}/`)).status).toBe(401)
      expect((await fetch(`http://127.0.0.1:${remote.port}/api/overview`, { headers: { 'x-dshm-token': remote.token } })).status).toBe(200)
    } finally {
      await remote.close()
    }
  })

  it('fails clearly on a data dir without a database', async () => {
    const empty = scratch('empty')
    try {
      await expect(startMemoryBrowser({ dataDir: empty.dir, port: 0 })).rejects.toThrowError(/no dsh-memory database/)
    } finally {
      empty.cleanup()
    }
  })

  it('picks the UI language from Accept-Language unless chosen', () => {
    expect(pickLang(undefined, 'zh-CN,zh;q=0.9,en;q=0.8')).toBe('zh')
    expect(pickLang(undefined, 'en-US,en;q=0.9,zh;q=0.8')).toBe('en')
    expect(pickLang(undefined, 'fr-FR, zh-TW;q=0.5')).toBe('zh')
    expect(pickLang('en', 'zh-CN')).toBe('en')
    expect(pickLang(undefined, undefined)).toBe('en')
  })
})
