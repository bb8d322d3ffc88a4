import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { cosineSimilarity, createEmbeddingClient, embeddingModelKey, isEmbeddingError, resolveEmbeddingClientOptions } from '../src/core/embedding.ts'

/** How the loopback endpoint answers one request. */
type Plan = { status?: number; raw?: string; stallMs?: number } | undefined

/** A real OpenAI-compatible `/embeddings` server on 127.0.0.1: vector = [length, index in batch + 1, 1]. */
async function startServer(plan: (body: { input: string[] }, request: number) => Plan = () => undefined) {
  const requests: { headers: IncomingMessage['headers']; body: Record<string, unknown> & { input: string[] } }[] = []
  const server: Server = createServer((request, response) => {
    let raw = ''
    request.setEncoding('utf8')
    request.on('data', (chunk: string) => (raw += chunk))
    request.on('end', () => {
      const body = JSON.parse(raw) as Record<string, unknown> & { input: string[] }
      requests.push({ headers: request.headers, body })
      const step = plan(body, requests.length)
      const answer = () => {
        if (step?.status) return void response.writeHead(step.status).end('{"error":"scripted"}')
        const payload = step?.raw ?? JSON.stringify({ data: body.input.map((text, index) => ({ index, embedding: [text.length, index + 1, 1] })).reverse() })
        response.writeHead(200, { 'content-type': 'application/json' }).end(payload)
      }
      if (step?.stallMs) setTimeout(answer, step.stallMs)
      else answer()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/`,
    requests,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  }
}

describe('the shared embeddings client', () => {
  let server: Awaited<ReturnType<typeof startServer>> | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })

  it('batches, orders answers by index, cuts long input and sends the key and dimensions', async () => {
    server = await startServer()
    const client = createEmbeddingClient({ baseUrl: server.url, apiKey: 'sk-1', model: 'm', dimensions: 3, batchSize: 2, maxInputChars: 4 })
    expect(client.modelKey).toBe('m@3')
    expect(client.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1\/embeddings$/)
    const vectors = await client.embed(['a', 'bb', 'ccc', '数据库和部署'])
    expect(vectors.map((vector) => [...vector])).toEqual([
      [1, 1, 1],
      [2, 2, 1],
      [3, 1, 1],
      [4, 2, 1],
    ])
    expect(server.requests.map((request) => request.body.input)).toEqual([['a', 'bb'], ['ccc', '数据库和']])
    expect(server.requests[0]!.body).toMatchObject({ model: 'm', dimensions: 3, encoding_format: 'float' })
    expect(server.requests[0]!.headers.authorization).toBe('Bearer sk-1')
  })

  it('gives every failure a stable code', async () => {
    let step: Plan
    server = await startServer(() => step)
    const client = createEmbeddingClient({ baseUrl: server.url, model: 'm', dimensions: 3, timeoutMs: 200 })
    const codeOf = (promise: Promise<unknown>) =>
      promise.then(
        () => 'ok',
        (error: unknown) => (isEmbeddingError(error) ? `${error.code}${error.status ? ` ${error.status}` : ''}` : `foreign ${String(error)}`),
      )
    step = { status: 503 }
    expect(await codeOf(client.embed(['x']))).toBe('http-error 503')
    step = { raw: 'not json' }
    expect(await codeOf(client.embed(['x']))).toBe('malformed-response')
    step = { raw: '{"data":[{"embedding":[1,2]}]}' }
    await expect(client.embed(['x'])).rejects.toThrow(/2 dimensions, expected 3/)
    step = { raw: '{"data":[{"embedding":[1,"x",3]}]}' }
    await expect(client.embed(['x'])).rejects.toThrow(/finite numbers/)
    step = { raw: '{"data":[]}' }
    await expect(client.embed(['x'])).rejects.toThrow(/expected data\[\] with 1 embeddings, got 0/)
    step = { stallMs: 1000 }
    expect(await codeOf(client.embed(['x']))).toBe('timeout')
    const controller = new AbortController()
    const pending = codeOf(client.embed(['x'], controller.signal))
    controller.abort()
    expect(await pending).toBe('aborted')
    expect(await codeOf(createEmbeddingClient({ baseUrl: 'http://127.0.0.1:9/v1', model: 'm' }).embed(['x']))).toBe('unreachable')
    step = undefined
    expect(await codeOf(client.embed(['x']))).toBe('ok')
  })

  it('cools down after a failure when asked to, and not for the caller’s own abort', async () => {
    let failing = true
    server = await startServer(() => (failing ? { status: 500 } : undefined))
    let now = 1_000
    const client = createEmbeddingClient({ baseUrl: server.url, model: 'm', cooldownMs: 5_000 }, { now: () => now })
    await expect(client.embed(['x'])).rejects.toMatchObject({ code: 'http-error', status: 500 })
    expect(client.available).toBe(false)
    await expect(client.embed(['x'])).rejects.toMatchObject({ code: 'cooling-down' })
    expect(server.requests).toHaveLength(1)
    now += 5_000
    failing = false
    expect(await client.embed(['x'])).toHaveLength(1)
    expect(client.available).toBe(true)
  })

  it('checks its options and names the field', () => {
    const path = (input: Parameters<typeof resolveEmbeddingClientOptions>[0]) => {
      try {
        resolveEmbeddingClientOptions(input)
        return 'valid'
      } catch (error) {
        return isEmbeddingError(error, 'invalid-config') ? error.path : String(error)
      }
    }
    expect(path({ baseUrl: '', model: 'm' })).toBe('baseUrl')
    expect(path({ baseUrl: 'ftp://x', model: 'm' })).toBe('baseUrl')
    expect(path({ baseUrl: 'http://x', model: ' ' })).toBe('model')
    expect(path({ baseUrl: 'http://x', model: 'm', batchSize: 0 })).toBe('batchSize')
    expect(path({ baseUrl: 'http://x', model: 'm', sendDimensions: true })).toBe('sendDimensions')
    const resolved = resolveEmbeddingClientOptions({ baseUrl: 'http://x/v1///', model: 'bge', dimensions: 0 })
    expect(resolved).toMatchObject({ baseUrl: 'http://x/v1', modelKey: 'bge', sendDimensions: false, batchSize: 64 })
    expect(Object.isFrozen(resolved)).toBe(true)
    expect(embeddingModelKey('text-embedding-3-small', 512)).toBe('text-embedding-3-small@512')
  })

  it('computes cosine similarity', () => {
    expect(cosineSimilarity([1, 2], Float32Array.from([2, 4]))).toBeCloseTo(1, 6)
    expect(cosineSimilarity([1, 0], [0, 1])).toBe(0)
    expect(cosineSimilarity([1], [1, 0])).toBe(0)
    expect(cosineSimilarity([0, 0], [1, 0])).toBe(0)
  })
})
