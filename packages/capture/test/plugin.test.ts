import { join } from 'node:path'
import { Context } from '@deepseek-ai/cordis'
import { openMemoryStore } from '@dsh-memory/store'
import MemoryStoreService from '@dsh-memory/store/plugin'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import * as capture from '../src/plugin.js'
import type { CapturedMessage } from '../src/plugin.js'
import { EventScript, session, tempDir } from './fixtures.js'

describe('capture plugin on a real Cordis context', () => {
  let temp: ReturnType<typeof tempDir>
  let root: Context

  beforeEach(async () => {
    temp = tempDir()
    root = new Context()
    await root.plugin(MemoryStoreService, { dataDir: temp.dir })
    await root.plugin(capture, { enabled: true, stripCodeBlocks: true, maxMessageChars: 4000 })
  })
  afterEach(async () => {
    await root.fiber.dispose()
    temp.remove()
  })

  it('records session/event traffic and announces memory-capture/captured after the commit', async () => {
    const checks: Promise<[string, boolean]>[] = []
    root.on('memory-capture/captured', (message: CapturedMessage) => {
      // Emitted after the write: the row is already readable from a second connection.
      checks.push(
        (async () => {
          const reader = openMemoryStore({ path: join(temp.dir, 'memory.db'), readonly: true })
          try {
            const rows = await reader.messages.list({ conversationId: message.conversationId })
            return [message.role, rows.some((row) => row.id === message.messageId)] as [string, boolean]
          } finally {
            await reader.close()
          }
        })(),
      )
    })
    const s = session('/work/beta')
    const events = new EventScript()
    root.emit('session/event', s, events.turn(1))
    root.emit('session/event', s, events.user('東京のオフィスは来月移転します。'))
    root.emit('session/event', s, events.assistant(1, [{ type: 'text', text: '了解しました。' }]))

    await vi.waitFor(() => expect(checks).toHaveLength(2))
    expect(await Promise.all(checks)).toEqual([
      ['user', true],
      ['assistant', true],
    ])
    const hits = await root.memoryStore.search.messages('オフィス', { workspace: '/work/beta' })
    expect(hits.map((hit) => hit.message.text)).toContain('東京のオフィスは来月移転します。')
  })

  it('announces each message once under the new name and once under the deprecated memory/captured', async () => {
    const heard: string[] = []
    root.on('memory-capture/captured', (message: CapturedMessage) => void heard.push(`new ${message.role}`))
    root.on('memory/captured', (message: CapturedMessage) => void heard.push(`old ${message.role}`))
    const s = session()
    const events = new EventScript()
    root.emit('session/event', s, events.user('新しい名前'))
    root.emit('session/event', s, events.assistant(1, [{ type: 'text', text: 'はい' }]))
    await root.parallel('session/flush', s)
    expect(heard).toEqual(['new user', 'old user', 'new assistant', 'old assistant'])
  })

  it('keeps the turn going when a memory-capture/captured listener throws, and still announces the deprecated name', async () => {
    const deprecated: CapturedMessage[] = []
    root.on('memory-capture/captured', () => {
      throw new Error('listener bug')
    })
    root.on('memory/captured', (message: CapturedMessage) => void deprecated.push(message))
    const s = session()
    expect(() => root.emit('session/event', s, new EventScript().user('still stored'))).not.toThrow()
    await root.parallel('session/flush', s)
    expect(await root.memoryStore.messages.list({ conversationId: s.id })).toHaveLength(1)
    expect(deprecated.map((message) => message.role)).toEqual(['user'])
  })

  it('forgets the turn of a session when the host disposes its agent ({agent} payload)', async () => {
    const s = session()
    const events = new EventScript()
    root.emit('session/event', s, events.turn(5))
    root.emit('session/event', s, events.user('during turn five'))
    root.emit('agent/disposed', { agent: { id: s.id } })
    root.emit('session/event', s, events.user('after the agent is gone'))
    await vi.waitFor(async () => expect(await root.memoryStore.messages.list({ conversationId: s.id })).toHaveLength(2))
    const rows = await root.memoryStore.messages.list({ conversationId: s.id })
    expect(rows.map((row) => row.turn)).toEqual([5, 0])
  })

  it('rejects an invalid config at load, naming the field', async () => {
    const ctx = new Context()
    await ctx.plugin(MemoryStoreService, { dataDir: join(temp.dir, 'other') })
    await expect(
      (async () => {
        await ctx.plugin(capture, { enabled: true, stripCodeBlocks: true, maxMessageChars: 'lots' as unknown as number })
      })(),
    ).rejects.toThrow(/maxMessageChars/)
    await ctx.fiber.dispose()
  })
})
