/**
 * The per-agent state machines of the palace that the DSH adapter only drives: the recall
 * section each agent's prompt shows, the "compact after this archive" decision between a
 * `palace_archive` tool result and the next step, the notes a step adds, and the archives
 * still running after their caller stopped waiting. Host-independent: the adapter passes
 * session views and the numbers it measured, and turns the answers into host calls.
 */
import { BackgroundWork } from '@dsh-memory/store/kit'
import type { Palace, ArchivedEvent, PressureSample, SessionView } from './palace.js'
import { inRanges } from './ranges.js'

/** A note for the next model request, with the short summary the host shows for it. */
export interface StepNote {
  readonly text: string
  readonly summary: string
}

/** Per-agent palace state (keyed by the host's agent id). */
export class PalaceSessions {
  private readonly recall = new Map<string, string>()
  private readonly pendingCompaction = new Map<string, ArchivedEvent>()
  private readonly modelArchives = new Map<string, ArchivedEvent>()
  // Archives still running after their caller stopped waiting (a pre-compaction archive past
  // archiveTimeoutMs): the host's flush waits for them, so a headless exit does not cut them.
  private readonly running = new BackgroundWork()

  constructor(readonly palace: Palace) {}

  /** An archive was committed (the palace's `onArchived`): remember the model's own ones. */
  archived(event: ArchivedEvent): void {
    if (event.kind === 'model') this.modelArchives.set(event.sessionId, event)
  }

  /** Recompute the recall section of a session (read synchronously while the prompt is assembled). */
  async refreshRecall(session: SessionView): Promise<void> {
    this.recall.set(session.id, await this.palace.recallSection(session))
  }

  /** The recall section of an agent: its own once computed, the plugin default before. */
  recallText(agentId: string | undefined): string {
    return (agentId !== undefined ? this.recall.get(agentId) : undefined) ?? this.palace.defaultRecallSection()
  }

  /**
   * A session started: compute its recall section, recover an interrupted commit and catch
   * its archive index up (rebuilt from the files when the palace tables are empty).
   */
  async started(session: SessionView): Promise<void> {
    await this.refreshRecall(session)
    const context = await this.palace.context(session)
    if (context?.settings.namespace === undefined) return
    await context.workspace.openArchive(context.settings.namespace)
    await this.palace.syncIndex(context.workspace, context.settings.namespace)
  }

  /**
   * A palace tool returned: a config change refreshes the recall section; a successful
   * `palace_archive` with `compactAfterArchive` queues the compaction of the archived span for
   * the very next step (decided before the tool result returns).
   */
  async toolReturned(agentId: string, session: SessionView, tool: string, ok: boolean): Promise<void> {
    if (tool === 'palace_config') await this.refreshRecall(session).catch(() => undefined)
    if (tool !== 'palace_archive' || !ok) return
    const archived = this.modelArchives.get(agentId)
    const settings = await this.palace.settingsOrDefault(session)
    if (archived && settings.compactAfterArchive) this.pendingCompaction.set(agentId, archived)
  }

  /** The archive whose span the next step must compact first, once. */
  takePendingCompaction(agentId: string): ArchivedEvent | undefined {
    const pending = this.pendingCompaction.get(agentId)
    this.pendingCompaction.delete(agentId)
    return pending
  }

  /**
   * The region (first and last node seq) to compact after an archive: the longest run of
   * context nodes, starting at the first archived one, whose turns are all archived.
   * Undefined when fewer than two such nodes are still in context.
   * @param nodeSeqs - the seqs of the context's nodes, in order (from the host's token meter)
   */
  async compactionRegion(session: SessionView, event: ArchivedEvent, nodeSeqs: readonly number[]): Promise<[number, number] | undefined> {
    const settings = await this.palace.settingsOrDefault(session)
    const archivedSeqs = new Set(
      this.palace
        .turns(session, settings.includeReasoning)
        .filter((turn) => inRanges(event.outcome.state.ranges, turn.turn))
        .flatMap((turn) => turn.seqs),
    )
    const first = nodeSeqs.findIndex((seq) => archivedSeqs.has(seq))
    if (first === -1) return undefined
    let last = first
    while (last + 1 < nodeSeqs.length && archivedSeqs.has(nodeSeqs[last + 1]!)) last++
    return last === first ? undefined : [nodeSeqs[first]!, nodeSeqs[last]!]
  }

  /**
   * The notes of a step the host is entering, in order: the guidance queued after a
   * compaction, the forced-recall instruction after a human message, the steering note.
   */
  async stepNotes(session: SessionView, humanMessage: boolean, sample: () => Promise<PressureSample>): Promise<StepNote[]> {
    await this.refreshRecall(session)
    const notes: StepNote[] = []
    const guidance = this.palace.takeGuidance(session.id)
    if (guidance) notes.push({ text: guidance, summary: 'Memory palace: which summary to read after the compaction' })
    if (humanMessage) {
      const forced = await this.palace.forcedRecallFor(session)
      if (forced) notes.push({ text: forced, summary: 'Memory palace: recall before answering' })
    }
    const steer = await this.palace.steeringFor(session, sample)
    if (steer) notes.push({ text: steer.note, summary: 'Memory palace: archive older turns' })
    return notes
  }

  /** Keep `work` for {@link flush} even after its caller stopped waiting. */
  track<T>(work: Promise<T>): Promise<T> {
    return this.running.track(work)
  }

  /** Resolves once tracked archives and background indexing have settled. */
  async flush(): Promise<void> {
    await this.running.settled()
    await this.palace.idle()
  }

  /** Forget an agent that is gone. */
  disposed(agentId: string): void {
    this.pendingCompaction.delete(agentId)
    this.modelArchives.delete(agentId)
    this.recall.delete(agentId)
    this.palace.forget(agentId)
  }
}
