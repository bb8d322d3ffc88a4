-- @dsh-memory/distill schema v1: the distiller's own bookkeeping, applied by the store's
-- migration runner under owner 'distill'. Before this migration the same state lived as
-- versioned JSON under `distill.*` keys of store_meta; the package moves it here at its first
-- writable open (see src/core/upgrade.ts) and removes those keys.

-- One row per conversation the distiller has seen: its cursor, ramp stage, retry state, the
-- give-up mark and the lease that keeps two processes from paying for the same slice.
-- `pending` = 1 while the conversation may have undistilled messages (the start-up index).
CREATE TABLE distill_conversations (
  conversation_id TEXT PRIMARY KEY,
  cursor_seq INTEGER NOT NULL DEFAULT -1,
  stage INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  not_before INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  last_run_at INTEGER,
  gave_up_at INTEGER,
  lease_owner TEXT,
  lease_until INTEGER,
  pending INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX distill_conversations_pending ON distill_conversations(pending) WHERE pending = 1;

-- Message ranges given up on (the model's reply stayed invalid twice); the newest 20 per
-- conversation are kept for inspection.
CREATE TABLE distill_skipped (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  conversation_id TEXT NOT NULL,
  from_seq INTEGER NOT NULL,
  to_seq INTEGER NOT NULL,
  at INTEGER NOT NULL,
  reason TEXT NOT NULL
);
CREATE INDEX distill_skipped_conversation ON distill_skipped(conversation_id, id);

-- L2/L3 counters of one scope key (`global` or `workspace:<path>`).
CREATE TABLE distill_layers (
  scope_key TEXT PRIMARY KEY,
  since_l2 INTEGER NOT NULL DEFAULT 0,
  since_l3 INTEGER NOT NULL DEFAULT 0,
  last_l2_at INTEGER NOT NULL DEFAULT 0,
  last_l3_at INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  not_before INTEGER NOT NULL DEFAULT 0,
  last_error TEXT
);

-- Single values of the distiller (e.g. `scan`: when the last start-up scan began).
CREATE TABLE distill_marks (
  name TEXT PRIMARY KEY,
  at INTEGER NOT NULL
);

-- The cost ledger: one row per model call attempt (failed attempts included, with zero
-- tokens, since providers do not bill a refused request). `day` is the UTC day of `at`, kept
-- as a column so the per-day totals and retention are index range scans.
CREATE TABLE distill_calls (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at INTEGER NOT NULL,
  day TEXT NOT NULL,
  layer TEXT NOT NULL,
  provider TEXT NOT NULL,
  model TEXT NOT NULL,
  outcome TEXT NOT NULL,
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  cache_read_tokens INTEGER NOT NULL,
  estimated INTEGER NOT NULL DEFAULT 0,
  duration_ms INTEGER,
  conversation_id TEXT
);
CREATE INDEX distill_calls_day ON distill_calls(day);

-- Per-day totals carried over from the ledger that predates the per-call rows (it kept one
-- bucket per day and route, never single calls). Rows are never added after the upgrade;
-- retention drops them by day like calls.
CREATE TABLE distill_carried_days (
  day TEXT NOT NULL,
  provider TEXT NOT NULL,
  model TEXT NOT NULL,
  layer TEXT NOT NULL,
  calls INTEGER NOT NULL,
  failures INTEGER NOT NULL,
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  cache_read_tokens INTEGER NOT NULL,
  estimated_calls INTEGER NOT NULL,
  PRIMARY KEY (day, provider, model, layer)
);
