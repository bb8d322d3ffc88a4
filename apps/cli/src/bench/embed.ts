/**
 * Vectors for the benchmarks that run with an embedder (`bench locomo --minilm` or
 * `--embedding-url`): recall's own embedder, as the plugin builds it from its `embedding` config.
 */
import type { Embedder, EmbeddingOptions } from '@dsh-memory/recall'

/** Texts per embedder call while the bench fills in vectors (recall's backfill sends 32). */
const EMBED_BATCH = 32

/**
 * One vector per distinct text the embedder can represent (its guard, e.g. MiniLM's CJK one,
 * refuses the rest), in batches. Texts `known` holds are not sent again, and what is embedded is
 * added to it: a run over two backends (`--database-url`) embeds each text once.
 * @throws RecallError `embedding-unavailable` when it fails
 */
export async function embedTexts(embedder: Embedder, texts: Iterable<string>, known: Map<string, Float32Array> = new Map()): Promise<Map<string, Float32Array>> {
  const wanted = [...new Set(texts)].filter((text) => embedder.canEmbed?.(text) ?? true)
  const todo = wanted.filter((text) => !known.has(text))
  for (let start = 0; start < todo.length; start += EMBED_BATCH) {
    const batch = todo.slice(start, start + EMBED_BATCH)
    const embedded = await embedder.embed(batch)
    batch.forEach((text, index) => known.set(text, embedded[index]!))
  }
  return new Map(wanted.map((text) => [text, known.get(text)!]))
}

/** The progress label of the embedding step. */
export const embeddingLabel = (embedding: EmbeddingOptions) => (embedding.provider === 'minilm' ? 'minilm' : 'embeddings')
