-- @dsh-memory/store schema v8: a message keeps one vector per model (issue #20 follow-up).
-- Schema 7 kept one per message, a new vector replacing the old whatever its model: in a team
-- store where two members' recall embed with different models, each one's background backfill
-- found the other's vectors "missing" for its own model and overwrote them, every turn, for
-- ever (the same for one user switching embedders). Now the key is (message_id,
-- embedding_model): a model's vector replaces only that model's, and `messages.deleteEmbeddings`
-- drops the vectors of a model nobody uses any more.
-- SQLite cannot change a primary key in place, so the table is rebuilt and every row copied.
-- The new key's index begins with message_id, so the cascade from a deleted message (or
-- conversation) stays an index probe.
-- Keep in sync with src/core/schema.ts (a test compares the two).
CREATE TABLE store_message_vectors_v8 (
  message_id TEXT NOT NULL REFERENCES store_messages (id) ON DELETE CASCADE,
  embedding_model TEXT NOT NULL CHECK (embedding_model <> ''),
  embedding_dims INTEGER NOT NULL CHECK (embedding_dims > 0),
  -- float32 little-endian, as store_memories.embedding.
  embedding BLOB NOT NULL CHECK (length(embedding) = 4 * embedding_dims),
  PRIMARY KEY (message_id, embedding_model)
);
INSERT INTO store_message_vectors_v8 (message_id, embedding_model, embedding_dims, embedding)
SELECT message_id, embedding_model, embedding_dims, embedding FROM store_message_vectors;
DROP TABLE store_message_vectors;
ALTER TABLE store_message_vectors_v8 RENAME TO store_message_vectors;
-- As in schema 7 (see 0007): `missingEmbeddings` probes it per message without reading the
-- vector row, and it counts or deletes one model's vectors without reading the others.
CREATE UNIQUE INDEX store_message_vectors_model ON store_message_vectors (embedding_model, message_id);
