/**
 * A loopback OpenAI-compatible `/embeddings` server for tests (the remote model stand-in):
 * deterministic bag-of-words vectors, or scripted failures.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

/** How the server answers. */
export type EmbeddingBehaviour = 'vectors' | 'http-500' | 'garbage' | 'wrong-dimensions' | 'stall'

/** A running embeddings server. */
export interface EmbeddingServer {
  readonly url: string
  readonly requests: { headers: IncomingMessage['headers']; body: { model?: string; input?: string[]; dimensions?: number } }[]
  behaviour: EmbeddingBehaviour
  close(): Promise<void>
}

/**
 * Deterministic "semantic" vectors: each dimension is a concept; a text activates the
 * concepts whose words it contains. Synonyms share a concept, which keyword search cannot see.
 */
export const CONCEPTS: readonly string[][] = [
  ['editor', 'helix', 'vim', 'emacs', 'ide'],
  ['database', 'postgres', 'postgresql', 'sqlite', 'storage'],
  ['deploy', 'deployment', 'hosting', 'fly.io', 'server', 'ship'],
  ['coffee', 'espresso', 'latte', 'drink', '咖啡', '拿铁', 'コーヒー', '珈琲'],
  ['dog', 'puppy', 'pet', 'cat'],
  ['language', 'typescript', 'rust', 'python'],
  ['weather', 'rain', 'sunny'],
  ['music', 'jazz', 'song'],
]

/** The vector the server returns for `text` (exported so tests can reason about it). */
export function conceptVector(text: string, dimensions = CONCEPTS.length): number[] {
  const lower = text.toLowerCase()
  const vector = new Array<number>(dimensions).fill(0)
  CONCEPTS.forEach((words, index) => {
    if (index < dimensions && words.some((word) => lower.includes(word))) vector[index] = 1
  })
  // A small constant so no vector is all zeros.
  vector[dimensions - 1] = (vector[dimensions - 1] ?? 0) + 0.01
  return vector
}

/** A request the loopback server read to the end. */
export interface LoopbackRequest {
  readonly url: string
  readonly headers: IncomingMessage['headers']
  readonly body: string
}

/**
 * Serve `answer` on 127.0.0.1 at a free port, `url` being its `/v1` base. `close()` first ends
 * the connections a stalled answer keeps open, so a test can always close it. Every loopback
 * stand-in of a remote endpoint is built on this (the e2e's outage endpoint too).
 */
export async function startLoopback(answer: (request: LoopbackRequest, response: ServerResponse) => void): Promise<{ readonly url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>()
  const server: Server = createServer((request, response) => {
    let raw = ''
    request.setEncoding('utf8')
    request.on('data', (chunk: string) => (raw += chunk))
    request.on('end', () => answer({ url: request.url ?? '', headers: request.headers, body: raw }, response))
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

/** Start the server on 127.0.0.1 with a free port. */
export async function startEmbeddingServer(behaviour: EmbeddingBehaviour = 'vectors'): Promise<EmbeddingServer> {
  const loopback = await startLoopback((request, response) => {
    const body = JSON.parse(request.body || '{}') as { model?: string; input?: string[]; dimensions?: number }
    state.requests.push({ headers: request.headers, body })
    if (request.url !== '/v1/embeddings') {
      response.writeHead(404).end('not found')
      return
    }
    switch (state.behaviour) {
      case 'http-500':
        response.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"boom"}')
        return
      case 'garbage':
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"data": "nope"}')
        return
      case 'stall':
        return // never answers; the client's timeout must end it
      case 'wrong-dimensions':
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: (body.input ?? []).map((_, index) => ({ index, embedding: [1, 2] })) }))
        return
      default: {
        const dimensions = body.dimensions ?? CONCEPTS.length
        const data = (body.input ?? []).map((text, index) => ({ object: 'embedding', index, embedding: conceptVector(text, dimensions) }))
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data, model: body.model }))
      }
    }
  })
  const state: EmbeddingServer = { url: loopback.url, requests: [], behaviour, close: loopback.close }
  return state
}
