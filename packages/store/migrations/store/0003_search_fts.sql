-- @dsh-memory/store schema v3: full-text search in SQLite FTS5, written in the same
-- transaction as the rows (replaces the persisted MiniSearch file `<db>.search-index`).
--
-- The FTS column holds the output of the store's own tokenizer (ICU words + CJK bigrams),
-- space-joined, each term encoded so FTS5's `ascii` tokenizer keeps it whole (see
-- src/core/search-index.ts). The tables are contentless: the text stays in the row tables.
-- Filled for existing rows when the store opens (backfill); `store.search-fts` in store_meta
-- records the tokenizer they were built with and how far a backfill got.

-- One search document per message. `doc` is the FTS rowid (the message table's own rowid is
-- not stable across VACUUM); the immutable filter columns live here so a search can filter
-- without visiting the message rows.
CREATE TABLE store_search_messages (
  doc INTEGER PRIMARY KEY,
  message_id TEXT NOT NULL UNIQUE,
  conversation_id TEXT NOT NULL,
  role TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX store_search_messages_conversation ON store_search_messages (conversation_id);

CREATE VIRTUAL TABLE store_search_messages_fts USING fts5(
  terms, content='', contentless_delete=1, tokenize="ascii tokenchars '_'"
);
CREATE VIRTUAL TABLE store_search_messages_vocab USING fts5vocab(store_search_messages_fts, row);

-- One search document per memory; scope filters read the memory row (they change on
-- supersede, merge and update).
CREATE TABLE store_search_memories (
  doc INTEGER PRIMARY KEY,
  memory_id TEXT NOT NULL UNIQUE
);

CREATE VIRTUAL TABLE store_search_memories_fts USING fts5(
  terms, content='', contentless_delete=1, tokenize="ascii tokenchars '_'"
);
CREATE VIRTUAL TABLE store_search_memories_vocab USING fts5vocab(store_search_memories_fts, row);
