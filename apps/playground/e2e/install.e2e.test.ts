import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { openMemoryStore } from '@dsh-memory/store'
import { readOverrides, TARBALL_FOLDER } from 'dsh-memory'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DshHome, HOST_DIR, REPO_ROOT } from '../src/host.js'
import { lastUserText, startModelServer, type ModelServer } from '../src/model-server.js'
import { freshHome } from './helpers.js'

/** The fenced `sh` blocks of the root README's install section, read at test time so the two cannot drift. */
function readmeInstallBlocks(): string[] {
  const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8')
  const section = readme.slice(readme.indexOf('## Install into a DSH profile'), readme.indexOf('\n## ', readme.indexOf('## Install into a DSH profile') + 3))
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!)
}

/** Run shell text the way a user pastes it: bash, from the checkout, with `dsh` and pnpm on PATH. */
function runBlock(block: string, home: DshHome): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-euo', 'pipefail', '-c', block], {
      cwd: REPO_ROOT,
      // The pinned host's bin folder has `dsh`, `pnpm` and Node 22, as a user's global install would.
      env: { ...home.env(), PATH: [join(HOST_DIR, 'node_modules/.bin'), home.env().PATH].join(':') },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk))
    child.on('close', (code) => resolve({ code, output }))
  })
}

function profileBundles(home: DshHome, profile: string): string[] {
  const manifest = JSON.parse(readFileSync(join(home.dir, 'profiles', profile, 'package.json'), 'utf8')) as { dsh: { profile: { bundles: string[] } } }
  return manifest.dsh.profile.bundles
}

describe('installing from the README into a fresh DSH home', () => {
  let server: ModelServer
  const homes: { home: DshHome; root: string; cleanup: () => Promise<void> }[] = []

  beforeAll(async () => {
    server = await startModelServer({ responder: (request) => ({ kind: 'text', text: `Noted: ${lastUserText(request.body).slice(0, 40)}` }) })
  })
  afterAll(async () => {
    await server?.close()
    for (const entry of homes) await entry.cleanup()
  })

  async function home(label: string) {
    const entry = await freshHome(label)
    homes.push(entry)
    return entry
  }

  it('the install block sets up a web and a headless profile, and a headless turn is captured', async () => {
    const [block] = readmeInstallBlocks()
    expect(block).toContain('dsh-memory install --profile web')
    expect(block).toContain('dsh-memory install --profile headless')
    const { home: dsh, root } = await home('readme')
    const run = await runBlock(block!, dsh)
    expect(run.output).not.toMatch(/\n\s+at .+:\d+:\d+/)
    expect(run.code, run.output).toBe(0)
    expect(run.output).toContain('installed @dsh-memory/preset into profile web')
    expect(run.output).toContain(`verified: a boot of the profile loaded them and opened ${join(dsh.dir, 'memory', 'memory.db')}`)
    // DSH created both profiles from its templates and kept its pnpm settings under our pins.
    expect(profileBundles(dsh, 'web')).toEqual(['@deepseek-ai/dsh-base', '@deepseek-ai/dsh-web-app', '@dsh-memory/preset'])
    expect(profileBundles(dsh, 'headless')).toEqual(['@deepseek-ai/dsh-base', '@deepseek-ai/dsh-headless', '@dsh-memory/preset'])
    const workspace = readFileSync(join(dsh.dir, 'profiles', 'web', 'pnpm-workspace.yaml'), 'utf8')
    for (const line of ['packages:', '  - .', 'nodeLinker: hoisted', 'autoInstallPeers: false']) expect(workspace).toContain(line)
    expect(readOverrides(workspace)['@dsh-memory/store']).toMatch(new RegExp(`^file:${join(dsh.dir, 'profiles', 'web', TARBALL_FOLDER)}/[0-9a-f]{12}/dsh-memory-store-.+\\.tgz$`))

    const prompt = '请记住：我们的发布日是每周二。 Release day is Tuesday.'
    const turn = await dsh.run({ profile: 'headless', cwd: join(root, 'work', 'shop'), modelUrl: server.url, args: [prompt] })
    expect(turn.code, turn.stderr).toBe(0)
    const store = openMemoryStore({ path: join(dsh.dir, 'memory', 'memory.db'), readonly: true })
    try {
      const [conversation] = await store.conversations.list()
      const messages = await store.messages.list({ conversationId: conversation!.id })
      expect(messages.map((message) => [message.role, message.text])).toEqual([
        ['user', prompt],
        ['assistant', `Noted: ${prompt.slice(0, 40)}`],
      ])
    } finally {
      await store.close()
    }

    // Uninstall takes the packages, pins and rows out of one profile and keeps the data.
    const removed = await runBlock('npx --no-install dsh-memory uninstall --profile web --json', dsh)
    expect(removed.code, removed.output).toBe(0)
    const report = JSON.parse(removed.output.split('\n').find((line) => line.startsWith('{'))!) as { removed: string[]; overridesRemoved: string[]; dataDirKept: string }
    expect(report.removed).toEqual(['@dsh-memory/preset'])
    expect(report.overridesRemoved).toContain('@dsh-memory/store')
    expect(report.dataDirKept).toBe(join(dsh.dir, 'memory'))
    expect(profileBundles(dsh, 'web')).toEqual(['@deepseek-ai/dsh-base', '@deepseek-ai/dsh-web-app'])
    const dump = await runBlock('dsh --profile web --dump-config', dsh)
    expect(dump.code).toBe(0)
    expect(dump.output).not.toContain('id: memory-')
    expect(readFileSync(join(dsh.dir, 'profiles', 'web', 'pnpm-workspace.yaml'), 'utf8')).toContain('nodeLinker: hoisted')
    expect(existsSync(join(dsh.dir, 'memory', 'memory.db'))).toBe(true)
  }, 900_000) // two profile installs, a turn and an uninstall on a shared 2-core machine

  it('the manual steps, in the README order, install a profile that boots', async () => {
    const manual = readmeInstallBlocks().find((block) => block.includes('npm pack'))
    expect(manual).toBeDefined()
    const { home: dsh } = await home('manual')
    const run = await runBlock(manual!, dsh)
    expect(run.code, run.output).toBe(0)
    expect(run.output).toContain('id: memory-preset-capture')
    expect(run.output).toContain(join(dsh.dir, 'memory', 'memory.db'))
  }, 600_000)

  it('refuses a profile whose pnpm settings another tool wrote, says what to do, and changes nothing', async () => {
    const { home: dsh } = await home('broken')
    const dir = join(dsh.dir, 'profiles', 'web')
    await mkdir(dir, { recursive: true })
    // The broken state: pnpm-workspace.yaml written before DSH created the profile.
    const early = "overrides:\n  '@dsh-memory/store': 'file:/tmp/dshm/dsh-memory-store-0.1.0.tgz'\nonlyBuiltDependencies: [better-sqlite3]\n"
    await writeFile(join(dir, 'pnpm-workspace.yaml'), early)
    await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'dsh-profile-web', private: true, dependencies: {}, dsh: { profile: { bundles: ['@deepseek-ai/dsh-base', '@deepseek-ai/dsh-web-app'] } } }))
    const run = await runBlock('npx --no-install dsh-memory install --profile web --json', dsh)
    expect(run.code).toBe(1)
    const report = JSON.parse(run.output.split('\n').find((line) => line.startsWith('{'))!) as { ok: boolean; error: { reason: string; message: string; next: string } }
    expect(report).toMatchObject({ ok: false, error: { reason: 'profile-broken' } })
    expect(report.error.message).toContain('nodeLinker: hoisted')
    expect(report.error.next).toContain('--repair')
    expect(run.output).not.toMatch(/\n\s+at .+:\d+:\d+/)
    expect(readFileSync(join(dir, 'pnpm-workspace.yaml'), 'utf8')).toBe(early)
    expect(existsSync(join(dir, 'node_modules'))).toBe(false)
  })
})
