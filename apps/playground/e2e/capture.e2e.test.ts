import { join } from 'node:path'
import { openMemoryStore } from '@dsh-memory/store'
import { describe, expect, it } from 'vitest'
import { lastUserText } from '../src/model-server.js'
import { expectBootRejects, useHostProfile } from './helpers.js'

describe('capture in the real DSH host', () => {
  // Installed the way a user installs: `dsh plugin --profile capture add <tarballs>`.
  const hosted = useHostProfile('capture', {
    packages: ['@dsh-memory/store', '@dsh-memory/capture'],
    responder: (request) => ({ kind: 'text', text: `Noted: ${lastUserText(request.body).slice(0, 40)}` }),
  })

  it('stores both sessions of two workspaces, user and assistant, exactly once', async () => {
    const alpha = join(hosted.root, 'work', 'alpha')
    const beta = join(hosted.root, 'work', 'beta')
    const first = await hosted.home.run({ profile: 'capture', cwd: alpha, modelUrl: hosted.server.url, args: ['My favourite editor is Helix.'] })
    expect(first.stderr).not.toMatch(/Error:/)
    expect(first.code).toBe(0)
    const second = await hosted.home.run({ profile: 'capture', cwd: beta, modelUrl: hosted.server.url, args: ['我们决定使用 PostgreSQL 作为主数据库。'] })
    expect(second.code).toBe(0)

    const store = openMemoryStore({ path: join(hosted.home.dir, 'memory', 'memory.db') })
    try {
      const conversations = await store.conversations.list()
      expect(conversations).toHaveLength(2)
      const byWorkspace = new Map(conversations.map((conversation) => [conversation.workspace, conversation]))
      expect([...byWorkspace.keys()].sort()).toEqual([alpha, beta].sort())

      const alphaMessages = await store.messages.list({ conversationId: byWorkspace.get(alpha)!.id })
      expect(alphaMessages.map((message) => [message.role, message.text])).toEqual([
        ['user', 'My favourite editor is Helix.'],
        ['assistant', 'Noted: My favourite editor is Helix.'],
      ])
      const betaMessages = await store.messages.list({ conversationId: byWorkspace.get(beta)!.id })
      expect(betaMessages.map((message) => [message.role, message.text])).toEqual([
        ['user', '我们决定使用 PostgreSQL 作为主数据库。'],
        ['assistant', 'Noted: 我们决定使用 PostgreSQL 作为主数据库。'],
      ])
      // Host message ids are the idempotency key: no id appears twice.
      const hostIds = [...alphaMessages, ...betaMessages].map((message) => message.hostMessageId)
      expect(new Set(hostIds).size).toBe(4)
      // Only the human prompt and the reply: the host's system-prompt snapshot (a plugin-sourced
      // user message) was not captured as conversation.
      expect(alphaMessages.every((message) => message.turn === alphaMessages[0]!.turn)).toBe(true)
      // The stored text is searchable, CJK included.
      expect((await store.search.messages('数据库', { workspace: beta })).map((hit) => hit.message.role)).toContain('user')
      expect(await store.search.messages('数据库', { workspace: alpha })).toHaveLength(0)
    } finally {
      await store.close()
    }
  })

  it('fails boot with a message naming the field when capture config is broken', async () => {
    await expectBootRejects(hosted, '- id: memory-capture\n  config:\n    maxMessageChars: lots\n', [/memory-capture/, /maxMessageChars/])
  })
})
