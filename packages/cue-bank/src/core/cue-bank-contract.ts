/**
 * The cue bank's public contract: what callers feed it (sessions, messages, finished turns),
 * what it reports (wake decisions, write and wake events), and the partition a session's
 * cues belong to. Kept apart from the engine so adapters and tests depend on the shapes only.
 */
import type { MessageRepository } from '@dsh-memory/store'
import type { Embedder } from './embedding.js'
import type { Keyword } from './keywords.js'
import type { RankedCue } from './matching.js'
import type { Cue } from './model.js'
import type { PartitionMode, ResolvedCueBankOptions } from './options.js'
import type { CueRepository } from './store-cue-repository.js'

/** The session a message or turn belongs to. */
export interface SessionRef {
  readonly id: string
  /** The session's working directory; `''` when unknown. */
  readonly workspace: string
}

/** One host message of a turn. */
export interface TurnMessage {
  /** The host's message id (also the key of the store's L0 message). */
  readonly id: string
  readonly text: string
}

/** A finished turn, as the write side consumes it. */
export interface TurnRecord {
  readonly turn: number
  /** Human messages of the turn (plugin-made messages excluded by the caller). */
  readonly user: readonly TurnMessage[]
  /** The assistant's text replies. */
  readonly assistant: readonly TurnMessage[]
}

/** What the wake side decided for one user message. */
export interface WakeDecision {
  readonly sessionId: string
  readonly partition: string
  readonly messageId: string
  readonly turn: number
  /** The message's keywords. */
  readonly keywords: readonly Keyword[]
  /** Overlap with the previous user turn (0..1); `null` for a session's first message or a message without keywords. */
  readonly overlap: number | null
  readonly switched: boolean
  /** True when the cue bank was scanned for this message. */
  readonly scanned: boolean
  readonly cues: readonly RankedCue[]
  readonly idioms: readonly string[]
  /** How the cues were matched; `'none'` when nothing was scanned or nothing matched. */
  readonly via: 'keyword' | 'vector' | 'none'
  /** The block served from now on (`''` = none). Unchanged when the topic did not switch. */
  readonly text: string
}

/** Reported after a turn's cues are committed. */
export interface CueWrittenEvent {
  readonly partition: string
  readonly sessionId: string
  readonly turn: number
  /** The conversation cue and the task cue written or merged. */
  readonly cueIds: readonly string[]
  /** Cues deleted by decay or the LRU cap in the same transaction. */
  readonly evicted: readonly string[]
}

/** Reported after woken cues are marked (hit count, last touched). */
export interface CueWokenEvent {
  readonly partition: string
  readonly sessionId: string
  readonly turn: number
  readonly cueIds: readonly string[]
  readonly via: 'keyword' | 'vector'
}

/** A cue together with its source turns, for traceability. */
export interface OpenedCue {
  readonly cue: Cue
  /** `'store'` when the source messages were found among the store's L0 messages, else the cue's own excerpt. */
  readonly source: 'store' | 'cue-detail'
  readonly turns: readonly { readonly role: string; readonly turn: number; readonly at: number; readonly text: string }[]
}

/** Callbacks of {@link CueBank}; each is guarded, a throwing hook cannot break a turn. */
export interface CueBankHooks {
  readonly onWritten?: (event: CueWrittenEvent) => void
  readonly onWoken?: (event: CueWokenEvent) => void
  readonly onError?: (error: unknown, where: string) => void
  /** Decision log, called only with `dbg` on. */
  readonly debug?: (message: string) => void
}

/** Dependencies of {@link CueBank}. */
export interface CueBankDependencies {
  readonly repository: CueRepository
  readonly options: ResolvedCueBankOptions
  /** The clock, epoch ms. */
  readonly now?: () => number
  /** Vector source; used when `options.vectorAvailable`. */
  readonly embedder?: Embedder | null
  /** L0 messages, for opening a cue's source turns. */
  readonly messages?: Pick<MessageRepository, 'getByHostId'>
  readonly hooks?: CueBankHooks
  /** Name of the tool that opens cues, mentioned in the block while it returns one (the tool may come and go). */
  readonly openTool?: () => string | undefined
}

/** Filter of {@link CueBank.list}. */
export interface CueListFilter {
  /** Partitions to list. */
  readonly partitions?: readonly string[]
  /** List what a session of this workspace reads (when `partitions` is not given). Neither: every partition. */
  readonly workspace?: string
  readonly level?: Cue['level']
  /** Default 100. */
  readonly limit?: number
}

/**
 * The partition a session's cues belong to: `global`; `user:<id>` for session ids shaped
 * `<channel>:<user>` (as the reference derives `ou_xxx` from `feishu:ou_xxx`), else
 * `user:<localUser>` (the person at this machine: the same bank in every workspace);
 * `workspace:<dir>`.
 */
export function partitionKey(mode: PartitionMode, session: SessionRef, localUser = 'local'): string {
  if (mode === 'global') return 'global'
  if (mode === 'user') {
    const match = /^[a-z][\w-]*:(.+)$/i.exec(session.id)
    return `user:${match ? match[1] : localUser}`
  }
  return `workspace:${session.workspace || '(unknown)'}`
}
