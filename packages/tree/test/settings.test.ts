/**
 * Live settings of the tree: the namespace `memory-tree` on the host's real settings service
 * (the file provider from the pinned DSH install), with the host's real system-prompt
 * registry. Turning `inject` or `autoRoute` off applies to the next request or message without
 * a restart; an invalid value is refused naming the field.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { Context } from '@deepseek-ai/cordis'
import MemoryStoreService from '@dsh-memory/store/plugin'
import { renderPrompt, SystemPrompt } from '@deepseek-ai/dsh-system-prompt'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import MemoryTreeService, { Config } from '../src/plugin.js'
import { TREE_SETTINGS_NAMESPACE } from '../src/settings.js'
import { tempDirEachTest } from './helpers.js'

const SETTINGS_FILE = join(import.meta.dirname, '..', '..', '..', 'apps', 'playground', 'host', 'node_modules', '@deepseek-ai', 'dsh-settings-file', 'lib', 'index.js')
const workspace = '/work/shop'
const agent = (id: string) => ({ id, session: { id, header: { cwd: workspace, version: 1, id, createdAt: 0 } } })
const userMessage = (id: string, text: string) => ({ type: 'user/message', seq: 0, data: { id, role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' } } })

describe('tree live settings (namespace memory-tree)', () => {
  const temp = tempDirEachTest('tree-settings')
  let root: Context
  const settings = () => (root as any).settings
  const prompt = async (id: string) => renderPrompt((await (root as any).systemPrompt.assemble({ agent: agent(id) })) as never)

  beforeEach(async () => {
    if (!existsSync(SETTINGS_FILE)) throw new Error(`the pinned DSH host is not installed (missing ${SETTINGS_FILE}); run \`npm run setup\` first`)
    root = new Context()
    await root.plugin((await import(SETTINGS_FILE)).default, { path: join(temp.dir, 'settings.yaml'), watch: false })
    await root.plugin(SystemPrompt, {})
    await root.plugin(MemoryStoreService, { dataDir: temp.dir })
    await root.plugin(MemoryTreeService, Config({} as Config))
  })
  afterEach(() => root.fiber.dispose())

  it('turns the mainline section and automatic routing off and on again, without a restart', async () => {
    const session = { id: 'session-a', header: { cwd: workspace } }
    root.emit('session/event', session, userMessage('m1', 'The checkout API must never double-charge.'))
    await root.memoryTree.whenIdle()
    expect(await prompt('session-a')).toContain('The checkout API must never double-charge.')

    await settings().update(TREE_SETTINGS_NAMESPACE, { inject: false, autoRoute: false })
    expect(await prompt('session-a')).not.toContain('double-charge')
    root.emit('session/event', session, userMessage('m2', 'Refunds must always be idempotent.'))
    await root.memoryTree.whenIdle()
    const tree = await root.memoryTree.ready()
    const project = (await tree.resolveProject({ workspace }, { create: false }))!
    expect((await tree.repository.listItems(project.id)).map((item) => item.text)).toEqual(['The checkout API must never double-charge.'])

    await settings().replace(TREE_SETTINGS_NAMESPACE, {})
    expect(await prompt('session-a')).toContain('The checkout API must never double-charge.')
  })

  it('refuses an invalid value naming the field and keeps the last good one', async () => {
    await expect(settings().update(TREE_SETTINGS_NAMESPACE, { refresh: 'hourly' })).rejects.toThrow(/refresh/)
    expect(settings().get(TREE_SETTINGS_NAMESPACE)).toMatchObject({ refresh: 'session', inject: true, autoRoute: true })
  })
})
