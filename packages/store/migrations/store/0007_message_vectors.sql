-- @dsh-memory/store schema v7: vectors of L0 messages (issue #20). Conversation search ranks
-- turns by their words and, with these, by meaning: recall computes a message's vector in the
-- background with its configured embedder and keeps it here. Derived data, like a memory's
-- `embedding`: recomputed from the text whenever it is missing, so it has no revision, no audit
-- row and no change-log entry, and `export` leaves it out. One vector per message: a new one
-- replaces the old whatever its model; `embedding_model` (recall's `model@dimensions`) tells a
-- reader whether it is the one it can compare with. Deleting a message (or its conversation)
-- deletes its vector by the cascade.
-- Keep in sync with src/core/schema.ts (a test compares the two).
CREATE TABLE store_message_vectors (
  message_id TEXT PRIMARY KEY NOT NULL REFERENCES store_messages (id) ON DELETE CASCADE,
  embedding_model TEXT NOT NULL CHECK (embedding_model <> ''),
  embedding_dims INTEGER NOT NULL CHECK (embedding_dims > 0),
  -- float32 little-endian, as store_memories.embedding.
  embedding BLOB NOT NULL CHECK (length(embedding) = 4 * embedding_dims)
);
-- `missingEmbeddings` walks the messages newest first and asks, for each, whether it has a
-- vector of the model: one probe of this index, which answers without reading the vector row.
-- UNIQUE although message_id alone is: only then does SQLite's planner prefer it to the primary
-- key's index plus a row read for the model (2.5 times faster on 10k messages, EXPLAIN QUERY
-- PLAN "USING COVERING INDEX"). It also counts a model's vectors without reading them.
CREATE UNIQUE INDEX store_message_vectors_model ON store_message_vectors (embedding_model, message_id);
