-- @dsh-memory/recall schema v1: recall's own state (session modes, the explicit-layer
-- injection ledger, the lifecycle schedules). Applied by the store's migration runner under
-- owner 'recall'. Ids, states, counters and times only: never memory text.

-- A session's memory mode and injection switch; no row = the session runs on the defaults.
CREATE TABLE recall_session_settings (
  session_id TEXT PRIMARY KEY,
  mode TEXT NOT NULL CHECK (mode IN ('auto', 'chat', 'work', 'off')),
  inject TEXT NOT NULL CHECK (inject IN ('follow', 'on', 'off')),
  updated_at INTEGER NOT NULL
);

-- Which explicit layers a session enabled; no row = none (automatic recall).
CREATE TABLE recall_layer_sessions (
  session_id TEXT PRIMARY KEY,
  global_enabled INTEGER NOT NULL CHECK (global_enabled IN (0, 1)),
  workspace_enabled INTEGER NOT NULL CHECK (workspace_enabled IN (0, 1)),
  updated_at INTEGER NOT NULL
);

-- One row per layer snapshot of a session (the injection ledger). `id` is the stable
-- injection id, also the host message id; `position` keeps the session's records oldest first.
CREATE TABLE recall_injections (
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES recall_layer_sessions(session_id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  layer TEXT NOT NULL CHECK (layer IN ('global', 'workspace')),
  layer_key TEXT NOT NULL,
  revision INTEGER NOT NULL,
  generation INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('desired', 'queued', 'committed', 'superseded', 'cancelled')),
  desired_at INTEGER NOT NULL,
  queued_at INTEGER,
  committed_at INTEGER,
  seq INTEGER,
  entries INTEGER NOT NULL DEFAULT 0,
  tokens INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX recall_injections_position ON recall_injections(session_id, position);
-- The ledger's invariant, kept by the database too: at most one live snapshot per session and layer.
CREATE UNIQUE INDEX recall_injections_live ON recall_injections(session_id, layer) WHERE state IN ('desired', 'queued');

-- The lifecycle's shared counters, one row: completed user turns since the last review and the
-- retention clock (NULL until the first pass starts it).
CREATE TABLE recall_lifecycle (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  turns_since_review INTEGER NOT NULL DEFAULT 0,
  turns_total INTEGER NOT NULL DEFAULT 0,
  last_turn_at INTEGER NOT NULL DEFAULT 0,
  last_review_at INTEGER NOT NULL DEFAULT 0,
  last_sweep_at INTEGER
);

-- The consolidation schedule of each memory layer ('global' or 'workspace:<path>').
CREATE TABLE recall_layer_schedules (
  layer_key TEXT PRIMARY KEY,
  consolidated_revision INTEGER NOT NULL,
  last_run_at INTEGER NOT NULL,
  due_at INTEGER
);
