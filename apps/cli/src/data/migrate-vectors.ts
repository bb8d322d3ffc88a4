/**
 * `migrate` of the messages' vectors (`store_message_vectors`): derived data the export leaves
 * out, which recall's background backfill would compute again, but a team server that receives
 * a year of conversations should not have to embed them all again. So they are copied after
 * the records, page by page in (message id, model) order (`transfer.messageVectors`), every
 * model's vector of a message with its model, through `messages.setEmbeddings` (a message the
 * target does not have is skipped; a vector of another model the target holds stays).
 * A vector the target already holds byte for byte, of the same model, is not written again, so
 * a second run copies nothing; one that differs is replaced by the source's (the message is the
 * source's: its vector is too). Verified: every source vector is in the target, bit for bit.
 */
import type { MemoryStore, MessageEmbedding, MessageVectorKey } from '@dsh-memory/store'

/** The store's largest page of vectors (`transfer.messageVectors`, `setEmbeddings`). */
const VECTOR_PAGE_LIMIT = 1_000

/** The vectors' line of a migrate report. */
export interface VectorReport {
  /** Vectors written by this run. */
  copied: number
  /** Vectors the target had, the same model and bytes. */
  alreadyPresent: number
  /** Null until verified. */
  verified: { readonly source: number; readonly target: number; readonly missing: number } | null
}

const sameBytes = (a: Float32Array, b: Float32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength))

/** The vectors of `page` that `target` lacks (none of that model, or other bytes). */
async function lacking(target: MemoryStore, page: readonly MessageEmbedding[]): Promise<MessageEmbedding[]> {
  const byModel = new Map<string, MessageEmbedding[]>()
  for (const entry of page) byModel.set(entry.embeddingModel, [...(byModel.get(entry.embeddingModel) ?? []), entry])
  const out: MessageEmbedding[] = []
  for (const [model, entries] of byModel) {
    const held = await target.messages.embeddings(
      entries.map((entry) => entry.messageId),
      model,
    )
    for (const entry of entries) {
      const there = held.get(entry.messageId)
      if (!there || !sameBytes(there, entry.embedding)) out.push(entry)
    }
  }
  return out
}

/** Every page of the source's vectors, in (message id, model) order. */
async function* vectorPages(source: MemoryStore, limit: number): AsyncGenerator<MessageEmbedding[]> {
  for (let after: MessageVectorKey | undefined; ; ) {
    const page = await source.transfer.messageVectors({ ...(after === undefined ? {} : { after }), limit })
    if (page.length > 0) yield page
    if (page.length < limit) return
    const last = page[page.length - 1]!
    after = { messageId: last.messageId, embeddingModel: last.embeddingModel }
  }
}

/**
 * Copy the source's message vectors the target lacks, a page (one target transaction) at a time.
 * @returns false when `signal` stopped it.
 */
export async function copyMessageVectors(
  source: MemoryStore,
  target: MemoryStore,
  report: VectorReport,
  options: { pageSize?: number; signal?: AbortSignal; onPage?: () => void; tick?: (count: number) => void },
): Promise<boolean> {
  for await (const page of vectorPages(source, Math.min(options.pageSize ?? VECTOR_PAGE_LIMIT, VECTOR_PAGE_LIMIT))) {
    const missing = await lacking(target, page)
    if (missing.length > 0) report.copied += await target.messages.setEmbeddings(missing)
    report.alreadyPresent += page.length - missing.length
    options.tick?.(page.length)
    options.onPage?.()
    if (options.signal?.aborted) return false
  }
  return true
}

/** Count the source's vectors the target lacks, whoever's messages they are. */
export async function verifyMessageVectors(source: MemoryStore, target: MemoryStore): Promise<NonNullable<VectorReport['verified']>> {
  let missing = 0
  for await (const page of vectorPages(source, VECTOR_PAGE_LIMIT)) missing += (await lacking(target, page)).length
  return { source: await source.transfer.messageVectorCount(), target: await target.transfer.messageVectorCount(), missing }
}
