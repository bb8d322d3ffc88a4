/**
 * `ctx.memoryCueBank` and the `cue_bank_open` tool: the adapter-side surface over the core.
 */
import type { MemoryStore, PackageTablesHost } from '@dsh-memory/store'
import { parseToolInput, toolOutput, toolParameters } from '@dsh-memory/store/kit'
import { z } from 'zod'
import type { CueBank } from './core/cue-bank.js'
import type { CueListFilter, OpenedCue, SessionRef, WakeDecision } from './core/cue-bank-contract.js'
import { importCueBankJson, type ImportCueBankOptions, type ImportCueBankResult } from './core/import.js'
import type { Cue, Idiom } from './core/model.js'
import { formatDate } from './core/render.js'
import type { AgentLike } from './events.js'

/** The tool the wake block points to for opening a cue's source turns. */
export const OPEN_TOOL_NAME = 'cue_bank_open'

/** The service `ctx.memoryCueBank` (also `ctx.cueBank`, deprecated). */
export class CueBankService {
  constructor(
    private readonly bank: CueBank,
    private readonly store: Pick<MemoryStore, 'path' | 'readonly'> & PackageTablesHost,
  ) {}

  /** Cues, most recently touched first (default: what a session of `filter.workspace` reads). */
  list(filter: CueListFilter = {}): Cue[] {
    return this.bank.list(filter)
  }

  /** Idioms a session of `workspace` reads (every partition without one), best first. */
  idioms(workspace?: string): Idiom[] {
    return this.bank.idioms(workspace)
  }

  /** A cue with its source turns; with `viewer`, only cues that session may read. @throws CueBankError `not-found` */
  open(cueId: string, viewer?: SessionRef): Promise<OpenedCue> {
    return this.bank.open(cueId, viewer)
  }

  /** The block currently injected for a session (`''` = none). */
  injection(sessionId: string): string {
    return this.bank.injection(sessionId)
  }

  /** The last wake decision for a session: overlap, switch, matched cues. */
  lastDecision(sessionId: string): WakeDecision | undefined {
    return this.bank.lastDecision(sessionId)
  }

  /** Import a reference cue-bank JSON file into the store (see {@link importCueBankJson}). */
  async importJson(json: string | unknown, options?: ImportCueBankOptions): Promise<ImportCueBankResult> {
    const result = await importCueBankJson(this.store, json, options)
    // On PostgreSQL the next wake (and list) must not wait for the view's poll to see the import.
    await this.bank.refresh()
    return result
  }

  /** Resolves when queued writes have committed and background embeddings have settled. */
  whenIdle(): Promise<void> {
    return this.bank.whenIdle()
  }
}

/** Render an opened cue for the model: where it came from, then its source turns. */
export function renderOpenedCue(opened: OpenedCue): string {
  const { cue } = opened
  const source = cue.refSessions[0] ?? cue.sessionId
  const lines = [
    `Cue ${cue.id} [${cue.level}] from session ${source}, created ${formatDate(cue.createdAt)}, last mentioned ${formatDate(cue.lastMentionedAt)}, woken ${cue.hitCount} time(s).`,
    `Summary: ${cue.summary}`,
    `Keywords: ${cue.keywords.map((keyword) => keyword.word).join(', ')}`,
    opened.source === 'store' ? 'Source turns (recorded conversation):' : 'Source excerpt (the recorded turns are not in the store):',
  ]
  for (const turn of opened.turns) {
    lines.push(opened.source === 'store' ? `[turn ${turn.turn}, ${formatDate(turn.at)}] ${turn.role}: ${turn.text}` : turn.text)
  }
  return lines.join('\n')
}

const OPEN_TOOL_INPUT = z
  .object({ cueId: z.string().trim().min(1, 'must be a non-empty string').describe('The cue id, e.g. c-0190… or t-0190…') })
  .strict()

/** The `cue_bank_open` tool definition (dsh-tools shape: schema, mandatory output, execute). */
/** @param workspaceOf - the store service's workspace id of a session directory (default: the directory). */
export function openToolDefinition(bank: CueBank, workspaceOf: (cwd: string) => string = (cwd) => cwd): unknown {
  return {
    name: OPEN_TOOL_NAME,
    description:
      'Open a recalled memory cue (ids appear in <memory-cues> blocks): shows the session and date it came from and the original conversation turns.',
    parameters: toolParameters(OPEN_TOOL_INPUT),
    output: {
      schema: toolOutput(z.string()),
      render: (_args: unknown, value: unknown) => [{ type: 'text', text: String(value) }],
    },
    isConcurrencySafe: () => true,
    async execute(args: unknown, exec?: { agent?: AgentLike }): Promise<string> {
      const parsed = parseToolInput(OPEN_TOOL_INPUT, args)
      if (!parsed.ok) throw new Error(`invalid arguments for cue_bank_open: ${parsed.message}`)
      const cueId = parsed.value.cueId
      // The calling session sees only the partitions it may be woken from.
      const session = exec?.agent?.session ?? (exec?.agent ? { id: exec.agent.id } : undefined)
      const cwd = session?.header?.cwd ?? ''
      const viewer = session ? { id: session.id, workspace: cwd ? workspaceOf(cwd) : '' } : undefined
      return renderOpenedCue(await bank.open(cueId, viewer))
    },
  }
}
