/**
 * The palace's index in the shared store, so `palace_search` looks up candidate turns in the
 * store's CJK-aware BM25 index instead of reading every volume.
 *
 * Files stay the source of truth; this index is derived and rebuilt from `index.jsonl`
 * whenever it is behind. Each archived turn becomes L0 message rows of one store
 * conversation per session (`memory-palace:<hash>`), whose workspace key is
 * `memory-palace:<workspace>` — a key no other plugin queries, so recall and capture never
 * see archive rows as conversation. Rows are idempotent by turn (`hostMessageId`
 * `t<turn>#<chunk>`), so re-indexing after a crash writes nothing twice. Long turns are
 * split into chunks below the store's message cap, and a chunk the store still truncated
 * marks that session's index as lossy, which makes search fall back to scanning files.
 */
import { createHash } from 'node:crypto'
import type { MemoryStore } from '@dsh-memory/store'
import type { IndexEntry, NamespaceArchive } from './namespace.js'
import type { ParsedQuery } from './query.js'

/** The store API the index uses. */
export type PalaceStore = Pick<MemoryStore, 'conversations' | 'messages' | 'search' | 'meta'>

/** Characters per indexed chunk (well below the store's default 100 000-character message cap). */
export const CHUNK_CHARS = 20_000
/** Store search limit; a full page means the candidates may be incomplete, so files are scanned. */
export const CANDIDATE_LIMIT = 1000
const META_PREFIX = 'palace.index.'
const INDEX_VERSION = 1

interface IndexMeta {
  version: number
  /** Turns indexed. */
  turns: number
  /** True when the store shortened a chunk: the index cannot vouch for completeness. */
  lossy: boolean
}

/** Store workspace key of one workspace's palace rows. */
export function storeWorkspaceKey(workspace: string): string {
  return `memory-palace:${workspace}`
}

/** Store conversation id of one session's palace rows. */
export function storeConversationId(workspace: string, sessionId: string): string {
  return `memory-palace:${createHash('sha256').update(`${workspace}\0${sessionId}`).digest('hex').slice(0, 24)}`
}

/** One namespace as the index sees it. */
export interface IndexedNamespace {
  readonly namespace: string
  readonly sessionId: string
  readonly archive: NamespaceArchive
}

/** Maintains and queries the palace rows of one store. */
export class StorePalaceIndex {
  constructor(private readonly store: PalaceStore) {}

  private async readMeta(conversationId: string): Promise<IndexMeta | undefined> {
    const raw = await this.store.meta.get(`${META_PREFIX}${conversationId}`)
    if (raw === undefined) return undefined
    try {
      const meta = JSON.parse(raw) as IndexMeta
      return meta.version === INDEX_VERSION ? meta : undefined
    } catch {
      return undefined
    }
  }

  /** Index the given turns (idempotent). @returns rows inserted and whether the store shortened any chunk. */
  private async add(conversationId: string, target: IndexedNamespace, entries: readonly IndexEntry[]): Promise<{ inserted: number; lossy: boolean }> {
    let inserted = 0
    let lossy = false
    for (const entry of entries) {
      const text = await target.archive.turnText(entry)
      for (const [index, part] of chunk(text).entries()) {
        if (part.trim().length === 0) continue
        const result = await this.store.messages.append(
          {
            conversationId,
            hostMessageId: `t${entry.turn}#${index}`,
            role: entry.speaker === 'user' ? 'user' : 'assistant',
            text: part,
            turn: entry.turn,
            createdAt: entry.archivedAt,
            flags: { palace: INDEX_VERSION, category: entry.category, chunk: index },
          },
          { actor: 'palace' },
        )
        if (result.inserted) inserted++
        if (result.message.text.length < part.length && result.message.text.endsWith('[truncated]')) lossy = true
      }
    }
    return { inserted, lossy }
  }

  /**
   * Bring the store rows of a namespace up to its `index.jsonl`: after every archive, and
   * before a search when the index is behind (a crash between the file commit and the
   * store write, an upgrade, a folder copied from elsewhere). Idempotent.
   */
  async sync(workspace: string, target: IndexedNamespace): Promise<{ inserted: number; lossy: boolean }> {
    const conversationId = storeConversationId(workspace, target.sessionId)
    const entries = await target.archive.entries()
    const meta = await this.readMeta(conversationId)
    if (meta && meta.turns === entries.length) return { inserted: 0, lossy: meta.lossy }
    await this.store.conversations.ensure({ id: conversationId, workspace: storeWorkspaceKey(workspace), title: `memory palace · ${target.namespace}` }, { actor: 'palace' })
    const existing = new Set<number>()
    for (let offset = 0; ; offset += 10_000) {
      const page = await this.store.messages.list({ conversationId, limit: 10_000, offset })
      for (const row of page) existing.add(row.turn)
      if (page.length < 10_000) break
    }
    const missing = entries.filter((entry) => !existing.has(entry.turn))
    const { inserted, lossy } = await this.add(conversationId, target, missing)
    const nowLossy = lossy || meta?.lossy === true
    await this.store.meta.set(`${META_PREFIX}${conversationId}`, JSON.stringify({ version: INDEX_VERSION, turns: entries.length, lossy: nowLossy } satisfies IndexMeta), {
      actor: 'palace',
    })
    return { inserted, lossy: nowLossy }
  }

  /**
   * Turns that may match the query, per namespace; undefined when the index cannot vouch for
   * completeness (a keyword without anchor terms, a lossy or stale index, a full result page).
   */
  async candidates(workspace: string, query: ParsedQuery, targets: readonly IndexedNamespace[]): Promise<Map<string, Set<number>> | undefined> {
    if (query.keywords.some((keyword) => keyword.anchors === undefined)) return undefined
    const byConversation = new Map<string, string>()
    for (const target of targets) {
      const { lossy } = await this.sync(workspace, target)
      if (lossy) return undefined
      byConversation.set(storeConversationId(workspace, target.sessionId), target.namespace)
    }
    const terms = [...new Set(query.keywords.flatMap((keyword) => keyword.anchors ?? []))]
    const single = targets.length === 1 ? storeConversationId(workspace, targets[0]!.sessionId) : undefined
    const hits = await this.store.search.messages(terms.join(' '), {
      ...(single ? { conversationId: single } : { workspace: storeWorkspaceKey(workspace) }),
      limit: CANDIDATE_LIMIT,
    })
    if (hits.length >= CANDIDATE_LIMIT) return undefined
    const out = new Map<string, Set<number>>(targets.map((target) => [target.namespace, new Set<number>()]))
    for (const hit of hits) {
      const namespace = byConversation.get(hit.message.conversationId)
      if (namespace !== undefined) out.get(namespace)!.add(hit.message.turn)
    }
    return out
  }
}

/** Split text into chunks below {@link CHUNK_CHARS}, never losing a term at a cut. */
export function chunk(text: string): string[] {
  if (text.length <= CHUNK_CHARS) return [text]
  const out: string[] = []
  let start = 0
  while (start < text.length) {
    let end = Math.min(text.length, start + CHUNK_CHARS)
    let overlap = 0
    if (end < text.length) {
      const newline = text.lastIndexOf('\n', end - 1)
      const space = text.slice(start + CHUNK_CHARS / 2, end).search(/\s\S*$/)
      if (newline > start + CHUNK_CHARS / 2) end = newline + 1
      else if (space !== -1) end = start + CHUNK_CHARS / 2 + space + 1
      else {
        // No break nearby (a long CJK run, a minified blob): overlap the next chunk so a
        // bigram or word across the cut is whole in one of the two.
        overlap = 64
        if (/[\uD800-\uDBFF]/.test(text[end - 1]!)) end--
      }
    }
    out.push(text.slice(start, end))
    if (end >= text.length) break
    start = end - overlap
    if (/[\uDC00-\uDFFF]/.test(text[start]!)) start--
  }
  return out
}
