-- @dsh-memory/store on PostgreSQL, schema v5: vectors of L0 messages (issue #20), the same table
-- as SQLite's migration 0007 (see there): one vector per message, derived data recomputed
-- from the text (no revision, audit row or change-log entry; not exported), deleted with its
-- message by the cascade. `real[]` is float32, like store_memories.embedding.
CREATE TABLE store_message_vectors (
  message_id TEXT COLLATE "C" PRIMARY KEY NOT NULL REFERENCES store_messages (id) ON DELETE CASCADE,
  embedding_model TEXT COLLATE "C" NOT NULL CHECK (embedding_model <> ''),
  embedding_dims INTEGER NOT NULL CHECK (embedding_dims > 0),
  embedding REAL[] NOT NULL CHECK (cardinality(embedding) = embedding_dims)
);
-- `missingEmbeddings`' anti-join probes it per message (an index-only scan, the vector unread);
-- it also counts a model's vectors without reading them.
CREATE UNIQUE INDEX store_message_vectors_model ON store_message_vectors (embedding_model, message_id);
