import { type ChildProcess, spawn } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildFixture, cli, type Fixture, scratch } from './helpers.ts'
import { clusterPassword, freshDatabase } from './pg-database.ts'

const BIN = join(fileURLToPath(new URL('.', import.meta.url)), '..', 'src', 'bin.ts')

let temp: { dir: string; cleanup: () => void }
let fixture: Fixture

beforeAll(async () => {
  temp = scratch('serve')
  fixture = await buildFixture(join(temp.dir, 'data'))
})

afterAll(() => temp?.cleanup())

/** Start `dsh-memory serve` as a real process (Node runs the TypeScript source) and wait for its URL line. */
function serve(args: string[]): Promise<{ child: ChildProcess; url: string; stderr: () => string }> {
  const child = spawn(process.execPath, [BIN, 'serve', ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let err = ''
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk))
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL within 30 s; stderr: ${err}`)), 30_000)
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk
      const match = /dsh-memory web: (\S+)/.exec(out)
      if (match) {
        clearTimeout(timer)
        resolve({ child, url: match[1]!, stderr: () => err })
      }
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`serve exited with ${code}: ${err}`))
    })
  })
}

describe('dsh-memory serve', () => {
  it('prints a loopback URL with a token and serves the browser until SIGTERM', async () => {
    const { child, url, stderr } = await serve(['--port', '0', '--data-dir', fixture.dataDir])
    try {
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]{43}$/)
      await expect.poll(stderr).toContain('press Ctrl+C to stop')
      const origin = new URL(url).origin
      expect((await fetch(`${origin}/memories`)).status).toBe(401)
      const login = await fetch(url, { redirect: 'manual' })
      expect(login.status).toBe(303)
      const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!
      const page = await fetch(`${origin}/memories?q=${encodeURIComponent('数据库')}`, { headers: { cookie } })
      expect(page.status).toBe(200)
      expect(await page.text()).toContain('主数据库使用 PostgreSQL')
    } finally {
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
      child.kill('SIGTERM')
      expect(await exited).toBe(0)
    }
  })

  it('serves a PostgreSQL database: search, a memory page and an edit go through the server', async () => {
    const url = await freshDatabase('serve')
    expect((await cli(['migrate', '--from', fixture.dataDir, '--to', url, '--quiet'])).code).toBe(0)
    const { child, url: address, stderr } = await serve(['--port', '0', '--database-url', url])
    try {
      await expect.poll(stderr).toContain('press Ctrl+C to stop')
      expect(stderr()).toContain(`serving ${url.replace(`:${encodeURIComponent(clusterPassword())}@`, '@')} on`)
      expect(stderr()).not.toContain(clusterPassword())
      const origin = new URL(address).origin
      const login = await fetch(address, { redirect: 'manual' })
      const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!
      const page = await fetch(`${origin}/memories?q=${encodeURIComponent('数据库')}`, { headers: { cookie } })
      expect(page.status).toBe(200)
      expect(await page.text()).toContain('主数据库使用 PostgreSQL')
      const token = new URL(address).searchParams.get('token')!
      const api = (path: string, init: RequestInit = {}) => fetch(`${origin}/api${path}`, { ...init, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } })
      const memory = await api(`/memories/${fixture.memories.blogHost}`)
      expect(memory.status).toBe(200)
      expect(JSON.stringify(await memory.json())).toContain('ブログは Cloudflare Pages でホストしている。')
      // An edit through the browser lands in the database (a new version, the old one its history).
      const edit = await api(`/memories/${fixture.memories.blogHost}/edit`, { method: 'POST', body: JSON.stringify({ text: 'ブログは Vercel に移行した。' }) })
      expect(edit.status).toBe(200)
      const { id } = (await edit.json()) as { id: string }
      const shown = JSON.parse((await cli(['show', id, '--database-url', url, '--json'])).stdout)
      expect(shown.history.map((entry: { text: string }) => entry.text)).toEqual(['ブログは Cloudflare Pages でホストしている。', 'ブログは Vercel に移行した。'])
    } finally {
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
      child.kill('SIGTERM')
      expect(await exited).toBe(0)
    }
  })

  it('refuses to listen beyond loopback without --allow-remote', async () => {
    const refused = await cli(['serve', '--host', '0.0.0.0', '--port', '0', '--data-dir', fixture.dataDir])
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain('--allow-remote')
  })

  it('fails with exit 3 on a data dir without a database, and 2 on a bad port', async () => {
    expect((await cli(['serve', '--port', '0', '--data-dir', join(temp.dir, 'nothing')])).code).toBe(3)
    const bad = await cli(['serve', '--port', 'http', '--data-dir', fixture.dataDir])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('--port')
  })
})
