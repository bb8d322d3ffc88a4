-- @dsh-memory/store schema v6: who wrote what. Every row the store writes carries the user of
-- the session that wrote it (`created_by`); rows from before are '' (unattributed: visible to
-- everyone). Global memories, global scenes and the global persona are private to their writer.
-- Keep in sync with src/core/schema.ts (a test compares the two).
ALTER TABLE store_conversations ADD COLUMN created_by TEXT NOT NULL DEFAULT '';
ALTER TABLE store_messages ADD COLUMN created_by TEXT NOT NULL DEFAULT '';
ALTER TABLE store_memories ADD COLUMN created_by TEXT NOT NULL DEFAULT '';
ALTER TABLE store_scenes ADD COLUMN created_by TEXT NOT NULL DEFAULT '';
-- In the audit log it is the user whose session made the change (`actor` stays the plugin).
ALTER TABLE store_audit ADD COLUMN created_by TEXT NOT NULL DEFAULT '';

-- One global persona per user: the key gains `owner` (the user for a global persona, '' for a
-- workspace's, which the team shares). SQLite cannot change a primary key in place, so the
-- (small) table is rebuilt; the existing documents become the unattributed ones (owner '').
CREATE TABLE store_persona_v6 (
  scope TEXT NOT NULL CHECK (scope IN ('global', 'workspace')),
  workspace TEXT NOT NULL DEFAULT '',
  text TEXT NOT NULL,
  version INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  owner TEXT NOT NULL DEFAULT '',
  created_by TEXT NOT NULL DEFAULT '',
  CHECK (scope = 'global' OR owner = ''),
  PRIMARY KEY (scope, workspace, owner)
);
INSERT INTO store_persona_v6 (scope, workspace, text, version, updated_at)
SELECT scope, workspace, text, version, updated_at FROM store_persona;
DROP TABLE store_persona;
ALTER TABLE store_persona_v6 RENAME TO store_persona;
