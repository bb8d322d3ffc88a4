/**
 * Seeded randomness, so every "random" kill point and input of the suites is the same on every
 * run and a failure can be replayed. The generator is the benchmarks' own (mulberry32).
 */
export { seededRandom } from 'dsh-memory'

/** An integer in [min, max] from `random`. */
export function randomInt(random: () => number, min: number, max: number): number {
  return min + Math.floor(random() * (max - min + 1))
}
