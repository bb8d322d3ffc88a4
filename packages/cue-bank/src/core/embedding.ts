/**
 * A small client for an OpenAI-compatible `POST {baseURL}/embeddings` endpoint (SiliconFlow,
 * OpenAI, a local server). Answers are validated before anyone uses them; a failure puts the
 * client in a cool-down so a dead endpoint is not hammered on every message.
 */
import { CueBankError } from './errors.js'

/** What the cue bank needs from an embedding source. */
export interface Embedder {
  /** Identifies the vectors' model; vectors of different models are never compared. */
  readonly model: string
  /** False while cooling down after a failure. */
  readonly available: boolean
  /**
   * One vector per text, in order.
   * @throws CueBankError `embedding-failed` (HTTP error, timeout, malformed answer, cool-down)
   */
  embed(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]>
}

/** Options of {@link createEmbeddingClient}. */
export interface EmbeddingClientOptions {
  readonly baseURL: string
  readonly apiKey: string
  readonly model: string
  /** Expected vector length; 0 accepts any consistent length. */
  readonly dimensions: number
  readonly timeoutMs: number
  /** Pause after a failure before the next attempt. Default 60 000 ms. */
  readonly cooldownMs?: number
  /** Longest text sent, in characters; longer input is cut. Default 2000. */
  readonly maxInputChars?: number
  readonly fetch?: typeof fetch
  readonly now?: () => number
}

/** Create an {@link Embedder} over an OpenAI-compatible endpoint. */
export function createEmbeddingClient(options: EmbeddingClientOptions): Embedder {
  const endpoint = `${options.baseURL.replace(/\/+$/, '')}/embeddings`
  const doFetch = options.fetch ?? fetch
  const now = options.now ?? Date.now
  const cooldownMs = options.cooldownMs ?? 60_000
  const maxInputChars = options.maxInputChars ?? 2000
  let coolUntil = 0

  const fail = (message: string, cause?: unknown): CueBankError => {
    coolUntil = now() + cooldownMs
    return new CueBankError('embedding-failed', `embedding request to ${endpoint} failed: ${message}`, { cause })
  }

  return {
    model: options.model,
    get available() {
      return now() >= coolUntil
    },
    async embed(texts, signal) {
      if (texts.length === 0) return []
      if (now() < coolUntil) throw new CueBankError('embedding-failed', `embedding endpoint ${endpoint} is cooling down after a failure`)
      const timeout = AbortSignal.timeout(options.timeoutMs)
      const combined = signal ? AbortSignal.any([signal, timeout]) : timeout
      let response: Response
      try {
        response = await doFetch(endpoint, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
          },
          body: JSON.stringify({ model: options.model, input: texts.map((text) => text.slice(0, maxInputChars)), encoding_format: 'float' }),
          signal: combined,
        })
      } catch (error) {
        if (timeout.aborted) throw fail(`no answer within ${options.timeoutMs} ms`, error)
        throw fail(error instanceof Error ? error.message : String(error), error)
      }
      let body: unknown
      try {
        if (!response.ok) {
          const detail = (await response.text()).slice(0, 200)
          throw fail(`HTTP ${response.status}${detail ? `: ${detail}` : ''}`)
        }
        body = await response.json()
      } catch (error) {
        if (error instanceof CueBankError) throw error
        throw fail(timeout.aborted ? `no answer within ${options.timeoutMs} ms` : 'the answer is not JSON', error)
      }
      return parseEmbeddings(body, texts.length, options.dimensions, fail)
    },
  }
}

function parseEmbeddings(body: unknown, count: number, dimensions: number, fail: (message: string) => CueBankError): Float32Array[] {
  const data = (body as { data?: unknown } | null)?.data
  if (!Array.isArray(data) || data.length !== count) throw fail(`expected data[] with ${count} embeddings`)
  const vectors: Float32Array[] = new Array(count)
  data.forEach((entry: unknown, position) => {
    const index = typeof (entry as { index?: unknown })?.index === 'number' ? (entry as { index: number }).index : position
    const values = (entry as { embedding?: unknown })?.embedding
    if (!Number.isInteger(index) || index < 0 || index >= count || vectors[index]) throw fail(`bad index ${String(index)} in data[${position}]`)
    if (!Array.isArray(values) || values.length === 0 || !values.every((value) => typeof value === 'number' && Number.isFinite(value))) {
      throw fail(`data[${position}].embedding is not an array of finite numbers`)
    }
    if (dimensions > 0 && values.length !== dimensions) throw fail(`data[${position}].embedding has ${values.length} dimensions, expected ${dimensions}`)
    vectors[index] = Float32Array.from(values as number[])
  })
  const length = vectors[0]!.length
  if (vectors.some((vector) => vector.length !== length)) throw fail('embeddings of one answer differ in length')
  return vectors
}
