import { basename } from 'node:path'
import { createHash } from 'node:crypto'
import { detectBranchCue } from './branch-cue.js'
import { isTreeError, TreeError } from './errors.js'
import { dedupe, extractFromBranch, extractStatements, givenConclusions } from './extract.js'
import { resolveTreeOptions, type TreeOptions } from './options.js'
import { ProjectionWriter, writeProjectFiles, type ProjectionTouch } from './projection.js'
import { autoReview, renderCheckpointDocument, renderConclusion, renderMainlineContext, summarizeChat, type MainlineSnapshot } from './render.js'
import type { NewItem, TreeRepository } from './repository.js'
import { MessageRouter, routeTarget, type RouteDecision } from './router.js'
import { clip, oneLine, prepareText, textKey } from './text.js'
import {
  CHECKPOINT_STATE_VERSION,
  ITEM_KINDS,
  type Branch,
  type BranchEvent,
  type ChatEntry,
  type Checkpoint,
  type ItemKind,
  type ItemStatus,
  type MainlineItem,
  type Project,
} from './types.js'
import type { Caller, Destination, MemoryTreeInit, MergeInput, MergeResult, RecordResult, TreeChange, TreeStatus } from './tree-contract.js'
import { readSnapshot, readStatus } from './views.js'

const ACTIVE_PROJECT_SETTING = 'active-project'
const OPTIMISTIC_ATTEMPTS = 6
const MAX_REVIEW_CHARS = 8_000
const MAX_TITLE_CHARS = 200
const MAX_SUMMARY_CHARS = 12_000
const DUPLICATE_WINDOW_MS = 10 * 60_000
// Branch logs never enter the context, so they keep far more than an injected turn.
const MAX_EVENT_CHARS = 16_000

/**
 * The memory tree: routing, the mainline state, branches, merge and checkpoints over a
 * {@link TreeRepository}. One instance serves a DSH plugin or an MCP server; several
 * instances (in several processes) may share one database.
 *
 * Concurrency: every write is one repository transaction. Writes computed from a read
 * (merge, checkpoint) carry the revision they read and are retried from a fresh read when
 * another writer got there first, so nothing is lost and nothing is based on stale state.
 */
export class MemoryTree {
  readonly options: Readonly<TreeOptions>
  readonly router: MessageRouter
  readonly projection: ProjectionWriter | null
  readonly #repository: TreeRepository
  readonly #now: () => number
  readonly #onError: (error: unknown, where: string) => void
  readonly #onChange: (change: TreeChange) => void

  constructor(init: MemoryTreeInit) {
    this.options = resolveTreeOptions(init.options ?? {})
    this.router = new MessageRouter(this.options)
    this.projection = init.projectionDir ? new ProjectionWriter(init.projectionDir) : null
    this.#repository = init.repository
    this.#now = init.now ?? Date.now
    this.#onError = init.onError ?? (() => {})
    this.#onChange = init.onChange ?? (() => {})
  }

  /** The repository (for read access in adapters and tests). */
  get repository(): TreeRepository {
    return this.#repository
  }

  // routing ------------------------------------------------------------------------------------

  /** Classify a message without recording it. */
  route(text: string): RouteDecision {
    return this.router.route(typeof text === 'string' ? text : '')
  }

  /**
   * Record one conversation message where it belongs. A user message is classified: chit-chat
   * goes to the chat partition (never the mainline); project messages go to the current
   * branch's log or the mainline turn log of the caller's project, and constraints/decisions
   * stated in a mainline message become items. An assistant message follows its user message
   * (`follow`), or is skipped without one.
   */
  async recordMessage(input: { role: 'user' | 'assistant'; text: string; caller: Caller; follow?: Destination; decision?: RouteDecision }): Promise<RecordResult> {
    // The full text feeds routing, extraction and branch logs (merge reads conclusions that
    // often come at the end); turn and chat entries, which are injected or shown, are capped.
    const full = prepareText(input.text, 'message', MAX_EVENT_CHARS)
    const text = clip(full, this.options.maxTurnChars)
    const caller = input.caller
    const sessionId = caller.sessionId ?? ''
    const decision = input.role === 'user' ? (input.decision ?? this.route(full)) : undefined
    // An assistant message follows its user message; without one it is skipped.
    const target = decision
      ? routeTarget(decision, this.options.unknownRoute)
      : input.follow === 'chat'
        ? 'chat'
        : input.follow === 'mainline' || input.follow === 'branch'
          ? 'project'
          : 'skipped'
    const result: RecordResult = { decision, destination: 'skipped', project: undefined, branchId: null, extracted: [], duplicate: false }
    if (target === 'skipped') return this.#routed(result, input.role)

    if (target === 'chat') {
      const workspace = caller.workspace ?? ''
      const tail = await this.#repository.listChat(workspace, 1)
      const last = tail[tail.length - 1]
      if (last && this.#isRepeat(last.kind === 'message' ? last : undefined, sessionId, input.role, text)) {
        return this.#routed({ ...result, destination: 'chat', duplicate: true }, input.role)
      }
      await this.#repository.appendChat(
        { workspace, sessionId, role: input.role, text, now: this.#now() },
        { keep: this.options.chatKeep, summarize: summarizeChat },
      )
      return this.#routed({ ...result, destination: 'chat' }, input.role)
    }

    let project = (await this.resolveProject(caller, { create: true }))!
    result.project = project
    const cue = input.role === 'user' && this.options.autoBranch && !project.currentBranchId ? detectBranchCue(full) : undefined
    if (cue) {
      // A side question or a trial gets its own branch, as the reference's instruction asks the
      // model to do; the model is told (section and tool guide) to merge it when it concludes.
      try {
        const opened = await this.#repository.createBranch({ projectId: project.id, title: cue.title, note: `Opened automatically (${cue.kind}: "${cue.cue}").`, sessionId, checkout: true, now: this.#now() })
        project = opened.project
        result.project = project
        result.openedBranch = opened.branch
        this.#emit({ type: 'branched', projectId: project.id, revision: project.revision, branch: opened.branch })
      } catch (error) {
        // Another writer made a branch current meanwhile: follow it instead of opening a second one.
        if (!isTreeError(error, 'conflict')) throw error
        project = (await this.resolveProject(caller, { create: true }))!
      }
    }
    if (project.currentBranchId) {
      const events = await this.#repository.branchEvents(project.currentBranchId)
      const last = events[events.length - 1]
      const repeat = last && this.#isRepeat(last.kind === input.role ? { sessionId: last.sessionId, role: input.role, createdAt: last.createdAt, text: last.text } : undefined, sessionId, input.role, full)
      if (repeat) return this.#routed({ ...result, destination: 'branch', branchId: project.currentBranchId, duplicate: true }, input.role)
      try {
        await this.#repository.appendBranchEvent({ branchId: project.currentBranchId, kind: input.role, text: full, sessionId, now: this.#now() })
        await this.#project(project.id, { branchId: project.currentBranchId })
        return this.#routed({ ...result, destination: 'branch', branchId: project.currentBranchId }, input.role)
      } catch (error) {
        // Another writer closed the branch a moment ago: the message belongs to the mainline now.
        if (!isTreeError(error, 'conflict') && !isTreeError(error, 'not-found')) throw error
      }
    }
    const recent = await this.#repository.recentTurns(project.id, { limit: 1 })
    if (this.#isRepeat(recent[0], sessionId, input.role, text)) {
      return this.#routed({ ...result, destination: 'mainline', duplicate: true }, input.role)
    }
    await this.#repository.appendTurn({ projectId: project.id, sessionId, role: input.role, text, keep: this.options.maxStoredTurns, now: this.#now() })
    let extracted: MainlineItem[] = []
    if (input.role === 'user' && decision?.route === 'project' && this.options.autoExtract) {
      const statements = extractStatements(full, ['constraint', 'decision'], this.options.maxItemChars)
      if (statements.length > 0) {
        const written = await this.#repository.addItems({
          projectId: project.id,
          items: statements.map((statement) => ({ ...statement, source: caller.source ?? 'user' })),
          now: this.#now(),
        })
        extracted = written.added
        result.project = written.project
        if (written.added.length > 0) this.#emit({ type: 'items-added', projectId: project.id, revision: written.project.revision, items: written.added })
      }
    }
    await this.#project(project.id)
    return this.#routed({ ...result, destination: 'mainline', extracted }, input.role)
  }

  #isRepeat(last: { sessionId: string; role: string; createdAt: number; text: string } | undefined, sessionId: string, role: string, text: string): boolean {
    return !!last && last.sessionId === sessionId && last.role === role && last.text === text && this.#now() - last.createdAt < DUPLICATE_WINDOW_MS
  }

  #routed(result: RecordResult, role: 'user' | 'assistant'): RecordResult {
    this.#emit({ type: 'routed', destination: result.destination, projectId: result.project?.id ?? null, branchId: result.branchId, route: result.decision?.route ?? null, role })
    return result
  }

  /** Store a chit-chat message in the chat partition (never the mainline). */
  async chat(text: string, caller: Caller, role: 'user' | 'assistant' = 'user'): Promise<{ entry: ChatEntry; folded: number; digest: ChatEntry | undefined }> {
    const prepared = prepareText(text, 'message', this.options.maxTurnChars)
    const workspace = caller.workspace ?? ''
    const written = await this.#repository.appendChat(
      { workspace, sessionId: caller.sessionId ?? '', role, text: prepared, now: this.#now() },
      { keep: this.options.chatKeep, summarize: summarizeChat },
    )
    const entries = await this.#repository.listChat(workspace, 0)
    this.#emit({ type: 'routed', destination: 'chat', projectId: null, branchId: null, route: 'chat', role })
    return { ...written, digest: entries.find((entry) => entry.kind === 'digest') }
  }

  // projects -----------------------------------------------------------------------------------

  /**
   * The caller's project: the one bound to its workspace (or the nearest bound ancestor), else
   * the workspace-less active project. With `create`, a missing project is created and bound
   * (named after the workspace folder, or `default`).
   */
  async resolveProject(caller: Caller, options: { create: boolean }): Promise<Project | undefined> {
    const workspace = caller.workspace ?? ''
    if (workspace !== '') {
      const bound = await this.#repository.projectForWorkspace(workspace)
      if (bound || !options.create) return bound
      let name = basename(workspace) || 'default'
      const existing = await this.#repository.findProject(name)
      if (existing && (await this.#repository.bindings(existing.id)).length > 0) {
        // Same folder name, different place: a different project.
        name = `${name}-${createHash('sha256').update(workspace).digest('hex').slice(0, 6)}`
      }
      const { project, created } = await this.#repository.ensureProject({ name, workspace, now: this.#now() })
      this.#emit({ type: 'project-set', projectId: project.id, workspace, created })
      return project
    }
    const activeId = await this.#repository.getSetting(ACTIVE_PROJECT_SETTING)
    const active = activeId ? await this.#repository.getProject(activeId) : undefined
    if (active || !options.create) return active
    const { project, created } = await this.#repository.ensureProject({ name: 'default', workspace: '', now: this.#now() })
    await this.#repository.setSetting(ACTIVE_PROJECT_SETTING, project.id, this.#now())
    this.#emit({ type: 'project-set', projectId: project.id, workspace: '', created })
    return project
  }

  /** Switch the caller's workspace (or the workspace-less default) to the named project, creating it if new. */
  async setProject(name: string, caller: Caller): Promise<{ project: Project; created: boolean }> {
    const clean = oneLine(prepareText(name, 'name', MAX_TITLE_CHARS))
    const workspace = caller.workspace ?? ''
    const { project, created } = await this.#repository.ensureProject({ name: clean, workspace, now: this.#now() })
    if (workspace === '') await this.#repository.setSetting(ACTIVE_PROJECT_SETTING, project.id, this.#now())
    this.#emit({ type: 'project-set', projectId: project.id, workspace, created })
    await this.#project(project.id)
    return { project, created }
  }

  async #requireProject(caller: Caller): Promise<Project> {
    return (await this.resolveProject(caller, { create: true }))!
  }

  // mainline items -----------------------------------------------------------------------------

  /** Add one item to the caller's mainline (explicit control; routing adds them automatically). */
  async note(input: { kind: ItemKind; text: string; expectedRevision?: number }, caller: Caller): Promise<{ project: Project; item: MainlineItem | undefined; duplicateOf: MainlineItem | undefined }> {
    if (!ITEM_KINDS.includes(input.kind)) throw new TreeError('invalid-argument', `kind must be one of ${ITEM_KINDS.join(', ')}`)
    const text = oneLine(prepareText(input.text, 'text', this.options.maxItemChars))
    const project = await this.#requireProject(caller)
    const written = await this.#repository.addItems({
      projectId: project.id,
      items: [{ kind: input.kind, text, source: caller.source ?? 'model' }],
      ...(input.expectedRevision === undefined ? {} : { expectedRevision: input.expectedRevision }),
      now: this.#now(),
    })
    let duplicateOf: MainlineItem | undefined
    if (written.added.length > 0) {
      this.#emit({ type: 'items-added', projectId: project.id, revision: written.project.revision, items: written.added })
      await this.#project(project.id)
    } else {
      duplicateOf = (await this.#repository.listItems(project.id)).find((item) => textKey(item.text) === textKey(text))
    }
    return { project: written.project, item: written.added[0], duplicateOf }
  }

  /** Resolve (answered question), drop, or reactivate an item. */
  async setItemStatus(input: { itemId: string; status: ItemStatus; expectedRevision?: number }, caller: Caller): Promise<{ project: Project; item: MainlineItem }> {
    const item = await this.#repository.getItem(requireId(input.itemId, 'itemId'))
    const project = await this.#requireProject(caller)
    if (!item || item.projectId !== project.id) throw new TreeError('not-found', `no item ${input.itemId} in project "${project.name}"`)
    const written = await this.#repository.setItemStatus({ itemId: item.id, status: input.status, ...(input.expectedRevision === undefined ? {} : { expectedRevision: input.expectedRevision }), now: this.#now() })
    this.#emit({ type: 'item-updated', projectId: project.id, revision: written.project.revision, item: written.item })
    await this.#project(project.id)
    return written
  }

  // branches -----------------------------------------------------------------------------------

  /** Open a branch for an exploration and make it current: project messages now go to its log. */
  async openBranch(input: { title: string; note?: string; checkout?: boolean; expectedRevision?: number }, caller: Caller): Promise<{ project: Project; branch: Branch }> {
    const title = oneLine(prepareText(input.title, 'title', MAX_TITLE_CHARS))
    const note = input.note === undefined ? undefined : prepareText(input.note, 'note', MAX_EVENT_CHARS)
    const project = await this.#requireProject(caller)
    const result = await this.#repository.createBranch({
      projectId: project.id,
      title,
      ...(note === undefined ? {} : { note }),
      sessionId: caller.sessionId ?? '',
      checkout: input.checkout ?? true,
      ...(input.expectedRevision === undefined ? {} : { expectedRevision: input.expectedRevision }),
      now: this.#now(),
    })
    this.#emit({ type: 'branched', projectId: project.id, revision: result.project.revision, branch: result.branch })
    await this.#project(project.id, { branchId: result.branch.id })
    return result
  }

  /** Make an open branch current again (or the mainline, with null). */
  async checkout(branchId: string | null, caller: Caller): Promise<Project> {
    const project = await this.#requireProject(caller)
    const updated = await this.#repository.checkout({ projectId: project.id, branchId: branchId === null ? null : requireId(branchId, 'branchId'), now: this.#now() })
    await this.#project(project.id)
    return updated
  }

  /** Append a note (or a message) to a branch log explicitly. */
  async logToBranch(input: { branchId: string; text: string; kind?: 'note' | 'user' | 'assistant' }, caller: Caller): Promise<BranchEvent> {
    const branch = await this.#branchOf(input.branchId, caller)
    const event = await this.#repository.appendBranchEvent({
      branchId: branch.id,
      kind: input.kind ?? 'note',
      text: prepareText(input.text, 'text', MAX_EVENT_CHARS),
      sessionId: caller.sessionId ?? '',
      now: this.#now(),
    })
    await this.#project(branch.projectId, { branchId: branch.id })
    return event
  }

  async #branchOf(branchId: string, caller: Caller): Promise<Branch> {
    const project = await this.#requireProject(caller)
    const branch = await this.#repository.getBranch(requireId(branchId, 'branchId'))
    if (!branch || branch.projectId !== project.id) throw new TreeError('not-found', `no branch ${branchId} in project "${project.name}" (mt_list_branches lists them)`)
    return branch
  }

  /** Branches of the caller's project (default: this stage's, all statuses). */
  async listBranches(caller: Caller, filter: { status?: Branch['status'] | 'all'; includeCleared?: boolean } = {}): Promise<{ project: Project; branches: Branch[] }> {
    const project = await this.#requireProject(caller)
    return { project, branches: await this.#repository.listBranches(project.id, filter) }
  }

  /** A branch with its full log (never injected; for review). */
  async branchLog(branchId: string, caller: Caller): Promise<{ branch: Branch; events: BranchEvent[] }> {
    const branch = await this.#branchOf(branchId, caller)
    return { branch, events: await this.#repository.branchEvents(branch.id) }
  }

  /**
   * Merge a branch into the mainline: its conclusions (given, or extracted from its log)
   * are appended as items, the branch is archived and stops being current. Its raw log is
   * kept for review but never enters the context. With `abandon`, the branch is closed with
   * nothing added.
   * @throws TreeError `conflict` when the branch is already closed.
   */
  async merge(input: MergeInput, caller: Caller): Promise<MergeResult> {
    const project = await this.#requireProject(caller)
    const branchId = input.branchId ?? project.currentBranchId
    if (!branchId) throw new TreeError('invalid-argument', 'no branch is current; pass branchId (mt_list_branches lists the open ones)')
    const { summary, given } = givenConclusions(input, this.options.maxItemChars, MAX_SUMMARY_CHARS)

    for (let attempt = 1; ; attempt++) {
      const branch = await this.#branchOf(branchId, caller)
      if (branch.status !== 'active') throw new TreeError('conflict', `branch ${branch.id} ("${branch.title}") was already ${branch.status}`)
      const events = await this.#repository.branchEvents(branch.id)
      const heuristic = !input.abandon && given.length === 0
      const candidates = input.abandon ? [] : heuristic ? extractFromBranch(branch.title, events, this.options.maxMergeItems, this.options.maxItemChars) : given
      const existing = (await this.#repository.listItems(project.id)).map((item) => item.text)
      const fresh = dedupe(candidates, existing)
      const skipped = candidates.filter((candidate) => !fresh.includes(candidate))
      const kept = fresh.slice(0, this.options.maxMergeItems)
      const truncated = fresh.slice(this.options.maxMergeItems)
      const items: NewItem[] = kept.map((conclusion) => ({ ...conclusion, source: `merge:${branch.id}`, branchId: branch.id }))
      const conclusion = input.abandon ? (summary ? `Abandoned: ${summary}` : 'Abandoned without conclusions.') : renderConclusion(kept)
      try {
        const written = await this.#repository.closeBranch({
          branchId: branch.id,
          expectedBranchRevision: branch.revision,
          status: input.abandon ? 'abandoned' : 'merged',
          conclusion,
          items,
          sessionId: caller.sessionId ?? '',
          now: this.#now(),
        })
        const extraSkipped = written.skipped.map((item) => ({ kind: item.kind, text: item.text }))
        this.#emit({ type: 'merged', projectId: project.id, revision: written.project.revision, branch: written.branch, items: written.added })
        await this.#project(project.id, { branchId: branch.id })
        return { project: written.project, branch: written.branch, added: written.added, skipped: [...skipped, ...extraSkipped], truncated, heuristic }
      } catch (error) {
        // The log grew (or another writer merged it) between our read and our write: read again.
        if (!isTreeError(error, 'conflict') || attempt >= OPTIMISTIC_ATTEMPTS) throw error
        const latest = await this.#repository.getBranch(branch.id)
        if (!latest || latest.status !== 'active') throw error
      }
    }
  }

  // checkpoints --------------------------------------------------------------------------------

  /**
   * Freeze the mainline into a review document that becomes the new baseline; clear the
   * stage's branches and recent mainline turns; open the next stage. Open branches are closed
   * unmerged first (`checkpointBranches: 'close'`, the default) or carried over (`'carry'`,
   * listed in the document). Retried from a fresh read when the mainline moves
   * while the document is being prepared, so the frozen document always matches its revision.
   */
  async checkpoint(input: { title: string; review?: string }, caller: Caller): Promise<{ project: Project; checkpoint: Checkpoint; clearedBranches: number; clearedTurns: number; path: string | undefined }> {
    const title = oneLine(prepareText(input.title, 'title', MAX_TITLE_CHARS))
    const givenReview = input.review === undefined ? undefined : prepareText(input.review, 'review', MAX_REVIEW_CHARS)
    for (let attempt = 1; ; attempt++) {
      let project = await this.#requireProject(caller)
      if (this.options.checkpointBranches === 'close') project = await this.#closeOpenBranches(project, title, caller)
      const items = await this.#repository.listItems(project.id, { status: 'all' })
      const branches = await this.#repository.listBranches(project.id, { status: 'all' })
      const watermark = await this.#repository.turnWatermark(project.id)
      const previous = project.baselineCheckpointId ? await this.#repository.getCheckpoint(project.baselineCheckpointId) : undefined
      const now = this.#now()
      const review = givenReview ?? autoReview(items, branches, project.stage)
      const document = renderCheckpointDocument({ project, title, review, items, branches, turnCount: watermark.count, previous, now })
      try {
        const written = await this.#repository.createCheckpoint({
          projectId: project.id,
          expectedRevision: project.revision,
          title,
          review,
          document,
          state: {
            version: CHECKPOINT_STATE_VERSION,
            items: items.filter((item) => item.status === 'active'),
            branches: branches.map(({ id, title: branchTitle, status, conclusion }) => ({ id, title: branchTitle, status, conclusion })),
            turnCount: watermark.count,
          },
          turnsUpTo: watermark.lastId,
          now,
        })
        this.#emit({ type: 'checkpointed', projectId: project.id, revision: written.project.revision, checkpoint: written.checkpoint })
        const path = await this.#project(project.id, { checkpoint: written.checkpoint })
        return { ...written, path }
      } catch (error) {
        if (!isTreeError(error, 'conflict') || attempt >= OPTIMISTIC_ATTEMPTS) throw error
      }
    }
  }

  /** The reference's checkpoint clears every branch of the stage: close open ones unmerged first (logs kept). */
  async #closeOpenBranches(project: Project, title: string, caller: Caller): Promise<Project> {
    const open = await this.#repository.listBranches(project.id, { status: 'active' })
    for (const branch of open) {
      try {
        const written = await this.#repository.closeBranch({
          branchId: branch.id,
          expectedBranchRevision: branch.revision,
          status: 'abandoned',
          conclusion: `Closed unmerged by checkpoint "${title}"; its log is kept.`,
          items: [],
          sessionId: caller.sessionId ?? '',
          now: this.#now(),
        })
        this.#emit({ type: 'merged', projectId: project.id, revision: written.project.revision, branch: written.branch, items: [] })
      } catch (error) {
        // Someone merged or logged to it meanwhile: the checkpoint's retry reads it again.
        if (!isTreeError(error, 'conflict')) throw error
      }
    }
    return open.length > 0 ? (await this.#requireProject(caller)) : project
  }

  // context and status -------------------------------------------------------------------------

  /** One consistent view of a project's mainline (items, recent turns, open branches, baseline). */
  async snapshot(projectId: string, options: { recentTurns?: number; excludeSessionId?: string } = {}): Promise<MainlineSnapshot> {
    return readSnapshot(this.#repository, projectId, options.recentTurns ?? this.options.recentTurns, options.excludeSessionId)
  }

  /**
   * The mainline context for the caller's project ('' when it has none yet). Never creates a
   * project and never includes branch logs or chit-chat.
   */
  async getContext(caller: Caller, options: { recentTurns?: number; excludeSessionId?: string; maxTokens?: number } = {}): Promise<{ project: Project | undefined; text: string }> {
    const project = await this.resolveProject(caller, { create: false })
    if (!project) return { project: undefined, text: '' }
    const snapshot = await this.snapshot(project.id, options)
    return { project: snapshot.project, text: renderMainlineContext(snapshot, options.maxTokens ?? this.options.maxContextTokens) }
  }

  /** Project, counts, branches, baseline and routing settings of the caller. */
  async status(caller: Caller): Promise<TreeStatus> {
    const project = await this.resolveProject(caller, { create: false })
    return readStatus(this.#repository, this.options, { workspace: caller.workspace ?? '', project, projectionDir: this.projection?.root ?? null })
  }

  // projection ---------------------------------------------------------------------------------

  /** Rewrite every projection file of one project (or of all projects) from the database. */
  async rebuildProjection(projectId?: string): Promise<string[]> {
    if (!this.projection) return []
    const projects = projectId ? [await this.#repository.getProject(projectId)].filter((p): p is Project => !!p) : await this.#repository.listProjects()
    const written: string[] = []
    for (const project of projects) {
      const path = await this.#writeProjection(project.id, { all: true })
      if (path) written.push(path)
    }
    return written
  }

  /** Best-effort projection after a committed change; failures go to `onError`. */
  async #project(projectId: string, touched: { branchId?: string; checkpoint?: Checkpoint } = {}): Promise<string | undefined> {
    if (!this.projection) return undefined
    try {
      return await this.#writeProjection(projectId, touched)
    } catch (error) {
      this.#onError(error, `markdown projection of ${projectId}`)
      return undefined
    }
  }

  async #writeProjection(projectId: string, touched: ProjectionTouch): Promise<string | undefined> {
    const snapshot = await this.snapshot(projectId, { recentTurns: 50 })
    return writeProjectFiles(this.projection!, this.#repository, snapshot, touched)
  }

  #emit(change: TreeChange): void {
    try {
      this.#onChange(change)
    } catch (error) {
      this.#onError(error, `a ${change.type} listener`)
    }
  }

  /** Close the repository. Idempotent. */
  async close(): Promise<void> {
    await this.#repository.close()
  }
}

function requireId(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.trim().length === 0 || value.length > 100) throw new TreeError('invalid-argument', `${field} must be a non-empty id string`)
  return value.trim()
}
