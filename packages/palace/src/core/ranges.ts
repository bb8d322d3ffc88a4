/** Inclusive turn ranges `[from, to]`, kept sorted and merged. Turn numbers are log seqs. */
export type TurnRange = readonly [from: number, to: number]

/**
 * Merge ranges into sorted, non-overlapping form. Two ranges merge when they overlap or
 * touch through turns that do not exist (`known` lists the turns that do); without `known`
 * only numerically adjacent ranges merge.
 */
export function mergeRanges(ranges: readonly TurnRange[], known?: readonly number[]): TurnRange[] {
  const sorted = [...ranges].filter(([a, b]) => Number.isFinite(a) && Number.isFinite(b) && a <= b).sort((x, y) => x[0] - y[0] || x[1] - y[1])
  const out: [number, number][] = []
  for (const [from, to] of sorted) {
    const last = out[out.length - 1]
    if (last && (from <= last[1] + 1 || (known !== undefined && noTurnBetween(known, last[1], from)))) {
      last[1] = Math.max(last[1], to)
    } else {
      out.push([from, to])
    }
  }
  return out
}

function noTurnBetween(known: readonly number[], after: number, before: number): boolean {
  return !known.some((turn) => turn > after && turn < before)
}

/** Ranges covering exactly `turns` (sorted), merging runs that have no other known turn between them. */
export function rangesOf(turns: readonly number[], known?: readonly number[]): TurnRange[] {
  return mergeRanges(
    turns.map((turn) => [turn, turn] as const),
    known,
  )
}

/** True when `turn` lies in one of the ranges. */
export function inRanges(ranges: readonly TurnRange[], turn: number): boolean {
  return ranges.some(([from, to]) => turn >= from && turn <= to)
}

/** Human form: `3–57, 60`. */
export function formatRanges(ranges: readonly TurnRange[]): string {
  if (ranges.length === 0) return '(none)'
  return ranges.map(([from, to]) => (from === to ? String(from) : `${from}–${to}`)).join(', ')
}
