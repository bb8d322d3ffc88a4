/**
 * Live settings of capture: the namespace `memory-capture` on the host's real settings service
 * (the file provider from the pinned DSH install). Turning capture off, or changing the message
 * cap, applies to the next event without a restart; an invalid value is refused naming the field.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { Context } from '@deepseek-ai/cordis'
import MemoryStoreService from '@dsh-memory/store/plugin'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as capture from '../src/plugin.js'
import { CAPTURE_SETTINGS_NAMESPACE } from '../src/settings.js'
import { EventScript, session, tempDir } from './fixtures.js'

const SETTINGS_FILE = join(import.meta.dirname, '..', '..', '..', 'apps', 'playground', 'host', 'node_modules', '@deepseek-ai', 'dsh-settings-file', 'lib', 'index.js')

describe('capture live settings (namespace memory-capture)', () => {
  let temp: ReturnType<typeof tempDir>
  let root: Context
  const settings = () => (root as any).settings
  const s = session('/work/gamma')
  const events = new EventScript()
  /** Emit one human message and wait until capture has handled it. */
  const say = async (text: string) => {
    root.emit('session/event', s, events.user(text))
    await root.parallel('session/flush', s)
  }
  const stored = async () => (await root.memoryStore.messages.list({ conversationId: s.id })).map((message) => message.text)

  beforeEach(async () => {
    if (!existsSync(SETTINGS_FILE)) throw new Error(`the pinned DSH host is not installed (missing ${SETTINGS_FILE}); run \`npm run setup\` first`)
    temp = tempDir()
    root = new Context()
    await root.plugin((await import(SETTINGS_FILE)).default, { path: join(temp.dir, 'settings.yaml'), watch: false })
    await root.plugin(MemoryStoreService, { dataDir: temp.dir })
    await root.plugin(capture, { enabled: true, stripCodeBlocks: true, maxMessageChars: 4000 })
    root.emit('session/event', s, events.turn(1))
  })
  afterEach(async () => {
    await root.fiber.dispose()
    temp.remove()
  })

  it('stops and resumes recording, and caps messages anew, without a restart', async () => {
    await say('第一条：记录下来。')
    await settings().update(CAPTURE_SETTINGS_NAMESPACE, { enabled: false })
    await say('第二条：这条不应记录。')
    await settings().update(CAPTURE_SETTINGS_NAMESPACE, { enabled: true, maxMessageChars: 64 })
    await say(`第三条：${'长'.repeat(100)}`)
    const texts = await stored()
    expect(texts).toEqual(['第一条：记录下来。', expect.stringMatching(/^第三条：长/)])
    expect(texts[1]!.length).toBeLessThan(100)
  })

  it('refuses an invalid value naming the field and keeps the last good one', async () => {
    await expect(settings().update(CAPTURE_SETTINGS_NAMESPACE, { maxMessageChars: -1 })).rejects.toThrow(/maxMessageChars/)
    expect(settings().get(CAPTURE_SETTINGS_NAMESPACE)).toMatchObject({ enabled: true, maxMessageChars: 4000 })
    await say('仍然记录。')
    expect(await stored()).toEqual(['仍然记录。'])
  })
})
