/**
 * Recall's view of the shared embeddings client of `@dsh-memory/store` (any OpenAI-compatible
 * `POST {baseUrl}/embeddings`). Optional: recall falls back to keyword search whenever it is
 * disabled, slow or failing. The store's client validates every answer; here its errors
 * become recall's stable `embedding-unavailable`.
 */
import { cosineSimilarity, createEmbeddingClient } from '@dsh-memory/store'
import { RecallError } from './errors.ts'
import type { EmbeddingOptions } from './options.ts'

export { cosineSimilarity }

/** Embeds texts; one vector per input, in order. */
export interface Embedder {
  /** Identifies the vectors' model (`model@dimensions`), stored next to each memory's embedding. */
  readonly modelKey: string
  /** @throws RecallError `embedding-unavailable` */
  embed(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]>
}

/**
 * Create an embedder for the configured endpoint. The key is the store's
 * `embeddingModelKey(model, dimensions)`, so vectors written by `dsh-memory reembed` count.
 * @param fetchImpl - injectable for tests that need a fetch other than the global one.
 */
export function createEmbedder(options: EmbeddingOptions, fetchImpl: typeof fetch = fetch): Embedder {
  // Recall's cool-down lives in the engine (it also decides the fallback), so none here.
  const client = createEmbeddingClient(
    { baseUrl: options.baseUrl, apiKey: options.apiKey, model: options.model, dimensions: options.dimensions, sendDimensions: true, maxInputChars: options.maxInputChars, timeoutMs: options.timeoutMs },
    { fetch: fetchImpl },
  )
  return {
    modelKey: client.modelKey,
    async embed(texts, signal) {
      try {
        return await client.embed(texts, signal)
      } catch (cause) {
        throw new RecallError('embedding-unavailable', cause instanceof Error ? cause.message : String(cause), { cause })
      }
    },
  }
}
