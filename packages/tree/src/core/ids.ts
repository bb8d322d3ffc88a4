import { randomBytes } from 'node:crypto'

/** Id prefixes: they tell a reader (and the model) what an id names. */
export type IdPrefix = 'pj' | 'it' | 'br' | 'cp'

// Lower-case Crockford-like alphabet without look-alikes (no i, l, o, u).
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'

/**
 * A short random id such as `br-7k2f9x3m`: 40 random bits, enough for the few thousand
 * rows a project has (uniqueness is enforced by the primary key anyway), and short enough
 * that a model copies it back without mistakes.
 */
export function newId(prefix: IdPrefix): string {
  const bytes = randomBytes(8)
  let out = ''
  for (let i = 0; i < 8; i++) out += ALPHABET[bytes[i]! & 31]
  return `${prefix}-${out}`
}
