/**
 * Sentence vectors fused into a turn ranking (#20, round 6 in apps/cli/README.md): each turn's
 * keyword score over the best plus a weight times its standardised similarity to the query. The
 * similarity gets the turn ranking's context windows, as the keyword score does, so a reply
 * that only paraphrases its question's topic borrows its neighbour's closeness.
 *
 * Conversation search runs it when embeddings are configured (`fuseConversationVectors` in
 * `recall-engine.ts`, over the vectors the store keeps of messages); `dsh-memory bench locomo
 * --minilm` measures that path.
 */
import { TURN_RANKING } from './ranking.ts'

/**
 * Weight of the standardised similarity. Chosen on the LoCoMo tune split only (the best any@5 +
 * any@10 of 0.05 / 0.1 / 0.15 / 0.2 / 0.3 / 0.5 with MiniLM); the held-out figures are in
 * apps/cli/README.md.
 */
export const TURN_VECTOR_WEIGHT = 0.15

/** A ranked turn: its id and its ranking score (higher is better). */
export interface ScoredTurn {
  readonly id: string
  readonly score: number
}

/** A neighbour of a turn in its conversation and how many turns away it is. */
export interface TurnNeighbour {
  readonly id: string
  readonly distance: number
}

/**
 * Re-rank `ranked` with sentence vectors: score / the best score + `weight` × z, where z is the
 * turn's similarity (cosine with the query, plus {@link TURN_RANKING}'s context share of the
 * best neighbour's within its span) standardised over the turns that have one. A turn without a
 * similarity (no vector: MiniLM's CJK guard) adds nothing; when no turn has one, the order is
 * unchanged. When no turn has a keyword score (all found by their vectors) the keyword share is 0
 * and the similarity alone orders them.
 * @param similarity cosine of a turn with the query; `undefined` when either has no vector
 * @param neighbours turns of the same conversation near `id`, with their distance (those beyond
 *   the context span are ignored)
 * @returns the turns, best first (ties keep their order in `ranked`)
 */
export function fuseTurnVectors(
  ranked: readonly ScoredTurn[],
  similarity: (id: string) => number | undefined,
  neighbours: (id: string) => Iterable<TurnNeighbour>,
  weight: number = TURN_VECTOR_WEIGHT,
): ScoredTurn[] {
  const { span, weight: share, falloff } = TURN_RANKING.context
  const closeness = ranked.map(({ id }) => {
    const own = similarity(id)
    if (own === undefined) return undefined
    let best = 0
    for (const neighbour of neighbours(id)) {
      if (neighbour.distance < 1 || neighbour.distance > span) continue
      const other = similarity(neighbour.id)
      if (other !== undefined) best = Math.max(best, other * falloff ** (neighbour.distance - 1))
    }
    return own + share * best
  })
  const known = closeness.filter((value): value is number => value !== undefined)
  const bestScore = ranked.reduce((best, turn) => Math.max(best, turn.score), 0)
  if (known.length === 0) return [...ranked]
  // Without any keyword score (turns found by their vectors alone) the similarity orders them.
  const keywordShare = (score: number) => (bestScore > 0 ? score / bestScore : 0)
  const mean = known.reduce((sum, value) => sum + value, 0) / known.length
  const deviation = Math.sqrt(known.reduce((sum, value) => sum + (value - mean) ** 2, 0) / known.length) || 1
  return ranked
    .map((turn, index) => {
      const value = closeness[index]
      return { turn: { id: turn.id, score: keywordShare(turn.score) + (value === undefined ? 0 : (weight * (value - mean)) / deviation) }, index }
    })
    .sort((a, b) => b.turn.score - a.turn.score || a.index - b.index)
    .map(({ turn }) => turn)
}
