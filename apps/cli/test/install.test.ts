import { spawnSync } from 'node:child_process'
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { checkSingleCordis, dataDirOf, resolveDshHome } from '../src/install/installer.ts'
import { InstallError } from '../src/install/errors.ts'
import { nodeVersionOk } from '../src/install/launcher.ts'
import { checkoutRoot, parsePluginList, publishablePackages, tarballsIn } from '../src/install/packages.ts'
import { bundleRows, missingRows } from '../src/install/rows.ts'
import { checkScaffold, mergeWorkspaceYaml, readOverrides, removeOverrides } from '../src/install/workspace-yaml.ts'
import { cli, scratch } from './helpers.ts'

const REPO = join(dirname(fileURLToPath(import.meta.url)), '../../..')
const BIN = join(REPO, 'apps/cli/bin/dsh-memory.js')

// What dsh-app-boot's initProfile writes (rc.8), plus a comment and a setting a user added.
const HOST_FILE = `# my comment: keep me
packages:
  - .

nodeLinker: hoisted
autoInstallPeers: false
overrides:
  left-pad: 1.3.0 # pinned by hand
`

function reasonOf(run: () => unknown): string | undefined {
  try {
    run()
  } catch (error) {
    return error instanceof InstallError ? error.reason : `not an InstallError: ${String(error)}`
  }
  return undefined
}

describe('pnpm-workspace.yaml merge', () => {
  const overrides = { '@dsh-memory/store': 'file:/tmp/p/dsh-memory-store-0.1.0.tgz', '@dsh-memory/preset': 'file:/tmp/p/dsh-memory-preset-0.1.0.tgz' }

  it('adds our overrides and better-sqlite3 to the host file and keeps every line the host or user wrote', () => {
    const merged = mergeWorkspaceYaml(HOST_FILE, { overrides })
    for (const line of HOST_FILE.split('\n').filter(Boolean)) expect(merged).toContain(line)
    expect(readOverrides(merged)).toEqual({ 'left-pad': '1.3.0', ...overrides })
    expect(merged).toMatch(/onlyBuiltDependencies:\n\s+- better-sqlite3/)
    expect(checkScaffold(merged)).toEqual([])
  })

  it('is idempotent and replaces an earlier pin of the same package', () => {
    const once = mergeWorkspaceYaml(HOST_FILE, { overrides })
    expect(mergeWorkspaceYaml(once, { overrides })).toBe(once)
    const moved = mergeWorkspaceYaml(once, { overrides: { '@dsh-memory/store': 'file:/elsewhere/store.tgz' } })
    expect(readOverrides(moved)['@dsh-memory/store']).toBe('file:/elsewhere/store.tgz')
    expect(moved.match(/better-sqlite3/g)).toHaveLength(1)
  })

  it('unpins only our packages and drops an emptied overrides key', () => {
    const merged = mergeWorkspaceYaml(HOST_FILE, { overrides })
    const removed = removeOverrides(merged, Object.keys(overrides))
    expect(readOverrides(removed)).toEqual({ 'left-pad': '1.3.0' })
    expect(removed).toContain('# my comment: keep me')
    const bare = removeOverrides(mergeWorkspaceYaml('packages: [.]\n', { overrides }), Object.keys(overrides))
    expect(bare).not.toContain('overrides')
  })

  it('names the scaffold lines a profile lacks, and --repair writes them', () => {
    // The broken profile: the file was written before DSH created the profile.
    const early = "overrides:\n  '@dsh-memory/store': 'file:/tmp/dshm/store.tgz'\nonlyBuiltDependencies: [better-sqlite3]\n"
    expect(checkScaffold(early)).toEqual(['packages: [.]', 'nodeLinker: hoisted', 'autoInstallPeers: false'])
    expect(checkScaffold('packages: [.]\nnodeLinker: isolated\nautoInstallPeers: false\n')).toEqual(['nodeLinker: hoisted'])
    const repaired = mergeWorkspaceYaml(early, { overrides: {}, repair: true })
    expect(checkScaffold(repaired)).toEqual([])
    expect(readOverrides(repaired)).toEqual({ '@dsh-memory/store': 'file:/tmp/dshm/store.tgz' })
  })

  it('refuses a file that is not YAML or has the wrong shape, naming the field', () => {
    expect(reasonOf(() => mergeWorkspaceYaml('packages: [.\n', { overrides }))).toBe('profile-broken')
    expect(reasonOf(() => mergeWorkspaceYaml('- a\n- b\n', { overrides }))).toBe('profile-broken')
    let message = ''
    try {
      mergeWorkspaceYaml('overrides: [a, b]\n', { overrides })
    } catch (error) {
      message = (error as Error).message
    }
    expect(message).toContain('$.overrides must be a mapping')
    expect(message).toContain('next:')
  })
})

describe('rows and packages', () => {
  it('reads the rows a bundle patch inserts, group children included', () => {
    const preset = bundleRows(readFileSync(join(REPO, 'packages/preset/cordis.patch.yml'), 'utf8')).map((row) => row.id)
    expect(preset).toEqual(['memory-preset', 'memory-store', 'memory-preset-capture', 'memory-preset-distill', 'memory-preset-recall', 'memory-preset-cue-bank', 'memory-preset-palace', 'memory-preset-tree'])
    const capture = bundleRows(readFileSync(join(REPO, 'packages/capture/cordis.patch.yml'), 'utf8'))
    expect(capture).toEqual([
      { id: 'memory-capture-store', name: '@dsh-memory/store/plugin' },
      { id: 'memory-capture', name: '@dsh-memory/capture/plugin' },
    ])
    const dump = "# == @dsh-memory/capture\n- id: memory-capture-store\n  name: '@dsh-memory/store/plugin'\n"
    expect(missingRows(capture, dump).map((row) => row.id)).toEqual(['memory-capture'])
  })

  it('finds the data dir a dumped store row configures, else <home>/memory', () => {
    const dump = "- id: memory-preset\n  name: cordis:group\n  config:\n    - id: memory-store\n      name: '@dsh-memory/store/plugin'\n      config:\n        dataDir: /srv/memory\n"
    expect(dataDirOf(dump, '/home/me/.dsh')).toBe('/srv/memory')
    expect(dataDirOf(dump.replace('/srv/memory', "''"), '/home/me/.dsh')).toBe('/home/me/.dsh/memory')
  })

  it('parses --plugins and refuses unknown names', () => {
    expect(parsePluginList('preset')).toEqual(['@dsh-memory/preset'])
    expect(parsePluginList('capture, recall,@dsh-memory/cue-bank,capture')).toEqual(['@dsh-memory/capture', '@dsh-memory/recall', '@dsh-memory/cue-bank'])
    expect(reasonOf(() => parsePluginList('capture,memory'))).toBe('invalid-argument')
    expect(reasonOf(() => parsePluginList(' , '))).toBe('invalid-argument')
  })

  it('knows the checkout and its publishable packages', () => {
    expect(checkoutRoot()).toBe(REPO)
    expect(publishablePackages(REPO)).toEqual(expect.arrayContaining(['@dsh-memory/store', '@dsh-memory/preset', '@dsh-memory/tree']))
    expect(publishablePackages(REPO)).not.toContain('@dsh-memory/playground')
  })

  it('compares Node versions against 22.16', () => {
    expect([nodeVersionOk('v22.16.0'), nodeVersionOk('22.23.3'), nodeVersionOk('24.1.0'), nodeVersionOk('v22.15.1'), nodeVersionOk('20.20.0')]).toEqual([true, true, true, false, false])
  })
})

describe('install inputs on disk', () => {
  let temp: ReturnType<typeof scratch>
  beforeEach(() => {
    temp = scratch('install')
  })
  afterEach(() => temp.cleanup())

  it('maps a --from folder of npm pack output to package names', () => {
    for (const file of ['dsh-memory-store-0.1.0.tgz', 'dsh-memory-cue-bank-0.1.0.tgz', 'dsh-memory-0.1.0.tgz', 'notes.txt']) writeFileSync(join(temp.dir, file), '')
    expect(tarballsIn(temp.dir)).toEqual({
      '@dsh-memory/cue-bank': join(temp.dir, 'dsh-memory-cue-bank-0.1.0.tgz'),
      '@dsh-memory/store': join(temp.dir, 'dsh-memory-store-0.1.0.tgz'),
    })
    writeFileSync(join(temp.dir, 'dsh-memory-store-0.2.0.tgz'), '')
    expect(reasonOf(() => tarballsIn(temp.dir))).toBe('no-tarballs')
    expect(reasonOf(() => tarballsIn(join(temp.dir, 'missing')))).toBe('no-tarballs')
  })

  it('finds a second cordis that pnpm put into the profile', () => {
    const profile = join(temp.dir, 'profile')
    mkdirSync(join(profile, 'node_modules/@dsh-memory/store'), { recursive: true })
    expect(() => checkSingleCordis(profile)).not.toThrow()
    mkdirSync(join(profile, 'node_modules/.pnpm/@deepseek-ai+cordis@4.0.4/node_modules/@deepseek-ai/cordis'), { recursive: true })
    expect(reasonOf(() => checkSingleCordis(profile))).toBe('second-cordis')
  })

  it('stops with the next step when there is no launcher, and exits 1', async () => {
    const result = await cli(['install', '--dsh-home', join(temp.dir, 'home'), '--dsh', join(temp.dir, 'no-such-dsh')])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('does not exist')
    expect(result.stderr).toContain('next: pass --dsh <path>')
    const json = await cli(['install', '--json', '--plugins', 'capture', '--dsh-home', join(temp.dir, 'home'), '--dsh', join(temp.dir, 'no-such-dsh')])
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, error: { reason: 'no-launcher' } })
    expect((await cli(['install', '--plugins', 'everything'])).code).toBe(2)
  })

  it('says which Node it found when the one on PATH is too old, and when pnpm is missing', () => {
    // Stand-ins for the user's machine: a `node` that reports an old version, a `dsh` script.
    const bin = join(temp.dir, 'bin')
    mkdirSync(bin)
    writeFileSync(join(bin, 'node'), '#!/bin/sh\necho 20.11.1\n')
    chmodSync(join(bin, 'node'), 0o755)
    writeFileSync(join(bin, 'dsh.js'), '')
    const run = (path: string) =>
      spawnSync(process.execPath, [BIN, 'install', '--dsh', join(bin, 'dsh.js'), '--dsh-home', join(temp.dir, 'home')], { env: { ...process.env, PATH: path }, encoding: 'utf8' })
    const old = run(bin)
    expect(old.status).toBe(1)
    expect(old.stderr).toContain('the node on PATH is 20.11.1')
    expect(old.stderr).toContain('next: install Node 22')
    const noPnpm = run(dirname(process.execPath))
    expect(noPnpm.status).toBe(1)
    expect(noPnpm.stderr).toContain('needs pnpm on PATH')
    expect(noPnpm.stderr).not.toMatch(/\n\s+at /)
  })
})

describe('the DSH home', () => {
  it('is --dsh-home, else $DSH_HOME, else ~/.dsh', () => {
    expect(resolveDshHome('/srv/dsh', { DSH_HOME: '/elsewhere' })).toBe('/srv/dsh')
    expect(resolveDshHome(undefined, { DSH_HOME: '/elsewhere' })).toBe('/elsewhere')
    expect(resolveDshHome(undefined, { HOME: homedir() })).toBe(join(homedir(), '.dsh'))
    expect(resolveDshHome('~/dsh-home', {})).toBe(join(homedir(), 'dsh-home'))
  })
})
