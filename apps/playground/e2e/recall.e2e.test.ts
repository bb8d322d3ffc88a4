import { join } from 'node:path'
import { TURN_RANKING } from '@dsh-memory/recall'
import type { MemoryStore } from '@dsh-memory/store'
import { describe, expect, it } from 'vitest'
import { contentText, lastUserText } from '../src/model-server.js'
import { expectBootRejects, useHostProfile, withHomeStore } from './helpers.js'
import { loggedUserMessages, RECALL_FENCE, recallTexts, systemText } from './support/recall-requests.js'

describe('recall in the real DSH host (memories seeded through the store library)', () => {
  const alpha = () => join(hosted.root, 'work', 'alpha')
  const beta = () => join(hosted.root, 'work', 'beta')

  const withStore = <T>(fn: (store: MemoryStore) => Promise<T>): Promise<T> => withHomeStore(hosted.home, fn)
  const run = (cwd: string, prompt: string, patch = '') =>
    hosted.home.run({ profile: 'recall', cwd, modelUrl: hosted.server.url, patch, args: [prompt] })

  const hosted = useHostProfile('recall', {
    packages: ['@dsh-memory/store', '@dsh-memory/capture', '@dsh-memory/recall'],
    responder: (request) => {
      const last = request.body.messages.at(-1)
      if (last?.role === 'tool') return { kind: 'text', text: `From the tool: ${contentText(last.content).slice(0, 80)}` }
      const asked = lastUserText(request.body)
      if (request.purpose === 'chat' && asked.includes('tool:conversations')) return { kind: 'tools', calls: [{ name: 'conversation_search', arguments: { query: 'Hetzner bucket' } }] }
      if (asked.includes('nightly backups')) return { kind: 'text', text: 'They are copied to the Hetzner bucket at two in the morning.' }
      return { kind: 'text', text: `Noted: ${asked.slice(0, 60)}` }
    },
  })

  it('injects the workspace\'s relevant memory into the model request, fenced and sourced from recall, and never captures it back', async () => {
    const ids = await withStore(async (store) => {
      const deploy = await store.memories.add({ kind: 'fact', text: 'Staging deploys of this project go out with Kamal from the ops laptop.', scope: 'workspace', workspace: alpha() })
      const foreign = await store.memories.add({ kind: 'fact', text: 'Staging deploys of the beta project use Capistrano.', scope: 'workspace', workspace: beta() })
      await store.memories.add({ kind: 'preference', text: 'The user likes answers with a short summary first.', scope: 'global' })
      await store.persona.put({ scope: 'global', text: 'A platform engineer who runs small teams.' })
      return { deploy: deploy.id, foreign: foreign.id }
    })

    const before = hosted.server.requests.length
    const result = await run(alpha(), 'How do staging deploys go out?')
    expect(result.stderr).not.toMatch(/Error:/)
    expect(result.code).toBe(0)
    expect(result.stdout).toContain('Noted: How do staging deploys go out?')

    const chats = hosted.server.requests.slice(before).filter((request) => request.purpose === 'chat')
    expect(chats).toHaveLength(1)
    const recalled = recallTexts(chats[0]!)
    expect(recalled).toHaveLength(1)
    expect(recalled[0]).toContain('Kamal')
    expect(recalled[0]).toContain(`id="${ids.deploy}"`)
    expect(recalled[0]).not.toContain('Capistrano')
    expect(systemText(chats[0]!)).toContain('A platform engineer who runs small teams.')

    // In the host's own session log the message carries the recall source.
    const logged = (await loggedUserMessages(join(hosted.home.dir, 'sessions'))).filter((message) => message.text.startsWith(RECALL_FENCE))
    expect(logged).toHaveLength(1)
    expect(logged[0]!.source).toEqual({ kind: 'plugin', plugin: 'memory-recall', form: 'recall' })

    await withStore(async (store) => {
      const [conversation] = await store.conversations.list({ workspace: alpha() })
      const messages = await store.messages.list({ conversationId: conversation!.id })
      // Capture stored the human prompt and the reply, not the recalled block.
      expect(messages.map((message) => message.role)).toEqual(['user', 'assistant'])
      expect(messages.some((message) => message.text.includes('Kamal'))).toBe(false)
      expect((await store.memories.get(ids.deploy))!.lastRecalledAt).toEqual(expect.any(Number))
      expect((await store.memories.get(ids.foreign))!.lastRecalledAt).toBeNull()
    })
  })

  it('does not inject one workspace\'s memories into another workspace\'s request', async () => {
    const other = join(hosted.root, 'work', 'other')
    const before = hosted.server.requests.length
    const result = await run(other, 'How do staging deploys go out with Kamal?')
    expect(result.code).toBe(0)
    const chats = hosted.server.requests.slice(before).filter((request) => request.purpose === 'chat')
    expect(chats).toHaveLength(1)
    const text = recallTexts(chats[0]!).join('\n')
    expect(text).not.toContain('Kamal from the ops laptop')
    expect(text).not.toContain('Capistrano')
  })

  it('a session in write-only mode (recall.enabled false) gets nothing injected and still runs', async () => {
    const before = hosted.server.requests.length
    const result = await run(alpha(), 'How do staging deploys go out again?', '- id: memory-recall\n  config:\n    recall:\n      enabled: false\n')
    expect(result.code).toBe(0)
    const chats = hosted.server.requests.slice(before).filter((request) => request.purpose === 'chat')
    expect(recallTexts(chats[0]!)).toEqual([])
  })

  it('conversation search brings the question with the answer that matched, though the host numbered events between them', async () => {
    const gamma = join(hosted.root, 'work', 'gamma')
    expect((await run(gamma, 'Where do the nightly backups go?')).code).toBe(0)
    await withStore(async (store) => {
      const [conversation] = await store.conversations.list({ workspace: gamma })
      const [question, answer] = await store.messages.list({ conversationId: conversation!.id })
      expect(answer!.text).toContain('Hetzner bucket')
      // Capture stores the host's event number: the turn's other events (turn start, request
      // header, the reply's chunks) sit between the two, further apart than the context span.
      expect(answer!.seq - question!.seq).toBeGreaterThan(TURN_RANKING.context.span)
    })

    const before = hosted.server.requests.length
    const result = await run(gamma, 'Please run tool:conversations now.')
    expect(result.code, result.stderr).toBe(0)
    const found = hosted.server.requests
      .slice(before)
      .map((request) => request.body.messages.at(-1))
      .filter((message) => message?.role === 'tool')
      .map((message) => contentText(message!.content))
    expect(found).toHaveLength(1)
    // The answer matched the query; its question (no query term) came as its context neighbour.
    expect(found[0]).toContain('Hetzner bucket at two in the morning')
    expect(found[0]).toContain('Where do the nightly backups go?')
  })

  it('fails boot with a message naming the field when recall config is broken', async () => {
    await expectBootRejects(hosted, '- id: memory-recall\n  config:\n    recall:\n      scoreThreshold: 7\n', [/memory-recall/, /scoreThreshold/])
  })
})
