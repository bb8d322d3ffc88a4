/**
 * L1 extraction, one job of the distiller: claim a conversation's pending slice, ask the
 * model for atomic memories, dedup them against similar ones, and commit the memories with
 * the cursor advance and the L2/L3 counters in one store transaction. Failures back off and
 * are retried (bounded by `extract.maxAttempts`); a reply that stays invalid skips the slice.
 */
import { isMemoryStoreError, type Memory, type Message } from '@dsh-memory/store'
import { applyMemoryOps, exactDuplicate, placeMemory, planMemoryOps, sameScopeFilter, type AppliedMemoryOps, type PlacedCandidate } from './dedup.js'
import { DistillError, describeError, isDistillError } from './errors.js'
import { askJson } from './ask-json.js'
import type { BatchEndedEvent, JobContext } from './job-context.js'
import { buildDedupPrompt, buildExtractionPrompt, DEDUP_SYSTEM, L1_SYSTEM } from './prompts.js'
import { layerKey } from './scenes.js'
import { validateDedupDecisions, validateExtraction, type DedupDecision, type ExtractedMemory } from './schemas.js'
import { type ConversationState, initialLayerState } from './state-types.js'
import { retryDelayMs, type TriggerReason } from './trigger.js'

/** Runs the L1 jobs the scheduler hands it. */
export class ExtractionJob {
  constructor(private readonly ctx: JobContext) {}

  async run(conversationId: string, reason: TriggerReason | 'manual'): Promise<void> {
    const live = this.ctx.live(conversationId)
    const owner = this.ctx.instanceId
    const claimed = await this.ctx.state.claim(conversationId, owner, this.ctx.clock.now(), this.ctx.leaseMs, (other) => this.ctx.isOwnerAlive(other))
    if (!claimed) {
      this.ctx.log('debug', `conversation ${conversationId} is being distilled by another process`)
      live.notBefore = this.ctx.clock.now() + 60_000
      this.ctx.scheduleWake(live.notBefore)
      return
    }
    let slice: Message[] = []
    const started = this.ctx.clock.now()
    let reported = false
    // Once per batch: a failure after the commit (the next layers) is not this batch's outcome.
    const ended = (outcome: BatchEndedEvent['outcome'], added = 0, replaced = 0) => {
      if (!reported) this.ctx.emit('batchEnded', { conversationId, reason, outcome, messages: slice.length, added, replaced, ms: this.ctx.clock.now() - started })
      reported = true
    }
    try {
      const conversation = await this.ctx.store.conversations.get(conversationId)
      const workspace = conversation?.workspace || live.workspace
      const batch = await this.ctx.store.messages.list({ conversationId, ...afterCursor(claimed.cursorSeq), limit: this.ctx.options.extract.maxBatchMessages })
      slice = fitSlice(batch, this.ctx.options.llm.maxInputChars - L1_SYSTEM.length - 4_000)
      if (slice.length === 0) {
        await this.ctx.state.release(conversationId, owner)
        await this.ctx.state.updatePending([], [conversationId])
        live.pending = 0
        return
      }
      const context = await this.contextBefore(conversationId, slice[0]!, claimed.cursorSeq)
      const built = buildExtractionPrompt({ workspace, context, slice, budgetChars: this.ctx.options.llm.maxInputChars - L1_SYSTEM.length - 4_000 })
      this.ctx.log('debug', `l1 ${conversationId}: ${slice.length} messages (${reason}), ${context.length} context`)

      const extraction = await askJson(this.ctx, 'l1', L1_SYSTEM, built.prompt, conversationId, (value) => validateExtraction(value, built.aliases))
      if (!extraction.ok) {
        await this.commitSkip(conversationId, claimed, slice, extraction.error)
        ended('skipped')
        return
      }
      const candidates = await this.placeCandidates(extraction.items, workspace, conversationId)
      const { decisions, existing } = await this.decideDuplicates(candidates, conversationId)
      const ops = planMemoryOps(candidates, decisions, existing)

      let applied: AppliedMemoryOps | undefined
      await this.ctx.writeStore().transaction(async (tx) => {
        const current = await this.ctx.state.conversation(conversationId)
        if (current.cursorSeq !== claimed.cursorSeq || current.lease?.owner !== owner) {
          throw new DistillError('conflict', `conversation ${conversationId} moved on while it was being distilled`)
        }
        applied = await applyMemoryOps(tx, candidates, ops, { conversationId, layer: 'l1' })
        await this.ctx.state.putConversation(this.advanced(current, slice, null))
        if (applied.written.length > 0) await this.countNewMemories(applied.written)
      }, this.ctx.fenced())
      const result = applied!
      this.ctx.counters.memoriesWritten += result.written.length
      live.stage = claimed.stage + 1
      live.notBefore = 0
      live.lastError = null
      this.ctx.log('info', `l1 ${conversationId}: ${slice.length} messages → ${result.added.length} added, ${result.replaced.length} replaced, ${result.skipped} skipped`)
      this.ctx.emit('memoriesUpdated', {
        conversationId,
        workspace,
        added: result.added.map((memory) => memory.id),
        replaced: result.replaced,
        skipped: result.skipped,
        messageIds: slice.map((message) => message.id),
      })
      ended('done', result.added.length, result.replaced.length)
      await this.afterSlice(conversationId, slice[slice.length - 1]!.seq)
      if (result.written.length > 0) await this.ctx.queueDueLayers()
    } catch (error) {
      if (slice.length > 0) ended('failed')
      await this.failSlice(conversationId, error)
    }
  }

  /** The `backgroundMessages` messages before the slice (already distilled), oldest first. */
  private async contextBefore(conversationId: string, first: Message, cursorSeq: number): Promise<Message[]> {
    const wanted = this.ctx.options.extract.backgroundMessages
    if (wanted <= 0 || cursorSeq < 0) return []
    const before = await this.ctx.store.messages.list({ conversationId, until: first.createdAt, order: 'desc', limit: wanted + 20 })
    return before
      .filter((message) => message.seq <= cursorSeq)
      .slice(0, wanted)
      .reverse()
  }

  private async placeCandidates(items: readonly ExtractedMemory[], workspace: string, conversationId: string): Promise<PlacedCandidate[]> {
    const pool = this.ctx.options.extract.candidatePool
    const out: PlacedCandidate[] = []
    for (const memory of items) {
      const placement = placeMemory(memory.scope, workspace, conversationId)
      const similar =
        pool > 0 ? (await this.ctx.store.search.memories(memory.text, { ...sameScopeFilter(placement), limit: pool })).map((hit) => hit.memory) : []
      out.push({ memory, placement, similar })
    }
    return out
  }

  /**
   * One dedup call for every candidate that has similar memories (none when nothing is
   * similar or an exact duplicate settles it). An invalid reply, twice, means "add all".
   */
  private async decideDuplicates(
    candidates: readonly PlacedCandidate[],
    conversationId: string,
  ): Promise<{ decisions: DedupDecision[] | undefined; existing: Map<string, string> }> {
    const asked = candidates.map((candidate, index) => ({ candidate, index })).filter(({ candidate }) => candidate.similar.length > 0 && !exactDuplicate(candidate))
    if (asked.length === 0) return { decisions: undefined, existing: new Map() }
    const built = buildDedupPrompt(asked.map(({ candidate }) => ({ kind: candidate.memory.kind, scope: candidate.placement.scope, text: candidate.memory.text, similar: candidate.similar })))
    const result = await askJson(this.ctx, 'dedup', DEDUP_SYSTEM, built.prompt, conversationId, (value) => validateDedupDecisions(value, built.pools))
    const existing = new Map<string, string>()
    for (const [alias, id] of built.aliases) if (alias.startsWith('e')) existing.set(alias, id)
    if (!result.ok) {
      this.ctx.log('warn', `dedup gave no usable decisions (${result.error}); adding the ${asked.length} candidate(s) as new`)
      return { decisions: undefined, existing }
    }
    // Decisions name candidates by their position in the dedup prompt; map back to the batch.
    const decisions = result.items.map((decision) => {
      const position = Number(decision.id.slice(1)) - 1
      return { ...decision, id: `n${asked[position]!.index + 1}` }
    })
    return { decisions, existing }
  }

  private async commitSkip(conversationId: string, claimed: ConversationState, slice: readonly Message[], error: string): Promise<void> {
    const live = this.ctx.live(conversationId)
    await this.ctx.writeStore().transaction(async () => {
      const current = await this.ctx.state.conversation(conversationId)
      if (current.cursorSeq !== claimed.cursorSeq || current.lease?.owner !== this.ctx.instanceId) {
        throw new DistillError('conflict', `conversation ${conversationId} moved on while it was being distilled`)
      }
      await this.ctx.state.addSkipped(conversationId, { fromSeq: slice[0]!.seq, toSeq: slice[slice.length - 1]!.seq, at: this.ctx.clock.now(), reason: error.slice(0, 300) })
      await this.ctx.state.putConversation(this.advanced(current, slice, `skipped: ${error}`.slice(0, 500)))
    }, this.ctx.fenced())
    live.stage = claimed.stage + 1
    live.lastError = `skipped: ${error}`
    this.ctx.counters.failures++
    this.ctx.log('warn', `l1 ${conversationId}: gave up on messages seq ${slice[0]!.seq}..${slice[slice.length - 1]!.seq} after two invalid replies (${error}); the L0 messages stay stored`)
    await this.afterSlice(conversationId, slice[slice.length - 1]!.seq)
  }

  /** The state after a slice was distilled (or skipped): cursor past it, next ramp stage, retry state cleared, lease dropped. */
  private advanced(current: ConversationState, slice: readonly Message[], lastError: string | null): ConversationState {
    return { ...current, cursorSeq: slice[slice.length - 1]!.seq, stage: current.stage + 1, attempts: 0, notBefore: 0, lastError, lastRunAt: this.ctx.clock.now(), gaveUpAt: null, lease: null }
  }

  /** Recount what is left after a commit and decide the next step. */
  private async afterSlice(conversationId: string, lastSeq: number): Promise<void> {
    const live = this.ctx.live(conversationId)
    const rest = await this.ctx.store.messages.list({ conversationId, ...afterCursor(lastSeq), limit: this.ctx.options.extract.maxBatchMessages + 1 })
    live.pending = rest.length
    if (rest.length === 0) {
      await this.ctx.state.updatePending([], [conversationId])
      if (live.orphan) this.ctx.forget(conversationId)
    } else {
      live.lastMessageAt = Math.max(live.lastMessageAt, rest[rest.length - 1]!.createdAt)
      await this.ctx.evaluateAll()
    }
  }

  private async failSlice(conversationId: string, error: unknown): Promise<void> {
    const live = this.ctx.live(conversationId)
    if (isDistillError(error, 'aborted') || this.ctx.closed) {
      await this.ctx.guard('release', () => this.ctx.state.release(conversationId, this.ctx.instanceId))
      return
    }
    this.ctx.counters.failures++
    const message = describeError(error).slice(0, 500)
    // A fenced commit means another process took the job over: redo, no backoff.
    const conflict = isDistillError(error, 'conflict') || isMemoryStoreError(error, 'fenced')
    const attempts = conflict ? 0 : (await this.ctx.guard('read state', () => this.ctx.state.conversation(conversationId)))?.attempts ?? 0
    // Bounded: after maxAttempts consecutive failures the conversation waits for a new message.
    const giveUp = !conflict && attempts + 1 >= this.ctx.options.extract.maxAttempts
    const notBefore = conflict || giveUp ? 0 : this.ctx.clock.now() + retryDelayMs(attempts + 1)
    const patch = conflict ? {} : { attempts: attempts + 1, notBefore, lastError: message, gaveUpAt: giveUp ? this.ctx.clock.now() : null }
    await this.ctx.guard('release', () => this.ctx.state.release(conversationId, this.ctx.instanceId, patch))
    live.notBefore = notBefore
    live.lastError = message
    live.gaveUp = giveUp
    const outcome = conflict
      ? 'conflict, will redo'
      : giveUp
        ? `failed (attempt ${attempts + 1}), given up until a new message arrives`
        : `failed (attempt ${attempts + 1}), retry after ${Math.round((notBefore - this.ctx.clock.now()) / 1000)} s`
    this.ctx.log('warn', `l1 ${conversationId}: ${outcome}: ${message}`)
    if (conflict) await this.ctx.guard('resume', () => this.ctx.resumeConversations())
    else if (!giveUp) this.ctx.scheduleWake(notBefore)
  }

  /**
   * Add new memories to the L2/L3 counters of their scope (inside the commit transaction). A
   * global memory counts for this host's user, whose pass will read it (a new version of an
   * unattributed memory keeps `createdBy` `''` but is seen by this user's pass all the same).
   */
  private async countNewMemories(memories: readonly Memory[]): Promise<void> {
    const keys = new Map<string, number>()
    const user = this.ctx.store.user
    for (const memory of memories) {
      if (memory.scope === 'session') continue
      const key = layerKey({ scope: memory.scope, workspace: memory.workspace }, user)
      keys.set(key, (keys.get(key) ?? 0) + 1)
    }
    if (keys.size === 0) return
    await this.ctx.state.updateLayers((all) => {
      for (const [key, count] of keys) {
        const prev = all[key] ?? initialLayerState()
        all[key] = { ...prev, sinceL2: prev.sinceL2 + count, sinceL3: prev.sinceL3 + count }
      }
    })
  }
}

/** The message filter for "after the cursor" (-1 = from the start; the store wants seq >= 0). */
export function afterCursor(cursorSeq: number): { afterSeq?: number } {
  return cursorSeq >= 0 ? { afterSeq: cursorSeq } : {}
}

/**
 * The longest prefix of `messages` whose text fits `budgetChars` (at least one message, which
 * the prompt builder cuts to fit).
 */
export function fitSlice(messages: readonly Message[], budgetChars: number): Message[] {
  const out: Message[] = []
  let used = 0
  for (const message of messages) {
    used += message.text.length + 16
    if (out.length > 0 && used > budgetChars) break
    out.push(message)
  }
  return out
}
