/**
 * Recall's embeddings seam: the shared embeddings client of `@dsh-memory/store` (any
 * OpenAI-compatible `POST {baseUrl}/embeddings`) or the in-process MiniLM (`minilm.ts`).
 * Optional: recall falls back to keyword search whenever it is disabled, slow or failing. The
 * store's client validates every answer; here its errors become recall's stable
 * `embedding-unavailable`.
 */
import { cosineSimilarity, createEmbeddingClient } from '@dsh-memory/store'
import { RecallError } from './errors.ts'
import { assertMiniLmInstalled, createMiniLmEmbedder } from './minilm.ts'
import type { EmbeddingOptions } from './options.ts'

export { cosineSimilarity }

/** Embeds texts; one vector per input, in order. */
export interface Embedder {
  /** Identifies the vectors' model (`model@dimensions`), stored next to each memory's embedding. */
  readonly modelKey: string
  /** @throws RecallError `embedding-unavailable` */
  embed(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]>
  /**
   * Whether the model can represent `text` (absent = every text). A text it cannot represent
   * gets no vector: a query is then ranked by keywords only, a memory only by keywords.
   */
  canEmbed?(text: string): boolean
  /**
   * For a model that loads in the process: start loading it when it is not loading yet, and
   * say whether it is loaded. Recall does not wait for a load: a query before it is ranked by
   * keywords (absent = always ready).
   */
  warm?(): boolean
  /** Release what the embedder holds (a worker thread); absent = nothing to release. */
  close?(): Promise<void>
}

/**
 * Create an embedder for the configured provider. For an endpoint the key is the store's
 * `embeddingModelKey(model, dimensions)`, so vectors written by `dsh-memory reembed` count;
 * MiniLM's is `MINILM_MODEL_KEY`.
 * @param fetchImpl - injectable for tests that need a fetch other than the global one.
 * @throws RecallError `invalid-config` (path `embedding.provider`) when the provider is
 *   `minilm` and its optional packages are not installed.
 */
export function createEmbedder(options: EmbeddingOptions, fetchImpl: typeof fetch = fetch): Embedder {
  if (options.provider === 'minilm') {
    assertMiniLmInstalled()
    return createMiniLmEmbedder({ maxInputChars: options.maxInputChars, timeoutMs: options.timeoutMs })
  }
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
