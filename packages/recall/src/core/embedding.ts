/**
 * A client for any OpenAI-compatible `POST {baseUrl}/embeddings` endpoint. Optional: recall
 * falls back to keyword search whenever it is disabled, slow or failing. Answers are
 * untrusted input and are validated (shape, count, dimension, finite numbers).
 */
import { z } from 'zod'
import { errorMessage, RecallError } from './errors.ts'
import type { EmbeddingOptions } from './options.ts'

/** Embeds texts; one vector per input, in order. */
export interface Embedder {
  /** Identifies the vectors' model, stored next to each memory's embedding. */
  readonly modelKey: string
  /** @throws RecallError `embedding-unavailable` */
  embed(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]>
}

const ResponseSchema = z.object({
  data: z
    .array(
      z.object({
        index: z.number().int().nonnegative().optional(),
        embedding: z.array(z.number().finite()),
      }),
    )
    .min(1),
})

/**
 * Create an embedder for the configured endpoint.
 * @param fetchImpl - injectable for tests that need a fetch other than the global one.
 */
export function createEmbedder(options: EmbeddingOptions, fetchImpl: typeof fetch = fetch): Embedder {
  const url = `${options.baseUrl}/embeddings`
  const modelKey = `${options.model}@${options.dimensions}`
  return {
    modelKey,
    async embed(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]> {
      if (texts.length === 0) return []
      const input = texts.map((text) => (options.maxInputChars > 0 && text.length > options.maxInputChars ? text.slice(0, options.maxInputChars) : text))
      const timeout = AbortSignal.timeout(options.timeoutMs)
      const combined = signal ? AbortSignal.any([signal, timeout]) : timeout
      let response: Response
      try {
        response = await fetchImpl(url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
          },
          body: JSON.stringify({ model: options.model, input, dimensions: options.dimensions, encoding_format: 'float' }),
          signal: combined,
        })
      } catch (cause) {
        const reason = timeout.aborted ? `timed out after ${options.timeoutMs} ms` : errorMessage(cause)
        throw new RecallError('embedding-unavailable', `embeddings request to ${url} failed: ${reason}`, { cause })
      }
      if (!response.ok) {
        const body = await response.text().catch(() => '')
        throw new RecallError('embedding-unavailable', `embeddings endpoint ${url} answered HTTP ${response.status}${body ? `: ${body.slice(0, 200)}` : ''}`)
      }
      let json: unknown
      try {
        json = await response.json()
      } catch (cause) {
        throw new RecallError('embedding-unavailable', `embeddings endpoint ${url} did not answer JSON`, { cause })
      }
      const parsed = ResponseSchema.safeParse(json)
      if (!parsed.success) throw new RecallError('embedding-unavailable', `embeddings endpoint ${url} answered an unexpected shape: ${parsed.error.issues[0]?.message ?? 'invalid'}`)
      const rows = parsed.data.data
      if (rows.length !== input.length) throw new RecallError('embedding-unavailable', `embeddings endpoint returned ${rows.length} vectors for ${input.length} inputs`)
      const ordered = rows.every((row) => row.index !== undefined) ? [...rows].sort((a, b) => a.index! - b.index!) : rows
      return ordered.map((row) => {
        if (row.embedding.length !== options.dimensions) {
          throw new RecallError('embedding-unavailable', `embeddings endpoint returned ${row.embedding.length} dimensions, expected ${options.dimensions}`)
        }
        return Float32Array.from(row.embedding)
      })
    },
  }
}

/** Cosine similarity in [-1, 1]; 0 when either vector is zero or the sizes differ. */
export function cosineSimilarity(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length || a.length === 0) return 0
  let dot = 0
  let normA = 0
  let normB = 0
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!
    normA += a[i]! * a[i]!
    normB += b[i]! * b[i]!
  }
  if (normA === 0 || normB === 0) return 0
  return dot / Math.sqrt(normA * normB)
}
