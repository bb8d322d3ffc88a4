/**
 * The PostgreSQL form of the store's search terms: a `tsvector` literal of the tokenizer's terms,
 * encoded as for FTS5 ({@link encodeTerm}), and the `tsquery` of a planned query. Both are
 * passed as parameters and cast (`$1::tsvector`, `$2::tsquery`): the type's input function
 * takes quoted lexemes verbatim, so no text search configuration re-splits, stems or drops
 * anything and CJK terms stay exactly as the tokenizer cut them.
 */
import { encodeTerm, type QueryForm } from './search-plan.ts'
import { searchTokenize } from './tokenizer.ts'

/** PostgreSQL refuses a lexeme over 2046 bytes ("word is too long"); such a term (a pasted blob) is left out. */
const MAX_LEXEME_BYTES = 2046
/** PostgreSQL keeps at most 256 positions per lexeme; term frequency is counted up to that. */
const MAX_POSITIONS = 256
/**
 * A tsvector holds at most 1 MiB. Per lexeme it costs its bytes plus an entry header, a
 * position count and two bytes per position (rounded up here); terms past the budget are left
 * out (only a message near the 100 000-character limit made of distinct CJK bigrams gets there).
 */
const VECTOR_BUDGET_BYTES = 1_000_000

/**
 * The columns and indexes of migrations 0002 and 0004 that `pg-schema.ts` leaves undeclared:
 * search writes and reads them in SQL (the terms; a message's workspace, kept by triggers), and a
 * row read through drizzle must never carry them into a record (`toMessage` spreads the row).
 */
export const PG_SEARCH_COLUMNS: Readonly<Record<string, readonly string[]>> = { store_messages: ['search_terms', 'workspace'], store_memories: ['search_terms'] }
export const PG_SEARCH_INDEXES: readonly string[] = ['store_messages_search', 'store_memories_search', 'store_messages_workspace_created']

const POSITIONS = Array.from({ length: MAX_POSITIONS }, (_, i) => String(i + 1))

/** A term as a quoted lexeme. Encoded terms hold no quote or backslash; escaping keeps that an assumption, not a risk. */
function lexeme(term: string): string {
  return `'${term.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`
}

/**
 * The `search_terms` value of a message or memory text: pass it as a parameter cast to
 * `::tsvector`, in the statement that writes the text, so the row and its terms commit
 * together. Positions are occurrence numbers (1..n per term): ranking reads term frequency
 * from them, never proximity.
 */
export function searchVectorOf(text: string): string {
  const counts = new Map<string, number>()
  for (const term of searchTokenize(text)) {
    const encoded = encodeTerm(term)
    counts.set(encoded, (counts.get(encoded) ?? 0) + 1)
  }
  const parts: string[] = []
  let bytes = 0
  for (const [term, count] of counts) {
    const length = Buffer.byteLength(term, 'utf8')
    if (length > MAX_LEXEME_BYTES) continue
    const positions = Math.min(count, MAX_POSITIONS)
    const size = length + 8 + 2 * positions
    if (bytes + size > VECTOR_BUDGET_BYTES) continue
    bytes += size
    parts.push(`${lexeme(term)}:${POSITIONS.slice(0, positions).join(',')}`)
  }
  return parts.join(' ')
}

/** True when PostgreSQL can hold `term` as a lexeme (a longer one is in no tsvector either). */
export function indexableTerm(term: string): boolean {
  return Buffer.byteLength(term, 'utf8') <= MAX_LEXEME_BYTES
}

/** The `tsquery` of one exact term. */
export function termQuery(term: string): string {
  return lexeme(term)
}

/** The `tsquery` of a planned query: the OR of its forms, prefix forms as `:*`. */
export function formsQuery(forms: readonly QueryForm[]): string {
  return forms.map((form) => `${lexeme(form.term)}${form.prefix ? ':*' : ''}`).join(' | ')
}
