import { execFile } from 'node:child_process'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { openMemoryStore } from '@dsh-memory/store'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type DshHome, REPO_ROOT } from '../src/host.js'
import { lastUserText, startModelServer, type ModelServer } from '../src/model-server.js'
import { freshHome, tarballs } from './helpers.js'
import { recallTexts } from './support/recall-requests.js'

/** One axis per concept: texts about the same thing point the same way without sharing a word. */
const CONCEPTS: readonly (readonly string[])[] = [
  ['espresso', 'latte', 'coffee', 'gaggia'],
  ['deploy', 'kamal', 'staging', 'release'],
  ['jazz', 'music', 'playlist'],
]
const DIMENSIONS = 4

function conceptVector(text: string): number[] {
  const lower = text.toLowerCase()
  return [...CONCEPTS.map((words) => (words.some((word) => lower.includes(word)) ? 1 : 0)), 0.01]
}

/**
 * `dsh-memory reembed` fills the vectors offline; the real host's recall then ranks by them.
 * Proves the CLI and recall agree on the key (`model@dimensions`) and the request: the host
 * embeds only the query, never the memories again.
 */
describe('reembed, then recall by embeddings in the real DSH host', () => {
  let model: ModelServer
  let embeddings: Server
  let embeddingsUrl = ''
  const requests: { model: string; input: string[]; dimensions?: number }[] = []
  let home: DshHome
  let root: string
  let cleanup: () => Promise<void>
  const alpha = () => join(root, 'work', 'alpha')
  const dataDir = () => join(home.dir, 'memory')

  beforeAll(async () => {
    model = await startModelServer({ responder: (request) => ({ kind: 'text', text: `Noted: ${lastUserText(request.body).slice(0, 40)}` }) })
    embeddings = createServer((request, response) => {
      let raw = ''
      request.setEncoding('utf8')
      request.on('data', (chunk: string) => (raw += chunk))
      request.on('end', () => {
        const body = JSON.parse(raw) as { model: string; input: string[]; dimensions?: number }
        requests.push(body)
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: body.input.map((text, index) => ({ index, embedding: conceptVector(text) })) }))
      })
    })
    await new Promise<void>((resolve) => embeddings.listen(0, '127.0.0.1', resolve))
    embeddingsUrl = `http://127.0.0.1:${(embeddings.address() as AddressInfo).port}/v1`
    ;({ home, root, cleanup } = await freshHome('reembed'))
    await home.createProfile('reembed', tarballs(), ['@dsh-memory/store', '@dsh-memory/capture', '@dsh-memory/recall'])
  })

  afterAll(async () => {
    await model?.close()
    await new Promise<void>((resolve) => (embeddings ? (embeddings.closeAllConnections(), embeddings.close(() => resolve())) : resolve()))
    await cleanup?.()
  })

  it('recalls a memory that shares no word with the question, by the vector reembed wrote', async () => {
    const store = openMemoryStore({ path: join(dataDir(), 'memory.db') })
    const coffee = await store.memories.add({ kind: 'fact', text: 'The office espresso machine is a Gaggia Classic.', scope: 'workspace', workspace: alpha() })
    await store.memories.add({ kind: 'fact', text: 'Staging releases go out with Kamal.', scope: 'workspace', workspace: alpha() })
    await store.memories.add({ kind: 'preference', text: 'The user codes to a jazz playlist.', scope: 'global' })
    await store.close()

    // The CLI as a user runs it: a separate process on the data dir, no host running. (Async:
    // the embeddings server answers from this process's event loop.)
    const cli = await new Promise<{ status: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [join(REPO_ROOT, 'apps/cli/dist/bin.js'), 'reembed', '--data-dir', dataDir(), '--url', embeddingsUrl, '--model', 'concepts', '--dimensions', String(DIMENSIONS), '--json'],
        { encoding: 'utf8', env: { ...process.env, DSH_MEMORY_DIR: '' } },
        (error, stdout, stderr) => resolve({ status: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      )
    })
    expect(cli.stderr).not.toMatch(/error/)
    expect(cli.status).toBe(0)
    expect(JSON.parse(cli.stdout)).toMatchObject({ completed: true, memories: { modelKey: `concepts@${DIMENSIONS}`, total: 3, embedded: 3 }, cues: { cueBank: false, total: 0 } })
    expect(requests).toHaveLength(1)

    const patch = (strategy: string, enabled: boolean) =>
      `- id: memory-recall\n  config:\n    recall:\n      strategy: ${strategy}\n    embedding:\n      enabled: ${enabled}\n      baseUrl: ${embeddingsUrl}\n      model: concepts\n      dimensions: ${DIMENSIONS}\n`
    const question = 'What should I use to pull a shot for my latte?'

    // Control: keyword search alone cannot connect the question to the memory.
    let before = model.requests.length
    const keyword = await home.run({ profile: 'reembed', cwd: alpha(), modelUrl: model.url, args: [question], patch: patch('keyword', false) })
    expect(keyword.code).toBe(0)
    let chats = model.requests.slice(before).filter((request) => request.purpose === 'chat')
    expect(recallTexts(chats[0]!).join('\n')).not.toContain('Gaggia')
    expect(requests).toHaveLength(1)

    before = model.requests.length
    const vector = await home.run({ profile: 'reembed', cwd: alpha(), modelUrl: model.url, args: [question], patch: patch('embedding', true) })
    expect(vector.stderr).not.toMatch(/Error:/)
    expect(vector.code).toBe(0)
    chats = model.requests.slice(before).filter((request) => request.purpose === 'chat')
    expect(chats).toHaveLength(1)
    const recalled = recallTexts(chats[0]!).join('\n')
    expect(recalled).toContain('Gaggia Classic')
    expect(recalled).toContain(`id="${coffee.id}"`)
    expect(recalled).not.toContain('Kamal')
    // The host embedded the question (recall's request: model and dimensions) and nothing else:
    // every memory already had a vector under recall's key, so there was no backfill.
    const hostRequests = requests.slice(1)
    expect(hostRequests.length).toBeGreaterThanOrEqual(1)
    expect(hostRequests.every((request) => request.model === 'concepts' && request.dimensions === DIMENSIONS)).toBe(true)
    expect(hostRequests.flatMap((request) => request.input).some((text) => text.includes(question))).toBe(true)
    expect(hostRequests.flatMap((request) => request.input).some((text) => /Gaggia|Kamal|jazz/.test(text))).toBe(false)
  })
})
