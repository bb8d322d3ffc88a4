/**
 * The browser half of @dsh-memory/web inside DSH's own web client, in real Chromium against
 * `dsh --profile web` with the packed preset and web packages installed the way a user
 * installs them (the row `name: '@dsh-memory/web'` mounts the host routes and the browser
 * bundle). One host boot, one browser page, the checks in order:
 * - the memory pill switches this session's mode and the next model request reflects it;
 * - a Settings → Plugins card saves a recall budget the next turn uses, without a restart,
 *   and refuses an invalid value naming the field;
 * - the memory panel lists a memory made in this session, forgets it, and it is gone from
 *   memory.db; a Chinese search finds a Chinese memory; the search box completes a prefix and
 *   offers "did you mean" for a misspelt English word and a wrong Chinese character;
 * - no response the browser received (HTTP bodies and WebSocket frames) carries a secret.
 * Screenshots (light/dark × en/zh of the pill, the panel and the card) go to
 * packages/web/test-results/screenshots/ (the README's copies are taken from there).
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { MemoryStore } from '@dsh-memory/store'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type DshHome, TEST_OVERLAY } from '../src/host.js'
import { contentText, lastUserText, type LoggedRequest, type ModelServer, requestText, startModelServer } from '../src/model-server.js'
import { launchChromium, SCREENSHOTS } from '../../../packages/web/test/support/chromium.js'
import { freshHome, tarballs, withHomeStore } from './helpers.js'
import { recallTexts } from './support/recall-requests.js'
import { startWebSurface, useWebBundles, type WebSurface } from './support/web-surface.js'

const OLD_SECRET = 'sk-embed-secret-first-0001'
const NEW_SECRET = 'sk-embed-secret-second-0002'
const REMEMBER = '记住：这个会话的代号是青鸟。'
const SESSION_MEMORY = '本会话的代号是青鸟。'
const CHINESE_MEMORY = '订单服务的主数据库是 PostgreSQL，备份保存在杭州。'
const FIRST_PROMPT = 'How is the staging database set up?'
const WAIT = { timeout: 30_000, interval: 250 }
/** Who the host and this test's own writes are (see `withStore` below). */
const WEB_USER = 'web-e2e@team.example'

/** What one turn's model request got from recall: the recall messages it added to the history. */
interface TurnRecall {
  readonly request: LoggedRequest
  /** Text of the new recall messages ('' when recall added none). */
  readonly text: string
  /** Memory ids they list. */
  readonly ids: string[]
}

/** The scripted distillation: the L1 extraction of the "remember" message, once; nothing otherwise. */
function distillReply(request: LoggedRequest, state: { extracted: boolean }): string {
  const system = contentText(request.body.messages.find((message) => message.role === 'system')?.content)
  const prompt = request.body.messages.map((message) => contentText(message.content)).join('\n')
  const alias = /\[(m\d+)\] user: 记住/.exec(prompt)?.[1]
  if (system.startsWith('[dsh-memory:distill/l1]') && alias && !state.extracted) {
    state.extracted = true
    return JSON.stringify({ memories: [{ kind: 'fact', text: SESSION_MEMORY, scope: 'workspace', priority: 3, src: [alias] }] })
  }
  return system.startsWith('[dsh-memory:distill/dedup]') ? '{"decisions":[]}' : '{"memories":[]}'
}

describe('the dsh-memory browser half in the real DSH web client', () => {
  let server: ModelServer
  let home: DshHome
  let root: string
  let cleanup: () => Promise<void>
  let surface: WebSurface | undefined
  let browser: Browser | undefined
  let page: Page
  const received: string[] = []
  const workspace = () => join(root, 'work', 'alpha')
  const chats = () => server.requests.filter((request) => request.purpose === 'chat')
  // One user for the memories this test writes and for the host: its HOME is the workspace, so
  // the default identity (git's global user.email, read from HOME) would differ from the test's.
  const withStore = <T>(fn: (store: MemoryStore) => Promise<T>) => withHomeStore(home, fn, { user: WEB_USER })

  /** Type a prompt into the composer, wait for the model's answer to show, and return what recall added to that turn. */
  const send = async (text: string): Promise<TurnRecall> => {
    const before = chats().length
    const composer = page.locator('textarea').last()
    await composer.fill(text)
    await composer.press('Enter')
    await expect.poll(() => chats().length, WAIT).toBeGreaterThan(before)
    await page.getByText(`Noted: ${text}`).first().waitFor({ timeout: 30_000 })
    const request = chats()[before]!
    const fresh = recallTexts(request).slice(before === 0 ? 0 : recallTexts(chats()[before - 1]!).length)
    return { request, text: fresh.join('\n'), ids: fresh.flatMap((recall) => [...recall.matchAll(/<memory id="([^"]+)"/g)].map((match) => match[1]!)) }
  }

  beforeAll(async () => {
    const distill = { extracted: false }
    server = await startModelServer({
      responder: (request) => {
        if (request.purpose === 'background') return { kind: 'text', text: distillReply(request, distill) }
        if (request.purpose !== 'chat') return undefined
        return { kind: 'text', text: `Noted: ${lastUserText(request.body)}` }
      },
    })
    ;({ home, root, cleanup } = await freshHome('webclient'))
    await mkdir(workspace(), { recursive: true })
    const profileDir = await home.createProfile('web', tarballs(), ['@dsh-memory/preset', '@dsh-memory/web'])
    await useWebBundles(profileDir)
    // The bare package name: the host finds the browser half only through such a row.
    await writeFile(
      join(profileDir, 'cordis.patch.yml'),
      `${TEST_OVERLAY}- insert:\n    - id: memory-web\n      name: '@dsh-memory/web'\n      config:\n        path: /memory\n        token: ''\n        palaceWorkspaces: []\n`,
    )
    // A secret already in the user's settings document before the browser ever connects.
    await writeFile(join(home.dir, 'settings.yaml'), `memory-recall:\n  embedding:\n    apiKey: ${OLD_SECRET}\n`)
    await withStore(async (store) => {
      for (const text of [
        'The staging database runs PostgreSQL 16 in Frankfurt.',
        'The shop deploys to Fly.io from the main branch.',
        'Lint runs in the CI pipeline on every push.',
        'The CI pipeline caches pnpm downloads between runs.',
        'The CI pipeline publishes coverage reports to Codecov.',
        CHINESE_MEMORY,
      ]) {
        await store.memories.add({ kind: 'fact', text, scope: 'global' })
      }
      for (const topic of ['gardening tomatoes', 'marathon training', 'jazz records', 'sourdough baking', 'chess openings', 'bird watching', 'sailing knots', 'tax filing']) {
        await store.memories.add({ kind: 'fact', text: `The user once mentioned ${topic} in passing.`, scope: 'global' })
      }
    })
    // HOME is the workspace, so the client's directory picker opens right on it.
    surface = await startWebSurface(home, { profile: 'web', cwd: workspace(), env: { DEEPSEEK_BASE_URL: server.url, HOME: workspace(), DSH_MEMORY_USER: WEB_USER } })
    browser = await launchChromium()
    page = await (await browser.newContext({ viewport: { width: 1360, height: 900 }, locale: 'en-US', colorScheme: 'light' })).newPage()
    // Everything the browser receives, to look for secrets at the end.
    page.on('response', (response) => {
      void response.text().then(
        (body) => received.push(body),
        () => undefined,
      )
    })
    page.on('websocket', (socket) => socket.on('framereceived', (frame) => received.push(String(frame.payload))))
    await page.goto(surface.origin)
    await page.getByRole('button', { name: 'Continue' }).click()
    await page.getByRole('button', { name: 'Choose workspace' }).click()
    await page.getByRole('button', { name: 'Open', exact: true }).click()
  }, 600_000)

  afterAll(async () => {
    await browser?.close()
    await surface?.stop()
    await server?.close()
    await cleanup?.()
  })

  it('the pill shows what recall injected and switches the mode; the next model request follows the switch', async () => {
    // The session's first turn asks to remember something: distillation makes a memory of it
    // in the background (the panel test below finds it under "This session").
    await send(REMEMBER)
    const first = await send(FIRST_PROMPT)
    expect(first.text).toContain('PostgreSQL 16')
    const recalled = page.getByTestId('dshm-recalled')
    await expect.poll(() => recalled.innerText(), WAIT).toBe(`${first.ids.length} recalled`)
    await recalled.click()
    await expect.poll(() => page.getByTestId('dshm-recall-list').innerText(), WAIT).toContain('The staging database runs PostgreSQL 16 in Frankfurt.')
    await page.screenshot({ path: join(SCREENSHOTS, 'client-pill-light-en.png') })
    await recalled.click()

    // Off: the next request gets no recall of its own (the first turn's message stays in history).
    await page.getByTestId('dshm-mode').click()
    await page.locator('[data-testid=dshm-mode-menu] [data-mode=off]').click()
    await expect.poll(() => page.getByTestId('dshm-mode').innerText(), WAIT).toBe('off')
    const off = await send('Where does the shop deploy to?')
    expect(off.ids).toEqual([])
    expect(requestText(off.request.body)).not.toContain('Fly.io')

    // Back to auto: recall is back on the very next turn.
    await page.getByTestId('dshm-mode').click()
    await page.locator('[data-testid=dshm-mode-menu] [data-mode=auto]').click()
    await expect.poll(() => page.getByTestId('dshm-mode').innerText(), WAIT).toBe('auto')
    const auto = await send('Which platform does the shop deploy to?')
    expect(auto.text).toContain('Fly.io')
  })

  it('a settings card refuses an invalid budget naming the field, saves a valid one, and the next turn uses it without a restart', async () => {
    await page.getByRole('button', { name: 'Settings' }).click()
    await page.getByText('Plugins', { exact: true }).first().click()
    const card = page.getByTestId('dshm-card-memory-recall')
    await card.locator('.dshm-card-head').click()
    const maxResults = card.locator('[data-field="recall.maxResults"] input')
    await maxResults.fill('0')
    await card.getByRole('button', { name: 'Save', exact: true }).click()
    await expect.poll(() => card.locator('.dshm-error').innerText(), WAIT).toContain('recall.maxResults')
    expect(await readFile(join(home.dir, 'settings.yaml'), 'utf8')).not.toContain('maxResults')

    await maxResults.fill('1')
    await card.locator('[data-field="embedding.apiKey"] input').fill(NEW_SECRET)
    await card.getByRole('button', { name: 'Save', exact: true }).click()
    await expect.poll(() => card.locator('.dshm-ok').innerText(), WAIT).toContain('Saved')
    await card.screenshot({ path: join(SCREENSHOTS, 'client-card-light-en.png') })
    const document = await readFile(join(home.dir, 'settings.yaml'), 'utf8')
    expect(document).toMatch(/maxResults: 1/)
    // The new key reached the host's document (a secret travels browser → host only).
    expect(document).toContain(NEW_SECRET)
    await page.keyboard.press('Escape')

    // Three memories about the CI pipeline match (none recalled before); the saved budget lets one through.
    const turn = await send('What does the CI pipeline do?')
    expect(turn.ids).toHaveLength(1)
    expect(turn.text).toMatch(/CI pipeline/)

    // Reset to default: the field leaves the user's section and re-inherits the row's config.
    await page.getByRole('button', { name: 'Settings' }).click()
    await page.getByText('Plugins', { exact: true }).first().click()
    // The host may keep the tab (and the card's open state) mounted between visits.
    const head = card.locator('.dshm-card-head')
    if ((await head.getAttribute('aria-expanded')) !== 'true') await head.click()
    await card.locator('[data-field="recall.maxResults"]').getByRole('button', { name: 'Reset to default' }).click()
    await card.getByRole('button', { name: 'Save', exact: true }).click()
    await expect.poll(() => card.locator('.dshm-ok').innerText(), WAIT).toContain('Saved')
    await expect.poll(() => maxResults.inputValue(), WAIT).toBe('5')
    const reset = await readFile(join(home.dir, 'settings.yaml'), 'utf8')
    expect(reset).not.toContain('maxResults')
    expect(reset).toContain(NEW_SECRET)
    await page.keyboard.press('Escape')
  })

  it('the panel lists a memory made in this session, forgets it, and it is gone from memory.db', async () => {
    // Distilled in the background from the session's first message (see the first test).
    const sessionMade = () => withStore(async (store) => (await store.memories.list({ limit: 100 })).filter((memory) => memory.text === SESSION_MEMORY))
    await expect.poll(async () => (await sessionMade()).length, WAIT).toBe(1)
    const [made] = await sessionMade()
    const id = made!.id
    expect(made!.sourceMessageIds).toHaveLength(1)

    await page.getByTestId('dshm-open-panel').click()
    const panel = page.getByTestId('dshm-panel')
    await panel.locator('[data-tab=session]').click()
    const row = panel.locator(`[data-memory-id="${id}"]`)
    await expect.poll(() => row.innerText(), WAIT).toContain(SESSION_MEMORY)
    await page.screenshot({ path: join(SCREENSHOTS, 'client-panel-light-en.png') })
    page.once('dialog', (dialog) => void dialog.accept())
    await row.locator('[data-action=forget]').click()
    await expect.poll(() => row.count(), WAIT).toBe(0)
    await withStore(async (store) => {
      expect(await store.memories.get(id)).toBeUndefined()
    })
    expect(await sessionMade()).toEqual([])
  })

  it('the panel gives this session a palace memory name', async () => {
    const panel = page.getByTestId('dshm-panel')
    await panel.locator('[data-tab=palace]').click()
    await panel.getByTestId('dshm-palace-name-input').fill('Qingniao')
    await panel.getByTestId('dshm-palace').getByRole('button', { name: 'Save', exact: true }).click()
    await expect.poll(() => panel.getByTestId('dshm-palace-name').innerText(), WAIT).toContain('Qingniao')
    // The palace's own record in the workspace, as palace_config writes it.
    const names = JSON.parse(await readFile(join(workspace(), 'memory-palace', '.namespaces.json'), 'utf8')) as { sessions: Record<string, string> }
    expect(Object.values(names.sessions)).toEqual(['Qingniao'])
  })

  it('a Chinese search in the panel finds the Chinese memory', async () => {
    const panel = page.getByTestId('dshm-panel')
    await panel.locator('[data-tab=global]').click()
    await panel.getByTestId('dshm-search').fill('数据库')
    const list = panel.getByTestId('dshm-list')
    await expect.poll(() => list.innerText(), WAIT).toContain(CHINESE_MEMORY)
    expect(await list.innerText()).not.toContain('PostgreSQL 16 in Frankfurt')
  })

  it('the panel search box completes a prefix and offers "did you mean" for a misspelt word, Chinese included', async () => {
    const panel = page.getByTestId('dshm-panel')
    await panel.locator('[data-tab=global]').click()
    const search = panel.getByTestId('dshm-search')
    const hint = (testId: string) => panel.getByTestId(testId).innerText().catch(() => '')
    await search.fill('Frankf')
    await expect.poll(() => hint('dshm-completions'), WAIT).toContain('frankfurt')
    // A transposed letter: the store finds nothing, the box says what was meant, one click searches it.
    await search.fill('Frankfrut')
    await expect.poll(() => hint('dshm-did-you-mean'), WAIT).toContain('frankfurt')
    await panel.getByTestId('dshm-did-you-mean').getByRole('button', { name: 'frankfurt' }).click()
    await expect.poll(() => search.inputValue(), WAIT).toBe('frankfurt')
    await expect.poll(() => panel.getByTestId('dshm-list').innerText(), WAIT).toContain('PostgreSQL 16 in Frankfurt')
    // A wrong Chinese character (杭洲 for 杭州).
    await search.fill('杭洲')
    await expect.poll(() => hint('dshm-did-you-mean'), WAIT).toContain('杭州')
    await page.screenshot({ path: join(SCREENSHOTS, 'client-panel-suggest-light-en.png') })
  })

  it('the panel switches an explicit layer for this session through /memory', async () => {
    const panel = page.getByTestId('dshm-panel')
    await panel.locator('[data-tab=layers]').click()
    const status = panel.getByTestId('dshm-layers').locator('.dshm-status')
    await expect.poll(() => status.innerText(), WAIT).toContain('Layers: none enabled')
    await panel.locator('[data-layer=global][data-action=enable]').click()
    await expect.poll(() => status.innerText(), WAIT).toContain('Enabled the global layer for this session')
    await panel.locator('[data-layer=global][data-action=disable]').click()
    await expect.poll(() => status.innerText(), WAIT).toContain('Disabled the global layer')
  })

  it('no response the browser received carries a secret', async () => {
    // Reload everything the settings page and the panel read, so the check covers fresh answers too.
    await page.reload()
    await page.getByRole('button', { name: 'Settings' }).click()
    await page.getByText('Plugins', { exact: true }).first().click()
    await page.getByTestId('dshm-card-memory-recall').locator('.dshm-card-head').click()
    await page.getByTestId('dshm-card-memory-recall').locator('[data-field="embedding.apiKey"]').waitFor()
    // The capture and cue-bank cards are read too (the preset's rows register their namespaces).
    for (const [namespace, field] of [['memory-capture', 'maxMessageChars'], ['memory-cue-bank', 'inject.format']]) {
      await page.getByTestId(`dshm-card-${namespace}`).locator('.dshm-card-head').click()
      await page.getByTestId(`dshm-card-${namespace}`).locator(`[data-field="${field}"]`).waitFor()
    }
    expect(received.length).toBeGreaterThan(10)
    for (const body of received) {
      expect(body).not.toContain(OLD_SECRET)
      expect(body).not.toContain(NEW_SECRET)
    }
  })

  it('renders in dark and light, English and Chinese (screenshots)', async () => {
    for (const [colorScheme, locale] of [['dark', 'zh-CN'], ['light', 'zh-CN'], ['dark', 'en-US']] as const) {
      const name = `${colorScheme}-${locale.slice(0, 2)}`
      const view = await browser!.newContext({ viewport: { width: 1360, height: 900 }, locale, colorScheme })
      const other = await view.newPage()
      await other.goto(surface!.origin)
      // The sidebar lists the session under the start of its first prompt.
      await other.getByText('记住').first().click()
      // The UI follows the client's language: the pill's own label says so.
      await expect.poll(() => other.locator('.dshm-pill-label').innerText(), WAIT).toBe(locale === 'zh-CN' ? '记忆' : 'Memory')
      await other.getByRole('button', { name: /^(Settings|设置)$/ }).click()
      await other.getByText(/^(Plugins|插件)$/).first().click()
      const card = other.getByTestId('dshm-card-memory-recall')
      await card.locator('.dshm-card-head').click()
      await card.locator('[data-field="recall.maxResults"]').waitFor()
      await card.screenshot({ path: join(SCREENSHOTS, `client-card-${name}.png`) })
      await other.keyboard.press('Escape')
      await other.getByTestId('dshm-recalled').click()
      await other.getByTestId('dshm-recall-list').waitFor()
      await other.screenshot({ path: join(SCREENSHOTS, `client-pill-${name}.png`) })
      await other.getByTestId('dshm-open-panel').click()
      await other.locator('[data-testid=dshm-panel] [data-tab=global]').click()
      await other.getByTestId('dshm-memory').first().waitFor()
      expect(await other.getByTestId('dshm-memory').count()).toBeGreaterThan(0)
      await other.screenshot({ path: join(SCREENSHOTS, `client-panel-${name}.png`) })
      await view.close()
    }
  })
})
