/**
 * The memory browser's data side: every page's data, read through the packages' public APIs
 * (store repositories and search, distill's state repository, the cue-bank repository, the
 * palace archive readers, the tree repository), and the three edits (correct, forget,
 * promote) through recall's engine so they mean exactly what `/memory correct|forget|promote`
 * means. Lists are paged on the server: nothing here loads a whole table.
 */
import { existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { type Cue, type CueRepository, type Idiom, openCueRepository } from '@dsh-memory/cue-bank'
import { DistillStateRepository, type LedgerDay, type LedgerRow } from '@dsh-memory/distill'
import { ArchiveIndex, type IndexEntry, type MonthInfo, NamespaceArchive, PalaceWorkspace, readArchive, resolvePalaceOptions } from '@dsh-memory/palace'
import { feedbackOf, type FeedbackRecord, type InjectSwitch, type MemoryMode, RecallEngine, resolveRecallOptions, type SessionMemorySettings } from '@dsh-memory/recall'
import {
  type AuditEntry,
  type Conversation,
  type DayCounts,
  type Memory,
  type MemoryStore,
  type Message,
  openMemoryStore,
  type Persona,
  type Scene,
  type Scope,
  type StoreCounts,
} from '@dsh-memory/store'
import { type Branch, type BranchEvent, type Checkpoint, type MainlineItem, openStoreTreeRepository, type Project, type TreeRepository } from '@dsh-memory/tree'
import { databaseOf } from './data-dir.ts'
import { WebError } from './errors.ts'

/** One page of a list. */
export interface Page<T> {
  readonly items: readonly T[]
  /** 0-based. */
  readonly page: number
  readonly pageSize: number
  readonly hasNext: boolean
  /** Set when a search stopped at the store's result cap (1 000 hits). */
  readonly capped?: boolean
}

/** Rows per page of every list. */
export const PAGE_SIZE = 50
/** The store's search returns at most this many hits. */
export const SEARCH_CAP = 1000

/** Filters of the memories page. */
export interface MemoryQuery {
  /** Full-text query (CJK-aware); empty lists by date. */
  readonly q?: string
  readonly scope?: Scope
  readonly kind?: string
  /** Only this workspace's memories (global ones excluded). */
  readonly workspace?: string
  /** Only memories made in this session (session-scoped to it, or distilled from its messages; any scope). */
  readonly sessionId?: string
  readonly sort?: 'created' | 'updated' | 'priority'
  readonly includeSuperseded?: boolean
  /** 0-based. */
  readonly page?: number
  readonly pageSize?: number
}

/** A memory in a list, with its search score when found by a query. */
export interface MemoryRow {
  readonly memory: Memory
  readonly score: number | null
}

/** Everything the memory detail page shows. */
export interface MemoryDetail {
  readonly memory: Memory
  /** The version chain, oldest first (includes `memory`). */
  readonly history: readonly Memory[]
  /** The L0 messages the memory was distilled from (missing ones are skipped). */
  readonly sources: readonly { readonly message: Message; readonly conversation: Conversation | undefined }[]
  readonly feedback: FeedbackRecord
  readonly needsReview: boolean
  /** Audit entries of every version, newest first. */
  readonly audit: readonly AuditEntry[]
  /** Scenes (of the first page of the memory's layer) that list this memory. */
  readonly scenes: readonly Scene[]
}

/** Distillation state for the overview. */
export interface DistillActivity {
  readonly lastScanAt: number | null
  readonly lastRunAt: number | null
  readonly pendingConversations: number
  /** Conversations (of the most recent {@link RECENT_CONVERSATIONS}) waiting after failures. */
  readonly failing: readonly { readonly conversationId: string; readonly attempts: number; readonly lastError: string | null }[]
  /** Writes by the distiller per UTC day over the last 30 days (audit log), oldest first. */
  readonly perDay: readonly { readonly day: number; readonly writes: number }[]
  /** Set when distill's state could not be read (written by another version). */
  readonly error: string | null
}

/** The overview page. */
export interface Overview {
  readonly dataDir: string
  readonly counts: StoreCounts
  readonly daily: readonly DayCounts[]
  readonly distill: DistillActivity
  readonly cost: { readonly rows: readonly LedgerRow[]; readonly days: readonly LedgerDay[] }
  /** Optional packages with tables in this database. */
  readonly installed: { readonly cueBank: boolean; readonly tree: boolean }
  readonly searchIndex: { readonly memories: number; readonly messages: number; readonly built: boolean } | null
}

/** Cue-bank page data. */
export interface CueView {
  readonly installed: boolean
  readonly partitions: readonly string[]
  readonly cues: Page<Cue>
  readonly idioms: readonly Idiom[]
}

/** One memory name of a palace. */
export interface PalaceNamespaceView {
  readonly workspace: string
  readonly namespace: string
  readonly months: readonly (MonthInfo & { readonly summary: string | undefined; readonly volumes: readonly { readonly path: string; readonly category: string; readonly turns: number }[] })[]
  readonly turns: number
}

/** Tree page data for one project. */
export interface TreeProjectView {
  readonly project: Project
  readonly workspaces: readonly string[]
  readonly items: readonly MainlineItem[]
  readonly branches: readonly Branch[]
  readonly checkpoints: readonly Checkpoint[]
}

/** Newest memories a session's own list is picked from (see {@link MemoryQuery.sessionId}). */
const SESSION_POOL = 2000

/** How many recent conversations the overview inspects for failing distillation. */
export const RECENT_CONVERSATIONS = 200
const DAY_MS = 86_400_000

/** Options of {@link MemoryBrowser.open}. */
export interface OpenMemoryBrowserOptions {
  /** The data dir holding `memory.db`. */
  readonly dataDir: string
  /** Workspaces whose `memory-palace/` folder to show besides those found in the store. */
  readonly palaceWorkspaces?: readonly string[]
  /** Recorded as the actor of edits (default `'web'`). */
  readonly actor?: string
  /** The store session's user: whose global memories are shown, and the author of edits (default: the store's default identity). */
  readonly user?: string
  readonly now?: () => number
}

/** Options of {@link MemoryBrowser.fromStore}. */
export interface MemoryBrowserStoreOptions {
  readonly palaceWorkspaces?: readonly string[]
  readonly actor?: string
  readonly now?: () => number
  /** Shown on the overview; defaults to the database's folder. */
  readonly dataDir?: string
}

/** Clamp a page number from a query string. */
function pageOf(value: number | undefined): number {
  return value !== undefined && Number.isSafeInteger(value) && value >= 0 ? value : 0
}

/**
 * Read and edit one data dir. Owns the store it opened (closed by {@link MemoryBrowser.close});
 * a store given to {@link MemoryBrowser.fromStore} stays the caller's.
 */
export class MemoryBrowser {
  readonly store: MemoryStore
  readonly dataDir: string
  readonly #ownsStore: boolean
  readonly #actor: string
  readonly #now: () => number
  readonly #palaceWorkspaces: readonly string[]
  readonly #recall: RecallEngine
  #cues: CueRepository | null | undefined
  #tree: TreeRepository | null | undefined
  #closed = false

  private constructor(store: MemoryStore, ownsStore: boolean, dataDir: string, options: MemoryBrowserStoreOptions) {
    this.store = store
    this.dataDir = dataDir
    this.#ownsStore = ownsStore
    this.#actor = options.actor ?? 'web'
    this.#now = options.now ?? Date.now
    this.#palaceWorkspaces = options.palaceWorkspaces ?? []
    this.#recall = new RecallEngine(store, resolveRecallOptions({}), { now: this.#now })
  }

  /** Open the data dir's store read-write. @throws WebError `not-found` when it has no database */
  static open(options: OpenMemoryBrowserOptions): MemoryBrowser {
    const path = databaseOf(options.dataDir)
    const store = openMemoryStore({ path, actor: options.actor ?? 'web', ...(options.user === undefined ? {} : { user: options.user }) })
    return new MemoryBrowser(store, true, options.dataDir, options)
  }

  /**
   * Browse a store someone else opened (the host's `ctx.memoryStore`): a SQLite file, or a
   * PostgreSQL store given with its `dataDir` (its `path` is a URL, not a place for files).
   */
  static fromStore(store: MemoryStore, options: MemoryBrowserStoreOptions = {}): MemoryBrowser {
    if (store.path === ':memory:' || store.path === '') throw new WebError('unsupported', 'the memory browser needs a file-backed store')
    if (options.dataDir === undefined && /^postgres(?:ql)?:/.test(store.path)) throw new WebError('unsupported', 'a PostgreSQL store needs options.dataDir (the local data dir)')
    return new MemoryBrowser(store, false, options.dataDir ?? join(store.path, '..'), options)
  }

  #assertOpen(): void {
    if (this.#closed) throw new WebError('unsupported', 'the memory browser is closed')
  }

  async #owners(): Promise<Set<string>> {
    return new Set((await this.store.meta.migrations()).map((migration) => migration.owner))
  }

  // overview ------------------------------------------------------------------------------------

  /** Counts, the daily chart series, distillation activity and the cost ledger. */
  async overview(): Promise<Overview> {
    this.#assertOpen()
    const counts = await this.store.stats.counts()
    const daily = await this.store.stats.daily()
    const owners = await this.#owners()
    const state = new DistillStateRepository(this.store)
    let distill: DistillActivity
    let cost: Overview['cost'] = { rows: [], days: [] }
    try {
      const recent = await this.store.conversations.list({ limit: RECENT_CONVERSATIONS })
      const states = []
      for (const conversation of recent) states.push(await state.conversation(conversation.id))
      const runs = states.map((entry) => entry.lastRunAt).filter((at): at is number => at !== null)
      const since = this.#now() - 30 * DAY_MS
      const writes = await this.store.audit.list({ actor: 'distill', since, limit: 10_000 })
      const perDay = new Map<number, number>()
      for (const entry of writes) {
        if (entry.entity === 'meta' || entry.entity === 'lease') continue
        const day = Math.floor(entry.at / DAY_MS)
        perDay.set(day, (perDay.get(day) ?? 0) + 1)
      }
      distill = {
        lastScanAt: (await state.lastScan()) ?? null,
        lastRunAt: runs.length > 0 ? Math.max(...runs) : null,
        pendingConversations: (await state.pendingIds()).length,
        failing: states.filter((entry) => entry.attempts > 0).map((entry) => ({ conversationId: entry.conversationId, attempts: entry.attempts, lastError: entry.lastError })),
        perDay: [...perDay.entries()].sort((a, b) => a[0] - b[0]).map(([day, count]) => ({ day, writes: count })),
        error: null,
      }
      cost = { rows: await state.costs(), days: await state.costDays() }
    } catch (error) {
      distill = { lastScanAt: null, lastRunAt: null, pendingConversations: 0, failing: [], perDay: [], error: (error as Error).message }
    }
    const status = await this.store.search.status().catch(() => undefined)
    return {
      dataDir: this.dataDir,
      counts,
      daily,
      distill,
      cost,
      installed: { cueBank: owners.has('cue-bank'), tree: owners.has('tree') },
      searchIndex: status ? { memories: status.documents.memories, messages: status.documents.messages, built: status.built } : null,
    }
  }

  // memories ------------------------------------------------------------------------------------

  /** Kinds of current memories, most common first. */
  async kinds(): Promise<string[]> {
    this.#assertOpen()
    return this.store.stats.kinds()
  }

  /** One page of memories: by date, or ranked by a full-text query (Chinese and Japanese work). */
  async memories(query: MemoryQuery = {}): Promise<Page<MemoryRow>> {
    const page = pageOf(query.page)
    const pageSize = Math.min(Math.max(1, query.pageSize ?? PAGE_SIZE), 500)
    const filter = {
      ...(query.scope ? { scope: query.scope } : {}),
      ...(query.kind ? { kind: query.kind } : {}),
      ...(query.workspace ? { workspace: query.workspace, includeGlobal: false } : {}),
      includeSuperseded: query.includeSuperseded === true,
    }
    const q = query.q?.trim() ?? ''
    // The store filters by session only for session-scoped rows; a session's memories of any
    // scope are those it made, so they are picked here from a bounded pool.
    if (query.sessionId) return this.#sessionMemories(query.sessionId, q, filter, page, pageSize)
    if (q !== '') {
      const want = (page + 1) * pageSize + 1
      const hits = await this.store.search.memories(q, { ...filter, limit: Math.min(SEARCH_CAP, want) })
      const items = hits.slice(page * pageSize, (page + 1) * pageSize).map((hit) => ({ memory: hit.memory, score: hit.score }))
      return { items, page, pageSize, hasNext: hits.length > (page + 1) * pageSize, capped: want > SEARCH_CAP && hits.length >= SEARCH_CAP }
    }
    const rows = await this.store.memories.list({ ...filter, orderBy: query.sort ?? 'created', limit: pageSize + 1, offset: page * pageSize })
    return { items: rows.slice(0, pageSize).map((memory) => ({ memory, score: null })), page, pageSize, hasNext: rows.length > pageSize }
  }

  async #sessionMemories(sessionId: string, q: string, filter: Record<string, unknown>, page: number, pageSize: number): Promise<Page<MemoryRow>> {
    const pool: MemoryRow[] =
      q !== ''
        ? (await this.store.search.memories(q, { ...filter, limit: SEARCH_CAP })).map((hit) => ({ memory: hit.memory, score: hit.score }))
        : (await this.store.memories.list({ ...filter, orderBy: 'created', limit: SESSION_POOL })).map((memory) => ({ memory, score: null }))
    // Made in this session: session-scoped to it, or distilled from its own messages.
    const own = new Set((await this.store.messages.list({ conversationId: sessionId, limit: SESSION_POOL })).map((message) => message.id))
    const mine = pool.filter((row) => row.memory.sessionId === sessionId || row.memory.sourceMessageIds.some((id) => own.has(id)))
    return { items: mine.slice(page * pageSize, (page + 1) * pageSize), page, pageSize, hasNext: mine.length > (page + 1) * pageSize }
  }

  /** A session's memory mode and injection switch (`updatedAt` null: it never chose, the default applies). */
  async sessionMemorySettings(sessionId: string): Promise<SessionMemorySettings> {
    return this.#recall.settings.get(sessionId)
  }

  /** Change a session's mode and/or injection switch, as `/memory mode|inject` does. */
  async updateSessionMemorySettings(sessionId: string, patch: { mode?: MemoryMode; inject?: InjectSwitch }): Promise<SessionMemorySettings> {
    return this.#recall.settings.update(sessionId, patch, this.#actor)
  }

  /** A memory with its history, source turns, feedback and audit trail; undefined when unknown. */
  async memory(id: string): Promise<MemoryDetail | undefined> {
    const memory = await this.store.memories.get(id)
    if (!memory) return undefined
    const history = await this.store.memories.history(id)
    const sourceIds = [...new Set(history.flatMap((version) => version.sourceMessageIds))]
    const sources: MemoryDetail['sources'][number][] = []
    const conversations = new Map<string, Conversation | undefined>()
    for (const sourceId of sourceIds.slice(0, 50)) {
      const message = await this.store.messages.get(sourceId)
      if (!message) continue
      if (!conversations.has(message.conversationId)) conversations.set(message.conversationId, await this.store.conversations.get(message.conversationId))
      sources.push({ message, conversation: conversations.get(message.conversationId) })
    }
    const audit: AuditEntry[] = []
    for (const version of history) audit.push(...(await this.store.audit.list({ entity: 'memory', entityId: version.id, limit: 200 })))
    audit.sort((a, b) => b.id - a.id)
    const layerScenes = await this.store.scenes.list({
      scope: memory.scope,
      ...(memory.workspace ? { workspace: memory.workspace } : {}),
      ...(memory.sessionId ? { sessionId: memory.sessionId } : {}),
      includeGlobal: memory.scope === 'global',
      limit: 500,
    })
    const ids = new Set(history.map((version) => version.id))
    return {
      memory,
      history,
      sources,
      feedback: feedbackOf(memory.flags),
      needsReview: memory.flags.needsReview === true,
      audit,
      scenes: layerScenes.filter((scene) => scene.memoryIds.some((memberId) => ids.has(memberId))),
    }
  }

  /** Recall's scope that sees exactly this memory. */
  #scopeOf(memory: Memory): { sessionId: string; workspace: string } {
    return { sessionId: memory.sessionId ?? '', workspace: memory.workspace ?? '' }
  }

  async #current(id: string): Promise<Memory> {
    const memory = await this.store.memories.get(id)
    if (!memory) throw new WebError('not-found', `no memory with id ${id}`)
    if (memory.supersededBy) throw new WebError('invalid-argument', `memory ${id} was replaced by ${memory.supersededBy}; edit the current version`)
    return memory
  }

  /**
   * Correct a memory's text. The old text stays as history (the new version supersedes it),
   * and feedback on the old text is cleared, as with `/memory correct`.
   * @returns the new version.
   */
  async editMemory(id: string, text: string): Promise<Memory> {
    const memory = await this.#current(id)
    if (text.trim() === '') throw new WebError('invalid-argument', 'the memory text is empty')
    if (text.trim() === memory.text) return memory
    const { current } = await this.#recall.correctMemory(memory.id, text, this.#scopeOf(memory), this.#actor)
    return current
  }

  /** Delete a memory and every older version of it (as `/memory forget`). @returns the deleted memory. */
  async forgetMemory(id: string): Promise<Memory> {
    const memory = await this.store.memories.get(id)
    if (!memory) throw new WebError('not-found', `no memory with id ${id}`)
    // A superseded version is forgotten through its current version, so history cannot resurface.
    const target = memory.supersededBy ? await this.#current(memory.supersededBy).catch(() => memory) : memory
    await this.store.memories.delete(target.id, { actor: this.#actor })
    return target
  }

  /** Promote a workspace memory to the global layer (as `/memory promote`). @returns the global version. */
  async promoteMemory(id: string): Promise<Memory> {
    const memory = await this.#current(id)
    if (memory.scope !== 'workspace') throw new WebError('invalid-argument', `memory ${id} is ${memory.scope}-scoped; only workspace memories can be promoted to global`)
    const { current } = await this.#recall.promoteMemory(memory.id, this.#scopeOf(memory), this.#actor)
    return current
  }

  // scenes and persona -------------------------------------------------------------------------

  /** One page of scenes, newest updated first. */
  async scenes(page = 0): Promise<Page<Scene>> {
    const p = pageOf(page)
    const rows = await this.store.scenes.list({ limit: PAGE_SIZE + 1, offset: p * PAGE_SIZE })
    return { items: rows.slice(0, PAGE_SIZE), page: p, pageSize: PAGE_SIZE, hasNext: rows.length > PAGE_SIZE }
  }

  /** A scene with its member memories (missing ones skipped). */
  async scene(id: string): Promise<{ scene: Scene; memories: Memory[] } | undefined> {
    const scene = await this.store.scenes.get(id)
    if (!scene) return undefined
    const memories: Memory[] = []
    for (const memberId of scene.memoryIds.slice(0, 200)) {
      const memory = await this.store.memories.get(memberId)
      if (memory) memories.push(memory)
    }
    return { scene, memories }
  }

  /** Every persona document (one per layer, so few). */
  async persona(): Promise<Persona[]> {
    return this.store.persona.list()
  }

  // conversations -------------------------------------------------------------------------------

  /** One page of conversations, most recently updated first. */
  async conversations(page = 0): Promise<Page<Conversation>> {
    const p = pageOf(page)
    const rows = await this.store.conversations.list({ limit: PAGE_SIZE + 1, offset: p * PAGE_SIZE })
    return { items: rows.slice(0, PAGE_SIZE), page: p, pageSize: PAGE_SIZE, hasNext: rows.length > PAGE_SIZE }
  }

  /** A conversation and one page of its L0 timeline (in conversation order). */
  async conversation(id: string, page = 0): Promise<{ conversation: Conversation; messages: Page<Message> } | undefined> {
    const conversation = await this.store.conversations.get(id)
    if (!conversation) return undefined
    const p = pageOf(page)
    const size = 100
    const rows = await this.store.messages.list({ conversationId: id, limit: size + 1, offset: p * size, order: 'asc' })
    return { conversation, messages: { items: rows.slice(0, size), page: p, pageSize: size, hasNext: rows.length > size } }
  }

  /** The page (of {@link conversation}) holding the message with this seq. */
  async conversationPageOf(conversationId: string, seq: number): Promise<number> {
    const before = await this.store.messages.list({ conversationId, limit: 10_000, order: 'asc' })
    const index = before.findIndex((message) => message.seq >= seq)
    return index < 0 ? 0 : Math.floor(index / 100)
  }

  // cue bank ------------------------------------------------------------------------------------

  async #cueRepository(): Promise<CueRepository | null> {
    if (this.#cues !== undefined) return this.#cues
    // Never create the cue bank's tables in a database that does not have them.
    this.#cues = (await this.#owners()).has('cue-bank') ? await openCueRepository(this.store) : null
    return this.#cues
  }

  /** Topics (cues) of one partition or all, with their idioms. Cue banks are bounded by eviction, so paging is in memory. */
  async cues(options: { partition?: string; page?: number } = {}): Promise<CueView> {
    const repository = await this.#cueRepository()
    const page = pageOf(options.page)
    if (!repository) return { installed: false, partitions: [], cues: { items: [], page, pageSize: PAGE_SIZE, hasNext: false }, idioms: [] }
    const all = repository.listCues(undefined)
    const partitions = [...new Set([...all.map((cue) => cue.partition), ...repository.listIdioms(undefined).map((idiom) => idiom.partition)])].sort()
    const wanted = options.partition ? [options.partition] : undefined
    const cues = wanted ? all.filter((cue) => cue.partition === options.partition) : all
    return {
      installed: true,
      partitions,
      cues: { items: cues.slice(page * PAGE_SIZE, (page + 1) * PAGE_SIZE), page, pageSize: PAGE_SIZE, hasNext: cues.length > (page + 1) * PAGE_SIZE },
      idioms: repository.listIdioms(wanted).slice(0, 200),
    }
  }

  // palace --------------------------------------------------------------------------------------

  /** Workspaces that have a `memory-palace/` folder (from the palace index, the store's conversations and the configured list). */
  async palaceWorkspaces(): Promise<string[]> {
    const candidates = new Set(this.#palaceWorkspaces)
    try {
      for (const workspace of await new ArchiveIndex(this.store).workspaces()) candidates.add(workspace)
    } catch {
      // No palace tables in this data dir (the palace never ran, or a read-only store before its migration).
    }
    for (let offset = 0; offset < 10_000; offset += 1000) {
      const page = await this.store.conversations.list({ limit: 1000, offset })
      for (const conversation of page) {
        if (conversation.workspace) candidates.add(conversation.workspace)
      }
      if (page.length < 1000) break
    }
    const root = resolvePalaceOptions({}).rootDirName
    return [...candidates].filter((workspace) => isDirectory(join(workspace, root))).sort()
  }

  /** A session's memory name in its workspace's palace, and whether that name holds archived turns. */
  async sessionPalace(workspace: string, sessionId: string): Promise<{ namespace: string | null; archived: boolean }> {
    const palace = this.#palace(workspace)
    const namespace = await palace.namespaceOf(sessionId).catch(() => undefined)
    return { namespace: namespace ?? null, archived: namespace !== undefined && (await palace.hasArchives(namespace).catch(() => false)) }
  }

  /**
   * Give an unnamed session its memory name, as `palace_config` does (the palace validates
   * the name and refuses one in use). Renaming is left to `palace_config`: it moves the
   * folder, which the running palace plugin must do itself.
   * @throws WebError `invalid-argument` when the session already has a name; PalaceError `invalid-name` / `namespace-taken`
   */
  async nameSessionPalace(workspace: string, sessionId: string, name: string): Promise<string> {
    const palace = this.#palace(workspace)
    const current = await palace.namespaceOf(sessionId)
    if (current !== undefined) throw new WebError('invalid-argument', `this session already archives under "${current}"; rename it with the palace_config tool`)
    return (await palace.setNamespace(sessionId, name.trim())).namespace
  }

  #palace(workspace: string): PalaceWorkspace {
    return new PalaceWorkspace(workspace, resolvePalaceOptions({}), { now: () => new Date(this.#now()) })
  }

  async #knownPalace(workspace: string): Promise<PalaceWorkspace> {
    if (!(await this.palaceWorkspaces()).includes(workspace)) throw new WebError('not-found', `no memory palace known at ${workspace}`)
    return this.#palace(workspace)
  }

  #archive(palace: PalaceWorkspace, namespace: string): NamespaceArchive {
    // Read-only: a NamespaceArchive reads index and volumes; recovery (a write) is the plugin's job.
    return new NamespaceArchive(palace.layout.namespaceDir(namespace), namespace, { now: () => new Date(this.#now()) })
  }

  /** Every memory name of every known palace, with months, categories, volumes and summaries. */
  async palace(): Promise<PalaceNamespaceView[]> {
    const out: PalaceNamespaceView[] = []
    for (const workspace of await this.palaceWorkspaces()) {
      const palace = this.#palace(workspace)
      for (const namespace of await palace.listNamespaces().catch(() => [] as string[])) {
        const archive = this.#archive(palace, namespace)
        const entries: IndexEntry[] = await archive.entries().catch(() => [])
        const months = []
        for (const month of await archive.months()) {
          const volumes = new Map<string, { path: string; category: string; turns: number }>()
          for (const entry of entries) {
            if (!entry.path.startsWith(`${month.month}/`)) continue
            const volume = volumes.get(entry.path) ?? { path: entry.path, category: entry.category, turns: 0 }
            volume.turns++
            volumes.set(entry.path, volume)
          }
          months.push({ ...month, summary: await archive.summaryText(month.month).catch(() => undefined), volumes: [...volumes.values()].sort((a, b) => a.path.localeCompare(b.path)) })
        }
        out.push({ workspace, namespace, months, turns: entries.length })
      }
    }
    return out
  }

  /** Read a volume or a month summary of a palace (`<month>/<category>/<file>.md` or `<month>/_summary.md`). */
  async palaceRead(workspace: string, namespace: string, path: string, offset = 0): Promise<{ text: string; nextOffset: number | undefined; totalChars: number }> {
    const palace = await this.#knownPalace(workspace)
    if (!(await palace.listNamespaces()).includes(namespace)) throw new WebError('not-found', `no memory name ${namespace} in ${workspace}`)
    const result = await readArchive(this.#archive(palace, namespace), { path, offset, maxChars: 60_000 })
    return { text: result.text, nextOffset: result.nextOffset, totalChars: result.totalChars }
  }

  // memory tree ---------------------------------------------------------------------------------

  async #treeRepository(): Promise<TreeRepository | null> {
    if (this.#tree !== undefined) return this.#tree
    this.#tree = (await this.#owners()).has('tree') ? await openStoreTreeRepository(this.store) : null
    return this.#tree
  }

  /** Projects of the memory tree; null when the tree package never ran on this database. */
  async treeProjects(): Promise<Project[] | null> {
    const repository = await this.#treeRepository()
    return repository ? repository.listProjects() : null
  }

  /** One project: mainline items (all statuses), branches (cleared too) and checkpoints. */
  async treeProject(id: string): Promise<TreeProjectView | undefined> {
    const repository = await this.#treeRepository()
    const project = repository ? await repository.getProject(id) : undefined
    if (!repository || !project) return undefined
    const [workspaces, items, branches, checkpoints] = await Promise.all([
      repository.bindings(project.id),
      repository.listItems(project.id, { status: 'all' }),
      repository.listBranches(project.id, { status: 'all', includeCleared: true }),
      repository.listCheckpoints(project.id),
    ])
    return { project, workspaces, items, branches, checkpoints }
  }

  /** A branch with its log. */
  async treeBranch(id: string): Promise<{ branch: Branch; events: BranchEvent[] } | undefined> {
    const repository = await this.#treeRepository()
    const branch = repository ? await repository.getBranch(id) : undefined
    if (!repository || !branch) return undefined
    return { branch, events: await repository.branchEvents(id) }
  }

  /** A checkpoint document. */
  async treeCheckpoint(id: string): Promise<Checkpoint | undefined> {
    const repository = await this.#treeRepository()
    return repository ? repository.getCheckpoint(id) : undefined
  }

  /** Close what this browser opened (the store only when it opened it). Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#cues?.close()
    await this.#tree?.close()
    if (this.#ownsStore) await this.store.close()
  }
}

function isDirectory(path: string): boolean {
  return existsSync(path) && statSync(path).isDirectory()
}
