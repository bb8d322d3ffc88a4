/**
 * The {@link TreeRepository} on the store's session: the only module of this package that
 * contains SQL. The `tree_*` tables are declared through the store's extension seam
 * (`store.tables(...)` with the package's migrations), so every query runs on the store's own
 * connection with its busy retry: no second connection, no driver of our own.
 *
 * Every method is one unit of the seam (a write is one IMMEDIATE transaction, a read one
 * snapshot) that never spans an await, so other processes serialise on the SQLite write lock.
 */
import type { PackageTables, TextStatements } from '@dsh-memory/store'
import { textStatements } from '@dsh-memory/store'
import { treeMigrations } from './migrations.js'
import { TreeError } from './errors.js'
import { newId } from './ids.js'
import type { ChatFold, ItemsWritten, NewItem, TreeRepository } from './repository.js'
import { textKey } from './text.js'
import {
  CHECKPOINT_STATE_VERSION,
  type Branch,
  type BranchEvent,
  type BranchEventKind,
  type ChatEntry,
  type Checkpoint,
  type CheckpointState,
  type ItemKind,
  type ItemStatus,
  type MainlineItem,
  type MainlineTurn,
  type Project,
} from './types.js'

/** The slice of the store {@link openStoreTreeRepository} needs. */
export interface TreeTablesHost {
  tables(declaration: { migrations: ReturnType<typeof treeMigrations> }): Promise<PackageTables>
}

/**
 * Declare the tree tables on `store` (applying the `tree` migrations through its runner) and
 * open the repository on the store's session.
 * @throws MemoryStoreError from the store (`schema-too-new`, `schema-too-old` on a read-only store, `closed`, ...)
 */
export async function openStoreTreeRepository(store: TreeTablesHost): Promise<TreeRepository> {
  const tables = await store.tables({ migrations: treeMigrations() })
  // The handle is the store's connection; this repository only uses it inside a unit of `tables`.
  const db = textStatements(await tables.read((handle) => handle))
  return new StoreTreeRepository(tables, db)
}

// ---------------------------------------------------------------------------------------------
// rows

interface ProjectRow {
  id: string
  name: string
  stage: number
  baseline_checkpoint_id: string | null
  current_branch_id: string | null
  revision: number
  created_at: number
  updated_at: number
}
interface ItemRow {
  id: string
  project_id: string
  seq: number
  kind: ItemKind
  text: string
  source: string
  status: ItemStatus
  stage: number
  branch_id: string | null
  created_at: number
  updated_at: number
}
interface TurnRow {
  id: number
  project_id: string
  session_id: string
  role: 'user' | 'assistant'
  text: string
  stage: number
  created_at: number
}
interface BranchRow {
  id: string
  project_id: string
  title: string
  status: Branch['status']
  stage: number
  conclusion: string | null
  checkpoint_id: string | null
  revision: number
  created_at: number
  updated_at: number
  closed_at: number | null
  event_count: number
}
interface EventRow {
  id: number
  branch_id: string
  kind: BranchEventKind
  text: string
  session_id: string
  created_at: number
}
interface CheckpointRow {
  id: string
  project_id: string
  stage: number
  title: string
  review: string
  document: string
  state: string
  revision: number
  created_at: number
}
interface ChatRow {
  id: number
  workspace: string
  session_id: string
  kind: 'message' | 'digest'
  role: ChatEntry['role']
  text: string
  count: number
  first_at: number
  created_at: number
}

const toProject = (row: ProjectRow): Project => ({
  id: row.id,
  name: row.name,
  stage: row.stage,
  baselineCheckpointId: row.baseline_checkpoint_id,
  currentBranchId: row.current_branch_id,
  revision: row.revision,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
})
const toItem = (row: ItemRow): MainlineItem => ({
  id: row.id,
  projectId: row.project_id,
  seq: row.seq,
  kind: row.kind,
  text: row.text,
  source: row.source,
  status: row.status,
  stage: row.stage,
  branchId: row.branch_id,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
})
const toTurn = (row: TurnRow): MainlineTurn => ({
  id: row.id,
  projectId: row.project_id,
  sessionId: row.session_id,
  role: row.role,
  text: row.text,
  stage: row.stage,
  createdAt: row.created_at,
})
const toBranch = (row: BranchRow): Branch => ({
  id: row.id,
  projectId: row.project_id,
  title: row.title,
  status: row.status,
  stage: row.stage,
  conclusion: row.conclusion,
  checkpointId: row.checkpoint_id,
  revision: row.revision,
  eventCount: row.event_count,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  closedAt: row.closed_at,
})
const toEvent = (row: EventRow): BranchEvent => ({
  id: row.id,
  branchId: row.branch_id,
  kind: row.kind,
  text: row.text,
  sessionId: row.session_id,
  createdAt: row.created_at,
})
const toChat = (row: ChatRow): ChatEntry => ({
  id: row.id,
  workspace: row.workspace,
  sessionId: row.session_id,
  kind: row.kind,
  role: row.role,
  text: row.text,
  count: row.count,
  firstAt: row.first_at,
  createdAt: row.created_at,
})

function toCheckpoint(row: CheckpointRow): Checkpoint {
  let state: CheckpointState
  try {
    state = JSON.parse(row.state) as CheckpointState
  } catch (error) {
    throw new TreeError('unsupported', `checkpoint ${row.id} has unreadable state JSON`, { cause: error })
  }
  if (state?.version !== CHECKPOINT_STATE_VERSION) {
    throw new TreeError('unsupported', `checkpoint ${row.id} has state version ${String(state?.version)}; this version reads ${CHECKPOINT_STATE_VERSION}`)
  }
  return {
    id: row.id,
    projectId: row.project_id,
    stage: row.stage,
    title: row.title,
    review: row.review,
    document: row.document,
    state,
    revision: row.revision,
    createdAt: row.created_at,
  }
}

const BRANCH_SELECT = `SELECT b.*, (SELECT COUNT(*) FROM tree_branch_events e WHERE e.branch_id = b.id) AS event_count FROM tree_branches b`

// ---------------------------------------------------------------------------------------------

class StoreTreeRepository implements TreeRepository {
  #closed = false

  constructor(
    private readonly tables: PackageTables,
    private readonly db: TextStatements,
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

  #project(id: string): ProjectRow | undefined {
    return this.db.prepare(`SELECT * FROM tree_projects WHERE id = ?`).get(id) as ProjectRow | undefined
  }

  #requireProject(id: string): ProjectRow {
    const row = this.#project(id)
    if (!row) throw new TreeError('not-found', `no project ${id}`)
    return row
  }

  /** Bump the project revision, checking the caller's expectation first. */
  #bump(projectId: string, expectedRevision: number | undefined, now: number): ProjectRow {
    const current = this.#requireProject(projectId)
    if (expectedRevision !== undefined && current.revision !== expectedRevision) {
      throw new TreeError('conflict', `the mainline of project "${current.name}" is at revision ${current.revision}, not ${expectedRevision}; read it again and retry`)
    }
    this.db.prepare(`UPDATE tree_projects SET revision = revision + 1, updated_at = max(updated_at, ?) WHERE id = ?`).run(now, projectId)
    return this.#project(projectId)!
  }

  #insertItems(project: ProjectRow, items: readonly NewItem[], now: number): { added: MainlineItem[]; skipped: NewItem[] } {
    const added: MainlineItem[] = []
    const skipped: NewItem[] = []
    const exists = this.db.prepare(`SELECT 1 FROM tree_items WHERE project_id = ? AND text_key = ? AND status = 'active' LIMIT 1`)
    const nextSeq = this.db.prepare(`SELECT COALESCE(MAX(seq), 0) + 1 AS seq FROM tree_items WHERE project_id = ?`)
    const insert = this.db.prepare(
      `INSERT INTO tree_items (id, project_id, seq, kind, text, text_key, source, status, stage, branch_id, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, 'active', ?, ?, ?, ?)`,
    )
    for (const item of items) {
      const key = textKey(item.text)
      if (exists.get(project.id, key)) {
        skipped.push(item)
        continue
      }
      const seq = (nextSeq.get(project.id) as { seq: number }).seq
      const id = newId('it')
      insert.run(id, project.id, seq, item.kind, item.text, key, item.source, project.stage, item.branchId ?? null, now, now)
      added.push(toItem(this.db.prepare(`SELECT * FROM tree_items WHERE id = ?`).get(id) as ItemRow))
    }
    return { added, skipped }
  }

  // projects -----------------------------------------------------------------------------------

  getProject(id: string): Promise<Project | undefined> {
    return this.#read(() => {
      const row = this.#project(id)
      return row ? toProject(row) : undefined
    })
  }

  findProject(name: string): Promise<Project | undefined> {
    return this.#read(() => {
      const row = this.db.prepare(`SELECT * FROM tree_projects WHERE name_key = ?`).get(textKey(name)) as ProjectRow | undefined
      return row ? toProject(row) : undefined
    })
  }

  listProjects(): Promise<Project[]> {
    return this.#read(() => (this.db.prepare(`SELECT * FROM tree_projects ORDER BY updated_at DESC, id`).all() as ProjectRow[]).map(toProject))
  }

  ensureProject(input: { name: string; workspace?: string | null; now: number }): Promise<{ project: Project; created: boolean }> {
    return this.#tx(() => {
      const key = textKey(input.name)
      let row = this.db.prepare(`SELECT * FROM tree_projects WHERE name_key = ?`).get(key) as ProjectRow | undefined
      let created = false
      if (!row) {
        const id = newId('pj')
        this.db
          .prepare(`INSERT INTO tree_projects (id, name, name_key, stage, revision, created_at, updated_at) VALUES (?, ?, ?, 1, 1, ?, ?)`)
          .run(id, input.name, key, input.now, input.now)
        row = this.#project(id)!
        created = true
      }
      if (input.workspace !== undefined && input.workspace !== null) {
        this.db
          .prepare(
            `INSERT INTO tree_bindings (workspace, project_id, updated_at) VALUES (?, ?, ?)
             ON CONFLICT(workspace) DO UPDATE SET project_id = excluded.project_id, updated_at = excluded.updated_at`,
          )
          .run(input.workspace, row.id, input.now)
      }
      return { project: toProject(row), created }
    })
  }

  projectForWorkspace(workspace: string): Promise<Project | undefined> {
    return this.#read(() => {
      const exact = this.db.prepare(`SELECT project_id FROM tree_bindings WHERE workspace = ?`).get(workspace) as { project_id: string } | undefined
      let projectId = exact?.project_id
      if (!projectId && workspace !== '') {
        // Nearest bound ancestor: the longest binding that is a directory prefix of the workspace.
        const rows = this.db.prepare(`SELECT workspace, project_id FROM tree_bindings WHERE workspace != ''`).all() as { workspace: string; project_id: string }[]
        let best = ''
        for (const row of rows) {
          const base = row.workspace.replace(/[\\/]+$/, '')
          if (base.length > best.length && (workspace.startsWith(`${base}/`) || workspace.startsWith(`${base}\\`))) {
            best = base
            projectId = row.project_id
          }
        }
      }
      if (!projectId) return undefined
      const row = this.#project(projectId)
      return row ? toProject(row) : undefined
    })
  }

  bindings(projectId: string): Promise<string[]> {
    return this.#read(() =>
      (this.db.prepare(`SELECT workspace FROM tree_bindings WHERE project_id = ? ORDER BY workspace`).all(projectId) as { workspace: string }[]).map((r) => r.workspace),
    )
  }

  // items --------------------------------------------------------------------------------------

  listItems(projectId: string, filter: { status?: ItemStatus | 'all'; kinds?: readonly ItemKind[] } = {}): Promise<MainlineItem[]> {
    return this.#read(() => {
      const status = filter.status ?? 'active'
      const rows = (
        status === 'all'
          ? this.db.prepare(`SELECT * FROM tree_items WHERE project_id = ? ORDER BY seq`).all(projectId)
          : this.db.prepare(`SELECT * FROM tree_items WHERE project_id = ? AND status = ? ORDER BY seq`).all(projectId, status)
      ) as ItemRow[]
      const items = rows.map(toItem)
      return filter.kinds ? items.filter((item) => filter.kinds!.includes(item.kind)) : items
    })
  }

  getItem(id: string): Promise<MainlineItem | undefined> {
    return this.#read(() => {
      const row = this.db.prepare(`SELECT * FROM tree_items WHERE id = ?`).get(id) as ItemRow | undefined
      return row ? toItem(row) : undefined
    })
  }

  addItems(input: { projectId: string; items: readonly NewItem[]; expectedRevision?: number; now: number }): Promise<ItemsWritten> {
    return this.#tx(() => {
      const current = this.#requireProject(input.projectId)
      if (input.expectedRevision !== undefined && current.revision !== input.expectedRevision) {
        throw new TreeError('conflict', `the mainline of project "${current.name}" is at revision ${current.revision}, not ${input.expectedRevision}; read it again and retry`)
      }
      const { added, skipped } = this.#insertItems(current, input.items, input.now)
      const project = added.length > 0 ? this.#bump(input.projectId, undefined, input.now) : current
      return { project: toProject(project), added, skipped }
    })
  }

  setItemStatus(input: { itemId: string; status: ItemStatus; expectedRevision?: number; now: number }): Promise<{ project: Project; item: MainlineItem }> {
    return this.#tx(() => {
      const row = this.db.prepare(`SELECT * FROM tree_items WHERE id = ?`).get(input.itemId) as ItemRow | undefined
      if (!row) throw new TreeError('not-found', `no mainline item ${input.itemId}`)
      const project = this.#bump(row.project_id, input.expectedRevision, input.now)
      this.db.prepare(`UPDATE tree_items SET status = ?, updated_at = ? WHERE id = ?`).run(input.status, input.now, input.itemId)
      return { project: toProject(project), item: toItem(this.db.prepare(`SELECT * FROM tree_items WHERE id = ?`).get(input.itemId) as ItemRow) }
    })
  }

  // turns --------------------------------------------------------------------------------------

  appendTurn(input: { projectId: string; sessionId: string; role: 'user' | 'assistant'; text: string; keep: number; now: number }): Promise<MainlineTurn> {
    return this.#tx(() => {
      const project = this.#requireProject(input.projectId)
      const result = this.db
        .prepare(`INSERT INTO tree_turns (project_id, session_id, role, text, stage, created_at) VALUES (?, ?, ?, ?, ?, ?)`)
        .run(input.projectId, input.sessionId, input.role, input.text, project.stage, input.now)
      const id = Number(result.lastInsertRowid)
      // Periodic trim: the turn log only feeds injection, the full text lives in the store's L0.
      this.db
        .prepare(
          `DELETE FROM tree_turns WHERE project_id = ? AND checkpoint_id IS NULL AND id <= (
             SELECT id FROM tree_turns WHERE project_id = ? AND checkpoint_id IS NULL ORDER BY id DESC LIMIT 1 OFFSET ?)`,
        )
        .run(input.projectId, input.projectId, input.keep)
      return toTurn(this.db.prepare(`SELECT * FROM tree_turns WHERE id = ?`).get(id) as TurnRow)
    })
  }

  recentTurns(projectId: string, options: { limit: number; excludeSessionId?: string }): Promise<MainlineTurn[]> {
    return this.#read(() => {
      if (options.limit <= 0) return []
      const rows = (
        options.excludeSessionId === undefined
          ? this.db.prepare(`SELECT * FROM tree_turns WHERE project_id = ? AND checkpoint_id IS NULL ORDER BY id DESC LIMIT ?`).all(projectId, options.limit)
          : this.db
              .prepare(`SELECT * FROM tree_turns WHERE project_id = ? AND checkpoint_id IS NULL AND session_id != ? ORDER BY id DESC LIMIT ?`)
              .all(projectId, options.excludeSessionId, options.limit)
      ) as TurnRow[]
      return rows.map(toTurn).reverse()
    })
  }

  turnWatermark(projectId: string): Promise<{ lastId: number; count: number }> {
    return this.#read(() => {
      const row = this.db
        .prepare(`SELECT COALESCE(MAX(id), 0) AS lastId, COUNT(*) AS count FROM tree_turns WHERE project_id = ? AND checkpoint_id IS NULL`)
        .get(projectId) as { lastId: number; count: number }
      return { lastId: row.lastId, count: row.count }
    })
  }

  // branches -----------------------------------------------------------------------------------

  #branch(id: string): BranchRow | undefined {
    return this.db.prepare(`${BRANCH_SELECT} WHERE b.id = ?`).get(id) as BranchRow | undefined
  }

  createBranch(input: { projectId: string; title: string; note?: string; sessionId: string; checkout: boolean; expectedRevision?: number; now: number }): Promise<{ project: Project; branch: Branch }> {
    return this.#tx(() => {
      const before = this.#requireProject(input.projectId)
      const id = newId('br')
      this.db
        .prepare(`INSERT INTO tree_branches (id, project_id, title, status, stage, revision, created_at, updated_at) VALUES (?, ?, ?, 'active', ?, 1, ?, ?)`)
        .run(id, input.projectId, input.title, before.stage, input.now, input.now)
      this.db
        .prepare(`INSERT INTO tree_branch_events (branch_id, kind, text, session_id, created_at) VALUES (?, 'opened', ?, ?, ?)`)
        .run(id, input.note ?? input.title, input.sessionId, input.now)
      this.#bump(input.projectId, input.expectedRevision, input.now)
      if (input.checkout) this.db.prepare(`UPDATE tree_projects SET current_branch_id = ? WHERE id = ?`).run(id, input.projectId)
      return { project: toProject(this.#project(input.projectId)!), branch: toBranch(this.#branch(id)!) }
    })
  }

  getBranch(id: string): Promise<Branch | undefined> {
    return this.#read(() => {
      const row = this.#branch(id)
      return row ? toBranch(row) : undefined
    })
  }

  listBranches(projectId: string, filter: { status?: Branch['status'] | 'all'; includeCleared?: boolean } = {}): Promise<Branch[]> {
    return this.#read(() => {
      const clauses = ['b.project_id = ?']
      const params: unknown[] = [projectId]
      if (filter.status && filter.status !== 'all') {
        clauses.push('b.status = ?')
        params.push(filter.status)
      }
      if (!filter.includeCleared) clauses.push('b.checkpoint_id IS NULL')
      return (this.db.prepare(`${BRANCH_SELECT} WHERE ${clauses.join(' AND ')} ORDER BY b.created_at DESC, b.id DESC`).all(...params) as BranchRow[]).map(toBranch)
    })
  }

  branchEvents(branchId: string): Promise<BranchEvent[]> {
    return this.#read(() => (this.db.prepare(`SELECT * FROM tree_branch_events WHERE branch_id = ? ORDER BY id`).all(branchId) as EventRow[]).map(toEvent))
  }

  appendBranchEvent(input: { branchId: string; kind: BranchEventKind; text: string; sessionId: string; now: number }): Promise<BranchEvent> {
    return this.#tx(() => {
      const branch = this.#branch(input.branchId)
      if (!branch) throw new TreeError('not-found', `no branch ${input.branchId}`)
      if (branch.status !== 'active') throw new TreeError('conflict', `branch ${input.branchId} ("${branch.title}") is ${branch.status}; its log is closed`)
      const result = this.db
        .prepare(`INSERT INTO tree_branch_events (branch_id, kind, text, session_id, created_at) VALUES (?, ?, ?, ?, ?)`)
        .run(input.branchId, input.kind, input.text, input.sessionId, input.now)
      this.db.prepare(`UPDATE tree_branches SET revision = revision + 1, updated_at = max(updated_at, ?) WHERE id = ?`).run(input.now, input.branchId)
      return toEvent(this.db.prepare(`SELECT * FROM tree_branch_events WHERE id = ?`).get(Number(result.lastInsertRowid)) as EventRow)
    })
  }

  checkout(input: { projectId: string; branchId: string | null; expectedRevision?: number; now: number }): Promise<Project> {
    return this.#tx(() => {
      const project = this.#requireProject(input.projectId)
      if (input.branchId !== null) {
        const branch = this.#branch(input.branchId)
        if (!branch || branch.project_id !== input.projectId) throw new TreeError('not-found', `no branch ${input.branchId} in project "${project.name}"`)
        if (branch.status !== 'active') throw new TreeError('conflict', `branch ${input.branchId} ("${branch.title}") is ${branch.status}`)
      }
      if (project.current_branch_id === input.branchId && input.expectedRevision === undefined) return toProject(project)
      this.#bump(input.projectId, input.expectedRevision, input.now)
      this.db.prepare(`UPDATE tree_projects SET current_branch_id = ? WHERE id = ?`).run(input.branchId, input.projectId)
      return toProject(this.#project(input.projectId)!)
    })
  }

  closeBranch(input: {
    branchId: string
    expectedBranchRevision: number
    status: 'merged' | 'abandoned'
    conclusion: string | null
    items: readonly NewItem[]
    sessionId: string
    now: number
  }): Promise<ItemsWritten & { branch: Branch }> {
    return this.#tx(() => {
      const branch = this.#branch(input.branchId)
      if (!branch) throw new TreeError('not-found', `no branch ${input.branchId}`)
      if (branch.status !== 'active') {
        throw new TreeError('conflict', `branch ${input.branchId} ("${branch.title}") was already ${branch.status}`)
      }
      if (branch.revision !== input.expectedBranchRevision) {
        throw new TreeError('conflict', `branch ${input.branchId} changed (revision ${branch.revision}, expected ${input.expectedBranchRevision}) while its merge was prepared`)
      }
      const project = this.#requireProject(branch.project_id)
      const { added, skipped } = this.#insertItems(project, input.items, input.now)
      this.db
        .prepare(`INSERT INTO tree_branch_events (branch_id, kind, text, session_id, created_at) VALUES (?, ?, ?, ?, ?)`)
        .run(input.branchId, input.status, input.conclusion ?? input.status, input.sessionId, input.now)
      this.db
        .prepare(`UPDATE tree_branches SET status = ?, conclusion = ?, revision = revision + 1, updated_at = ?, closed_at = ? WHERE id = ?`)
        .run(input.status, input.conclusion, input.now, input.now, input.branchId)
      this.#bump(branch.project_id, undefined, input.now)
      if (project.current_branch_id === input.branchId) this.db.prepare(`UPDATE tree_projects SET current_branch_id = NULL WHERE id = ?`).run(branch.project_id)
      return { project: toProject(this.#project(branch.project_id)!), branch: toBranch(this.#branch(input.branchId)!), added, skipped }
    })
  }

  // checkpoints --------------------------------------------------------------------------------

  createCheckpoint(input: {
    projectId: string
    expectedRevision: number
    title: string
    review: string
    document: string
    state: CheckpointState
    turnsUpTo: number
    now: number
  }): Promise<{ project: Project; checkpoint: Checkpoint; clearedBranches: number; clearedTurns: number }> {
    return this.#tx(() => {
      const before = this.#requireProject(input.projectId)
      if (before.revision !== input.expectedRevision) {
        throw new TreeError('conflict', `the mainline of project "${before.name}" moved to revision ${before.revision} while the checkpoint was prepared (expected ${input.expectedRevision})`)
      }
      const id = newId('cp')
      this.db
        .prepare(
          `INSERT INTO tree_checkpoints (id, project_id, stage, title, review, document, state, revision, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(id, input.projectId, before.stage, input.title, input.review, input.document, JSON.stringify(input.state), before.revision, input.now)
      const clearedBranches = this.db
        .prepare(`UPDATE tree_branches SET checkpoint_id = ? WHERE project_id = ? AND checkpoint_id IS NULL AND status != 'active'`)
        .run(id, input.projectId).changes
      const clearedTurns = this.db
        .prepare(`UPDATE tree_turns SET checkpoint_id = ? WHERE project_id = ? AND checkpoint_id IS NULL AND id <= ?`)
        .run(id, input.projectId, input.turnsUpTo).changes
      this.db
        .prepare(`UPDATE tree_projects SET stage = stage + 1, baseline_checkpoint_id = ?, revision = revision + 1, updated_at = max(updated_at, ?) WHERE id = ?`)
        .run(id, input.now, input.projectId)
      const checkpoint = toCheckpoint(this.db.prepare(`SELECT * FROM tree_checkpoints WHERE id = ?`).get(id) as CheckpointRow)
      return { project: toProject(this.#project(input.projectId)!), checkpoint, clearedBranches, clearedTurns }
    })
  }

  getCheckpoint(id: string): Promise<Checkpoint | undefined> {
    return this.#read(() => {
      const row = this.db.prepare(`SELECT * FROM tree_checkpoints WHERE id = ?`).get(id) as CheckpointRow | undefined
      return row ? toCheckpoint(row) : undefined
    })
  }

  listCheckpoints(projectId: string): Promise<Checkpoint[]> {
    return this.#read(() =>
      (this.db.prepare(`SELECT * FROM tree_checkpoints WHERE project_id = ? ORDER BY created_at DESC, rowid DESC`).all(projectId) as CheckpointRow[]).map(toCheckpoint),
    )
  }

  // chat ---------------------------------------------------------------------------------------

  appendChat(
    input: { workspace: string; sessionId: string; role: 'user' | 'assistant'; text: string; now: number },
    fold: ChatFold,
  ): Promise<{ entry: ChatEntry; folded: number }> {
    return this.#tx(() => {
      const result = this.db
        .prepare(`INSERT INTO tree_chat (workspace, session_id, kind, role, text, count, first_at, created_at) VALUES (?, ?, 'message', ?, ?, 1, ?, ?)`)
        .run(input.workspace, input.sessionId, input.role, input.text, input.now, input.now)
      const entry = toChat(this.db.prepare(`SELECT * FROM tree_chat WHERE id = ?`).get(Number(result.lastInsertRowid)) as ChatRow)
      const messages = this.db.prepare(`SELECT * FROM tree_chat WHERE workspace = ? AND kind = 'message' ORDER BY id`).all(input.workspace) as ChatRow[]
      const excess = messages.length - fold.keep
      if (excess <= 0) return { entry, folded: 0 }
      const folded = messages.slice(0, excess).map(toChat)
      const previousRow = this.db.prepare(`SELECT * FROM tree_chat WHERE workspace = ? AND kind = 'digest' ORDER BY id DESC LIMIT 1`).get(input.workspace) as ChatRow | undefined
      const previous = previousRow ? toChat(previousRow) : undefined
      const text = fold.summarize(folded, previous)
      const count = folded.length + (previous?.count ?? 0)
      const firstAt = Math.min(previous?.firstAt ?? Number.MAX_SAFE_INTEGER, ...folded.map((f) => f.firstAt))
      this.db.prepare(`DELETE FROM tree_chat WHERE workspace = ? AND (kind = 'digest' OR id <= ?)`).run(input.workspace, folded[folded.length - 1]!.id)
      this.db
        .prepare(`INSERT INTO tree_chat (workspace, session_id, kind, role, text, count, first_at, created_at) VALUES (?, '', 'digest', 'digest', ?, ?, ?, ?)`)
        .run(input.workspace, text, count, firstAt, input.now)
      return { entry, folded: folded.length }
    })
  }

  listChat(workspace: string, limit: number): Promise<ChatEntry[]> {
    return this.#read(() => {
      const digest = this.db.prepare(`SELECT * FROM tree_chat WHERE workspace = ? AND kind = 'digest' ORDER BY id DESC LIMIT 1`).get(workspace) as ChatRow | undefined
      const messages = (this.db.prepare(`SELECT * FROM tree_chat WHERE workspace = ? AND kind = 'message' ORDER BY id DESC LIMIT ?`).all(workspace, Math.max(0, limit)) as ChatRow[]).reverse()
      return [...(digest ? [digest] : []), ...messages].map(toChat)
    })
  }

  // settings -----------------------------------------------------------------------------------

  getSetting(key: string): Promise<string | undefined> {
    return this.#read(() => (this.db.prepare(`SELECT value FROM tree_settings WHERE key = ?`).get(key) as { value: string } | undefined)?.value)
  }

  setSetting(key: string, value: string, now: number): Promise<void> {
    return this.#tx(() => {
      this.db
        .prepare(`INSERT INTO tree_settings (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`)
        .run(key, value, now)
    })
  }

  /** The connection is the store's: closing only stops this repository. */
  async close(): Promise<void> {
    this.#closed = true
  }
}
