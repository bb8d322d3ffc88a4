-- @dsh-memory/recall schema v1 on PostgreSQL: the same tables as migrations/recall/0001_state.sql,
-- applied by the store's migration runner under owner 'recall' with search_path set to the
-- store's schema (names are unqualified). Ids, states, counters and times only: never memory text.
-- Times are epoch milliseconds (bigint); switches are boolean; text compares in code-point order
-- (COLLATE "C", like SQLite's BINARY). Keep in sync with src/core/pg-state-schema.ts.

-- A session's memory mode and injection switch; no row = the session runs on the defaults.
CREATE TABLE recall_session_settings (
  session_id TEXT COLLATE "C" PRIMARY KEY,
  mode TEXT COLLATE "C" NOT NULL CHECK (mode IN ('auto', 'chat', 'work', 'off')),
  inject TEXT COLLATE "C" NOT NULL CHECK (inject IN ('follow', 'on', 'off')),
  updated_at BIGINT NOT NULL
);

-- Which explicit layers a session enabled; no row = none (automatic recall).
CREATE TABLE recall_layer_sessions (
  session_id TEXT COLLATE "C" PRIMARY KEY,
  global_enabled BOOLEAN NOT NULL,
  workspace_enabled BOOLEAN NOT NULL,
  updated_at BIGINT NOT NULL
);

-- One row per layer snapshot of a session (the injection ledger). `id` is the stable
-- injection id, also the host message id; `position` keeps the session's records oldest first.
CREATE TABLE recall_injections (
  id TEXT COLLATE "C" PRIMARY KEY,
  session_id TEXT COLLATE "C" NOT NULL REFERENCES recall_layer_sessions (session_id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  layer TEXT COLLATE "C" NOT NULL CHECK (layer IN ('global', 'workspace')),
  layer_key TEXT COLLATE "C" NOT NULL,
  revision INTEGER NOT NULL,
  generation INTEGER NOT NULL,
  state TEXT COLLATE "C" NOT NULL CHECK (state IN ('desired', 'queued', 'committed', 'superseded', 'cancelled')),
  desired_at BIGINT NOT NULL,
  queued_at BIGINT,
  committed_at BIGINT,
  seq INTEGER,
  entries INTEGER NOT NULL DEFAULT 0,
  tokens INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX recall_injections_position ON recall_injections (session_id, position);
-- The ledger's invariant, kept by the database too: at most one live snapshot per session and layer.
CREATE UNIQUE INDEX recall_injections_live ON recall_injections (session_id, layer) WHERE state IN ('desired', 'queued');

-- The lifecycle's shared counters, one row: completed user turns since the last review and the
-- retention clock (NULL until the first pass starts it).
CREATE TABLE recall_lifecycle (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  turns_since_review INTEGER NOT NULL DEFAULT 0,
  turns_total BIGINT NOT NULL DEFAULT 0,
  last_turn_at BIGINT NOT NULL DEFAULT 0,
  last_review_at BIGINT NOT NULL DEFAULT 0,
  last_sweep_at BIGINT
);

-- The consolidation schedule of each memory layer ('global' or 'workspace:<path>').
CREATE TABLE recall_layer_schedules (
  layer_key TEXT COLLATE "C" PRIMARY KEY,
  consolidated_revision INTEGER NOT NULL,
  last_run_at BIGINT NOT NULL,
  due_at BIGINT
);
