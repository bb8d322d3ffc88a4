-- @dsh-memory/palace schema v1: the search index of the workspace archives, in the palace's own
-- tables (owner 'palace'), never in the store's L0 conversations. Derived data: the archive
-- files on disk stay the source of truth, and the index is rebuilt from them whenever it is
-- behind (a crash, an upgrade, a copied folder, these tables dropped).
-- Keep in sync with src/core/index-schema.ts (a test compares the two).

-- How far each memory (namespace) of a workspace is indexed: `turns` index.jsonl entries of
-- the folder owned by `session_id` (a memory name reused by another session after a rename
-- is another folder: its rows are rebuilt).
CREATE TABLE palace_namespaces (
  workspace TEXT NOT NULL,
  namespace TEXT NOT NULL,
  session_id TEXT NOT NULL,
  turns INTEGER NOT NULL,
  version INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (workspace, namespace)
);

-- One row per archived turn: the store tokenizer's terms of its (redacted) text, unique and
-- space-joined, and the id of the archive operation that wrote the turn (a row of another
-- archive under the same memory name is stale). The text itself stays in the volume files.
CREATE TABLE palace_turns (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  workspace TEXT NOT NULL,
  namespace TEXT NOT NULL,
  turn INTEGER NOT NULL,
  category TEXT NOT NULL,
  speaker TEXT NOT NULL,
  archived_at INTEGER NOT NULL,
  archive_id TEXT NOT NULL,
  terms TEXT NOT NULL
);
CREATE UNIQUE INDEX palace_turns_turn ON palace_turns (workspace, namespace, turn);
