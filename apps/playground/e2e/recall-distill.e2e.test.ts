import { join } from 'node:path'
import type { MemoryStore } from '@dsh-memory/store'
import { describe, expect, it } from 'vitest'
import { lastUserText } from '../src/model-server.js'
import { distillLayer, distillReply, type ScriptedFact } from './support/distill-model.js'
import { useHostProfile, withHomeStore } from './helpers.js'
import { loggedUserMessages, RECALL_FENCE, recallTexts } from './support/recall-requests.js'

/** What the scripted extractor "finds" in session A: two facts about the user's project. */
const FACTS: ScriptedFact[] = [
  { match: 'heron', kind: 'fact', text: 'The user\'s staging server is called heron.', scope: 'workspace' },
  { match: 'Kamal', kind: 'fact', text: 'The user deploys the staging server with Kamal.', scope: 'workspace' },
]

describe('distill + recall in the real DSH host', () => {
  const withStore = <T>(fn: (store: MemoryStore) => Promise<T>): Promise<T> => withHomeStore(hosted.home, fn)
  const run = (cwd: string, prompt: string) => hosted.home.run({ profile: 'memory', cwd, modelUrl: hosted.server.url, args: [prompt] })

  const hosted = useHostProfile('recall-distill', {
    profile: 'memory',
    packages: ['@dsh-memory/store', '@dsh-memory/capture', '@dsh-memory/distill', '@dsh-memory/recall'],
    responder: (request) => distillReply(request, FACTS) ?? { kind: 'text', text: `Noted: ${lastUserText(request.body).slice(0, 60)}` },
  })

  it('session A tells two facts, distillation stores them, session B\'s request carries them from recall, an unrelated workspace\'s does not', async () => {
    const project = join(hosted.root, 'work', 'project')
    const unrelated = join(hosted.root, 'work', 'unrelated')

    const a = await run(project, 'Our staging server is called heron and we deploy it with Kamal.')
    expect(a.stderr).not.toMatch(/Error:/)
    expect(a.code).toBe(0)
    // Distillation (the scripted model returned extraction JSON) stored both facts.
    await withStore(async (store) => {
      const memories = await store.memories.list({ workspace: project, includeGlobal: false })
      expect(memories.map((memory) => memory.text).sort()).toEqual([...FACTS.map((fact) => fact.text)].sort())
    })

    const beforeB = hosted.server.requests.length
    const b = await run(project, 'Which tool do we use to deploy the staging server?')
    expect(b.code).toBe(0)
    const chatB = hosted.server.requests.slice(beforeB).filter((request) => request.purpose === 'chat' && !distillLayer(request))
    expect(chatB).toHaveLength(1)
    const recalled = recallTexts(chatB[0]!)
    expect(recalled).toHaveLength(1)
    expect(recalled[0]).toContain('The user deploys the staging server with Kamal.')
    const logged = (await loggedUserMessages(join(hosted.home.dir, 'sessions'))).filter((message) => message.text.includes('deploys the staging server with Kamal'))
    expect(logged.map((message) => message.source)).toEqual([{ kind: 'plugin', plugin: 'memory-recall', form: 'recall' }])
    expect(logged[0]!.text.startsWith(RECALL_FENCE)).toBe(true)

    const beforeC = hosted.server.requests.length
    const c = await run(unrelated, 'Which tool do we use to deploy the staging server?')
    expect(c.code).toBe(0)
    const chatC = hosted.server.requests.slice(beforeC).filter((request) => request.purpose === 'chat' && !distillLayer(request))
    expect(chatC).toHaveLength(1)
    expect(recallTexts(chatC[0]!)).toEqual([])
    expect(JSON.stringify(chatC[0]!.body.messages)).not.toContain('Kamal')

    // The recalled block was not captured back as conversation, nor distilled again.
    await withStore(async (store) => {
      const texts = (await store.messages.list({ workspace: project, limit: 100 })).map((message) => message.text)
      expect(texts.some((text) => text.includes(RECALL_FENCE))).toBe(false)
      expect((await store.memories.list({ includeSuperseded: true })).map((memory) => memory.text).sort()).toEqual([...FACTS.map((fact) => fact.text)].sort())
    })
  })
})
