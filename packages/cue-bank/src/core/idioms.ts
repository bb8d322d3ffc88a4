/**
 * User idioms, the second kind of cue: expressions a user keeps using whatever the topic
 * ("闭环", "抓手", "LGTM"). A word qualifies when it recurs in at least two user turns of the
 * recent window *and* in at least two different topic segments, so the keywords of one long
 * topic ("PostgreSQL" said five times while migrating a database) do not pass for idioms.
 */
import { termSimilarity } from './matching.js'
import type { Idiom } from './model.js'

/** One user turn of the idiom window: its topic segment and its distinct candidate terms. */
export interface UserTurnTerms {
  /** Identifies the topic segment (a session and the turn that opened the topic). */
  readonly segment: string
  readonly terms: readonly string[]
  /** When the turn was written, epoch ms. */
  readonly at: number
}

/** An idiom computed from a window (without partition). */
export interface IdiomCandidate {
  readonly word: string
  /** Share of the window's turns that used it. */
  readonly score: number
  readonly turns: number
  /** The newest turn that used it, epoch ms (drives LRU eviction). */
  readonly lastUsed: number
}

/** Idioms of a window of user turns, most used first. */
export function computeIdioms(window: readonly UserTurnTerms[]): IdiomCandidate[] {
  if (window.length === 0) return []
  const stats = new Map<string, { turns: number; segments: Set<string>; lastUsed: number }>()
  const vocabulary = new Set(window.flatMap((turn) => turn.terms))
  for (const turn of window) {
    const terms = new Set(turn.terms)
    for (const word of vocabulary) {
      // A turn uses an expression when one of its terms is or contains it ("形成闭环" uses "闭环").
      if (!terms.has(word) && ![...terms].some((term) => term.length > word.length && termSimilarity(word, term) > 0)) continue
      const entry = stats.get(word) ?? { turns: 0, segments: new Set<string>(), lastUsed: 0 }
      entry.turns++
      entry.segments.add(turn.segment)
      entry.lastUsed = Math.max(entry.lastUsed, turn.at)
      stats.set(word, entry)
    }
  }
  return [...stats.entries()]
    .filter(([, entry]) => entry.turns >= 2 && entry.segments.size >= 2)
    .map(([word, entry]) => ({ word, turns: entry.turns, lastUsed: entry.lastUsed, score: Math.round((entry.turns / window.length) * 10_000) / 10_000 }))
    .sort((a, b) => b.score - a.score || [...b.word].length - [...a.word].length || a.word.localeCompare(b.word))
}

/**
 * The idioms to offer in the hint line: those the new message itself uses first, then the
 * most used, at most `max`.
 */
export function selectIdiomHints(idioms: readonly Idiom[], messageTerms: readonly string[], max: number): string[] {
  if (max <= 0 || idioms.length === 0) return []
  const used = (word: string): boolean => messageTerms.some((term) => termSimilarity(term, word) > 0)
  const ordered = [...idioms].sort(
    (a, b) => Number(used(b.word)) - Number(used(a.word)) || b.score - a.score || b.lastSeen - a.lastSeen || a.word.localeCompare(b.word),
  )
  const out: string[] = []
  for (const idiom of ordered) {
    if (!out.includes(idiom.word)) out.push(idiom.word)
    if (out.length >= max) break
  }
  return out
}
