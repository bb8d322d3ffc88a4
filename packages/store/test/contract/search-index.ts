/**
 * What the search contract tests plant in each backend's index from outside the store (another
 * connection), to play an older version's index, a crash part-way through a backfill, or rows
 * written behind the store's back. Both indexes hold the same terms (`encodeTerm` of the
 * tokenizer's output); only where they keep them differs (SQLite: FTS5 tables beside the rows;
 * PostgreSQL: a tsvector column on the rows).
 */
import type { OpenedStore } from '../helpers.ts'
import type { Backend } from './backends.ts'

/** A SQL string literal. */
const literal = (text: string): string => `'${text.replace(/'/g, "''")}'`

/** A tsvector literal of already-encoded terms (they hold no quote or backslash). */
const vector = (terms: readonly string[]): string => literal(terms.map((term) => `'${term}'`).join(' '))

interface IndexAccess {
  /** The store_meta key of the index state. */
  stateKey: string
  /** Add `terms` (encoded) to the indexed terms of a memory, as an older tokenizer might have written them. */
  addMemoryTerms(id: string, terms: readonly string[]): string
  /** Forget every indexed document and the state: a database from before the index existed. */
  dropIndex: string
  /** Forget the terms of messages with an id after `id` (as if a backfill stopped there). */
  dropMessagesAfter(id: string): string
  /** The distinct indexed terms of memories. */
  memoryTerms: string
}

const ACCESS: Record<Backend['name'], IndexAccess> = {
  sqlite: {
    stateKey: 'store.search-fts',
    addMemoryTerms: (id, terms) =>
      `INSERT INTO store_search_memories_fts (rowid, terms) VALUES ((SELECT doc FROM store_search_memories WHERE memory_id = ${literal(id)}), ${literal(terms.join(' '))})`,
    dropIndex: `DELETE FROM store_search_messages;
      DELETE FROM store_search_memories;
      INSERT INTO store_search_messages_fts (store_search_messages_fts) VALUES ('delete-all');
      INSERT INTO store_search_memories_fts (store_search_memories_fts) VALUES ('delete-all');
      DELETE FROM store_meta WHERE key = 'store.search-fts'`,
    // 'delete-all' empties the terms of every message; the mapping rows up to `id` stay, so a
    // resumed backfill skips them.
    dropMessagesAfter: (id) => `DELETE FROM store_search_messages WHERE message_id > ${literal(id)};
      INSERT INTO store_search_messages_fts (store_search_messages_fts) VALUES ('delete-all')`,
    memoryTerms: 'SELECT term FROM store_search_memories_vocab',
  },
  postgres: {
    stateKey: 'store.search-pg',
    addMemoryTerms: (id, terms) => `UPDATE store_memories SET search_terms = search_terms || ${vector(terms)}::tsvector WHERE id = ${literal(id)}`,
    dropIndex: `UPDATE store_messages SET search_terms = NULL;
      UPDATE store_memories SET search_terms = NULL;
      DELETE FROM store_meta WHERE key = 'store.search-pg'`,
    // Only the rows after `id` lose their terms: a resumed rewrite starts after the cursor.
    dropMessagesAfter: (id) => `UPDATE store_messages SET search_terms = NULL WHERE id > ${literal(id)}`,
    memoryTerms: 'SELECT DISTINCT unnest(tsvector_to_array(search_terms)) AS term FROM store_memories',
  },
}

/** The index of `backend` as seen from outside the store. */
export function searchIndexOf(backend: Backend) {
  const access = ACCESS[backend.name]
  return {
    /** The recorded index state (tokenizer, backfill cursors). */
    state: async (store: OpenedStore): Promise<Record<string, unknown>> => {
      const [row] = await backend.sql(store, `SELECT value FROM store_meta WHERE key = ${literal(access.stateKey)}`)
      return JSON.parse(String(row?.value)) as Record<string, unknown>
    },
    setState: async (store: OpenedStore, state: Record<string, unknown>): Promise<void> => {
      await backend.sql(store, `UPDATE store_meta SET value = ${literal(JSON.stringify(state))} WHERE key = ${literal(access.stateKey)}`)
    },
    addMemoryTerms: async (store: OpenedStore, id: string, terms: readonly string[]): Promise<void> => {
      await backend.sql(store, access.addMemoryTerms(id, terms))
    },
    drop: async (store: OpenedStore): Promise<void> => {
      await backend.sql(store, access.dropIndex)
    },
    dropMessagesAfter: async (store: OpenedStore, id: string): Promise<void> => {
      await backend.sql(store, access.dropMessagesAfter(id))
    },
    memoryTerms: async (store: OpenedStore): Promise<string[]> => (await backend.sql(store, access.memoryTerms)).map((row) => String(row.term)).sort(),
  }
}
