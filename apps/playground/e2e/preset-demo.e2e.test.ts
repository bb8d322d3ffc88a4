import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { PLAYGROUND_DIR } from '../src/host.js'

const DEMO = join(PLAYGROUND_DIR, 'dist', 'demo.js')

describe('npm run demo', () => {
  let root: string | undefined
  afterAll(async () => {
    if (root && !process.env.KEEP_E2E) await rm(root, { recursive: true, force: true })
  })

  it('installs the preset, runs the story in the real host and shows what was captured, distilled, recalled and archived', async () => {
    // scripts/demo.sh runs the built demo after `npm run setup` (which builds every workspace).
    expect(existsSync(DEMO)).toBe(true)
    root = await mkdtemp(join(tmpdir(), 'dshm-demo-'))
    const env: NodeJS.ProcessEnv = { ...process.env, DSH_MEMORY_DEMO_DIR: root }
    delete env.DEEPSEEK_API_KEY
    const { stdout } = await promisify(execFile)(process.execPath, [DEMO], { env, encoding: 'utf8', timeout: 400_000, maxBuffer: 16 * 1024 * 1024 })
    const sections = ['▶ session 1', '▶ session 5', '━━ Captured (L0)', '━━ Distilled (L1)', '━━ Recalled', '━━ Archived', '━━ The dsh-memory CLI']
    for (const section of sections) expect(stdout, section).toContain(section)
    const at = (section: string) => stdout.indexOf(section)
    expect(sections.map(at)).toEqual([...sections.map(at)].sort((a, b) => a - b))
    // Captured and distilled, CJK included.
    expect(stdout).toContain('user      我的博客用 Astro 搭建，部署在 Cloudflare Pages 上。')
    expect(stdout).toMatch(/instruction\s+shop-api\s+Deploy the shop API on Tuesdays only\./)
    expect(stdout).toMatch(/fact\s+blog\s+博客部署在 Cloudflare Pages 上。/)
    // Recalled into session 4, and the answer used it.
    const recalled = stdout.slice(at('━━ Recalled'), at('━━ Archived'))
    expect(recalled).toContain('<recalled-memories source="dsh-memory" untrusted="true">')
    expect(recalled).toContain('Deploy the shop API on Tuesdays only.')
    expect(recalled).toContain('The shop API uses PostgreSQL (not MySQL).')
    expect(stdout).toMatch(/assistant: From memory: .*Tuesdays.*PostgreSQL|assistant: From memory: .*PostgreSQL.*Tuesdays/)
    // Archived verbatim in the workspace's memory palace.
    expect(stdout).toMatch(/shop-api\/memory-palace\/Shop API\/\d{4}-\d{2}\/release-notes\/assistant-release-notes-\d{8}-\d{6}\.md\n\s+Release notes for shop API v2\.3/)
    // The CLI read the same data dir, and the path to inspect is printed.
    expect(stdout).toContain('L1 memories 5 current')
    // The status lists real workspaces only: the palace's index is not an L0 conversation.
    expect(stdout).not.toContain('memory-palace:')
    expect(stdout).toContain(`Data dir to inspect: ${join(root, 'dsh-home', 'memory')}`)
    expect(existsSync(join(root, 'dsh-home', 'memory', 'memory.db'))).toBe(true)
  })
})
