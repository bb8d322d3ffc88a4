-- @dsh-memory/store on PostgreSQL, schema v6: a message keeps one vector per model, as SQLite's
-- migration 0008 (see there for why). The primary key changes in place to (message_id,
-- embedding_model): every row stays, and the key's index, beginning with message_id, keeps the
-- cascade from a deleted message an index probe. The unique index (embedding_model,
-- message_id) that `missingEmbeddings` probes is unchanged.
-- Keep in sync with src/core/pg-schema.ts (a contract test compares the two).
ALTER TABLE store_message_vectors DROP CONSTRAINT store_message_vectors_pkey, ADD PRIMARY KEY (message_id, embedding_model);
