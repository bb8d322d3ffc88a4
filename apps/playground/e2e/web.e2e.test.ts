/**
 * The memory browser inside the real DSH web surface: a profile over `dsh-base` +
 * `dsh-web-app` with the packed `@dsh-memory/web` installed the way a user installs it, its
 * row added to the profile's patch; the launcher serves DSH's web client and, on the same
 * server, the memory browser under /memory, guarded by a random token the user finds in
 * `<data dir>/memory-web.url` (DSH does not print plugin logs).
 */
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { openMemoryStore } from '@dsh-memory/store'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DshHome } from '../src/host.js'
import { freshHome, tarballs } from './helpers.js'
import { startWebSurface, useWebBundles, type WebSurface } from './support/web-surface.js'

describe('@dsh-memory/web in the real DSH web surface', () => {
  let home: DshHome
  let root: string
  let cleanup: () => Promise<void>
  let surface: WebSurface | undefined
  let origin: string
  let dataDir: string

  beforeAll(async () => {
    ;({ home, root, cleanup } = await freshHome('web'))
    const profileDir = await home.createProfile('web', tarballs(), ['@dsh-memory/store', '@dsh-memory/web'])
    // The web surface instead of headless; the browser row and its store row in the profile's patch.
    await useWebBundles(profileDir)
    dataDir = join(home.dir, 'memory')
    await writeFile(
      join(profileDir, 'cordis.patch.yml'),
      [
        '- insert:',
        '    - id: memory-web-store',
        "      name: '@dsh-memory/store/plugin'",
        '      config:',
        "        dataDir: ''",
        '    - id: memory-web',
        "      name: '@dsh-memory/web/plugin'",
        '      config:',
        '        path: /memory',
        "        token: ''",
        '        palaceWorkspaces: []',
        '',
      ].join('\n'),
    )
    // Something to browse: one memory in the data dir the host's store row opens.
    const store = openMemoryStore({ path: join(dataDir, 'memory.db') })
    await store.memories.add({ kind: 'fact', text: '订单服务的主数据库是 PostgreSQL。', scope: 'global' })
    await store.close()

    surface = await startWebSurface(home, { profile: 'web', cwd: root })
    origin = surface.origin
  }, 600_000)

  afterAll(async () => {
    await surface?.stop()
    await cleanup?.()
  })

  it('serves the memory browser under /memory next to the DSH client, token-guarded', async () => {
    const url = (await readFile(join(dataDir, 'memory-web.url'), 'utf8')).trim()
    expect(url).toMatch(new RegExp(`^${origin.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/memory/\\?token=[A-Za-z0-9_-]{43}$`))
    expect((await fetch(`${origin}/memory/memories`)).status).toBe(401)
    const login = await fetch(url, { redirect: 'manual' })
    expect(login.status).toBe(303)
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0]!
    const page = await fetch(`${origin}/memory/memories?q=${encodeURIComponent('数据库')}`, { headers: { cookie } })
    expect(page.status).toBe(200)
    expect(await page.text()).toContain('订单服务的主数据库是 PostgreSQL。')
    // The DSH web client itself is still served by the same server.
    const client = await fetch(`${origin}/`)
    expect(client.status).toBe(200)
    expect(await client.text()).toMatch(/<html/i)
  })
})
