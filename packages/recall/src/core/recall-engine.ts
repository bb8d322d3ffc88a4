/**
 * The recall engine: everything recall does against the store, without the host. The
 * adapter calls it from the pre-step listener, the tools and the command; tests and the CLI
 * call it directly.
 */
import { cosineSimilarity, foldScript, type Memory, type MemoryStore, type Message, type Persona, redactSecrets, type Scene } from '@dsh-memory/store'
import { analyze, ANALYZER_VERSION, searchText, UNIGRAM_MARK } from './analyzer.ts'
import { RankingCorpus } from './corpus.ts'
import type { Embedder } from './embedding.ts'
import { errorMessage, RecallError } from './errors.ts'
import { importInstructionItems, type InstructionImportResult, planWorkspaceImport, workspaceRuleFiles } from './instruction-import.ts'
import { applyFeedback, clearFeedback, type FeedbackRating, needsReview } from './feedback.ts'
import { chunkManifest, chunkText, type ChunkManifest } from './memory-read.ts'
import { type InjectionSelection, rankMemories, type ScoredMemory, selectForInjection } from './memory-ranking.ts'
import type { RecallOptions, RecallStrategy } from './options.ts'
import { queryPeriod } from './query-period.ts'
import { rankDocuments, TURN_RANKING } from './ranking.ts'
import { fuseTurnVectors, type TurnNeighbour } from './turn-vectors.ts'
import { formatPersonaSection, formatSceneNavSection, type PersonaText, type SceneNavEntry } from './recall-text.ts'
import type { RecallScope } from './scope.ts'
import { type ModePolicy, policyAllows } from './session-modes.ts'
import { SessionSettingsRepository } from './session-settings.ts'

export type { RecallScope } from './scope.ts'

/** The store surface the engine uses (the Cordis service and a plain store both fit). */
export type RecallStore = Pick<MemoryStore, 'memories' | 'messages' | 'scenes' | 'persona' | 'meta' | 'conversations' | 'search' | 'tables' | 'transaction'>

/** Optional collaborators of {@link RecallEngine}. */
export interface RecallEngineDeps {
  /** The embeddings source; `null`/absent = keyword only. */
  readonly embedder?: Embedder | null
  /** Clock (epoch ms); tests inject a fake one. */
  readonly now?: () => number
  /** Where non-fatal problems go (embedding failures, background backfill). */
  readonly onWarning?: (message: string) => void
}

/** The outcome of one automatic recall. */
export interface TurnRecall {
  readonly selection: InjectionSelection<Memory>
  /** Memories considered (after the mode's filter). */
  readonly considered: number
  /** The strategy that actually ran (a configured embedding strategy may fall back to keyword). */
  readonly strategy: RecallStrategy
  /** Why the strategy fell back, when it did. */
  readonly fallbackReason: string | undefined
}

/** A conversation (L0) hit of {@link RecallEngine.searchConversations}. */
export interface ConversationHit {
  readonly message: Message
  readonly score: number
}

/** What {@link RecallEngine.readMemory} returns. */
export type MemoryReadResult =
  | { readonly kind: 'whole'; readonly memory: Memory }
  | { readonly kind: 'manifest'; readonly memory: Memory; readonly manifest: ChunkManifest }
  | { readonly kind: 'chunk'; readonly memory: Memory; readonly chunk: number; readonly chunks: number; readonly text: string }

/** Counts for `/memory status`. */
export interface ScopeStatus {
  readonly memories: { readonly workspace: number; readonly global: number; readonly session: number }
  readonly scenes: number
  readonly persona: { readonly global: boolean; readonly workspace: boolean }
}

/** Largest number of rows one scope scan reads (the store's page maximum). */
export const MAX_SCAN = 10_000
/**
 * Memories the store's full-text search hands to the recall ranking per query. The ranking
 * (analyzer, decay, feedback, thresholds) then runs on these instead of on every visible
 * memory, which keeps a turn's recall flat in the size of the store.
 */
export const MEMORY_CANDIDATES = 100
/**
 * Messages the store's search hands to the turn ranking per query (plus their context
 * neighbours). 150 ranks as well as 200 on the LoCoMo dev split (100 loses half a point of
 * recall_any@10) and analyzes a quarter fewer turns on a cold search.
 */
export const MESSAGE_CANDIDATES = 150
/** How long a scope's document count (the collection size for idf) is reused. */
const COLLECTION_SIZE_TTL_MS = 60_000
const MEMO_LIMIT = 100_000
const EMBEDDING_COOLDOWN_MS = 60_000
const BACKFILL_BATCH = 32
/** The store's largest id list per `messages.embeddings` read. */
const VECTOR_READ_MAX = 1_000
/**
 * Conversation search by meaning: the newest messages of the workspace whose stored vectors are
 * compared with the query's, and how many of the closest join the full-text candidates (a turn
 * that says the same thing in other words shares no word the store's search could find).
 */
export const VECTOR_SCAN = 2_000
export const VECTOR_CANDIDATES = 20
const PERSONA_MAX_CHARS = 2000
const SCENE_SUMMARY_CHARS = 160
const MAX_NAV_SCENES = 12
const MIN_ID_PREFIX = 6

/** A workspace's message backfill: the newest creation time looked at, and the backlog's next `until` (none: done). */
interface MessageBackfillCursor {
  readonly model: string
  newest: number
  backlog: number | undefined
}

/** Memory kinds a user or the model may give explicitly. */
export const MEMORY_KINDS = ['fact', 'preference', 'instruction', 'decision', 'episode'] as const

/**
 * Recall over one store. Stateless across processes: every call reads the store, so writes
 * by distillation or another DSH process are seen at once. Caches only derived data (the
 * analyzer's terms per memory revision) and the embedding source's health.
 */
export class RecallEngine {
  readonly settings: SessionSettingsRepository
  readonly #store: RecallStore
  #options: RecallOptions
  #embedder: Embedder | null
  readonly #now: () => number
  readonly #warn: (message: string) => void
  readonly #terms = new Map<string, readonly string[]>()
  readonly #canEmbed = new Map<string, boolean>()
  #embeddingDownUntil = 0
  #lastEmbeddingError: string | undefined
  readonly #background = new Set<Promise<unknown>>()
  /** Workspaces whose message backfill is running (one pass per workspace at a time). */
  readonly #messageBackfills = new Set<string>()
  /** Where each workspace's message backfill stands (see {@link RecallEngine.#nextMessageBatch}). */
  readonly #messageCursors = new Map<string, MessageBackfillCursor>()
  readonly #collectionSizes = new Map<string, { size: number; at: number }>()

  constructor(store: RecallStore, options: RecallOptions, deps: RecallEngineDeps = {}) {
    this.#store = store
    this.#options = options
    this.#embedder = options.embedding.enabled ? (deps.embedder ?? null) : null
    this.#now = deps.now ?? Date.now
    this.#warn = deps.onWarning ?? (() => {})
    this.settings = new SessionSettingsRepository(store, { mode: options.defaultMode, inject: 'follow' }, this.#now, this.#warn)
  }

  get options(): RecallOptions {
    return this.#options
  }

  /**
   * Swap in new options (live settings): every later call reads them, calls in flight finish
   * with the ones they started with. The embedder follows `embedding` (pass the one built
   * for the new options; it is dropped when embeddings are off). Options that shaped
   * registrations (`tools`, `command`) are not re-read.
   */
  reconfigure(options: RecallOptions, embedder: Embedder | null): void {
    this.#options = options
    this.#embedder = options.embedding.enabled ? embedder : null
    // A changed endpoint deserves a fresh try, not the old one's cooldown.
    this.#embeddingDownUntil = 0
    this.settings.setDefaults({ mode: options.defaultMode, inject: 'follow' })
  }

  /** The last embeddings failure, for status output. */
  get lastEmbeddingError(): string | undefined {
    return this.#lastEmbeddingError
  }

  /** Settles when background work (embedding backfill) started so far has finished. */
  async whenIdle(): Promise<void> {
    while (this.#background.size > 0) await Promise.allSettled([...this.#background])
  }

  // -------------------------------------------------------------------------------------------
  // scope

  /** True when a memory is visible from `scope`: global, this workspace's, or this session's. */
  visible(memory: Pick<Memory, 'scope' | 'workspace' | 'sessionId'>, scope: RecallScope): boolean {
    if (memory.scope === 'global') return true
    if (memory.scope === 'workspace') return !!scope.workspace && memory.workspace === scope.workspace
    return memory.sessionId === scope.sessionId
  }

  /** Current (not superseded) memories visible from `scope`, newest first. */
  async visibleMemories(scope: RecallScope): Promise<Memory[]> {
    const rows = scope.workspace
      ? await this.#store.memories.list({ workspace: scope.workspace, sessionId: scope.sessionId, limit: MAX_SCAN })
      : [
          ...(await this.#store.memories.list({ scope: 'global', limit: MAX_SCAN })),
          ...(await this.#store.memories.list({ scope: 'session', sessionId: scope.sessionId, includeGlobal: false, limit: MAX_SCAN })),
        ]
    // The store already filters by scope; the second check keeps the rule local and explicit.
    return rows.filter((memory) => this.visible(memory, scope))
  }

  /**
   * Current memories visible from `scope` that the store's full-text search finds for
   * `query` (at most {@link MEMORY_CANDIDATES} per scope part), plus the number of visible
   * memories they were drawn from. The query is widened with its analyzer stems, which the
   * store matches as prefixes, so inflections the recall ranking folds ("painted" for
   * "painting") are candidates too.
   */
  async candidateMemories(query: string, scope: RecallScope): Promise<{ memories: Memory[]; collectionSize: number }> {
    const text = searchText(query)
    const parts = scope.workspace
      ? [{ workspace: scope.workspace, sessionId: scope.sessionId }]
      : [{ scope: 'global' as const }, { scope: 'session' as const, sessionId: scope.sessionId, includeGlobal: false }]
    const memories: Memory[] = []
    let collectionSize = 0
    for (const filter of parts) {
      const hits = await this.#store.search.memories(text, { ...filter, limit: MEMORY_CANDIDATES })
      memories.push(...hits.map((hit) => hit.memory).filter((memory) => this.visible(memory, scope)))
      collectionSize += await this.#collectionSize(`memories:${JSON.stringify(filter)}`, () => this.#store.memories.count(filter))
    }
    return { memories, collectionSize }
  }

  /** A scope's document count, reused for {@link COLLECTION_SIZE_TTL_MS} (it only sets idf's scale). */
  async #collectionSize(key: string, count: () => Promise<number>): Promise<number> {
    const now = Date.now()
    const cached = this.#collectionSizes.get(key)
    if (cached && now - cached.at < COLLECTION_SIZE_TTL_MS) return cached.size
    const size = await count()
    if (this.#collectionSizes.size >= 1_000) this.#collectionSizes.clear()
    this.#collectionSizes.set(key, { size, at: now })
    return size
  }

  #termsOf = (memory: Pick<Memory, 'id' | 'revision' | 'text'>): readonly string[] => {
    const key = `${ANALYZER_VERSION}:${memory.id}:${memory.revision}`
    let terms = this.#terms.get(key)
    if (!terms) {
      if (this.#terms.size >= MEMO_LIMIT) this.#terms.clear()
      terms = analyze(memory.text)
      this.#terms.set(key, terms)
    }
    return terms
  }

  // -------------------------------------------------------------------------------------------
  // ranking

  /**
   * Why `query` gets no vector before any call: a model that cannot represent it (the MiniLM
   * provider's CJK guard: such a query is ranked exactly as by keyword search), or an
   * in-process model still loading (asking starts the load; the turn does not wait for it).
   * `undefined` = ask the embedder.
   */
  #noVectorReason(query: string): string | undefined {
    const embedder = this.#embedder
    if (!embedder) return undefined
    if (embedder.canEmbed && !embedder.canEmbed(query)) return 'the embedding model cannot represent this query (mostly Chinese/Japanese/Korean): keyword only'
    if (embedder.warm && !embedder.warm()) return 'the embedding model is loading: keyword only'
    return undefined
  }

  /** Whether the embedder can represent a memory's text (memoised per revision, like its terms). */
  #embeddable(embedder: Embedder, memory: Pick<Memory, 'id' | 'revision' | 'text'>): boolean {
    if (!embedder.canEmbed) return true
    const key = `${embedder.modelKey}:${memory.id}:${memory.revision}`
    let known = this.#canEmbed.get(key)
    if (known === undefined) {
      if (this.#canEmbed.size >= MEMO_LIMIT) this.#canEmbed.clear()
      known = embedder.canEmbed(memory.text)
      this.#canEmbed.set(key, known)
    }
    return known
  }

  async #queryEmbedding(query: string, signal?: AbortSignal): Promise<{ vector: Float32Array | null; reason: string | undefined }> {
    // Not configured is not a failure: hybrid without embeddings simply is keyword search.
    if (!this.#embedder) return { vector: null, reason: undefined }
    const skip = this.#noVectorReason(query)
    if (skip) return { vector: null, reason: skip }
    if (this.#now() < this.#embeddingDownUntil) return { vector: null, reason: `embeddings unavailable: ${this.#lastEmbeddingError}` }
    try {
      const [vector] = await this.#embedder.embed([query], signal)
      return { vector: vector ?? null, reason: undefined }
    } catch (error) {
      this.#lastEmbeddingError = errorMessage(error)
      this.#embeddingDownUntil = this.#now() + EMBEDDING_COOLDOWN_MS
      this.#warn(`memory-recall: falling back to keyword search: ${this.#lastEmbeddingError}`)
      return { vector: null, reason: `embeddings unavailable: ${this.#lastEmbeddingError}` }
    }
  }

  /**
   * Rank `memories` for `query` with the configured strategy (degrading to keyword when no
   * query vector is available), decay included.
   */
  async rank(
    query: string,
    memories: readonly Memory[],
    signal?: AbortSignal,
    collectionSize?: number,
  ): Promise<{ ranked: ScoredMemory<Memory>[]; strategy: RecallStrategy; fallbackReason: string | undefined }> {
    const configured = this.#options.recall.strategy
    let vector: Float32Array | null = null
    let fallbackReason: string | undefined
    if (configured !== 'keyword') {
      ;({ vector, reason: fallbackReason } = await this.#queryEmbedding(query, signal))
      if (vector) this.#backfill(memories)
    }
    const strategy: RecallStrategy = vector ? configured : 'keyword'
    const ranked = rankMemories(query, memories, {
      strategy,
      decayHalfLifeDays: this.#options.recall.decayHalfLifeDays,
      now: this.#now(),
      queryEmbedding: vector,
      embeddingModel: this.#embedder?.modelKey ?? null,
      termsOf: this.#termsOf,
      collectionSize,
    })
    return { ranked, strategy, fallbackReason }
  }

  /** Embed memories that have no vector of the current model yet, in the background. */
  #backfill(memories: readonly Memory[]): void {
    const embedder = this.#embedder
    if (!embedder) return
    // A text the model cannot represent (CJK guard) gets no vector: it is ranked by keywords only.
    const missing = memories.filter((memory) => memory.embeddingModel !== embedder.modelKey && this.#embeddable(embedder, memory)).slice(0, BACKFILL_BATCH)
    if (missing.length === 0) return
    const job = (async () => {
      const vectors = await embedder.embed(missing.map((memory) => memory.text))
      for (let i = 0; i < missing.length; i++) {
        const memory = missing[i]!
        const current = await this.#store.memories.get(memory.id)
        // Skip rows that changed meanwhile: their text is no longer what was embedded.
        if (!current || current.revision !== memory.revision) continue
        await this.#store.memories.update(memory.id, { embedding: vectors[i]!, embeddingModel: embedder.modelKey }, { actor: 'recall' })
      }
    })().catch((error: unknown) => this.#warn(`memory-recall: embedding backfill failed: ${errorMessage(error)}`))
    this.#background.add(job)
    void job.finally(() => this.#background.delete(job))
  }

  /**
   * The automatic recall for one turn: memories the session's mode admits, ranked,
   * thresholded and budgeted, minus those already in the session's context.
   */
  async recallForTurn(query: string, scope: RecallScope, policy: ModePolicy, exclude: ReadonlySet<string>, signal?: AbortSignal): Promise<TurnRecall> {
    // Rank every visible candidate and filter afterwards: term statistics then do not depend
    // on the mode, so a memory scores the same in every mode that admits it.
    const candidates = await this.#turnCandidates(query, scope)
    const { ranked, strategy, fallbackReason } = await this.rank(query, candidates.memories, signal, candidates.collectionSize)
    // The conversation log gets its vectors while the user works, newest first, so a later
    // conversation search finds turns by meaning without waiting for them.
    if (strategy !== 'keyword' && scope.workspace) this.#backfillMessages(scope.workspace)
    const admitted = ranked.filter((scored) => policyAllows(policy, scored.memory))
    const { maxResults, maxCharsPerMemory, maxTotalRecallChars, scoreThreshold, hybridThreshold } = this.#options.recall
    const selection = selectForInjection(admitted, { maxResults, maxCharsPerMemory, maxTotalRecallChars, scoreThreshold, hybridThreshold }, exclude)
    return { selection, considered: candidates.memories.filter((memory) => policyAllows(policy, memory)).length, strategy, fallbackReason }
  }

  /**
   * What a turn ranks: the full-text candidates, or, with embeddings configured, every visible
   * memory (a memory can match by meaning without sharing a word, so the vector side needs
   * them all; that path stays bounded by {@link MAX_SCAN}).
   */
  async #turnCandidates(query: string, scope: RecallScope): Promise<{ memories: Memory[]; collectionSize: number | undefined }> {
    // A query that gets no vector anyway (CJK guard, model loading) takes the keyword path, so
    // it ranks exactly as without embeddings.
    if (this.#embedder && this.#options.recall.strategy !== 'keyword' && !this.#noVectorReason(query)) {
      return { memories: await this.visibleMemories(scope), collectionSize: undefined }
    }
    return this.candidateMemories(query, scope)
  }

  /** Record that memories were recalled (sets `lastRecalledAt`). */
  async touch(ids: readonly string[]): Promise<void> {
    if (ids.length > 0) await this.#store.memories.touchRecalled(ids, this.#now(), { actor: 'recall' })
  }

  // -------------------------------------------------------------------------------------------
  // tools and command

  /**
   * Search memories visible from `scope` (no threshold: the caller asked explicitly).
   * @param filter.scope - `all` (default), `workspace` (workspace + session) or `global`.
   */
  async searchMemories(
    query: string,
    scope: RecallScope,
    filter: { limit?: number; scope?: 'all' | 'workspace' | 'global'; kind?: string } = {},
  ): Promise<ScoredMemory<Memory>[]> {
    const candidates = await this.#turnCandidates(query, scope)
    let memories = candidates.memories
    if (filter.scope === 'global') memories = memories.filter((memory) => memory.scope === 'global')
    if (filter.scope === 'workspace') memories = memories.filter((memory) => memory.scope !== 'global')
    if (filter.kind) memories = memories.filter((memory) => memory.kind === filter.kind)
    const { ranked } = await this.rank(query, memories, undefined, candidates.collectionSize)
    return ranked.slice(0, filter.limit ?? 10)
  }

  /**
   * Search the verbatim conversation log (L0) of the session's workspace with the turn
   * ranking (context windows inside each conversation). Other workspaces are never searched.
   */
  async searchConversations(
    query: string,
    scope: RecallScope,
    filter: { limit?: number; includeCurrentSession?: boolean } = {},
  ): Promise<ConversationHit[]> {
    if (!scope.workspace) return []
    const workspace = scope.workspace
    const options: ConversationRankingOptions = {
      workspace,
      excludeConversationId: filter.includeCurrentSession ? undefined : scope.sessionId,
      termsOf: (message) => this.#messageTerms(message),
      collectionSize: (count) => this.#collectionSize(`messages:${workspace}`, count),
    }
    const embedder = this.#embedder
    const vector = embedder && this.#options.recall.strategy !== 'keyword' ? (await this.#queryEmbedding(query)).vector : null
    if (!embedder || !vector) return (await rankConversationTurns(this.#store, query, options)).slice(0, filter.limit ?? 8)
    this.#backfillMessages(workspace)
    const ranked = await rankConversationTurnsByMeaning(this.#store, query, { vector, model: embedder.modelKey }, options)
    return ranked.slice(0, filter.limit ?? 8)
  }

  /**
   * Embed messages of `workspace` that have no vector of the current model, newest first, one
   * batch at a time in the background (never two passes for a workspace at once). A text the
   * model cannot represent (the MiniLM provider's CJK guard) is skipped: it stays ranked by
   * keywords only. A failure is a warning, and the embeddings cool-down applies to it.
   */
  #backfillMessages(workspace: string): void {
    const embedder = this.#embedder
    if (!embedder || this.#messageBackfills.has(workspace) || this.#now() < this.#embeddingDownUntil) return
    this.#messageBackfills.add(workspace)
    const job = (async () => {
      const batch = await this.#nextMessageBatch(workspace, embedder)
      if (batch.length === 0) return
      const vectors = await embedder.embed(batch.map((message) => message.text))
      await this.#store.messages.setEmbeddings(batch.map((message, i) => ({ messageId: message.id, embedding: vectors[i]!, embeddingModel: embedder.modelKey })))
    })()
      .catch((error: unknown) => {
        this.#lastEmbeddingError = errorMessage(error)
        this.#embeddingDownUntil = this.#now() + EMBEDDING_COOLDOWN_MS
        this.#warn(`memory-recall: message embedding backfill failed: ${this.#lastEmbeddingError}`)
      })
      .finally(() => this.#messageBackfills.delete(workspace))
    this.#background.add(job)
    void job.finally(() => this.#background.delete(job))
  }

  /**
   * The next messages of `workspace` to embed (at most {@link BACKFILL_BATCH}). The store's
   * `missingEmbeddings` walks messages newest first until it has found enough without a vector,
   * so walking from the newest every turn would re-read the whole embedded log. A cursor per
   * workspace remembers the newest time looked at and how far back the walk got: new messages
   * (since that time) first, then the older backlog from where the last pass stopped; once the
   * backlog is done only new messages are read. Texts the model refuses (the MiniLM provider's
   * CJK guard) stay without a vector and are passed over.
   */
  async #nextMessageBatch(workspace: string, embedder: Embedder): Promise<Message[]> {
    const model = embedder.modelKey
    const limit = embedder.canEmbed ? VECTOR_READ_MAX : BACKFILL_BATCH
    const embeddable = (message: Message) => !embedder.canEmbed || embedder.canEmbed(message.text)
    let cursor = this.#messageCursors.get(workspace)
    if (!cursor || cursor.model !== model) {
      // The first pass of a process: the whole log is the backlog, from its newest message down.
      const [top] = await this.#store.messages.list({ workspace, order: 'desc', limit: 1 })
      cursor = { model, newest: top?.createdAt ?? 0, backlog: top?.createdAt }
      this.#messageCursors.set(workspace, cursor)
    }
    const fresh = await this.#store.messages.missingEmbeddings({ workspace, model, limit, since: cursor.newest })
    cursor.newest = Math.max(cursor.newest, ...fresh.map((message) => message.createdAt))
    const batch = fresh.filter(embeddable).slice(0, BACKFILL_BATCH)
    if (batch.length === BACKFILL_BATCH || cursor.backlog === undefined) return batch
    const older = await this.#store.messages.missingEmbeddings({ workspace, model, limit, until: cursor.backlog })
    const taken = new Set(batch.map((message) => message.id))
    let examined = 0
    for (const message of older) {
      if (batch.length === BACKFILL_BATCH) break
      examined++
      if (!taken.has(message.id) && embeddable(message)) batch.push(message)
    }
    // `until` is inclusive: the next page starts at the last message looked at (once embedded it is
    // no longer missing). A short page read to its end finishes the backlog.
    if (examined < older.length) cursor.backlog = older[examined - 1]!.createdAt
    else cursor.backlog = older.length === limit ? older.at(-1)!.createdAt : undefined
    return batch
  }

  #messageTerms(message: Message): readonly string[] {
    const key = `${ANALYZER_VERSION}:m:${message.id}`
    let terms = this.#terms.get(key)
    if (!terms) {
      if (this.#terms.size >= MEMO_LIMIT) this.#terms.clear()
      terms = analyze(`${message.role}: ${message.text}`)
      this.#terms.set(key, terms)
    }
    return terms
  }

  /** A memory visible from `scope`, by full id or a unique prefix or suffix (at least 6 characters). */
  async resolveMemory(idOrPrefix: string, scope: RecallScope): Promise<Memory> {
    const wanted = idOrPrefix.trim()
    if (!wanted) throw new RecallError('invalid-argument', 'a memory id is required', { path: 'id' })
    const exact = await this.#store.memories.get(wanted)
    if (exact) {
      if (!this.visible(exact, scope)) throw new RecallError('not-found', `memory ${wanted} is not visible from this workspace`)
      if (exact.supersededBy) throw new RecallError('not-found', `memory ${wanted} was replaced by ${exact.supersededBy}; use the newer id`)
      return exact
    }
    if (wanted.length < MIN_ID_PREFIX) throw new RecallError('not-found', `no memory with id ${wanted} (give the full id, or at least ${MIN_ID_PREFIX} of its first or last characters)`)
    // Ids are time-ordered (UUIDv7): memories written together share a prefix, so the random
    // tail is accepted too.
    const matches = (await this.visibleMemories(scope)).filter((memory) => memory.id.startsWith(wanted) || memory.id.endsWith(wanted))
    if (matches.length === 0) throw new RecallError('not-found', `no memory with id ${wanted} in this workspace`)
    if (matches.length > 1) throw new RecallError('ambiguous-id', `${matches.length} memories start with ${wanted}; give more characters`)
    return matches[0]!
  }

  /**
   * Refuse text over `limits.memoryChars` with a clear error instead of letting the store cut
   * it silently. @returns the number of secrets the store will redact from it.
   */
  checkWritable(text: string, path: string): number {
    const length = [...text].length
    const limit = this.#options.limits.memoryChars
    if (length > limit) {
      throw new RecallError('invalid-argument', `the memory text is ${length} characters; the limit is ${limit} (limits.memoryChars). Split it into shorter memories.`, { path })
    }
    return redactSecrets(text).redactions
  }

  /** Store a memory stated explicitly (by the user or the model). */
  async addMemory(
    input: { text: string; kind?: string; scope?: 'workspace' | 'global' | 'session' },
    scope: RecallScope,
    actor: string,
  ): Promise<Memory> {
    const text = input.text.trim()
    if (!text) throw new RecallError('invalid-argument', 'the memory text is empty', { path: 'text' })
    this.checkWritable(text, 'text')
    const target = input.scope ?? (scope.workspace ? 'workspace' : 'global')
    if (target === 'workspace' && !scope.workspace) throw new RecallError('invalid-argument', 'this session has no workspace; use scope "global"', { path: 'scope' })
    return this.#store.memories.add(
      {
        kind: input.kind ?? 'fact',
        text,
        scope: target,
        workspace: target === 'global' ? null : scope.workspace || null,
        sessionId: target === 'session' ? scope.sessionId : null,
        priority: 1,
        flags: { origin: actor },
      },
      { actor },
    )
  }

  /**
   * Import a workspace's rule files (CLAUDE.md, AGENTS.md, `.claude/rules/`, any `*.md`) as
   * instruction and preference memories, as `dsh-memory import` does; items already stored in
   * the target scope are skipped. `path` must resolve inside the session's workspace.
   * @throws RecallError `invalid-argument` / `not-found` naming `path` (see {@link workspaceRuleFiles}).
   */
  async importRuleFiles(path: string, scope: RecallScope, options: { target?: 'workspace' | 'global'; dryRun?: boolean }, actor: string): Promise<InstructionImportResult & { files: string[] }> {
    // The files are on disk in the session's directory; the memories go to its workspace id.
    const files = workspaceRuleFiles(scope.directory ?? scope.workspace, path)
    const planned = planWorkspaceImport(files, options.target ?? 'workspace', scope.workspace)
    const result = await importInstructionItems(this.#store, planned, { actor, dryRun: options.dryRun === true })
    return { ...result, files: files.map(({ file }) => file) }
  }

  /** Delete a visible memory (and its older versions). @returns the deleted memory. */
  async deleteMemory(idOrPrefix: string, scope: RecallScope, actor: string): Promise<Memory> {
    const memory = await this.resolveMemory(idOrPrefix, scope)
    await this.#store.memories.delete(memory.id, { actor })
    return memory
  }

  /** Replace a visible memory's text, keeping the old version as history. @returns the new memory. */
  async correctMemory(idOrPrefix: string, text: string, scope: RecallScope, actor: string): Promise<{ old: Memory; current: Memory }> {
    const cleaned = text.trim()
    if (!cleaned) throw new RecallError('invalid-argument', 'the corrected text is empty', { path: 'text' })
    this.checkWritable(cleaned, 'text')
    const old = await this.resolveMemory(idOrPrefix, scope)
    // Ratings were about the old text; a correction also resolves a review flag.
    const current = await this.#store.memories.supersede(old.id, { text: cleaned, flags: { ...clearFeedback(old.flags), correctedBy: actor } }, { actor })
    return { old, current }
  }

  /**
   * Promote a workspace memory to the global layer: a global copy supersedes it (the
   * workspace row stays as history), so both layers' revisions move.
   * @throws RecallError `invalid-argument` for a memory that is not workspace-scoped.
   */
  async promoteMemory(idOrPrefix: string, scope: RecallScope, actor: string): Promise<{ old: Memory; current: Memory }> {
    const old = await this.resolveMemory(idOrPrefix, scope)
    if (old.scope !== 'workspace') throw new RecallError('invalid-argument', `memory ${old.id} is ${old.scope}-scoped; only workspace memories can be promoted to global`, { path: 'id' })
    const current = await this.#store.memories.supersede(
      old.id,
      { text: old.text, scope: 'global', workspace: null, sessionId: null, flags: { ...old.flags, promotedFrom: old.workspace, promotedBy: actor } },
      { actor },
    )
    return { old, current }
  }

  /**
   * Read one memory: whole when it is at most `layers.readChunkChars` long, else the chunk
   * manifest (without `chunk`) or one chunk (1-based).
   * @throws RecallError `not-found`, `ambiguous-id`; `invalid-argument` for a chunk out of range.
   */
  async readMemory(idOrPrefix: string, scope: RecallScope, chunk?: number): Promise<MemoryReadResult> {
    const memory = await this.resolveMemory(idOrPrefix, scope)
    const size = this.#options.layers.readChunkChars
    if (chunk === undefined) {
      if ([...memory.text].length <= size) return { kind: 'whole', memory }
      return { kind: 'manifest', memory, manifest: chunkManifest(memory.text, size) }
    }
    const chunks = chunkText(memory.text, size)
    const picked = chunks[chunk - 1]
    if (!picked) throw new RecallError('invalid-argument', `memory ${memory.id} has ${chunks.length} chunk${chunks.length === 1 ? '' : 's'}; chunk ${chunk} does not exist`, { path: 'chunk' })
    return { kind: 'chunk', memory, chunk, chunks: chunks.length, text: picked.text }
  }

  /**
   * Record a session's rating of a memory it was shown. `injected` are the memory ids this
   * session was shown (recall messages and layer snapshots in its log).
   * @throws RecallError `invalid-argument` when the memory was not injected in this session.
   */
  async rateMemory(idOrPrefix: string, scope: RecallScope, rating: FeedbackRating, injected: ReadonlySet<string>, actor: string): Promise<Memory> {
    const memory = await this.resolveMemory(idOrPrefix, scope)
    const shown = injected.has(memory.id) || (await this.#store.memories.history(memory.id)).some((version) => injected.has(version.id))
    if (!shown) {
      throw new RecallError('invalid-argument', `memory ${memory.id} was not injected in this session; feedback is for memories recalled or listed in this conversation`, { path: 'id' })
    }
    return this.#store.memories.update(memory.id, { flags: applyFeedback(memory.flags, scope.sessionId, rating, this.#now()) }, { actor })
  }

  /** Memories visible from `scope` that were rated incorrect and wait for review, newest first. */
  async reviewList(scope: RecallScope): Promise<Memory[]> {
    return (await this.visibleMemories(scope)).filter((memory) => needsReview(memory.flags))
  }

  /** A scene visible from `scope`, with its member memories that are visible too. */
  async readScene(id: string, scope: RecallScope): Promise<{ scene: Scene; memories: Memory[] }> {
    const scene = await this.#store.scenes.get(id.trim())
    if (!scene || !this.visible(scene, scope)) throw new RecallError('not-found', `no scene ${id} in this workspace`)
    const memories: Memory[] = []
    for (const memoryId of scene.memoryIds) {
      const memory = await this.#store.memories.get(memoryId)
      if (memory && !memory.supersededBy && this.visible(memory, scope)) memories.push(memory)
    }
    return { scene, memories }
  }

  // -------------------------------------------------------------------------------------------
  // system prompt sections

  /** The persona section text for a session under `policy` (`''` when there is none). */
  async personaSection(scope: RecallScope, policy: ModePolicy): Promise<string> {
    if (!this.#options.recall.includePersona) return ''
    const parts: PersonaText[] = []
    const take = (persona: Persona | undefined) => persona && parts.push({ scope: persona.scope, text: persona.text })
    if (policy.globalPersona) take(await this.#store.persona.get({ scope: 'global' }))
    if (policy.workspacePersona && scope.workspace) take(await this.#store.persona.get({ scope: 'workspace', workspace: scope.workspace }))
    return formatPersonaSection(parts, PERSONA_MAX_CHARS)
  }

  /** The scene navigation section text for a session under `policy` (`''` when there is none). */
  async sceneNavSection(scope: RecallScope, policy: ModePolicy): Promise<string> {
    if (!this.#options.recall.includeSceneNav || (!policy.globalScenes && !policy.workspaceScenes)) return ''
    const scenes = scope.workspace
      ? await this.#store.scenes.list({ workspace: scope.workspace, sessionId: scope.sessionId, limit: 100 })
      : await this.#store.scenes.list({ scope: 'global', limit: 100 })
    const entries: SceneNavEntry[] = scenes
      .filter((scene) => this.visible(scene, scope))
      .filter((scene) => (scene.scope === 'global' ? policy.globalScenes : policy.workspaceScenes))
      // Stable order (creation time, then id) so the section text only changes with the scenes.
      .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1))
      .slice(-MAX_NAV_SCENES)
      .map((scene) => ({ id: scene.id, title: scene.title, summary: scene.summary, scope: scene.scope }))
    return formatSceneNavSection(entries, SCENE_SUMMARY_CHARS)
  }

  /** Counts for `/memory status`. */
  async status(scope: RecallScope): Promise<ScopeStatus> {
    const memories = await this.visibleMemories(scope)
    const scenes = scope.workspace ? await this.#store.scenes.list({ workspace: scope.workspace, limit: MAX_SCAN }) : await this.#store.scenes.list({ scope: 'global', limit: MAX_SCAN })
    return {
      memories: {
        workspace: memories.filter((memory) => memory.scope === 'workspace').length,
        global: memories.filter((memory) => memory.scope === 'global').length,
        session: memories.filter((memory) => memory.scope === 'session').length,
      },
      scenes: scenes.filter((scene) => this.visible(scene, scope)).length,
      persona: {
        global: !!(await this.#store.persona.get({ scope: 'global' })),
        workspace: scope.workspace ? !!(await this.#store.persona.get({ scope: 'workspace', workspace: scope.workspace })) : false,
      },
    }
  }
}

/** Options of {@link rankConversationTurns}. */
export interface ConversationRankingOptions {
  readonly workspace: string
  /** Leave this conversation out (the current session: its turns are in context already). */
  readonly excludeConversationId?: string
  /** Speaker names; a query naming one of them boosts that speaker's turns (LoCoMo). */
  readonly authors?: readonly string[]
  /** Author of a message (default: none). */
  readonly authorOf?: (message: Message) => string | undefined
  /** Memoised analyzer terms of a message's ranking text. */
  readonly termsOf?: (message: Message) => readonly string[]
  /** The workspace's message count (default: counted now); a cache goes here. */
  readonly collectionSize?: (count: () => Promise<number>) => Promise<number>
  /** Candidates from the store's search (default {@link MESSAGE_CANDIDATES}). */
  readonly candidates?: number
  /** More candidates found otherwise (by meaning: {@link rankConversationTurnsByMeaning}); ranked with the rest. */
  readonly extra?: readonly Message[]
}

/**
 * The L0 turn ranking as the host runs it: the store's full-text search picks candidate
 * messages of the workspace, their neighbours (±{@link TURN_RANKING}.context.span turns in the
 * same conversation) are read so context windows work as over the whole log, and the turn
 * ranking (analyzer, BM25 with the workspace's collection size, context, session and author
 * priors) orders them. Shared by the conversation-search tool and the LoCoMo benchmark.
 */
export async function rankConversationTurns(
  store: Pick<MemoryStore, 'messages' | 'search'>,
  query: string,
  options: ConversationRankingOptions,
): Promise<{ message: Message; score: number }[]> {
  const keep = (message: Message) => message.conversationId !== options.excludeConversationId
  const text = searchText(query)
  const limit = options.candidates ?? MESSAGE_CANDIDATES
  // The date prior can lift only turns the ranking sees: when the query names a period ("in
  // July 2022"), the best matches written in it are candidates too, though a turn that only
  // shares a speaker's name with the question loses to every turn of other periods in the
  // workspace-wide search. The two searches run side by side.
  const period = (TURN_RANKING.dateBoost ?? 0) > 0 ? queryPeriod(query) : undefined
  const [all, inPeriod] = await Promise.all([
    store.search.messages(text, { workspace: options.workspace, limit }),
    period ? store.search.messages(text, { workspace: options.workspace, limit, since: period.from, until: period.to - 1 }) : [],
  ])
  const found = all.map((hit) => hit.message)
  const seen = new Set(found.map((message) => message.id))
  for (const message of [...inPeriod.map((hit) => hit.message), ...(options.extra ?? [])]) {
    if (seen.has(message.id)) continue
    seen.add(message.id)
    found.push(message)
  }
  const hits = found.filter(keep)
  if (hits.length === 0) return []
  // Context neighbours (±span turns in the same conversation) in one store read, ranked with
  // the candidates: a neighbour's own weak match still counts, as over the whole log. Only a
  // neighbour whose text could hold a query term is analyzed; the others score 0 on their
  // own either way and serve the context windows (analysis is the cold cost of a search).
  const candidateIds = new Set(hits.map((message) => message.id))
  const count = () => store.messages.count({ workspace: options.workspace })
  const reads = Promise.all([store.messages.around([...candidateIds], TURN_RANKING.context.span), options.collectionSize ? options.collectionSize(count) : count()])
  // The candidates are analyzed while the store reads their neighbours: on PostgreSQL that read
  // runs in the server's process, so the two overlap (one turn of the event loop first, for
  // the read to reach the server). With SQLite nothing changes.
  await new Promise((resolve) => setImmediate(resolve))
  const termsOf = options.termsOf ?? ((message: Message) => analyze(`${message.role}: ${message.text}`))
  const hitTerms = hits.map((message) => termsOf(message))
  const [around, collectionSize] = await reads
  const messages = [...hits, ...around.filter((message) => !candidateIds.has(message.id) && keep(message))]
  const mayMatch = queryTermProbe(query)
  const terms = messages.map((message, index) => (index < hits.length ? hitTerms[index] : mayMatch(`${message.role}: ${message.text}`) ? termsOf(message) : undefined))
  const analyzed = terms.filter((list): list is readonly string[] => list !== undefined)
  const averageLength = analyzed.reduce((sum, list) => sum + list.length, 0) / Math.max(1, analyzed.length)
  const corpus = RankingCorpus.from(
    messages.map((message, index) => ({
      id: message.id,
      text: `${message.role}: ${message.text}`,
      terms: terms[index] ?? [],
      group: message.conversationId,
      position: message.seq,
      author: options.authorOf?.(message),
      time: message.createdAt,
    })),
    { collectionSize, averageLength },
  )
  const ids = new Map(messages.map((message) => [message.id, message]))
  const ranked = rankDocuments(corpus, query, TURN_RANKING, { authors: options.authors }).map((turn) => ({ message: ids.get(turn.id)!, score: turn.score }))
  if (!options.extra?.length) return ranked
  // Turns found by meaning share no word with the query: they, and the turns around them, come
  // last with a keyword score of 0 for the vectors to rank.
  const placed = new Set(ranked.map((turn) => turn.message.id))
  const extraConversations = new Set(options.extra.map((message) => message.conversationId))
  for (const message of messages) if (!placed.has(message.id) && extraConversations.has(message.conversationId)) ranked.push({ message, score: 0 })
  return ranked
}

/**
 * Conversation search by meaning, as `conversation_search` runs it with embeddings configured:
 * the {@link VECTOR_CANDIDATES} messages closest to the query among the workspace's newest
 * {@link VECTOR_SCAN} with a stored vector of `model` join the full-text candidates
 * ({@link rankConversationTurns}' `extra`), and the ranking is re-ranked with the vectors
 * ({@link fuseConversationVectors}).
 */
export async function rankConversationTurnsByMeaning(
  store: Pick<MemoryStore, 'messages' | 'search'>,
  query: string,
  vectors: { readonly vector: Float32Array; readonly model: string },
  options: ConversationRankingOptions,
): Promise<{ message: Message; score: number }[]> {
  const known: MessageVectors = new Map()
  const extra = await nearestMessages(store, vectors.vector, vectors.model, options, known)
  const ranked = await rankConversationTurns(store, query, { ...options, extra: [...(options.extra ?? []), ...extra] })
  // Most ranked turns are among the newest read above: only the others are read again.
  return fuseConversationVectors(store, ranked, vectors.vector, vectors.model, known)
}

/** Stored vectors of messages by id, as read: `null` = read, the message has none of the model. */
type MessageVectors = Map<string, Float32Array | null>

/** Read the vectors of `model` of the `ids` that `known` does not hold yet ({@link VECTOR_READ_MAX} per store call) into it. */
async function readMessageVectors(store: Pick<MemoryStore, 'messages'>, ids: readonly string[], model: string, known: MessageVectors): Promise<MessageVectors> {
  const wanted = ids.filter((id) => !known.has(id))
  for (let start = 0; start < wanted.length; start += VECTOR_READ_MAX) {
    const page = wanted.slice(start, start + VECTOR_READ_MAX)
    const found = await store.messages.embeddings(page, model)
    for (const id of page) known.set(id, found.get(id) ?? null)
  }
  return known
}

/** The cosine of a stored vector with the query's; `undefined` without one (or of another size). */
function cosineWith(query: Float32Array, vector: Float32Array | null | undefined): number | undefined {
  return vector && vector.length === query.length ? cosineSimilarity(vector, query) : undefined
}

/**
 * The messages of `options.workspace` (not of `excludeConversationId`) closest to `query` by
 * cosine among its newest {@link VECTOR_SCAN} with a vector of `model`, best first, at most
 * {@link VECTOR_CANDIDATES}.
 */
async function nearestMessages(
  store: Pick<MemoryStore, 'messages'>,
  query: Float32Array,
  model: string,
  options: Pick<ConversationRankingOptions, 'workspace' | 'excludeConversationId'>,
  known: MessageVectors,
): Promise<Message[]> {
  const recent = (await store.messages.list({ workspace: options.workspace, order: 'desc', limit: VECTOR_SCAN })).filter(
    (message) => message.conversationId !== options.excludeConversationId,
  )
  await readMessageVectors(
    store,
    recent.map((message) => message.id),
    model,
    known,
  )
  const scored: { message: Message; cosine: number }[] = []
  for (const message of recent) {
    const cosine = cosineWith(query, known.get(message.id))
    if (cosine !== undefined) scored.push({ message, cosine })
  }
  return scored
    .sort((a, b) => b.cosine - a.cosine)
    .slice(0, VECTOR_CANDIDATES)
    .map(({ message }) => message)
}

/**
 * Re-rank a conversation ranking ({@link rankConversationTurns}) with the stored vectors of its
 * messages (`messages.embeddings` of `model`): `fuseTurnVectors`, each turn's keyword score over
 * the best plus `TURN_VECTOR_WEIGHT` × its standardised closeness to `query`, context
 * windows included (neighbours in conversation order among the ranked messages, as the keyword
 * ranking counts them). A message without a vector of `model` keeps its keyword score alone;
 * when none has one the order is unchanged. Scores become the fused ones.
 * @param query the query's vector from the same model
 * @param known vectors of `model` already read (`null`: read, none); only the other turns' are read
 */
export async function fuseConversationVectors(
  store: Pick<MemoryStore, 'messages'>,
  ranked: readonly { message: Message; score: number }[],
  query: Float32Array,
  model: string,
  known: MessageVectors = new Map(),
): Promise<{ message: Message; score: number }[]> {
  if (ranked.length === 0) return []
  const vectors = await readMessageVectors(
    store,
    ranked.map(({ message }) => message.id),
    model,
    known,
  )
  if (!ranked.some(({ message }) => vectors.get(message.id))) return [...ranked]
  const byId = new Map(ranked.map((turn) => [turn.message.id, turn.message]))
  // Each conversation's ranked messages in order (seq, then id), as RankingCorpus groups them.
  const order = new Map<string, Message[]>()
  for (const { message } of ranked) {
    const list = order.get(message.conversationId) ?? []
    list.push(message)
    order.set(message.conversationId, list)
  }
  const slot = new Map<string, { list: Message[]; index: number }>()
  for (const list of order.values()) {
    list.sort((a, b) => a.seq - b.seq || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    list.forEach((message, index) => slot.set(message.id, { list, index }))
  }
  const neighbours = function* (id: string): Iterable<TurnNeighbour> {
    const at = slot.get(id)
    if (!at) return
    for (let distance = 1; distance <= TURN_RANKING.context.span; distance++) {
      for (const other of [at.list[at.index - distance], at.list[at.index + distance]]) if (other) yield { id: other.id, distance }
    }
  }
  const similarity = (id: string) => cosineWith(query, vectors.get(id))
  return fuseTurnVectors(
    ranked.map(({ message, score }) => ({ id: message.id, score })),
    similarity,
    neighbours,
  ).map(({ id, score }) => ({ message: byId.get(id)!, score }))
}

/**
 * A cheap necessary condition for a text to yield one of the query's analyzer terms: the
 * (NFKC, lower-cased) text contains the term, or for a stemmed English term all of it but the
 * last letter (Porter rewrites only the end of a word: "happi" from "happy", "durabl" from
 * "durability"), or all of a 2-3 letter stem unless it ends in e or i. Checked against every
 * word of Debian's American English word list and the LoCoMo text (81k words): each contains
 * the needle of its own stem.
 */
export function queryTermProbe(query: string): (text: string) => boolean {
  const needles = [...new Set(analyze(query).map((term) => (term.startsWith(UNIGRAM_MARK) ? term.slice(UNIGRAM_MARK.length) : term)))].map((term) => {
    if (!/^[a-z][a-z0-9]*$/.test(term)) return term
    return term.length >= 4 || /[ei]$/.test(term) ? term.slice(0, -1) : term
  })
  return (text) => {
    // The analyzer drops apostrophes inside words ("rock'n'roll" → "rocknroll").
    // The analyzer folds traditional Chinese to simplified; so must the probe, or a traditional
    // neighbour would never hold a (simplified) query term.
    const folded = foldScript(text).normalize('NFKC').toLowerCase().replace(/['’]/g, '')
    return needles.some((needle) => folded.includes(needle))
  }
}

