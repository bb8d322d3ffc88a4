/**
 * The palace as a host-independent service: sessions in, files and guidance out. The DSH
 * adapter (`plugin.ts`) only translates host events into these calls.
 */
import { isAbsolute } from 'node:path'
import { BackgroundWork } from '@dsh-memory/store/kit'
import { describeError, PalaceError } from './errors.js'
import type { CrashHook } from './fs.js'
import { CheckCadence, evaluateGates, retainBudget, splitArchivable, type GateResult } from './gates.js'
import { forcedRecallNote, postCompactionNote, recallGuidance, steeringNote, type ArchiveStatus } from './guidance.js'
import { monthOf } from './layout.js'
import type { ArchiveOutcome } from './namespace.js'
import { automaticNamespace } from './names.js'
import type { PalaceOptions, PalaceSettings } from './options.js'
import { inRanges, type TurnRange } from './ranges.js'
import { planAutoArchive } from './segments.js'
import type { ArchiveIndex } from './archive-index.js'
import { autoSummary } from './summary.js'
import { buildTurns, countTurns, type SessionEventLike, type Turn } from './turns.js'
import { PalaceWorkspace, type SessionSettings } from './workspace.js'

/** What the palace needs to know about a host session. */
export interface SessionView {
  readonly id: string
  /** The session's workspace (`cwd`); without one the palace stays out of the session. */
  readonly cwd: string | undefined
  /** False for subagent sessions: they are not archived or steered. */
  readonly root: boolean
  /** The session's log, oldest first (read live on every call). */
  events(): readonly SessionEventLike[]
}

/** Pressure numbers from the host. */
export interface PressureSample {
  readonly historyTokens: number | undefined
  readonly contextWindow: number | undefined
}

/** Logger the core reports to (the adapter passes the host's). */
export interface PalaceLogger {
  warn(message: string): void
  debug?(message: string): void
}

/** Dependencies of {@link Palace}. */
export interface PalaceDeps {
  /** The clock (tests inject a fake one). Default `() => new Date()`. */
  readonly now?: () => Date
  /** The archive index (the palace tables); without it search scans the files. */
  readonly index?: ArchiveIndex
  readonly logger?: PalaceLogger
  /** Crash simulation seam for tests. */
  readonly crash?: CrashHook
  readonly lockTimeoutMs?: number
  /** Called after every committed archive (the adapter emits `memory-palace/archived`). */
  readonly onArchived?: (event: ArchivedEvent) => void
}

/** What `memory-palace/archived` carries. */
export interface ArchivedEvent {
  readonly sessionId: string
  readonly workspace: string
  readonly namespace: string
  readonly kind: 'model' | 'auto'
  readonly outcome: ArchiveOutcome
}

/** A session the palace is active in, with its settings resolved. */
export interface SessionContext {
  readonly workspace: PalaceWorkspace
  readonly settings: SessionSettings
}

/**
 * The palace service: one per plugin instance, holding one {@link PalaceWorkspace} per
 * workspace folder seen.
 */
export class Palace {
  readonly now: () => Date
  private readonly workspaces = new Map<string, PalaceWorkspace>()
  private readonly cadence = new CheckCadence()
  private readonly turnCache = new Map<string, { length: number; reasoning: boolean; turns: Turn[] }>()
  private readonly pendingGuidance = new Map<string, string>()
  private readonly lastSteer = new Map<string, { turns: number; watermark: number }>()
  private readonly lastGuided = new Map<string, string>()
  private readonly background = new BackgroundWork()
  private readonly indexing = new Map<string, Promise<void>>()

  constructor(
    public options: PalaceOptions,
    readonly deps: PalaceDeps = {},
  ) {
    this.now = deps.now ?? (() => new Date())
  }

  /**
   * New options (live settings): every later turn and archive reads them, through the
   * workspaces already open as well; work in flight finishes with the ones it started with.
   */
  reconfigure(options: PalaceOptions): void {
    this.options = options
    for (const workspace of this.workspaces.values()) workspace.options = options
  }

  /** The palace of a workspace folder (absolute). */
  workspace(dir: string): PalaceWorkspace {
    if (!isAbsolute(dir)) throw new PalaceError('invalid-argument', `workspace must be an absolute path, got ${JSON.stringify(dir)}`)
    let workspace = this.workspaces.get(dir)
    if (!workspace) {
      workspace = new PalaceWorkspace(dir, this.options, { now: this.now, crash: this.deps.crash, lockTimeoutMs: this.deps.lockTimeoutMs })
      this.workspaces.set(dir, workspace)
    }
    return workspace
  }

  /**
   * The palace context of a session, or undefined when the palace stays out of it (no
   * workspace, a subagent, or switched off).
   * @throws PalaceError `invalid-config` when a workspace or session config.json is broken
   */
  async context(session: SessionView): Promise<SessionContext | undefined> {
    if (!session.cwd || !session.root) return undefined
    const workspace = this.workspace(session.cwd)
    const settings = await workspace.settings(session.id)
    if (!settings.effective.enabled) return undefined
    return { workspace, settings }
  }

  /** Turns of a session (rebuilt only when its log grew). */
  turns(session: SessionView, includeReasoning: boolean): Turn[] {
    const events = session.events()
    const cached = this.turnCache.get(session.id)
    if (cached && cached.length === events.length && cached.reasoning === includeReasoning) return cached.turns
    const turns = buildTurns(events, { includeReasoning })
    this.turnCache.set(session.id, { length: events.length, reasoning: includeReasoning, turns })
    return turns
  }

  /** Archived ranges of a session's memory (empty when unnamed or nothing archived). */
  async archivedRanges(context: SessionContext): Promise<readonly TurnRange[]> {
    const namespace = context.settings.namespace
    if (namespace === undefined) return []
    const archive = await context.workspace.openArchive(namespace)
    return archive.ranges()
  }

  /**
   * Archive, before a compaction, every unarchived turn through the last one the compaction
   * replaces. Called from the `llm/stream` waterfall while the summary request waits.
   * @param shadowedMessageIds - ids of the messages the compaction request replays; the
   *   turns holding them are what compaction drops. Empty: archive everything archivable.
   * @returns the outcome, or undefined when nothing needed archiving (or the palace is off).
   */
  async archiveBeforeCompaction(session: SessionView, shadowedMessageIds: readonly string[]): Promise<ArchiveOutcome | undefined> {
    const context = await this.context(session)
    if (!context || !context.settings.effective.archiveBeforeCompaction) return undefined
    const settings = context.settings.effective
    const turns = this.turns(session, settings.includeReasoning)
    const ids = new Set(shadowedMessageIds)
    let through = Number.NEGATIVE_INFINITY
    for (const turn of turns) if (turn.messageIds.some((id) => ids.has(id))) through = Math.max(through, turn.turn)
    if (ids.size === 0 || through === Number.NEGATIVE_INFINITY) through = turns.filter((turn) => turn.complete).reduce((max, turn) => Math.max(max, turn.turn), Number.NEGATIVE_INFINITY)
    const ranges = await this.archivedRanges(context)
    const plan = planAutoArchive(turns, (turn) => inRanges(ranges, turn), through, {
      category: settings.autoArchiveCategory,
      selfName: settings.selfNameSlug,
      maxFileBytes: settings.maxFileBytes,
      summarize: autoSummary,
    })
    if (!plan) return undefined
    // Named only now, when there is something to archive: a session that never compacts
    // leaves no folder behind.
    const namespace = await this.archiveNamespace(session, context)
    if (namespace === undefined) {
      this.deps.logger?.warn(`session ${session.id} has no memory name and autoName is off: the ${plan.groups[0]?.turns.length ?? 0} turns this compaction drops are not archived`)
      return undefined
    }
    return this.commitArchive(session, context, namespace, plan)
  }

  /**
   * The memory name to archive a session under: its own, or, when it has none and `autoName`
   * is on, an automatic one given now ({@link automaticNamespace}); undefined when the
   * session is unnamed and `autoName` is off.
   */
  async archiveNamespace(session: SessionView, context: SessionContext): Promise<string | undefined> {
    if (context.settings.namespace !== undefined) return context.settings.namespace
    if (!context.settings.effective.autoName) return undefined
    const { namespace, created } = await context.workspace.ensureNamespace(session.id, (attempt) => automaticNamespace(context.workspace.workspace, session.id, attempt))
    if (created) this.deps.logger?.debug?.(`session ${session.id} has no memory name: archiving under the automatic name "${namespace}"`)
    return namespace
  }

  /**
   * What the system-prompt guidance may say about this session's archive: `archived` when
   * its memory holds turns, `on-compaction` when turns will be archived before a compaction
   * drops them (named or `autoName`, and `archiveBeforeCompaction`), otherwise `unnamed`
   * (no name and no `autoName`) or `manual` (only `palace_archive` archives).
   */
  async archiveStatus(session: SessionView): Promise<{ settings: PalaceSettings; status: ArchiveStatus }> {
    const settings = await this.settingsOrDefault(session)
    let namespace: string | undefined
    let archived = false
    try {
      const workspace = session.cwd ? this.workspace(session.cwd) : undefined
      namespace = workspace ? await workspace.namespaceOf(session.id) : undefined
      archived = workspace !== undefined && namespace !== undefined && (await workspace.hasArchives(namespace))
    } catch {
      // A broken .namespaces.json: claim nothing.
    }
    if (archived) return { settings, status: 'archived' }
    if (namespace === undefined && !settings.autoName) return { settings, status: 'unnamed' }
    return { settings, status: settings.archiveBeforeCompaction ? 'on-compaction' : 'manual' }
  }

  /** The system-prompt guidance of a session: its recall strength and what is archived. */
  async recallSection(session: SessionView): Promise<string> {
    const { settings, status } = await this.archiveStatus(session)
    return recallGuidance(settings.enabled ? settings.recallStrength : 'off', { rounds: settings.recallBudgetRounds, keywords: settings.recallBudgetKeywords }, status)
  }

  /** The guidance for a session not looked at yet (plugin defaults; claims no archive). */
  defaultRecallSection(): string {
    const o = this.options
    const status: ArchiveStatus = !o.autoName ? 'unnamed' : o.archiveBeforeCompaction ? 'on-compaction' : 'manual'
    return recallGuidance(o.enabled ? o.recallStrength : 'off', { rounds: o.recallBudgetRounds, keywords: o.recallBudgetKeywords }, status)
  }

  /** Commit a plan, index it, announce it. */
  async commitArchive(
    session: SessionView,
    context: SessionContext,
    namespace: string,
    plan: Parameters<PalaceWorkspace['archive']>[2],
  ): Promise<ArchiveOutcome> {
    const outcome = await context.workspace.archive(namespace, session.id, plan)
    // The files are committed: the caller (a compaction waiting for its summary request, the
    // model waiting for its tool result) goes on while the store index catches up.
    this.inBackground(this.syncIndex(context.workspace, namespace))
    try {
      this.deps.onArchived?.({ sessionId: session.id, workspace: context.workspace.workspace, namespace, kind: plan.kind, outcome })
    } catch (error) {
      this.deps.logger?.warn(`a memory-palace/archived listener failed: ${describeError(error)}`)
    }
    return outcome
  }

  /**
   * Update the store index of a namespace, one sync at a time per namespace. Never rejects:
   * failures are logged, and search falls back to reading files.
   */
  syncIndex(workspace: PalaceWorkspace, namespace: string): Promise<void> {
    const index = this.deps.index
    if (!index) return Promise.resolve()
    const key = `${workspace.workspace}\0${namespace}`
    const next = (this.indexing.get(key) ?? Promise.resolve()).then(async () => {
      try {
        const archive = await workspace.openArchive(namespace)
        await index.sync(workspace.workspace, { namespace, archive })
      } catch (error) {
        this.deps.logger?.warn(`could not index memory "${namespace}" (search falls back to reading files): ${describeError(error)}`)
      }
    })
    this.indexing.set(key, next)
    void next.finally(() => {
      if (this.indexing.get(key) === next) this.indexing.delete(key)
    })
    return next
  }

  private inBackground(work: Promise<void>): void {
    void this.background.track(work)
  }

  /** Resolves once background work (store indexing) has settled; the adapter awaits it on flush. */
  async idle(): Promise<void> {
    await this.background.settled()
  }

  /**
   * The steering note for this step, when the check is due and both gates hold; otherwise
   * undefined. Never throws for a measurement problem: no numbers, no note.
   */
  async steeringFor(session: SessionView, sample: () => Promise<PressureSample>): Promise<{ note: string; gates: GateResult } | undefined> {
    const context = await this.context(session)
    if (!context) return undefined
    const settings = context.settings.effective
    if (!settings.enableSteer || !settings.injectNotice) return undefined
    if (!this.cadence.due(session.id, countTurns(session.events()), settings.checkEveryTurns)) return undefined
    const turns = this.turns(session, settings.includeReasoning)
    const pressure = await sample()
    const ranges = await this.archivedRanges(context)
    const split = splitArchivable(turns, (turn) => inRanges(ranges, turn), retainBudget(pressure.contextWindow, settings))
    const gates = evaluateGates({ historyTokens: pressure.historyTokens, contextWindow: pressure.contextWindow, split }, settings)
    if (!gates.open) return undefined
    const first = split.archivable[0]!
    const last = split.archivable[split.archivable.length - 1]!
    // No nagging: after a note, the next one waits until the model archived something or
    // another batch of turns arrived.
    const watermark = ranges.length > 0 ? ranges[ranges.length - 1]![1] : -1
    const previous = this.lastSteer.get(session.id)
    if (previous && previous.watermark === watermark && turns.length - previous.turns < Math.max(settings.minBatchTurns, settings.checkEveryTurns)) return undefined
    this.lastSteer.set(session.id, { turns: turns.length, watermark })
    return {
      gates,
      note: steeringNote({
        namespace: context.settings.namespace,
        autoName: settings.autoName,
        gates,
        firstTurn: first.turn,
        lastTurn: last.turn,
        archivedRanges: ranges,
        retainedFrom: split.retained[0]?.turn,
      }),
    }
  }

  /** The forced-recall instruction after a human message (recall strength `forced` only). */
  async forcedRecallFor(session: SessionView): Promise<string | undefined> {
    const context = await this.context(session)
    if (!context || context.settings.effective.recallStrength !== 'forced' || !context.settings.effective.injectNotice) return undefined
    const namespace = context.settings.namespace
    const empty = namespace === undefined || !(await context.workspace.hasArchives(namespace))
    return forcedRecallNote({ namespace, empty })
  }

  /**
   * Prepare the one guidance note after a compaction ended: which summary to read. Queued
   * until the next step takes it ({@link Palace.takeGuidance}).
   */
  async compactionEnded(session: SessionView): Promise<void> {
    const context = await this.context(session)
    if (!context) return
    const settings = context.settings.effective
    const namespace = context.settings.namespace
    if (settings.recallStrength === 'off' || !settings.injectNotice || namespace === undefined) return
    const archive = await context.workspace.openArchive(namespace)
    const state = await archive.readState()
    if (!state?.lastArchive) return
    // One note per newly archived span: a compaction that dropped nothing new (the host may
    // retry, or compact again a step later) does not repeat the same guidance.
    const key = JSON.stringify(state.ranges)
    if (this.lastGuided.get(session.id) === key) return
    this.lastGuided.set(session.id, key)
    this.pendingGuidance.set(
      session.id,
      postCompactionNote({
        namespace,
        month: state.lastArchive.month ?? monthOf(this.now()),
        categories: state.lastArchive.categories,
        archivedRanges: state.ranges,
        strength: settings.recallStrength,
      }),
    )
  }

  /** The queued post-compaction guidance of a session, once. */
  takeGuidance(sessionId: string): string | undefined {
    const note = this.pendingGuidance.get(sessionId)
    this.pendingGuidance.delete(sessionId)
    return note
  }

  /** Forget per-session memory (the agent is gone). */
  forget(sessionId: string): void {
    this.cadence.forget(sessionId)
    this.turnCache.delete(sessionId)
    this.pendingGuidance.delete(sessionId)
    this.lastSteer.delete(sessionId)
    this.lastGuided.delete(sessionId)
  }

  /** Effective settings of a session for places that must not throw (prompt assembly). */
  async settingsOrDefault(session: SessionView): Promise<PalaceSettings> {
    try {
      const context = session.cwd ? await this.workspace(session.cwd).settings(session.id) : undefined
      return context?.effective ?? this.options
    } catch {
      return this.options
    }
  }
}
