import { randomUUID } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from '@deepseek-ai/cordis'
import * as capture from '@dsh-memory/capture/plugin'
import MemoryStoreRow, { pluginRows } from '@dsh-memory/store/plugin'
import yaml from 'js-yaml'
import { afterEach, describe, expect, it, vi } from 'vitest'

const PRESET_DIR = join(import.meta.dirname, '..')
const PACKAGES_DIR = join(PRESET_DIR, '..')

interface Row {
  id: string
  name: string
  group?: boolean
  disabled?: boolean
  config?: unknown
}
type Patch = { insert: Row[] }[]

function readPatch(dir: string): Patch {
  return yaml.load(readFileSync(join(dir, 'cordis.patch.yml'), 'utf8')) as Patch
}

/** Every other package of the monorepo that ships a DSH bundle (= a plugin that installs alone). */
function pluginBundles(): { folder: string; pkg: string; rows: Row[] }[] {
  return readdirSync(PACKAGES_DIR)
    .filter((folder) => folder !== 'preset')
    .flatMap((folder) => {
      const manifest = JSON.parse(readFileSync(join(PACKAGES_DIR, folder, 'package.json'), 'utf8')) as { name: string; dsh?: { bundle?: { patch?: string } } }
      if (!manifest.dsh?.bundle?.patch) return []
      return [{ folder, pkg: manifest.name, rows: readPatch(join(PACKAGES_DIR, folder)).flatMap((patch) => patch.insert) }]
    })
}

const patch = readPatch(PRESET_DIR)
const group = patch[0]!.insert[0]!
const children = group.config as Row[]

describe('the preset bundle patch', () => {
  it('inserts one group row holding the store row and one row per plugin', () => {
    expect(patch).toHaveLength(1)
    expect(patch[0]!.insert).toHaveLength(1)
    expect(group).toMatchObject({ id: 'memory-preset', name: 'cordis:group', group: true })
    const plugins = pluginBundles()
    // Every plugin package of the repo is in the preset (a new plugin cannot be forgotten).
    expect(plugins.map((plugin) => plugin.folder).sort()).toEqual(['capture', 'cue-bank', 'distill', 'palace', 'recall', 'tree'])
    expect(children.map((child) => child.id)).toEqual([
      'memory-store',
      'memory-preset-capture',
      'memory-preset-distill',
      'memory-preset-recall',
      'memory-preset-cue-bank',
      'memory-preset-palace',
      'memory-preset-tree',
    ])
    expect(children.map((child) => child.name)).toEqual([
      '@dsh-memory/store/plugin',
      ...['capture', 'distill', 'recall', 'cue-bank', 'palace', 'tree'].map((id) => `@dsh-memory/${id}/plugin`),
    ])
    expect(children.every((child) => child.disabled === undefined)).toBe(true)
  })

  it('uses ids no plugin bundle uses, so the preset and any standalone plugin install side by side', () => {
    // The loader keeps one id table for the whole profile (group children included): a reused id
    // would move the row out of one bundle into the other.
    const presetIds = [group.id, ...children.map((child) => child.id)]
    expect(new Set(presetIds).size).toBe(presetIds.length)
    const bundleIds = pluginBundles().flatMap((bundle) => bundle.rows.map((row) => row.id))
    expect(new Set(bundleIds).size).toBe(bundleIds.length)
    expect(presetIds.filter((id) => bundleIds.includes(id))).toEqual([])
  })

  it('gives each child the full config of its plugin’s own bundle row, valid for the plugin’s schema', async () => {
    for (const bundle of pluginBundles()) {
      const own = bundle.rows.find((row) => row.name === `${bundle.pkg}/plugin`)!
      const child = children.find((row) => row.name === `${bundle.pkg}/plugin`)!
      // When this fails, a plugin changed its bundle patch: run `node packages/preset/scripts/sync-patch.mjs`.
      expect(child.config, `${bundle.pkg}: run node packages/preset/scripts/sync-patch.mjs`).toEqual(own.config)
      const module = (await import(`${bundle.pkg}/plugin`)) as { Config?: (input: unknown) => unknown; default?: { Config?: (input: unknown) => unknown } }
      const Config = module.Config ?? module.default?.Config
      expect(Config, bundle.pkg).toBeTypeOf('function')
      expect(() => Config!(child.config), bundle.pkg).not.toThrow()
    }
    expect(children[0]!.config).toEqual({ dataDir: '', busyTimeoutMs: 30000 })
    expect((MemoryStoreRow.Config as (input: unknown) => unknown)(children[0]!.config)).toEqual(MemoryStoreRow.Config({}))
  })

  it('depends on every package its rows name, and declares the patch as its DSH bundle', () => {
    const manifest = JSON.parse(readFileSync(join(PRESET_DIR, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>
      dsh: { bundle: { patch: string } }
      files: string[]
    }
    expect(manifest.dsh.bundle.patch).toBe('./cordis.patch.yml')
    expect(manifest.files).toContain('cordis.patch.yml')
    const named = [...new Set(children.map((child) => child.name.replace(/\/plugin$/, '')))].sort()
    expect(Object.keys(manifest.dependencies).sort()).toEqual(named)
  })

  it('shows the override-by-id example of the README with a real child id and field', () => {
    const readme = readFileSync(join(PRESET_DIR, 'README.md'), 'utf8')
    const block = /```yaml\n(- id: memory-preset-recall[\s\S]*?)```/.exec(readme)
    expect(block).not.toBeNull()
    const overrides = yaml.load(block![1]!) as Row[]
    for (const override of overrides) expect(children.map((child) => child.id)).toContain(override.id)
  })
})

describe('the preset plus a standalone plugin bundle on a real Cordis context', () => {
  const cleanups: (() => Promise<void> | void)[] = []
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  })

  it('opens the store once and runs capture once: each message stored once, one memory-capture/captured each', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dshm-preset-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    const root = new Context()
    cleanups.push(() => root.fiber.dispose())
    const captureConfig = (children.find((child) => child.id === 'memory-preset-capture')!.config ?? {}) as capture.Config
    // The rows the loader mounts for the preset (store + capture) and for @dsh-memory/capture's own bundle.
    await root.plugin(MemoryStoreRow, { dataDir: dir })
    await root.plugin(capture, captureConfig)
    await root.plugin(MemoryStoreRow, { dataDir: dir })
    await root.plugin(capture, { ...captureConfig, maxMessageChars: 100 })

    expect(pluginRows(root)).toEqual([
      { plugin: 'memory-store', rows: [{ label: 'memory-store#1', active: true }, { label: 'memory-store#2', active: false }] },
      { plugin: 'memory-capture', rows: [{ label: 'memory-capture#1', active: true }, { label: 'memory-capture#2', active: false }] },
    ])

    const captured: capture.CapturedMessage[] = []
    root.on('memory-capture/captured', (message) => void captured.push(message))
    const session = { id: `session-${randomUUID()}`, header: { cwd: '/work/shop', createdAt: 1_700_000_000_000 } }
    const event = (seq: number, type: string, data: unknown) => ({ type, seq, time: 1_700_000_000_000 + seq, data })
    root.emit('session/event', session, event(0, 'turn/start', { turn: 1 }))
    root.emit('session/event', session, event(1, 'user/message', { id: 'u1', role: 'user', content: [{ type: 'text', text: '我们决定使用 PostgreSQL。' }], source: { kind: 'user' } }))
    root.emit(
      'session/event',
      session,
      event(2, 'assistant/message', { turn: 1, step: 0, message: { id: 'a1', role: 'assistant', content: [{ type: 'text', text: 'Noted: PostgreSQL.' }], source: { kind: 'model' } } }),
    )
    await vi.waitFor(() => expect(captured).toHaveLength(2))
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(captured.map((message) => message.role)).toEqual(['user', 'assistant'])
    const messages = await root.memoryStore.messages.list({ conversationId: session.id })
    expect(messages.map((message) => message.text)).toEqual(['我们决定使用 PostgreSQL。', 'Noted: PostgreSQL.'])
  })
})
