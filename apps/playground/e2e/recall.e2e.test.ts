import { join } from 'node:path'
import { TURN_RANKING } from '@dsh-memory/recall'
import type { MemoryStore } from '@dsh-memory/store'
import { describe, expect, it, onTestFinished } from 'vitest'
import { CONCEPTS, conceptVector } from '../../../packages/recall/test/support/loopback.js'
import { contentText, lastUserText } from '../src/model-server.js'
import { expectBootRejects, useHostProfile, withHomeStore } from './helpers.js'
import { loggedUserMessages, RECALL_FENCE, recallTexts, systemText } from './support/recall-requests.js'
import { startEmbeddingEndpoint } from './support/reliability-embeddings.js'

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
      if (request.purpose === 'chat' && asked.includes('tool:vectors')) return { kind: 'tools', calls: [{ name: 'conversation_search', arguments: { query: 'tell me about my pet' } }] }
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

  it('with a local embedding server, the conversation log gets vectors in the background and conversation search ranks by meaning', async () => {
    // One axis per concept (the scripted stand-in of a local Ollama / llama.cpp server): "cat" and "pet" share one.
    const embeddings = await startEmbeddingEndpoint('ok', conceptVector)
    onTestFinished(() => embeddings.close())
    const hybrid = `- id: memory-recall\n  config:\n    recall:\n      strategy: hybrid\n    embedding:\n      enabled: true\n      baseUrl: ${embeddings.url}\n      model: concepts\n      dimensions: ${CONCEPTS.length}\n`
    const delta = join(hosted.root, 'work', 'delta')
    // Two earlier sessions: each matches "tell … pet" by one word (the shorter ranks first by keywords); only the second is about a pet.
    for (const said of ['Tell me when the build ends.', 'Tell me when the cat wakes up from her long nap.']) expect((await run(delta, said)).code).toBe(0)
    /** The conversation_search result the model read in the run that asked for it: the quoted messages, best first. */
    const searchOnce = async (patch: string) => {
      const before = hosted.server.requests.length
      const result = await run(delta, 'Please run tool:vectors now.', patch)
      expect(result.code, result.stderr).toBe(0)
      const [tool] = hosted.server.requests
        .slice(before)
        .map((request) => request.body.messages.at(-1))
        .filter((message) => message?.role === 'tool')
      return [...contentText(tool!.content).matchAll(/<message [^>]*>([^<]*)<\/message>/g)].map((match) => match[1]!)
    }
    // Keyword search: the shorter of the two matching turns comes first.
    expect((await searchOnce(''))[0]).toContain('build ends')

    // A turn with embeddings on: the automatic recall embeds the workspace's newest turns in the
    // background, and the session's flush waits for it.
    expect((await run(delta, 'Good morning.', hybrid)).code).toBe(0)
    await withStore(async (store) => {
      const messages = await store.messages.list({ workspace: delta, limit: 100 })
      const vectors = await store.messages.embeddings(
        messages.map((message) => message.id),
        `concepts@${CONCEPTS.length}`,
      )
      const cat = messages.find((message) => message.text === 'Tell me when the cat wakes up from her long nap.')!
      expect(Array.from(vectors.get(cat.id) ?? [])).toEqual(conceptVector(cat.text).map(Math.fround))
    })
    const ranked = await searchOnce(hybrid)
    expect(ranked[0]).toMatch(/cat wakes up/)
    expect(ranked.findIndex((text) => text.includes('cat wakes up'))).toBeLessThan(ranked.findIndex((text) => text.includes('build ends')))
  })

  it('fails boot with a message naming the field when recall config is broken', async () => {
    await expectBootRejects(hosted, '- id: memory-recall\n  config:\n    recall:\n      scoreThreshold: 7\n', [/memory-recall/, /scoreThreshold/])
  })
})
