import type { Keyword } from './keywords.js'
import type { TextLanguage } from './text.js'

/** The two kinds of topic cue: one per turn, and one per session that merges every turn. */
export type CueLevel = 'conversation' | 'task'

/** The facets a cue can be triggered by (the reference's `dimensions`). */
export interface CueDimensions {
  /** What wakes the cue; only `'keywords'` today (images and alarms are the reference's roadmap). */
  readonly trigger: string
  /** `'conversation'` or `'task'`: the perspective the cue summarises. */
  readonly perspective: CueLevel
  /** Language mix of the source text. */
  readonly language?: TextLanguage
  /** The session's workspace, when known. */
  readonly workspace?: string
  /** True for cues that came from an imported cue-bank file. */
  readonly imported?: boolean
  readonly [key: string]: unknown
}

/** A topic cue (the reference's `topics[]` entry) as stored in `cue_bank_topics`. */
export interface Cue {
  /** `c-<uuid>` for cues written here; imported cues keep their id. */
  readonly id: string
  /** The partition key (`workspace:<dir>`, `user:<id>` or `global`). */
  readonly partition: string
  readonly level: CueLevel
  /** The session that formed the cue (`import:<id>` for imported cues). */
  readonly sessionId: string
  /** Conversation cue: its turn. Task cue: the last turn merged into it. */
  readonly turn: number
  /** One line: what the conversation or task was about. */
  readonly summary: string
  /** The source exchange, for the detail excerpt (redacted, capped). */
  readonly detail: string
  readonly keywords: readonly Keyword[]
  readonly dimensions: CueDimensions
  /** Sessions this cue was formed from (the first one is shown as its source). */
  readonly refSessions: readonly string[]
  /** Host message ids of the source turns, for opening them from the store's L0 messages. */
  readonly sourceMessageIds: readonly string[]
  readonly embedding: Float32Array | null
  /** The embedding model of `embedding`: vectors of different models are never compared. */
  readonly embeddingModel: string | null
  readonly createdAt: number
  /** When the topic was last talked about (written); shown as "last mentioned". */
  readonly lastMentionedAt: number
  /** When the cue was last written or woken; drives decay and LRU eviction. */
  readonly lastTouchedAt: number
  /** How many times the cue was woken. */
  readonly hitCount: number
}

/** A user idiom (the reference's `idiosyncrasies[]` entry): a personal expression. */
export interface Idiom {
  readonly partition: string
  readonly word: string
  /** Share of the window's user turns that used it (0..1). */
  readonly score: number
  /** Number of user turns in the window that used it. */
  readonly turns: number
  readonly firstSeen: number
  readonly lastSeen: number
}
