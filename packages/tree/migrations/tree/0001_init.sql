-- @dsh-memory/tree schema v1: the memory tree (projects, mainline state, branches, checkpoints,
-- chat partition). Applied by the store's migration runner under owner 'tree'.

-- A project is one memory-tree root. `revision` is the optimistic-concurrency counter of its
-- mainline state: every change of items, branches, the current branch or the baseline bumps it.
CREATE TABLE tree_projects (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  name_key TEXT NOT NULL UNIQUE,
  stage INTEGER NOT NULL DEFAULT 1,
  baseline_checkpoint_id TEXT,
  current_branch_id TEXT,
  revision INTEGER NOT NULL DEFAULT 1,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);

-- Which project a workspace (absolute directory) belongs to; '' is the workspace-less default.
CREATE TABLE tree_bindings (
  workspace TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES tree_projects(id) ON DELETE CASCADE,
  updated_at INTEGER NOT NULL
);
CREATE INDEX tree_bindings_project ON tree_bindings(project_id);

-- Mainline state: constraints, decisions, outcomes and open questions.
CREATE TABLE tree_items (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES tree_projects(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('constraint', 'decision', 'outcome', 'question')),
  text TEXT NOT NULL,
  text_key TEXT NOT NULL,
  source TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'resolved', 'dropped')),
  stage INTEGER NOT NULL,
  branch_id TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (project_id, seq)
);
CREATE INDEX tree_items_project ON tree_items(project_id, status, seq);
CREATE INDEX tree_items_key ON tree_items(project_id, text_key);

-- Recent mainline turns (injection only). A checkpoint stamps them with its id: cleared.
CREATE TABLE tree_turns (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  project_id TEXT NOT NULL REFERENCES tree_projects(id) ON DELETE CASCADE,
  session_id TEXT NOT NULL DEFAULT '',
  role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
  text TEXT NOT NULL,
  stage INTEGER NOT NULL,
  checkpoint_id TEXT,
  created_at INTEGER NOT NULL
);
CREATE INDEX tree_turns_project ON tree_turns(project_id, checkpoint_id, id);

-- Branches: explorations with their own event log, never injected into the mainline.
-- `revision` bumps on every event so a merge computed from a stale log is refused.
CREATE TABLE tree_branches (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES tree_projects(id) ON DELETE CASCADE,
  title TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('active', 'merged', 'abandoned')),
  stage INTEGER NOT NULL,
  conclusion TEXT,
  checkpoint_id TEXT,
  revision INTEGER NOT NULL DEFAULT 1,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  closed_at INTEGER
);
CREATE INDEX tree_branches_project ON tree_branches(project_id, status, created_at);

CREATE TABLE tree_branch_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  branch_id TEXT NOT NULL REFERENCES tree_branches(id) ON DELETE CASCADE,
  kind TEXT NOT NULL CHECK (kind IN ('opened', 'user', 'assistant', 'note', 'merged', 'abandoned')),
  text TEXT NOT NULL,
  session_id TEXT NOT NULL DEFAULT '',
  created_at INTEGER NOT NULL
);
CREATE INDEX tree_branch_events_branch ON tree_branch_events(branch_id, id);

-- Checkpoints: a frozen review document of the mainline; the newest is the baseline.
-- `state` is versioned JSON ({"version":1,...}).
CREATE TABLE tree_checkpoints (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES tree_projects(id) ON DELETE CASCADE,
  stage INTEGER NOT NULL,
  title TEXT NOT NULL,
  review TEXT NOT NULL,
  document TEXT NOT NULL,
  state TEXT NOT NULL,
  revision INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX tree_checkpoints_project ON tree_checkpoints(project_id, created_at);

-- The chit-chat partition: never part of any project. Old messages fold into one digest row
-- per workspace (aggressive compression: details may be lost).
CREATE TABLE tree_chat (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  workspace TEXT NOT NULL DEFAULT '',
  session_id TEXT NOT NULL DEFAULT '',
  kind TEXT NOT NULL CHECK (kind IN ('message', 'digest')),
  role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'digest')),
  text TEXT NOT NULL,
  count INTEGER NOT NULL DEFAULT 1,
  first_at INTEGER NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX tree_chat_workspace ON tree_chat(workspace, kind, id);

-- Small settings (the active project for callers without a workspace).
CREATE TABLE tree_settings (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  updated_at INTEGER NOT NULL
);
