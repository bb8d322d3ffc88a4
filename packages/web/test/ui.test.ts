import { join } from 'node:path'
import { type MemoryStore, openMemoryStore } from '@dsh-memory/store'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type RunningMemoryBrowser, startMemoryBrowser } from '../src/index.ts'
import { launchChromium, SCREENSHOTS } from './support/chromium.ts'
import { buildWebFixture, scratch, type WebFixture } from './fixture.ts'

let temp: { dir: string; cleanup: () => void }
let fixture: WebFixture
let app: RunningMemoryBrowser
let chromium: Browser

beforeAll(async () => {
  temp = scratch('ui')
  fixture = await buildWebFixture(temp.dir)
  app = await startMemoryBrowser({ dataDir: fixture.dataDir, port: 0 })
  chromium = await launchChromium()
  console.log(`[web] screenshots: ${SCREENSHOTS}`)
})

afterAll(async () => {
  await chromium?.close()
  await app?.close()
  temp?.cleanup()
})

/** A browser context that opened the printed URL once (so it holds the token cookie). */
async function session(options: { colorScheme?: 'light' | 'dark'; locale?: string } = {}): Promise<{ context: BrowserContext; page: Page }> {
  const context = await chromium.newContext({ viewport: { width: 1360, height: 900 }, colorScheme: options.colorScheme ?? 'light', locale: options.locale ?? 'en-US' })
  const page = await context.newPage()
  const errors: string[] = []
  page.on('pageerror', (error) => errors.push(error.message))
  const response = await page.goto(app.url)
  expect(response?.status()).toBe(200)
  expect(page.url()).not.toContain('token=')
  return { context, page }
}

/** Runs `test` on the page of a fresh {@link session}, closing its context afterwards whatever happens. */
async function inSession(options: Parameters<typeof session>[0], test: (page: Page) => Promise<void>): Promise<void> {
  const { context, page } = await session(options)
  try {
    await test(page)
  } finally {
    await context.close()
  }
}

const shot = (page: Page, name: string) => page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true })

/** Open `path` of the browser and save its screenshot as `name`. */
async function shotAt(page: Page, path: string, name: string): Promise<void> {
  await page.goto(`${app.origin}${path}`)
  await shot(page, name)
}

/** Read through a second, read-only store on the same file (what another process sees). */
async function readStore<T>(fn: (store: MemoryStore) => Promise<T>): Promise<T> {
  const store = openMemoryStore({ path: join(fixture.dataDir, 'memory.db'), readonly: true })
  try {
    return await fn(store)
  } finally {
    await store.close()
  }
}

describe('the memory browser in Chromium', () => {
  it('loads every page from the fixture store and saves a screenshot of each', async () => {
    await inSession({}, async (page) => {
      const pages: [string, string, string][] = [
        ['overview', '/', 'L1 memories'],
        ['memories', '/memories', 'Helix'],
        ['memory', `/memories/${fixture.memories.database}`, '我们决定使用 PostgreSQL'],
        ['scenes', '/scenes', 'Shop API infrastructure'],
        ['scene', `/scenes/${fixture.scene}`, '主数据库使用 PostgreSQL'],
        ['conversations', '/conversations', 'ブログの移行'],
        ['conversation', `/conversations/${encodeURIComponent(fixture.conversations.shop)}`, '明白了：主数据库是 PostgreSQL'],
        ['cues', '/cues', '选择主数据库'],
        ['palace', '/palace', 'Shop Alpha'],
        ['tree', '/tree', 'Shop API'],
        ['tree-project', `/tree/${encodeURIComponent(fixture.projectId)}`, 'Use PostgreSQL as the primary database.'],
      ]
      for (const [name, path, expected] of pages) {
        const response = await page.goto(`${app.origin}${path}`)
        expect(response?.status(), path).toBe(200)
        await expect.poll(() => page.textContent('main'), { timeout: 5000 }).toContain(expected)
        await shot(page, `${name}-light`)
      }
      // The overview chart is a real SVG with one area per series.
      await page.goto(`${app.origin}/`)
      expect(await page.locator('[data-card="chart"] svg polygon.area').count()).toBeGreaterThanOrEqual(4)
      expect(await page.locator('[data-card="cost"] tbody tr').count()).toBeGreaterThanOrEqual(4)
      expect(await page.textContent('[data-card="cost"]')).toContain('deepseek-v4-pro')
      expect(await page.textContent('[data-card="distill"]')).toContain('model call failed: HTTP 500')
      // Palace volumes and the summary read; tree branches and checkpoints open.
      await page.goto(`${app.origin}/palace`)
      await page.locator('[data-volume]').first().click()
      expect(await page.textContent('[data-palace-text]')).toMatch(/PostgreSQL schema for orders|Flaky|flaky/)
      await shot(page, 'palace-read-light')
      await page.goto(`${app.origin}/tree/${encodeURIComponent(fixture.projectId)}`)
      expect(await page.textContent('[data-card="branches"]')).toContain('Evaluate CDNs')
      await page.locator('[data-card="checkpoints"] a').first().click()
      expect(await page.textContent('main')).toContain('Stage 1: storage settled')
      await shot(page, 'tree-checkpoint-light')
      await page.goto(`${app.origin}/tree/${encodeURIComponent(fixture.projectId)}`)
      await page.locator('[data-card="branches"] a', { hasText: 'Try a read replica' }).click()
      expect(await page.textContent('main')).toContain('Measured replica lag: 40 ms.')
    })
  })

  it('follows a dark system theme, toggles and persists the theme, and saves dark screenshots', async () => {
    await inSession({ colorScheme: 'dark' }, async (page) => {
      await page.goto(`${app.origin}/`)
      const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor)
      expect(await background()).toBe('rgb(15, 19, 32)')
      await shot(page, 'overview-dark')
      await shotAt(page, '/memories', 'memories-dark')
      await shotAt(page, `/memories/${fixture.memories.editor}`, 'memory-dark')
      // Toggle to light: applied at once, and rendered by the server after a reload.
      await page.click('[data-set-theme="light"]')
      expect(await page.getAttribute('html', 'data-theme')).toBe('light')
      await page.reload()
      expect(await page.getAttribute('html', 'data-theme')).toBe('light')
      expect(await background()).toBe('rgb(246, 247, 251)')
      await page.click('[data-set-theme="dark"]')
      await page.reload()
      expect(await page.getAttribute('html', 'data-theme')).toBe('dark')
    })
  })

  it('shows the Chinese UI from Accept-Language, and switches language persistently', async () => {
    await inSession({ locale: 'zh-CN' }, async (page) => {
      await page.goto(`${app.origin}/`)
      expect(await page.textContent('[data-nav="memories"]')).toContain('记忆')
      expect(await page.textContent('main')).toContain('按服务商、模型和层级统计的 token 成本')
      await shot(page, 'overview-zh')
      await shotAt(page, '/memories', 'memories-zh')
      await page.click('[data-lang="en"]')
      expect(await page.textContent('[data-nav="memories"]')).toContain('Memories')
      expect(new URL(page.url()).pathname).toBe('/memories')
      await page.goto(`${app.origin}/`)
      expect(await page.textContent('[data-nav="overview"]')).toContain('Overview')
    })
  })

  it('finds a memory by a Chinese word', async () => {
    await inSession({}, async (page) => {
      await page.goto(`${app.origin}/memories`)
      await page.fill('input[name="q"]', '数据库')
      await page.click('form[role="search"] button[type="submit"]')
      await page.waitForURL(/q=/)
      const rows = page.locator('table.memories tbody tr')
      expect(await rows.count()).toBeGreaterThanOrEqual(1)
      expect(await page.getAttribute('table.memories tbody tr:first-child', 'data-memory-id')).toBe(fixture.memories.database)
      expect(await page.textContent('table.memories')).toContain('主数据库使用 PostgreSQL')
      await shot(page, 'search-zh-light')
      // Japanese too.
      await page.goto(`${app.origin}/memories?q=${encodeURIComponent('ブログ')}`)
      expect(await page.textContent('table.memories')).toContain('Cloudflare Pages')
    })
  })

  it('edits, forgets and promotes memories through the UI; the database shows each change', async () => {
    const { context, page } = await session()
    page.on('dialog', (dialog) => void dialog.accept())
    try {
      // Edit: a new version supersedes the old one.
      await page.goto(`${app.origin}/memories/${fixture.memories.deployDay}`)
      await page.fill('form[data-form="edit"] textarea', 'Deploy the shop API on Tuesdays only (周二).')
      await page.click('form[data-form="edit"] button[type="submit"]')
      await page.waitForURL((url) => url.searchParams.get('done') === 'saved')
      expect(await page.textContent('.flash')).toContain('Saved')
      const newId = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!)
      expect(newId).not.toBe(fixture.memories.deployDay)
      const edited = await readStore(async (store) => [await store.memories.get(fixture.memories.deployDay), await store.memories.get(newId)])
      expect(edited[1]).toMatchObject({ text: 'Deploy the shop API on Tuesdays only (周二).', supersededBy: null })
      expect(edited[0]?.supersededBy).toBe(newId)
      await shot(page, 'memory-edited-light')

      // Forget: the row is gone (confirmed in the dialog).
      await page.goto(`${app.origin}/memories/${fixture.memories.flaky}`)
      await page.click('form[data-form="forget"] button[type="submit"]')
      await page.waitForURL((url) => url.searchParams.get('done') === 'forgotten')
      expect(await readStore((store) => store.memories.get(fixture.memories.flaky))).toBeUndefined()

      // Promote: a global version supersedes the workspace one.
      await page.goto(`${app.origin}/memories/${fixture.memories.style}`)
      await page.click('form[data-form="promote"] button[type="submit"]')
      await page.waitForURL((url) => url.searchParams.get('done') === 'promoted')
      const promotedId = decodeURIComponent(new URL(page.url()).pathname.split('/').pop()!)
      const promoted = await readStore(async (store) => [await store.memories.get(fixture.memories.style), await store.memories.get(promotedId)])
      expect(promoted[1]).toMatchObject({ scope: 'global', workspace: null, supersededBy: null })
      expect(promoted[0]?.supersededBy).toBe(promotedId)
      expect(await page.textContent('[data-card="history"]')).toContain('Prefers small pull requests')

      // The audit log names the browser as the actor.
      expect((await readStore((store) => store.audit.list({ actor: 'web', limit: 10_000 }))).length).toBeGreaterThanOrEqual(3)
    } finally {
      await context.close()
    }
  })

  it('shows feedback history and source turns of a memory', async () => {
    await inSession({}, async (page) => {
      await page.goto(`${app.origin}/memories/${fixture.memories.editor}`)
      const feedback = await page.textContent('[data-card="feedback"]')
      expect(feedback).toContain('helpful 1')
      expect(feedback).toContain('unhelpful 1')
      expect(feedback).toContain(fixture.conversations.shop.slice(0, 20))
      await page.goto(`${app.origin}/memories/${fixture.memories.database}`)
      await page.locator('[data-card="sources"] .meta a').first().click()
      expect(await page.locator('.msg.target').textContent()).toContain('我们决定使用 PostgreSQL')
      await shot(page, 'conversation-source-light')
    })
  })

  it('renders a memory holding <script> as inert text', async () => {
    await inSession({}, async (page) => {
      await page.goto(`${app.origin}/memories/${fixture.memories.hostile}`)
      expect(await page.inputValue('form[data-form="edit"] textarea')).toContain('<script>window.__pwned = true</script>')
      await page.goto(`${app.origin}/memories?q=script`)
      expect(await page.textContent('table.memories')).toContain('<script>')
      expect(await page.evaluate(() => (window as unknown as { __pwned?: boolean }).__pwned)).toBeUndefined()
    })
  })

  it('answers 401 to a browser without the token', async () => {
    const context = await chromium.newContext()
    try {
      const page = await context.newPage()
      const response = await page.goto(`${app.origin}/memories`)
      expect(response?.status()).toBe(401)
      expect(await page.textContent('body')).toContain('token required')
      expect(await page.textContent('body')).not.toContain('PostgreSQL')
    } finally {
      await context.close()
    }
  })
})
