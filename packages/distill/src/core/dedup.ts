/**
 * From validated dedup decisions to store writes. Every change that replaces an existing
 * memory goes through `memories.supersede`, so the old row stays as history with
 * `supersededBy` pointing at its replacement: nothing is silently lost.
 */
import type { Memory, MemoryScopeFilter, MemoryStore, Scope } from '@dsh-memory/store'
import { normalizeForCompare, type DedupAction, type DedupDecision, type ExtractedMemory, type SuggestedScope } from './schemas.js'

/** Where a memory is stored. */
export interface Placement {
  readonly scope: Scope
  readonly workspace: string | null
  readonly sessionId: string | null
}

/**
 * Turn the model's scope suggestion into a valid placement. A workspace memory needs a known
 * workspace; without one it stays with the session rather than leaking to every workspace.
 */
export function placeMemory(suggested: SuggestedScope, workspace: string, conversationId: string): Placement {
  if (suggested === 'global') return { scope: 'global', workspace: null, sessionId: null }
  if (suggested === 'workspace' && workspace) return { scope: 'workspace', workspace, sessionId: null }
  return { scope: 'session', workspace: workspace || null, sessionId: conversationId }
}

/** The scope filter that finds memories of the same placement (for the candidate pool). */
export function sameScopeFilter(placement: Placement): MemoryScopeFilter {
  if (placement.scope === 'global') return { scope: 'global' }
  if (placement.scope === 'workspace') return { scope: 'workspace', workspace: placement.workspace!, includeGlobal: false }
  return { scope: 'session', sessionId: placement.sessionId!, includeGlobal: false, ...(placement.workspace ? { workspace: placement.workspace } : {}) }
}

/** A candidate with its placement and the similar memories found for it. */
export interface PlacedCandidate {
  readonly memory: ExtractedMemory
  readonly placement: Placement
  readonly similar: readonly Memory[]
}

/** One planned write. */
export type MemoryOp =
  | { readonly type: 'add'; readonly candidate: number }
  | { readonly type: 'skip'; readonly candidate: number; readonly target?: string; readonly reason: string }
  | { readonly type: 'replace'; readonly candidate: number; readonly action: Exclude<DedupAction, 'add' | 'skip'>; readonly target: string; readonly text: string }

/** The index of a similar memory with the same normalised text, or -1. */
export function exactDuplicate(candidate: PlacedCandidate): Memory | undefined {
  const key = normalizeForCompare(candidate.memory.text)
  return candidate.similar.find((memory) => normalizeForCompare(memory.text) === key)
}

/**
 * Plan the writes for a batch. Candidates with an exact duplicate are skipped without asking
 * anyone; candidates without a (valid) decision are added, because an extra memory can be
 * merged later while a dropped one is gone.
 * @param decisions - validated decisions, candidate alias `n<i+1>`; undefined = no dedup call was made.
 * @param existing - existing-memory alias (`e#`) → memory id, as shown to the model.
 */
export function planMemoryOps(
  candidates: readonly PlacedCandidate[],
  decisions: readonly DedupDecision[] | undefined,
  existing: ReadonlyMap<string, string>,
): MemoryOp[] {
  const byCandidate = new Map<number, DedupDecision>()
  for (const decision of decisions ?? []) {
    const index = Number(decision.id.slice(1)) - 1
    if (Number.isInteger(index) && index >= 0 && index < candidates.length && !byCandidate.has(index)) byCandidate.set(index, decision)
  }
  return candidates.map((candidate, index): MemoryOp => {
    const duplicate = exactDuplicate(candidate)
    if (duplicate) return { type: 'skip', candidate: index, target: duplicate.id, reason: 'exact duplicate' }
    const decision = byCandidate.get(index)
    if (!decision || decision.action === 'add') return { type: 'add', candidate: index }
    if (decision.action === 'skip') return { type: 'skip', candidate: index, ...(decision.target && existing.get(decision.target) ? { target: existing.get(decision.target)! } : {}), reason: 'model: already known' }
    const target = decision.target ? existing.get(decision.target) : undefined
    if (!target) return { type: 'add', candidate: index }
    const text = decision.action === 'supersede' ? candidate.memory.text : (decision.text ?? candidate.memory.text)
    return { type: 'replace', candidate: index, action: decision.action, target, text }
  })
}

/** What a batch of writes did. */
export interface AppliedMemoryOps {
  readonly added: readonly Memory[]
  /** Replacements: `from` is kept as history with `supersededBy` = `to`. */
  readonly replaced: readonly { readonly from: string; readonly to: string; readonly action: Exclude<DedupAction, 'add' | 'skip'> }[]
  readonly skipped: number
  /** Every memory written (added or replacement), in order. */
  readonly written: readonly Memory[]
}

/** Provenance recorded in the flags of every memory distill writes. */
export interface DistillProvenance {
  readonly conversationId: string
  readonly layer: 'l1'
}

/**
 * Apply planned writes inside the caller's transaction. A target that was superseded in the
 * meantime is followed to the current version; a target that no longer exists (deleted by
 * the user) turns the op into an add.
 */
export async function applyMemoryOps(
  tx: Pick<MemoryStore, 'memories'>,
  candidates: readonly PlacedCandidate[],
  ops: readonly MemoryOp[],
  provenance: DistillProvenance,
): Promise<AppliedMemoryOps> {
  const added: Memory[] = []
  const written: Memory[] = []
  const replaced: { from: string; to: string; action: Exclude<DedupAction, 'add' | 'skip'> }[] = []
  let skipped = 0
  const flags = (action: string) => ({ distill: { conversationId: provenance.conversationId, layer: provenance.layer, action } })
  for (const op of ops) {
    const candidate = candidates[op.candidate]!
    if (op.type === 'skip') {
      skipped++
      continue
    }
    const head = op.type === 'replace' ? await currentVersion(tx, op.target) : undefined
    if (op.type === 'add' || !head) {
      const memory = await tx.memories.add(
        {
          kind: candidate.memory.kind,
          text: candidate.memory.text,
          scope: candidate.placement.scope,
          workspace: candidate.placement.workspace,
          sessionId: candidate.placement.sessionId,
          sourceMessageIds: [...candidate.memory.sourceMessageIds],
          priority: candidate.memory.priority,
          flags: flags('add'),
        },
        { actor: 'distill' },
      )
      added.push(memory)
      written.push(memory)
      continue
    }
    const sources = [...new Set([...head.sourceMessageIds, ...candidate.memory.sourceMessageIds])]
    const memory = await tx.memories.supersede(
      head.id,
      {
        text: op.text,
        kind: op.action === 'supersede' ? candidate.memory.kind : head.kind,
        priority: Math.max(head.priority, candidate.memory.priority),
        sourceMessageIds: sources,
        flags: { ...head.flags, ...flags(op.action) },
      },
      { actor: 'distill' },
    )
    replaced.push({ from: head.id, to: memory.id, action: op.action })
    written.push(memory)
  }
  return { added, replaced, skipped, written }
}

/** Follow `supersededBy` to the current version of a memory (at most 50 hops). */
async function currentVersion(tx: Pick<MemoryStore, 'memories'>, id: string): Promise<Memory | undefined> {
  let current = await tx.memories.get(id)
  for (let hops = 0; current?.supersededBy && hops < 50; hops++) current = await tx.memories.get(current.supersededBy)
  return current && !current.supersededBy ? current : undefined
}
