/**
 * The {@link TreeRepository} on the store's session: the only module of this package that
 * queries the database. The `tree_*` tables are declared through the store's extension seam
 * (`store.tables({ migrations, schema })`), so every query is a typed drizzle query on the
 * store's own connection with its busy retry: no second connection, no driver of our own, no
 * SQL text.
 *
 * Every method is one unit of the seam (a write is one IMMEDIATE transaction, a read one
 * snapshot) that never spans an await, so other processes serialise on the SQLite write lock.
 */
import { and, asc, desc, eq, getTableColumns, isNull, lte, ne, or, type SQL, sql } from 'drizzle-orm'
import type { SQLiteUpdateSetSource } from 'drizzle-orm/sqlite-core'
import type { PackageDatabase, PackageTables } from '@dsh-memory/store'
import { treeMigrations } from './migrations.js'
import { TreeError } from './errors.js'
import { newId } from './ids.js'
import type { ChatFold, ItemsWritten, NewItem, TreeRepository } from './repository.js'
import { branchEvents, branches, bindings, chat, checkpoints, items, projects, settings, treeSchema, turns, type TreeSchema } from './schema.js'
import { textKey } from './text.js'
import {
  CHECKPOINT_STATE_VERSION,
  type Branch,
  type BranchEvent,
  type ChatEntry,
  type Checkpoint,
  type CheckpointState,
  type ItemStatus,
  type MainlineItem,
  type MainlineTurn,
  type Project,
} from './types.js'

/** The slice of the store {@link openStoreTreeRepository} needs. */
export interface TreeTablesHost {
  tables(declaration: { migrations: ReturnType<typeof treeMigrations>; schema: TreeSchema }): Promise<PackageTables<TreeSchema>>
}

/**
 * Declare the tree tables on `store` (applying the `tree` migrations through its runner) and
 * open the repository on the store's session.
 * @throws MemoryStoreError from the store (`schema-too-new`, `schema-too-old` on a read-only store, `closed`, ...)
 */
export async function openStoreTreeRepository(store: TreeTablesHost): Promise<TreeRepository> {
  const tables = await store.tables({ migrations: treeMigrations(), schema: treeSchema })
  // The handle is the store's connection; this repository only uses it inside a unit of `tables`.
  const db = await tables.read((handle) => handle)
  return new StoreTreeRepository(tables, db)
}

type Db = PackageDatabase<TreeSchema>
/** The input of one repository method (the interface is the one place that spells it out). */
type Input<K extends keyof TreeRepository> = Parameters<TreeRepository[K]>[0]

/** `columns` without the keys in `omit`: a select that yields the domain object as it is. */
function without<C extends Record<string, unknown>, K extends keyof C>(columns: C, ...omit: K[]): Omit<C, K> {
  const copy: Partial<C> = { ...columns }
  for (const key of omit) delete copy[key]
  return copy as Omit<C, K>
}

const projectColumns = without(getTableColumns(projects), 'nameKey')
const itemColumns = without(getTableColumns(items), 'textKey')
const turnColumns = without(getTableColumns(turns), 'checkpointId')
const branchColumns = {
  ...getTableColumns(branches),
  // Qualified by hand: drizzle renders a single-table select's columns unqualified, and an
  // unqualified `id` inside the subquery would be the event's own id.
  eventCount: sql<number>`(SELECT COUNT(*) FROM ${branchEvents} e WHERE e.branch_id = ${branches}.id)`.mapWith(Number),
}

function toCheckpoint(row: typeof checkpoints.$inferSelect): Checkpoint {
  let state: CheckpointState
  try {
    state = JSON.parse(row.state) as CheckpointState
  } catch (error) {
    throw new TreeError('unsupported', `checkpoint ${row.id} has unreadable state JSON`, { cause: error })
  }
  if (state?.version !== CHECKPOINT_STATE_VERSION) {
    throw new TreeError('unsupported', `checkpoint ${row.id} has state version ${String(state?.version)}; this version reads ${CHECKPOINT_STATE_VERSION}`)
  }
  return { ...row, state }
}

/** `updated_at = max(updated_at, now)`: a clock that went back never moves a row into the past. */
const notBefore = (column: typeof projects.updatedAt | typeof branches.updatedAt, now: number): SQL => sql`max(${column}, ${now})`

// ---------------------------------------------------------------------------------------------

class StoreTreeRepository implements TreeRepository {
  #closed = false

  constructor(
    private readonly tables: PackageTables<TreeSchema>,
    private readonly db: Db,
  ) {}

  /** Run `op` as one write transaction of the store's session (busy retry included). */
  #tx<T>(op: () => T): Promise<T> {
    if (this.#closed) return Promise.reject(new TreeError('closed', 'the memory tree repository is closed'))
    return this.tables.write(op)
  }

  /** Reads take no write lock: one consistent snapshot. */
  #read<T>(op: () => T): Promise<T> {
    if (this.#closed) return Promise.reject(new TreeError('closed', 'the memory tree repository is closed'))
    return this.tables.read(op)
  }

  #project(id: string): Project | undefined {
    return this.db.select(projectColumns).from(projects).where(eq(projects.id, id)).get()
  }

  #projectByName(name: string): Project | undefined {
    return this.db.select(projectColumns).from(projects).where(eq(projects.nameKey, textKey(name))).get()
  }

  #requireProject(id: string): Project {
    const row = this.#project(id)
    if (!row) throw new TreeError('not-found', `no project ${id}`)
    return row
  }

  /** Check the caller's expectation of the mainline revision. */
  #expect(project: Project, expectedRevision: number | undefined): void {
    if (expectedRevision !== undefined && project.revision !== expectedRevision) {
      throw new TreeError('conflict', `the mainline of project "${project.name}" is at revision ${project.revision}, not ${expectedRevision}; read it again and retry`)
    }
  }

  /** Bump the project revision (checking the caller's expectation first) and apply `also`. */
  #bump(projectId: string, expectedRevision: number | undefined, now: number, also: SQLiteUpdateSetSource<typeof projects> = {}): Project {
    this.#expect(this.#requireProject(projectId), expectedRevision)
    this.db
      .update(projects)
      .set({ revision: sql`${projects.revision} + 1`, updatedAt: notBefore(projects.updatedAt, now), ...also })
      .where(eq(projects.id, projectId))
      .run()
    return this.#project(projectId)!
  }

  #item(id: string): MainlineItem | undefined {
    return this.db.select(itemColumns).from(items).where(eq(items.id, id)).get()
  }

  #insertItems(project: Project, list: readonly NewItem[], now: number): { added: MainlineItem[]; skipped: NewItem[] } {
    const added: MainlineItem[] = []
    const skipped: NewItem[] = []
    for (const item of list) {
      const key = textKey(item.text)
      const repeat = this.db
        .select({ id: items.id })
        .from(items)
        .where(and(eq(items.projectId, project.id), eq(items.textKey, key), eq(items.status, 'active')))
        .limit(1)
        .get()
      if (repeat) {
        skipped.push(item)
        continue
      }
      const { seq } = this.db
        .select({ seq: sql<number>`COALESCE(MAX(${items.seq}), 0) + 1`.mapWith(Number) })
        .from(items)
        .where(eq(items.projectId, project.id))
        .get()!
      const id = newId('it')
      this.db
        .insert(items)
        .values({ id, projectId: project.id, seq, kind: item.kind, text: item.text, textKey: key, source: item.source, status: 'active', stage: project.stage, branchId: item.branchId ?? null, createdAt: now, updatedAt: now })
        .run()
      added.push(this.#item(id)!)
    }
    return { added, skipped }
  }

  // projects -----------------------------------------------------------------------------------

  getProject(id: string): Promise<Project | undefined> {
    return this.#read(() => this.#project(id))
  }

  findProject(name: string): Promise<Project | undefined> {
    return this.#read(() => this.#projectByName(name))
  }

  listProjects(): Promise<Project[]> {
    return this.#read(() => this.db.select(projectColumns).from(projects).orderBy(desc(projects.updatedAt), asc(projects.id)).all())
  }

  ensureProject(input: Input<'ensureProject'>): Promise<{ project: Project; created: boolean }> {
    return this.#tx(() => {
      let project = this.#projectByName(input.name)
      let created = false
      if (!project) {
        const id = newId('pj')
        this.db.insert(projects).values({ id, name: input.name, nameKey: textKey(input.name), stage: 1, revision: 1, createdAt: input.now, updatedAt: input.now }).run()
        project = this.#project(id)!
        created = true
      }
      if (input.workspace !== undefined && input.workspace !== null) {
        this.db
          .insert(bindings)
          .values({ workspace: input.workspace, projectId: project.id, updatedAt: input.now })
          .onConflictDoUpdate({ target: bindings.workspace, set: { projectId: project.id, updatedAt: input.now } })
          .run()
      }
      return { project, created }
    })
  }

  projectForWorkspace(workspace: string): Promise<Project | undefined> {
    return this.#read(() => {
      let projectId = this.db.select({ projectId: bindings.projectId }).from(bindings).where(eq(bindings.workspace, workspace)).get()?.projectId
      if (!projectId && workspace !== '') {
        // Nearest bound ancestor: the longest binding that is a directory prefix of the workspace.
        const rows = this.db.select({ workspace: bindings.workspace, projectId: bindings.projectId }).from(bindings).where(ne(bindings.workspace, '')).all()
        let best = ''
        for (const row of rows) {
          const base = row.workspace.replace(/[\\/]+$/, '')
          if (base.length > best.length && (workspace.startsWith(`${base}/`) || workspace.startsWith(`${base}\\`))) {
            best = base
            projectId = row.projectId
          }
        }
      }
      return projectId ? this.#project(projectId) : undefined
    })
  }

  bindings(projectId: string): Promise<string[]> {
    return this.#read(() =>
      this.db
        .select({ workspace: bindings.workspace })
        .from(bindings)
        .where(eq(bindings.projectId, projectId))
        .orderBy(asc(bindings.workspace))
        .all()
        .map((row) => row.workspace),
    )
  }

  // items --------------------------------------------------------------------------------------

  listItems(projectId: string, filter: { status?: ItemStatus | 'all'; kinds?: readonly MainlineItem['kind'][] } = {}): Promise<MainlineItem[]> {
    return this.#read(() => {
      const status = filter.status ?? 'active'
      const rows = this.db
        .select(itemColumns)
        .from(items)
        .where(and(eq(items.projectId, projectId), status === 'all' ? undefined : eq(items.status, status)))
        .orderBy(asc(items.seq))
        .all()
      return filter.kinds ? rows.filter((item) => filter.kinds!.includes(item.kind)) : rows
    })
  }

  getItem(id: string): Promise<MainlineItem | undefined> {
    return this.#read(() => this.#item(id))
  }

  addItems(input: Input<'addItems'>): Promise<ItemsWritten> {
    return this.#tx(() => {
      const current = this.#requireProject(input.projectId)
      this.#expect(current, input.expectedRevision)
      const { added, skipped } = this.#insertItems(current, input.items, input.now)
      const project = added.length > 0 ? this.#bump(input.projectId, undefined, input.now) : current
      return { project, added, skipped }
    })
  }

  setItemStatus(input: Input<'setItemStatus'>): Promise<{ project: Project; item: MainlineItem }> {
    return this.#tx(() => {
      const row = this.#item(input.itemId)
      if (!row) throw new TreeError('not-found', `no mainline item ${input.itemId}`)
      const project = this.#bump(row.projectId, input.expectedRevision, input.now)
      this.db.update(items).set({ status: input.status, updatedAt: input.now }).where(eq(items.id, input.itemId)).run()
      return { project, item: this.#item(input.itemId)! }
    })
  }

  // turns --------------------------------------------------------------------------------------

  appendTurn(input: Input<'appendTurn'>): Promise<MainlineTurn> {
    return this.#tx(() => {
      const project = this.#requireProject(input.projectId)
      const uncleared = and(eq(turns.projectId, input.projectId), isNull(turns.checkpointId))
      const { id } = this.db
        .insert(turns)
        .values({ projectId: input.projectId, sessionId: input.sessionId, role: input.role, text: input.text, stage: project.stage, createdAt: input.now })
        .returning({ id: turns.id })
        .get()
      // Periodic trim: the turn log only feeds injection, the full text lives in the store's L0.
      const cutoff = this.db.select({ id: turns.id }).from(turns).where(uncleared).orderBy(desc(turns.id)).limit(1).offset(input.keep).get()
      if (cutoff) this.db.delete(turns).where(and(uncleared, lte(turns.id, cutoff.id))).run()
      return this.db.select(turnColumns).from(turns).where(eq(turns.id, id)).get()!
    })
  }

  recentTurns(projectId: string, options: { limit: number; excludeSessionId?: string }): Promise<MainlineTurn[]> {
    return this.#read(() => {
      if (options.limit <= 0) return []
      return this.db
        .select(turnColumns)
        .from(turns)
        .where(and(eq(turns.projectId, projectId), isNull(turns.checkpointId), options.excludeSessionId === undefined ? undefined : ne(turns.sessionId, options.excludeSessionId)))
        .orderBy(desc(turns.id))
        .limit(options.limit)
        .all()
        .reverse()
    })
  }

  turnWatermark(projectId: string): Promise<{ lastId: number; count: number }> {
    return this.#read(
      () =>
        this.db
          .select({ lastId: sql<number>`COALESCE(MAX(${turns.id}), 0)`.mapWith(Number), count: sql<number>`COUNT(*)`.mapWith(Number) })
          .from(turns)
          .where(and(eq(turns.projectId, projectId), isNull(turns.checkpointId)))
          .get()!,
    )
  }

  // branches -----------------------------------------------------------------------------------

  #branch(id: string): Branch | undefined {
    return this.db.select(branchColumns).from(branches).where(eq(branches.id, id)).get()
  }

  #requireActiveBranch(id: string, verb: string): Branch {
    const branch = this.#branch(id)
    if (!branch) throw new TreeError('not-found', `no branch ${id}`)
    if (branch.status !== 'active') throw new TreeError('conflict', `branch ${id} ("${branch.title}") ${verb} ${branch.status}`)
    return branch
  }

  #logEvent(event: typeof branchEvents.$inferInsert): number {
    return this.db.insert(branchEvents).values(event).returning({ id: branchEvents.id }).get().id
  }

  createBranch(input: Input<'createBranch'>): Promise<{ project: Project; branch: Branch }> {
    return this.#tx(() => {
      const before = this.#requireProject(input.projectId)
      const id = newId('br')
      this.db.insert(branches).values({ id, projectId: input.projectId, title: input.title, status: 'active', stage: before.stage, revision: 1, createdAt: input.now, updatedAt: input.now }).run()
      this.#logEvent({ branchId: id, kind: 'opened', text: input.note ?? input.title, sessionId: input.sessionId, createdAt: input.now })
      const project = this.#bump(input.projectId, input.expectedRevision, input.now, input.checkout ? { currentBranchId: id } : {})
      return { project, branch: this.#branch(id)! }
    })
  }

  getBranch(id: string): Promise<Branch | undefined> {
    return this.#read(() => this.#branch(id))
  }

  listBranches(projectId: string, filter: { status?: Branch['status'] | 'all'; includeCleared?: boolean } = {}): Promise<Branch[]> {
    return this.#read(() =>
      this.db
        .select(branchColumns)
        .from(branches)
        .where(
          and(
            eq(branches.projectId, projectId),
            filter.status && filter.status !== 'all' ? eq(branches.status, filter.status) : undefined,
            filter.includeCleared ? undefined : isNull(branches.checkpointId),
          ),
        )
        .orderBy(desc(branches.createdAt), desc(branches.id))
        .all(),
    )
  }

  branchEvents(branchId: string): Promise<BranchEvent[]> {
    return this.#read(() => this.db.select().from(branchEvents).where(eq(branchEvents.branchId, branchId)).orderBy(asc(branchEvents.id)).all())
  }

  appendBranchEvent(input: Input<'appendBranchEvent'>): Promise<BranchEvent> {
    return this.#tx(() => {
      this.#requireActiveBranch(input.branchId, 'is')
      const id = this.#logEvent({ branchId: input.branchId, kind: input.kind, text: input.text, sessionId: input.sessionId, createdAt: input.now })
      this.db
        .update(branches)
        .set({ revision: sql`${branches.revision} + 1`, updatedAt: notBefore(branches.updatedAt, input.now) })
        .where(eq(branches.id, input.branchId))
        .run()
      return this.db.select().from(branchEvents).where(eq(branchEvents.id, id)).get()!
    })
  }

  checkout(input: Input<'checkout'>): Promise<Project> {
    return this.#tx(() => {
      const project = this.#requireProject(input.projectId)
      if (input.branchId !== null) {
        const branch = this.#branch(input.branchId)
        if (!branch || branch.projectId !== input.projectId) throw new TreeError('not-found', `no branch ${input.branchId} in project "${project.name}"`)
        if (branch.status !== 'active') throw new TreeError('conflict', `branch ${input.branchId} ("${branch.title}") is ${branch.status}`)
      }
      if (project.currentBranchId === input.branchId && input.expectedRevision === undefined) return project
      return this.#bump(input.projectId, input.expectedRevision, input.now, { currentBranchId: input.branchId })
    })
  }

  closeBranch(input: Input<'closeBranch'>): Promise<ItemsWritten & { branch: Branch }> {
    return this.#tx(() => {
      const branch = this.#requireActiveBranch(input.branchId, 'was already')
      if (branch.revision !== input.expectedBranchRevision) {
        throw new TreeError('conflict', `branch ${input.branchId} changed (revision ${branch.revision}, expected ${input.expectedBranchRevision}) while its merge was prepared`)
      }
      const before = this.#requireProject(branch.projectId)
      const { added, skipped } = this.#insertItems(before, input.items, input.now)
      this.#logEvent({ branchId: input.branchId, kind: input.status, text: input.conclusion ?? input.status, sessionId: input.sessionId, createdAt: input.now })
      this.db
        .update(branches)
        .set({ status: input.status, conclusion: input.conclusion, revision: sql`${branches.revision} + 1`, updatedAt: input.now, closedAt: input.now })
        .where(eq(branches.id, input.branchId))
        .run()
      const project = this.#bump(branch.projectId, undefined, input.now, before.currentBranchId === input.branchId ? { currentBranchId: null } : {})
      return { project, branch: this.#branch(input.branchId)!, added, skipped }
    })
  }

  // checkpoints --------------------------------------------------------------------------------

  createCheckpoint(input: Input<'createCheckpoint'>): Promise<{ project: Project; checkpoint: Checkpoint; clearedBranches: number; clearedTurns: number }> {
    return this.#tx(() => {
      const before = this.#requireProject(input.projectId)
      if (before.revision !== input.expectedRevision) {
        throw new TreeError('conflict', `the mainline of project "${before.name}" moved to revision ${before.revision} while the checkpoint was prepared (expected ${input.expectedRevision})`)
      }
      const id = newId('cp')
      this.db
        .insert(checkpoints)
        .values({ id, projectId: input.projectId, stage: before.stage, title: input.title, review: input.review, document: input.document, state: JSON.stringify(input.state), revision: before.revision, createdAt: input.now })
        .run()
      const clearedBranches = this.db
        .update(branches)
        .set({ checkpointId: id })
        .where(and(eq(branches.projectId, input.projectId), isNull(branches.checkpointId), ne(branches.status, 'active')))
        .run().changes
      const clearedTurns = this.db
        .update(turns)
        .set({ checkpointId: id })
        .where(and(eq(turns.projectId, input.projectId), isNull(turns.checkpointId), lte(turns.id, input.turnsUpTo)))
        .run().changes
      const project = this.#bump(input.projectId, undefined, input.now, { stage: sql`${projects.stage} + 1`, baselineCheckpointId: id })
      return { project, checkpoint: toCheckpoint(this.db.select().from(checkpoints).where(eq(checkpoints.id, id)).get()!), clearedBranches, clearedTurns }
    })
  }

  getCheckpoint(id: string): Promise<Checkpoint | undefined> {
    return this.#read(() => {
      const row = this.db.select().from(checkpoints).where(eq(checkpoints.id, id)).get()
      return row ? toCheckpoint(row) : undefined
    })
  }

  listCheckpoints(projectId: string): Promise<Checkpoint[]> {
    return this.#read(() =>
      this.db
        .select()
        .from(checkpoints)
        .where(eq(checkpoints.projectId, projectId))
        .orderBy(desc(checkpoints.createdAt), sql`rowid DESC`)
        .all()
        .map(toCheckpoint),
    )
  }

  // chat ---------------------------------------------------------------------------------------

  #digest(workspace: string): ChatEntry | undefined {
    return this.db
      .select()
      .from(chat)
      .where(and(eq(chat.workspace, workspace), eq(chat.kind, 'digest')))
      .orderBy(desc(chat.id))
      .limit(1)
      .get()
  }

  appendChat(input: Input<'appendChat'>, fold: ChatFold): Promise<{ entry: ChatEntry; folded: number }> {
    return this.#tx(() => {
      const entry = this.db
        .insert(chat)
        .values({ workspace: input.workspace, sessionId: input.sessionId, kind: 'message', role: input.role, text: input.text, count: 1, firstAt: input.now, createdAt: input.now })
        .returning()
        .get()
      const messages = this.db
        .select()
        .from(chat)
        .where(and(eq(chat.workspace, input.workspace), eq(chat.kind, 'message')))
        .orderBy(asc(chat.id))
        .all()
      const excess = messages.length - fold.keep
      if (excess <= 0) return { entry, folded: 0 }
      const folded = messages.slice(0, excess)
      const previous = this.#digest(input.workspace)
      const text = fold.summarize(folded, previous)
      const count = folded.length + (previous?.count ?? 0)
      const firstAt = Math.min(previous?.firstAt ?? Number.MAX_SAFE_INTEGER, ...folded.map((f) => f.firstAt))
      this.db
        .delete(chat)
        .where(and(eq(chat.workspace, input.workspace), or(eq(chat.kind, 'digest'), lte(chat.id, folded[folded.length - 1]!.id))))
        .run()
      this.db.insert(chat).values({ workspace: input.workspace, sessionId: '', kind: 'digest', role: 'digest', text, count, firstAt, createdAt: input.now }).run()
      return { entry, folded: folded.length }
    })
  }

  listChat(workspace: string, limit: number): Promise<ChatEntry[]> {
    return this.#read(() => {
      const digest = this.#digest(workspace)
      const messages = this.db
        .select()
        .from(chat)
        .where(and(eq(chat.workspace, workspace), eq(chat.kind, 'message')))
        .orderBy(desc(chat.id))
        .limit(Math.max(0, limit))
        .all()
        .reverse()
      return [...(digest ? [digest] : []), ...messages]
    })
  }

  // settings -----------------------------------------------------------------------------------

  getSetting(key: string): Promise<string | undefined> {
    return this.#read(() => this.db.select({ value: settings.value }).from(settings).where(eq(settings.key, key)).get()?.value)
  }

  setSetting(key: string, value: string, now: number): Promise<void> {
    return this.#tx(() => {
      this.db.insert(settings).values({ key, value, updatedAt: now }).onConflictDoUpdate({ target: settings.key, set: { value, updatedAt: now } }).run()
    })
  }

  /** The connection is the store's: closing only stops this repository. */
  async close(): Promise<void> {
    this.#closed = true
  }
}
