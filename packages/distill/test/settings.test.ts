/**
 * Live settings of distill: the namespace `memory-distill` on the host's real settings service
 * (the file provider from the pinned DSH install, over a real settings.yaml). A new model
 * route applies to the next distillation without a restart; a value the schema or distill's
 * own rules refuse is refused naming the field, and the last good route stays.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { Context } from '@deepseek-ai/cordis'
import MemoryStoreService from '@dsh-memory/store/plugin'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import DistillService, { type Config } from '../src/plugin.js'
import { DISTILL_SETTINGS_NAMESPACE } from '../src/settings.js'
import { FakeLlm } from './fake-llm.js'
import { tempDir } from './fixtures.js'

const SETTINGS_FILE = join(import.meta.dirname, '..', '..', '..', 'apps', 'playground', 'host', 'node_modules', '@deepseek-ai', 'dsh-settings-file', 'lib', 'index.js')

describe('distill live settings (namespace memory-distill)', () => {
  let root: Context
  let llm: FakeLlm
  let seq = 0

  beforeEach(async () => {
    if (!existsSync(SETTINGS_FILE)) throw new Error(`the pinned DSH host is not installed (missing ${SETTINGS_FILE}); run \`npm run setup\` first`)
    const dir = tempDir()
    root = new Context()
    await root.plugin((await import(SETTINGS_FILE)).default, { path: join(dir, 'settings.yaml'), watch: false })
    await root.plugin(MemoryStoreService, { dataDir: dir })
    await root.plugin(FakeLlm)
    llm = root.llm as unknown as FakeLlm
    await root.plugin(DistillService, { llm: { provider: 'deepseek-official', model: 'deepseek-v4-flash' }, extract: { minMessages: 1 } } as Config)
  })
  afterEach(async () => {
    await root.fiber.dispose()
  })

  const settings = () => (root as any).settings

  /** One user turn of a session, captured and finished, then the distillation request it caused. */
  const turn = async (sessionId: string, text: string) => {
    const before = llm.requests.length
    const agent = { id: sessionId, session: { id: sessionId, header: { cwd: '/work/alpha' } } }
    root.emit('agent/status', { agent, status: 'running' })
    await root.memoryStore.conversations.ensure({ id: sessionId, workspace: '/work/alpha' })
    const { message } = await root.memoryStore.messages.append({ conversationId: sessionId, hostMessageId: `h${seq}`, role: 'user', text, seq: seq++ })
    root.emit('memory-capture/captured', { conversationId: sessionId, messageId: message.id, role: 'user', workspace: '/work/alpha', turn: 1 })
    root.emit('agent/status', { agent, status: 'idle' })
    await vi.waitFor(() => expect(llm.requests.length).toBeGreaterThan(before))
    return llm.requests[before]!
  }

  it('routes the next distillation to a newly set model, without a restart', async () => {
    expect((await turn('s1', 'My favourite editor is Helix.')).options).toMatchObject({ provider: 'deepseek-official', model: 'deepseek-v4-flash' })
    await settings().update(DISTILL_SETTINGS_NAMESPACE, { llm: { model: 'deepseek-v4-pro', maxTokens: 2048 } })
    expect((await turn('s2', 'The deploy target is Fly.io.')).options).toMatchObject({ provider: 'deepseek-official', model: 'deepseek-v4-pro', maxTokens: 2048 })
    // Reset: the row's config is back in force.
    await settings().replace(DISTILL_SETTINGS_NAMESPACE, {})
    expect((await turn('s3', 'We use pnpm.')).options).toMatchObject({ model: 'deepseek-v4-flash', maxTokens: 8192 })
  })

  it('refuses an invalid route naming the field and keeps the last good one', async () => {
    await expect(settings().update(DISTILL_SETTINGS_NAMESPACE, { llm: { maxTokens: 10 } })).rejects.toThrow(/maxTokens/)
    // The schema allows an empty model, distill's own rule does not (provider and model go together).
    await expect(settings().update(DISTILL_SETTINGS_NAMESPACE, { llm: { model: '' } })).rejects.toThrow(/llm\.model/)
    expect(settings().get(DISTILL_SETTINGS_NAMESPACE).llm.model).toBe('deepseek-v4-flash')
    expect((await turn('s1', 'My favourite editor is Helix.')).options).toMatchObject({ model: 'deepseek-v4-flash', maxTokens: 8192 })
  })
})
