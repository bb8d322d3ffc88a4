/**
 * Live settings of the cue bank: the namespace `memory-cue-bank` on the host's real settings
 * service (the file provider from the pinned DSH install) with the host's real system-prompt
 * registry. Switching injection off, or to the reference's block format, applies to the next
 * message without a restart; an invalid value, or one that only applies at start, is refused
 * naming the field and the last good value stays.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { Context, type Plugin } from '@deepseek-ai/cordis'
import MemoryStoreService from '@dsh-memory/store/plugin'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as cueBank from '../src/plugin.js'
import { CUE_BANK_SETTINGS_NAMESPACE } from '../src/settings.js'
import { tempDir } from './fixtures.js'

const HOST = join(import.meta.dirname, '..', '..', '..', 'apps', 'playground', 'host', 'node_modules', '@deepseek-ai')
const SETTINGS_FILE = join(HOST, 'dsh-settings-file', 'lib', 'index.js')

describe('cue-bank live settings (namespace memory-cue-bank)', () => {
  let temp: ReturnType<typeof tempDir>
  let root: Context
  const settings = () => (root as any).settings
  let seq = 0

  /** One host turn, in the order the loop emits it; returns the runtime-context text of the bank. */
  async function say(sessionId: string, turn: number, text: string): Promise<string> {
    const session = { id: sessionId, header: { cwd: '/work/alpha' } }
    const agent = { id: sessionId, session }
    const message = { id: `${sessionId}-${turn}`, role: 'user', content: [{ type: 'text', text }], source: { kind: 'user' } }
    const event = (type: string, data: unknown) => root.emit('session/event', session, { type, seq: seq++, data })
    event('turn/start', { turn })
    root.emit('agent/inbox/claimed', { agent, message, turn })
    const assembly = (await (root as any).systemPrompt.assemble({ agent })) as { contexts: { name: string; text: string }[] }
    event('user/message', message)
    event('assistant/message', { turn, step: 1, message: { id: `${message.id}-reply`, role: 'assistant', content: [{ type: 'text', text: 'Noted.' }] } })
    event('turn/end', { turn, reason: 'completed' })
    await root.parallel('session/flush', session)
    return assembly.contexts.find((context) => context.name === cueBank.CONTEXT_NAME)?.text ?? ''
  }

  beforeEach(async () => {
    if (!existsSync(SETTINGS_FILE)) throw new Error(`the pinned DSH host is not installed (missing ${SETTINGS_FILE}); run \`npm run setup\` first`)
    temp = tempDir()
    root = new Context()
    await root.plugin((await import(SETTINGS_FILE)).default, { path: join(temp.dir, 'settings.yaml'), watch: false })
    await root.plugin(((await import(join(HOST, 'dsh-system-prompt', 'lib', 'index.js'))) as { SystemPrompt: Plugin }).SystemPrompt, {})
    await root.plugin(MemoryStoreService, { dataDir: temp.dir })
    await root.plugin(cueBank, {} as cueBank.Config)
    await say('session-a', 1, '我们决定把 PostgreSQL 主数据库迁移到 16 版本，所有索引都要重建')
  })
  afterEach(async () => {
    await root.fiber.dispose()
    temp.remove()
  })

  it('turns injection off, switches the block format, and back, without a restart', async () => {
    expect(await say('session-b', 1, 'PostgreSQL 主数据库迁移之后索引要重建吗？')).toContain('<memory-cues source="cue-bank">')

    await settings().update(CUE_BANK_SETTINGS_NAMESPACE, { inject: { enabled: false } })
    expect(await say('session-c', 1, 'PostgreSQL 主数据库迁移之后索引要重建吗？')).toBe('')

    await settings().update(CUE_BANK_SETTINGS_NAMESPACE, { inject: { enabled: true, format: 'reference' } })
    const reference = await say('session-d', 1, 'PostgreSQL 主数据库迁移之后索引要重建吗？')
    expect(reference).toContain('📌 记忆唤醒（cue-bank）')
    expect(reference).not.toContain('<memory-cues')

    await settings().replace(CUE_BANK_SETTINGS_NAMESPACE, {})
    expect(await say('session-e', 1, 'PostgreSQL 主数据库迁移之后索引要重建吗？')).toContain('<memory-cues source="cue-bank">')
  })

  it('refuses an invalid value, and one that applies only at start, naming the field; the last good value stays', async () => {
    await expect(settings().update(CUE_BANK_SETTINGS_NAMESPACE, { topic: { switchThreshold: 7 } })).rejects.toThrow(/switchThreshold/)
    await expect(settings().update(CUE_BANK_SETTINGS_NAMESPACE, { inject: { order: 5 } })).rejects.toThrow(/inject\.order/)
    expect(settings().get(CUE_BANK_SETTINGS_NAMESPACE)).toMatchObject({ topic: { switchThreshold: 0.25 }, inject: { enabled: true, order: 400, format: 'tagged' } })
    expect(await say('session-b', 1, 'PostgreSQL 主数据库迁移之后索引要重建吗？')).toContain('<memory-cues source="cue-bank">')
  })
})
