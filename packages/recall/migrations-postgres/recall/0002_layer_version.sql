-- @dsh-memory/recall schema v2 on PostgreSQL (as migrations/recall/0002): a write counter on
-- each session's layer state. A write that names the version it was computed from lands only
-- while the stored version is still that one (checked and bumped in one write transaction),
-- so of two processes sharing the database that deliver the same snapshot, exactly one queues it.
ALTER TABLE recall_layer_sessions ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
