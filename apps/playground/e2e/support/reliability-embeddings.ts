/**
 * A scripted OpenAI-compatible `/embeddings` endpoint on 127.0.0.1 for the outage tests and
 * the cue bank's vector matching (the remote model is the only thing replaced). It answers with small deterministic vectors, or
 * fails the way a provider does during an outage: a stalled response, HTTP 429, HTTP 500.
 * Every request is logged with its arrival time, so a test can measure how long the host
 * waited for recall before it sent the chat request.
 */
import { startLoopback } from '../../../../packages/recall/test/support/loopback.js'

/** How the endpoint answers the next requests. */
export type EmbeddingOutage = 'ok' | 'stall' | 'http-429' | 'http-500'

/** One logged request. */
export interface EmbeddingRequest {
  /** Arrival time (epoch ms). */
  readonly at: number
  readonly input: readonly string[]
}

/** A running endpoint; `url` is the base URL recall's `embedding.baseUrl` takes. */
export interface EmbeddingEndpoint {
  readonly url: string
  readonly requests: EmbeddingRequest[]
  mode: EmbeddingOutage
  close(): Promise<void>
}

/** Dimensions of the vectors the endpoint returns. */
export const EMBEDDING_DIMENSIONS = 8

/** A bag-of-characters vector: deterministic, non-zero, good enough to rank a few memories. */
function vectorOf(text: string): number[] {
  const vector = new Array<number>(EMBEDDING_DIMENSIONS).fill(0.01)
  for (const char of text.toLowerCase()) vector[char.codePointAt(0)! % EMBEDDING_DIMENSIONS]! += 1
  return vector
}

/**
 * Start the endpoint with a free port. `vector` replaces the bag-of-characters vectors (e.g.
 * one axis per concept, so texts about the same thing match without sharing a word); its
 * vectors must all have the same length.
 */
export async function startEmbeddingEndpoint(mode: EmbeddingOutage = 'ok', vector: (text: string) => number[] = vectorOf): Promise<EmbeddingEndpoint> {
  const loopback = await startLoopback((request, response) => {
    let input: string[] = []
    try {
      const body = JSON.parse(request.body || '{}') as { input?: unknown }
      input = Array.isArray(body.input) ? body.input.map(String) : typeof body.input === 'string' ? [body.input] : []
    } catch {
      // A body that is not JSON is logged with no input and answered like any other.
    }
    endpoint.requests.push({ at: Date.now(), input })
    if (!request.url.endsWith('/embeddings')) return void response.writeHead(404).end('not found')
    switch (endpoint.mode) {
      case 'stall':
        return // never answers: only the client's own budget can end the wait (close() ends the socket)
      case 'http-429':
        return void response.writeHead(429, { 'content-type': 'application/json', 'retry-after': '30' }).end('{"error":{"message":"rate limited","type":"rate_limit_error"}}')
      case 'http-500':
        return void response.writeHead(500, { 'content-type': 'application/json' }).end('{"error":{"message":"internal error"}}')
      default:
        response
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ object: 'list', model: 'reliability-vectors', data: input.map((text, index) => ({ object: 'embedding', index, embedding: vector(text) })) }))
    }
  })
  const endpoint: EmbeddingEndpoint = { url: loopback.url, requests: [], mode, close: loopback.close }
  return endpoint
}
