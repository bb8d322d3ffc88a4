/**
 * The {@link TreeRepository} on the store's session: the only module of this package that
 * queries the database. The `tree_*` tables are declared through the store's extension seam
 * (`store.tables({ migrations, schema, postgres })`), so every query is a typed drizzle query on
 * the store's own connection with its busy retry: no second connection, no driver of our own.
 *
 * Both backends run the same code: queries follow the seam's portable style (awaited builders,
 * tables from `tables.t`, counts through `.returning(...)`); the one SQL function that differs
 * (`max` vs `GREATEST`) is the store's `sqlGreatest(tables.dialect, …)`. Every method is one unit of the seam (a
 * write is one transaction under the store's write lock, a read one snapshot) that awaits only
 * its own queries, so other processes serialise on the database's write lock.
 */
import { and, asc, desc, eq, getTableColumns, isNull, lte, ne, or, type SQL, sql } from 'drizzle-orm'
import type { SQLiteUpdateSetSource } from 'drizzle-orm/sqlite-core'
import { type PackageDatabase, packageDeclaration, type PackageDialect, type PackageTables, type PackageTablesDeclaration, sqlGreatest } from '@dsh-memory/store'
import { missingTreeMigrations, TREE_MIGRATION_OWNER } from './migrations.js'
import { TREE_WORKSPACE_KEYS } from './workspace-keys.js'
import { TreeError } from './errors.js'
import { newId } from './ids.js'
import { treePgSchema } from './pg-schema.js'
import type { ChatFold, ItemsWritten, NewItem, TreeRepository } from './repository.js'
import { treeSchema, type TreeSchema } from './schema.js'
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
  tables(declaration: PackageTablesDeclaration<TreeSchema>): Promise<PackageTables<TreeSchema>>
}

/** The tree's tables on both backends, for `store.tables(...)`. */
export function treeTables(): PackageTablesDeclaration<TreeSchema> {
  return packageDeclaration(import.meta.url, TREE_MIGRATION_OWNER, { schema: treeSchema, pgSchema: treePgSchema, missing: missingTreeMigrations })
}

/**
 * Declare the tree tables on `store` (applying the `tree` migrations of its backend through
 * its runner) and open the repository on the store's session.
 * @throws MemoryStoreError from the store (`schema-too-new`, `schema-too-old` on a read-only store, `closed`, ...)
 */
export async function openStoreTreeRepository(store: TreeTablesHost): Promise<TreeRepository> {
  return new StoreTreeRepository(await store.tables({ ...treeTables(), workspaceKeys: TREE_WORKSPACE_KEYS }))
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

/** The selections that yield domain objects, built on the backend's tables. */
function selections(t: TreeSchema) {
  return {
    project: without(getTableColumns(t.projects), 'nameKey'),
    item: without(getTableColumns(t.items), 'textKey'),
    turn: without(getTableColumns(t.turns), 'checkpointId'),
    branch: {
      ...getTableColumns(t.branches),
      // Qualified by hand: drizzle renders a single-table select's columns unqualified, and an
      // unqualified `id` inside the subquery would be the event's own id.
      eventCount: sql<number>`(SELECT COUNT(*) FROM ${t.branchEvents} e WHERE e.branch_id = ${t.branches}.id)`.mapWith(Number),
    },
  }
}

function toCheckpoint(row: TreeSchema['checkpoints']['$inferSelect']): Checkpoint {
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

/** `updated_at = greatest(updated_at, now)`: a clock that went back never moves a row into the past. */
function notBefore(dialect: PackageDialect, column: TreeSchema['projects']['updatedAt'] | TreeSchema['branches']['updatedAt'], now: number): SQL {
  return sqlGreatest(dialect, column, now)
}

// ---------------------------------------------------------------------------------------------

class StoreTreeRepository implements TreeRepository {
  #closed = false
  readonly #t: TreeSchema
  readonly #select: ReturnType<typeof selections>

  constructor(private readonly tables: PackageTables<TreeSchema>) {
    this.#t = tables.t
    this.#select = selections(tables.t)
  }

  /** Run `op` as one write transaction of the store's session (busy retry included). */
  #tx<T>(op: (db: Db) => Promise<T>): Promise<T> {
    if (this.#closed) return Promise.reject(new TreeError('closed', 'the memory tree repository is closed'))
    return this.tables.write((db) => op(db))
  }

  /** Reads take no write lock: one consistent snapshot. */
  #read<T>(op: (db: Db) => Promise<T>): Promise<T> {
    if (this.#closed) return Promise.reject(new TreeError('closed', 'the memory tree repository is closed'))
    return this.tables.read((db) => op(db))
  }

  async #project(db: Db, id: string): Promise<Project | undefined> {
    const { projects } = this.#t
    return (await db.select(this.#select.project).from(projects).where(eq(projects.id, id)).limit(1))[0]
  }

  async #projectByName(db: Db, name: string): Promise<Project | undefined> {
    const { projects } = this.#t
    return (await db.select(this.#select.project).from(projects).where(eq(projects.nameKey, textKey(name))).limit(1))[0]
  }

  async #requireProject(db: Db, id: string): Promise<Project> {
    const row = await this.#project(db, id)
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
  async #bump(db: Db, projectId: string, expectedRevision: number | undefined, now: number, also: SQLiteUpdateSetSource<TreeSchema['projects']> = {}): Promise<Project> {
    const { projects } = this.#t
    this.#expect(await this.#requireProject(db, projectId), expectedRevision)
    await db
      .update(projects)
      .set({ revision: sql`${projects.revision} + 1`, updatedAt: notBefore(this.tables.dialect, projects.updatedAt, now), ...also })
      .where(eq(projects.id, projectId))
    return (await this.#project(db, projectId))!
  }

  async #item(db: Db, id: string): Promise<MainlineItem | undefined> {
    const { items } = this.#t
    return (await db.select(this.#select.item).from(items).where(eq(items.id, id)).limit(1))[0]
  }

  async #insertItems(db: Db, project: Project, list: readonly NewItem[], now: number): Promise<{ added: MainlineItem[]; skipped: NewItem[] }> {
    const { items } = this.#t
    const added: MainlineItem[] = []
    const skipped: NewItem[] = []
    for (const item of list) {
      const key = textKey(item.text)
      const [repeat] = await db
        .select({ id: items.id })
        .from(items)
        .where(and(eq(items.projectId, project.id), eq(items.textKey, key), eq(items.status, 'active')))
        .limit(1)
      if (repeat) {
        skipped.push(item)
        continue
      }
      const [{ seq }] = (await db
        .select({ seq: sql<number>`COALESCE(MAX(${items.seq}), 0) + 1`.mapWith(Number) })
        .from(items)
        .where(eq(items.projectId, project.id))) as [{ seq: number }]
      const id = newId('it')
      await db
        .insert(items)
        .values({ id, projectId: project.id, seq, kind: item.kind, text: item.text, textKey: key, source: item.source, status: 'active', stage: project.stage, branchId: item.branchId ?? null, createdAt: now, updatedAt: now })
      added.push((await this.#item(db, id))!)
    }
    return { added, skipped }
  }

  // projects -----------------------------------------------------------------------------------

  getProject(id: string): Promise<Project | undefined> {
    return this.#read((db) => this.#project(db, id))
  }

  findProject(name: string): Promise<Project | undefined> {
    return this.#read((db) => this.#projectByName(db, name))
  }

  listProjects(): Promise<Project[]> {
    const { projects } = this.#t
    return this.#read(async (db) => db.select(this.#select.project).from(projects).orderBy(desc(projects.updatedAt), asc(projects.id)))
  }

  ensureProject(input: Input<'ensureProject'>): Promise<{ project: Project; created: boolean }> {
    const { projects, bindings } = this.#t
    return this.#tx(async (db) => {
      let project = await this.#projectByName(db, input.name)
      let created = false
      if (!project) {
        const id = newId('pj')
        await db.insert(projects).values({ id, name: input.name, nameKey: textKey(input.name), stage: 1, revision: 1, createdAt: input.now, updatedAt: input.now })
        project = (await this.#project(db, id))!
        created = true
      }
      if (input.workspace !== undefined && input.workspace !== null) {
        await db
          .insert(bindings)
          .values({ workspace: input.workspace, projectId: project.id, updatedAt: input.now })
          .onConflictDoUpdate({ target: bindings.workspace, set: { projectId: project.id, updatedAt: input.now } })
      }
      return { project, created }
    })
  }

  projectForWorkspace(workspace: string): Promise<Project | undefined> {
    const { bindings } = this.#t
    return this.#read(async (db) => {
      let projectId = (await db.select({ projectId: bindings.projectId }).from(bindings).where(eq(bindings.workspace, workspace)).limit(1))[0]?.projectId
      if (!projectId && workspace !== '') {
        // Nearest bound ancestor: the longest binding that is a directory prefix of the workspace.
        const rows = await db.select({ workspace: bindings.workspace, projectId: bindings.projectId }).from(bindings).where(ne(bindings.workspace, ''))
        let best = ''
        for (const row of rows) {
          const base = row.workspace.replace(/[\\/]+$/, '')
          if (base.length > best.length && (workspace.startsWith(`${base}/`) || workspace.startsWith(`${base}\\`))) {
            best = base
            projectId = row.projectId
          }
        }
      }
      return projectId ? this.#project(db, projectId) : undefined
    })
  }

  bindings(projectId: string): Promise<string[]> {
    const { bindings } = this.#t
    return this.#read(async (db) =>
      (await db.select({ workspace: bindings.workspace }).from(bindings).where(eq(bindings.projectId, projectId)).orderBy(asc(bindings.workspace))).map((row) => row.workspace),
    )
  }

  // items --------------------------------------------------------------------------------------

  listItems(projectId: string, filter: { status?: ItemStatus | 'all'; kinds?: readonly MainlineItem['kind'][] } = {}): Promise<MainlineItem[]> {
    const { items } = this.#t
    return this.#read(async (db) => {
      const status = filter.status ?? 'active'
      const rows = await db
        .select(this.#select.item)
        .from(items)
        .where(and(eq(items.projectId, projectId), status === 'all' ? undefined : eq(items.status, status)))
        .orderBy(asc(items.seq))
      return filter.kinds ? rows.filter((item) => filter.kinds!.includes(item.kind)) : rows
    })
  }

  getItem(id: string): Promise<MainlineItem | undefined> {
    return this.#read((db) => this.#item(db, id))
  }

  addItems(input: Input<'addItems'>): Promise<ItemsWritten> {
    return this.#tx(async (db) => {
      const current = await this.#requireProject(db, input.projectId)
      this.#expect(current, input.expectedRevision)
      const { added, skipped } = await this.#insertItems(db, current, input.items, input.now)
      const project = added.length > 0 ? await this.#bump(db, input.projectId, undefined, input.now) : current
      return { project, added, skipped }
    })
  }

  setItemStatus(input: Input<'setItemStatus'>): Promise<{ project: Project; item: MainlineItem }> {
    const { items } = this.#t
    return this.#tx(async (db) => {
      const row = await this.#item(db, input.itemId)
      if (!row) throw new TreeError('not-found', `no mainline item ${input.itemId}`)
      const project = await this.#bump(db, row.projectId, input.expectedRevision, input.now)
      await db.update(items).set({ status: input.status, updatedAt: input.now }).where(eq(items.id, input.itemId))
      return { project, item: (await this.#item(db, input.itemId))! }
    })
  }

  // turns --------------------------------------------------------------------------------------

  appendTurn(input: Input<'appendTurn'>): Promise<MainlineTurn> {
    const { turns } = this.#t
    return this.#tx(async (db) => {
      const project = await this.#requireProject(db, input.projectId)
      const uncleared = and(eq(turns.projectId, input.projectId), isNull(turns.checkpointId))
      const [{ id }] = (await db
        .insert(turns)
        .values({ projectId: input.projectId, sessionId: input.sessionId, role: input.role, text: input.text, stage: project.stage, createdAt: input.now })
        .returning({ id: turns.id })) as [{ id: number }]
      // Periodic trim: the turn log only feeds injection, the full text lives in the store's L0.
      const [cutoff] = await db.select({ id: turns.id }).from(turns).where(uncleared).orderBy(desc(turns.id)).limit(1).offset(input.keep)
      if (cutoff) await db.delete(turns).where(and(uncleared, lte(turns.id, cutoff.id)))
      return (await db.select(this.#select.turn).from(turns).where(eq(turns.id, id)).limit(1))[0]!
    })
  }

  recentTurns(projectId: string, options: { limit: number; excludeSessionId?: string }): Promise<MainlineTurn[]> {
    const { turns } = this.#t
    return this.#read(async (db) => {
      if (options.limit <= 0) return []
      const rows = await db
        .select(this.#select.turn)
        .from(turns)
        .where(and(eq(turns.projectId, projectId), isNull(turns.checkpointId), options.excludeSessionId === undefined ? undefined : ne(turns.sessionId, options.excludeSessionId)))
        .orderBy(desc(turns.id))
        .limit(options.limit)
      return rows.reverse()
    })
  }

  turnWatermark(projectId: string): Promise<{ lastId: number; count: number }> {
    const { turns } = this.#t
    return this.#read(
      async (db) =>
        (
          await db
            .select({ lastId: sql<number>`COALESCE(MAX(${turns.id}), 0)`.mapWith(Number), count: sql<number>`COUNT(*)`.mapWith(Number) })
            .from(turns)
            .where(and(eq(turns.projectId, projectId), isNull(turns.checkpointId)))
        )[0]!,
    )
  }

  // branches -----------------------------------------------------------------------------------

  async #branch(db: Db, id: string): Promise<Branch | undefined> {
    const { branches } = this.#t
    return (await db.select(this.#select.branch).from(branches).where(eq(branches.id, id)).limit(1))[0]
  }

  async #requireActiveBranch(db: Db, id: string, verb: string): Promise<Branch> {
    const branch = await this.#branch(db, id)
    if (!branch) throw new TreeError('not-found', `no branch ${id}`)
    if (branch.status !== 'active') throw new TreeError('conflict', `branch ${id} ("${branch.title}") ${verb} ${branch.status}`)
    return branch
  }

  async #logEvent(db: Db, event: TreeSchema['branchEvents']['$inferInsert']): Promise<number> {
    const { branchEvents } = this.#t
    return (await db.insert(branchEvents).values(event).returning({ id: branchEvents.id }))[0]!.id
  }

  createBranch(input: Input<'createBranch'>): Promise<{ project: Project; branch: Branch }> {
    const { branches } = this.#t
    return this.#tx(async (db) => {
      const before = await this.#requireProject(db, input.projectId)
      const id = newId('br')
      await db.insert(branches).values({ id, projectId: input.projectId, title: input.title, status: 'active', stage: before.stage, revision: 1, createdAt: input.now, updatedAt: input.now })
      await this.#logEvent(db, { branchId: id, kind: 'opened', text: input.note ?? input.title, sessionId: input.sessionId, createdAt: input.now })
      const project = await this.#bump(db, input.projectId, input.expectedRevision, input.now, input.checkout ? { currentBranchId: id } : {})
      return { project, branch: (await this.#branch(db, id))! }
    })
  }

  getBranch(id: string): Promise<Branch | undefined> {
    return this.#read((db) => this.#branch(db, id))
  }

  listBranches(projectId: string, filter: { status?: Branch['status'] | 'all'; includeCleared?: boolean } = {}): Promise<Branch[]> {
    const { branches } = this.#t
    return this.#read(async (db) =>
      db
        .select(this.#select.branch)
        .from(branches)
        .where(
          and(
            eq(branches.projectId, projectId),
            filter.status && filter.status !== 'all' ? eq(branches.status, filter.status) : undefined,
            filter.includeCleared ? undefined : isNull(branches.checkpointId),
          ),
        )
        .orderBy(desc(branches.createdAt), desc(branches.id)),
    )
  }

  branchEvents(branchId: string): Promise<BranchEvent[]> {
    const { branchEvents } = this.#t
    return this.#read(async (db) => db.select().from(branchEvents).where(eq(branchEvents.branchId, branchId)).orderBy(asc(branchEvents.id)))
  }

  appendBranchEvent(input: Input<'appendBranchEvent'>): Promise<BranchEvent> {
    const { branches, branchEvents } = this.#t
    return this.#tx(async (db) => {
      await this.#requireActiveBranch(db, input.branchId, 'is')
      const id = await this.#logEvent(db, { branchId: input.branchId, kind: input.kind, text: input.text, sessionId: input.sessionId, createdAt: input.now })
      await db
        .update(branches)
        .set({ revision: sql`${branches.revision} + 1`, updatedAt: notBefore(this.tables.dialect, branches.updatedAt, input.now) })
        .where(eq(branches.id, input.branchId))
      return (await db.select().from(branchEvents).where(eq(branchEvents.id, id)).limit(1))[0]!
    })
  }

  checkout(input: Input<'checkout'>): Promise<Project> {
    return this.#tx(async (db) => {
      const project = await this.#requireProject(db, input.projectId)
      if (input.branchId !== null) {
        const branch = await this.#branch(db, input.branchId)
        if (!branch || branch.projectId !== input.projectId) throw new TreeError('not-found', `no branch ${input.branchId} in project "${project.name}"`)
        if (branch.status !== 'active') throw new TreeError('conflict', `branch ${input.branchId} ("${branch.title}") is ${branch.status}`)
      }
      if (project.currentBranchId === input.branchId && input.expectedRevision === undefined) return project
      return this.#bump(db, input.projectId, input.expectedRevision, input.now, { currentBranchId: input.branchId })
    })
  }

  closeBranch(input: Input<'closeBranch'>): Promise<ItemsWritten & { branch: Branch }> {
    const { branches } = this.#t
    return this.#tx(async (db) => {
      const branch = await this.#requireActiveBranch(db, input.branchId, 'was already')
      if (branch.revision !== input.expectedBranchRevision) {
        throw new TreeError('conflict', `branch ${input.branchId} changed (revision ${branch.revision}, expected ${input.expectedBranchRevision}) while its merge was prepared`)
      }
      const before = await this.#requireProject(db, branch.projectId)
      const { added, skipped } = await this.#insertItems(db, before, input.items, input.now)
      await this.#logEvent(db, { branchId: input.branchId, kind: input.status, text: input.conclusion ?? input.status, sessionId: input.sessionId, createdAt: input.now })
      await db
        .update(branches)
        .set({ status: input.status, conclusion: input.conclusion, revision: sql`${branches.revision} + 1`, updatedAt: input.now, closedAt: input.now })
        .where(eq(branches.id, input.branchId))
      const project = await this.#bump(db, branch.projectId, undefined, input.now, before.currentBranchId === input.branchId ? { currentBranchId: null } : {})
      return { project, branch: (await this.#branch(db, input.branchId))!, added, skipped }
    })
  }

  // checkpoints --------------------------------------------------------------------------------

  createCheckpoint(input: Input<'createCheckpoint'>): Promise<{ project: Project; checkpoint: Checkpoint; clearedBranches: number; clearedTurns: number }> {
    const { projects, branches, turns, checkpoints } = this.#t
    return this.#tx(async (db) => {
      const before = await this.#requireProject(db, input.projectId)
      if (before.revision !== input.expectedRevision) {
        throw new TreeError('conflict', `the mainline of project "${before.name}" moved to revision ${before.revision} while the checkpoint was prepared (expected ${input.expectedRevision})`)
      }
      const id = newId('cp')
      await db
        .insert(checkpoints)
        .values({ id, projectId: input.projectId, stage: before.stage, title: input.title, review: input.review, document: input.document, state: JSON.stringify(input.state), revision: before.revision, createdAt: input.now })
      const clearedBranches = await db
        .update(branches)
        .set({ checkpointId: id })
        .where(and(eq(branches.projectId, input.projectId), isNull(branches.checkpointId), ne(branches.status, 'active')))
        .returning({ id: branches.id })
      const clearedTurns = await db
        .update(turns)
        .set({ checkpointId: id })
        .where(and(eq(turns.projectId, input.projectId), isNull(turns.checkpointId), lte(turns.id, input.turnsUpTo)))
        .returning({ id: turns.id })
      const project = await this.#bump(db, input.projectId, undefined, input.now, { stage: sql`${projects.stage} + 1`, baselineCheckpointId: id })
      const [row] = await db.select().from(checkpoints).where(eq(checkpoints.id, id)).limit(1)
      return { project, checkpoint: toCheckpoint(row!), clearedBranches: clearedBranches.length, clearedTurns: clearedTurns.length }
    })
  }

  getCheckpoint(id: string): Promise<Checkpoint | undefined> {
    const { checkpoints } = this.#t
    return this.#read(async (db) => {
      const [row] = await db.select().from(checkpoints).where(eq(checkpoints.id, id)).limit(1)
      return row ? toCheckpoint(row) : undefined
    })
  }

  listCheckpoints(projectId: string): Promise<Checkpoint[]> {
    const { checkpoints } = this.#t
    // Ties of created_at (one clock tick) go by stage: every checkpoint of a project opens the
    // next stage, so a higher stage is a later checkpoint, on both backends (no rowid on PostgreSQL).
    return this.#read(async (db) =>
      (await db.select().from(checkpoints).where(eq(checkpoints.projectId, projectId)).orderBy(desc(checkpoints.createdAt), desc(checkpoints.stage))).map(toCheckpoint),
    )
  }

  // chat ---------------------------------------------------------------------------------------

  async #digest(db: Db, workspace: string): Promise<ChatEntry | undefined> {
    const { chat } = this.#t
    return (
      await db
        .select()
        .from(chat)
        .where(and(eq(chat.workspace, workspace), eq(chat.kind, 'digest')))
        .orderBy(desc(chat.id))
        .limit(1)
    )[0]
  }

  appendChat(input: Input<'appendChat'>, fold: ChatFold): Promise<{ entry: ChatEntry; folded: number }> {
    const { chat } = this.#t
    return this.#tx(async (db) => {
      const [entry] = await db
        .insert(chat)
        .values({ workspace: input.workspace, sessionId: input.sessionId, kind: 'message', role: input.role, text: input.text, count: 1, firstAt: input.now, createdAt: input.now })
        .returning()
      const messages = await db
        .select()
        .from(chat)
        .where(and(eq(chat.workspace, input.workspace), eq(chat.kind, 'message')))
        .orderBy(asc(chat.id))
      const excess = messages.length - fold.keep
      if (excess <= 0) return { entry: entry!, folded: 0 }
      const folded = messages.slice(0, excess)
      const previous = await this.#digest(db, input.workspace)
      const text = fold.summarize(folded, previous)
      const count = folded.length + (previous?.count ?? 0)
      const firstAt = Math.min(previous?.firstAt ?? Number.MAX_SAFE_INTEGER, ...folded.map((f) => f.firstAt))
      await db.delete(chat).where(and(eq(chat.workspace, input.workspace), or(eq(chat.kind, 'digest'), lte(chat.id, folded[folded.length - 1]!.id))))
      await db.insert(chat).values({ workspace: input.workspace, sessionId: '', kind: 'digest', role: 'digest', text, count, firstAt, createdAt: input.now })
      return { entry: entry!, folded: folded.length }
    })
  }

  listChat(workspace: string, limit: number): Promise<ChatEntry[]> {
    const { chat } = this.#t
    return this.#read(async (db) => {
      const digest = await this.#digest(db, workspace)
      const messages = await db
        .select()
        .from(chat)
        .where(and(eq(chat.workspace, workspace), eq(chat.kind, 'message')))
        .orderBy(desc(chat.id))
        .limit(Math.max(0, limit))
      return [...(digest ? [digest] : []), ...messages.reverse()]
    })
  }

  // settings -----------------------------------------------------------------------------------

  getSetting(key: string): Promise<string | undefined> {
    const { settings } = this.#t
    return this.#read(async (db) => (await db.select({ value: settings.value }).from(settings).where(eq(settings.key, key)).limit(1))[0]?.value)
  }

  setSetting(key: string, value: string, now: number): Promise<void> {
    const { settings } = this.#t
    return this.#tx(async (db) => {
      await db.insert(settings).values({ key, value, updatedAt: now }).onConflictDoUpdate({ target: settings.key, set: { value, updatedAt: now } })
    })
  }

  /** The connection is the store's: closing only stops this repository. */
  async close(): Promise<void> {
    this.#closed = true
  }
}
