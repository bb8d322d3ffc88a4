-- @dsh-memory/store schema v1: the L0-L3 memory model, audit log, change log and meta.
-- Times are epoch milliseconds; ids are UUIDv7 text; JSON columns hold JSON text.
-- Keep in sync with src/core/schema.ts (a test compares the two).

CREATE TABLE store_meta (
  key TEXT PRIMARY KEY NOT NULL,
  value TEXT NOT NULL,
  updated_at INTEGER NOT NULL
);
-- A random identity for this database, so derived files (the search index) can tell
-- whether they were built from it or from a copy of another one.
INSERT INTO store_meta (key, value, updated_at)
VALUES ('store.instance-id', lower(hex(randomblob(16))), CAST(unixepoch('subsec') * 1000 AS INTEGER));

-- L0 container: one host session.
CREATE TABLE store_conversations (
  id TEXT PRIMARY KEY NOT NULL,
  workspace TEXT NOT NULL DEFAULT '',
  title TEXT,
  started_at INTEGER NOT NULL,
  ended_at INTEGER,
  updated_at INTEGER NOT NULL,
  flags TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX store_conversations_workspace_updated ON store_conversations (workspace, updated_at);
CREATE INDEX store_conversations_updated ON store_conversations (updated_at);

-- L0: verbatim (redacted) messages. (conversation_id, host_message_id) is the idempotency key.
CREATE TABLE store_messages (
  id TEXT PRIMARY KEY NOT NULL,
  conversation_id TEXT NOT NULL REFERENCES store_conversations (id) ON DELETE CASCADE,
  host_message_id TEXT NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
  text TEXT NOT NULL,
  turn INTEGER NOT NULL DEFAULT 0,
  seq INTEGER NOT NULL,
  source_ids TEXT NOT NULL DEFAULT '[]',
  tokens_estimate INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  flags TEXT NOT NULL DEFAULT '{}'
);
CREATE UNIQUE INDEX store_messages_host_id ON store_messages (conversation_id, host_message_id);
CREATE INDEX store_messages_conversation_seq ON store_messages (conversation_id, seq);
CREATE INDEX store_messages_created ON store_messages (created_at);

-- L1: atomic memories. A superseded row keeps superseded_by = its replacement.
CREATE TABLE store_memories (
  id TEXT PRIMARY KEY NOT NULL,
  kind TEXT NOT NULL,
  text TEXT NOT NULL,
  scope TEXT NOT NULL CHECK (scope IN ('global', 'workspace', 'session')),
  workspace TEXT,
  session_id TEXT,
  source_message_ids TEXT NOT NULL DEFAULT '[]',
  priority REAL NOT NULL DEFAULT 0,
  revision INTEGER NOT NULL DEFAULT 1,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  last_recalled_at INTEGER,
  superseded_by TEXT REFERENCES store_memories (id),
  embedding BLOB,
  embedding_dims INTEGER,
  embedding_model TEXT,
  flags TEXT NOT NULL DEFAULT '{}',
  CHECK (scope <> 'workspace' OR workspace IS NOT NULL),
  CHECK (scope <> 'session' OR session_id IS NOT NULL),
  CHECK (scope <> 'global' OR workspace IS NULL)
);
CREATE INDEX store_memories_scope ON store_memories (scope, workspace, session_id);
CREATE INDEX store_memories_created ON store_memories (created_at);
CREATE INDEX store_memories_superseded_by ON store_memories (superseded_by);

-- L2: scenes grouping memories.
CREATE TABLE store_scenes (
  id TEXT PRIMARY KEY NOT NULL,
  title TEXT NOT NULL,
  summary TEXT NOT NULL,
  scope TEXT NOT NULL CHECK (scope IN ('global', 'workspace', 'session')),
  workspace TEXT,
  session_id TEXT,
  memory_ids TEXT NOT NULL DEFAULT '[]',
  revision INTEGER NOT NULL DEFAULT 1,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  flags TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX store_scenes_scope ON store_scenes (scope, workspace, session_id);

-- L3: one persona document per (scope, workspace); workspace is '' for the global one
-- because SQLite treats NULLs as distinct in a primary key.
CREATE TABLE store_persona (
  scope TEXT NOT NULL CHECK (scope IN ('global', 'workspace')),
  workspace TEXT NOT NULL DEFAULT '',
  text TEXT NOT NULL,
  version INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (scope, workspace)
);

-- Who changed what, when. Never content: no column here may hold user text.
CREATE TABLE store_audit (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at INTEGER NOT NULL,
  op TEXT NOT NULL,
  entity TEXT NOT NULL,
  entity_id TEXT NOT NULL,
  actor TEXT,
  revision INTEGER
);
CREATE INDEX store_audit_entity ON store_audit (entity, entity_id);
CREATE INDEX store_audit_at ON store_audit (at);

-- Written in the same transaction as every write, so derived indexes in any process can
-- catch up with `WHERE seq > ?`. AUTOINCREMENT: seq values are never reused.
CREATE TABLE store_changes (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  entity TEXT NOT NULL,
  entity_id TEXT NOT NULL,
  op TEXT NOT NULL CHECK (op IN ('insert', 'update', 'delete')),
  at INTEGER NOT NULL
);
