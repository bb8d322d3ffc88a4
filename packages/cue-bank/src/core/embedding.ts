/**
 * The cue bank's view of the shared embeddings client of `@dsh-memory/store` (any
 * OpenAI-compatible `POST {baseURL}/embeddings`: SiliconFlow, OpenAI, a local server). The
 * store's client validates every answer; a failure puts it in a cool-down so a dead endpoint
 * is not hammered on every message. Its errors become the cue bank's `embedding-failed`.
 */
import { createEmbeddingClient as createStoreEmbeddingClient, isEmbeddingError } from '@dsh-memory/store'
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

/**
 * The key cue vectors are stored under (`cue_bank_topics.embedding_model`): the model name
 * alone, as the cue bank has always written it. `dsh-memory reembed` writes the same key.
 */
export function cueEmbeddingModelKey(model: string): string {
  return model.trim()
}

/** Create an {@link Embedder} over an OpenAI-compatible endpoint. */
export function createEmbeddingClient(options: EmbeddingClientOptions): Embedder {
  let client: ReturnType<typeof createStoreEmbeddingClient>
  try {
    client = createStoreEmbeddingClient(
      {
        baseUrl: options.baseURL,
        apiKey: options.apiKey,
        model: options.model,
        dimensions: options.dimensions,
        // The cue bank never sent `dimensions` (bge-m3 on SiliconFlow has a fixed size); it only checks it.
        sendDimensions: false,
        timeoutMs: options.timeoutMs,
        cooldownMs: options.cooldownMs ?? 60_000,
        maxInputChars: options.maxInputChars ?? 2000,
        modelKey: cueEmbeddingModelKey(options.model),
      },
      { ...(options.fetch ? { fetch: options.fetch } : {}), ...(options.now ? { now: options.now } : {}) },
    )
  } catch (cause) {
    const field = isEmbeddingError(cause) && cause.path ? (cause.path === 'baseUrl' ? 'baseURL' : cause.path) : undefined
    throw new CueBankError('invalid-config', cause instanceof Error ? cause.message : String(cause), { cause, ...(field ? { path: `embedding.${field}` } : {}) })
  }
  return {
    model: client.modelKey,
    get available() {
      return client.available
    },
    async embed(texts, signal) {
      try {
        return await client.embed(texts, signal)
      } catch (cause) {
        throw new CueBankError('embedding-failed', cause instanceof Error ? cause.message : String(cause), { cause })
      }
    },
  }
}
