-- @dsh-memory/store on PostgreSQL, schema v3: who wrote what, as SQLite's
-- migrations/store/0006_user_identity.sql. Every row the store writes carries the user of the
-- session that wrote it (`created_by`); rows from before are '' (unattributed: visible to
-- everyone). Global memories, global scenes and the global persona are private to their writer.
-- Keep in sync with src/core/pg-schema.ts (a contract test compares the two).
ALTER TABLE store_conversations ADD COLUMN created_by TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE store_messages ADD COLUMN created_by TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE store_memories ADD COLUMN created_by TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE store_scenes ADD COLUMN created_by TEXT COLLATE "C" NOT NULL DEFAULT '';
-- In the audit log it is the user whose session made the change (`actor` stays the plugin).
ALTER TABLE store_audit ADD COLUMN created_by TEXT COLLATE "C" NOT NULL DEFAULT '';

-- One global persona per user: the key gains `owner` (the user for a global persona, '' for a
-- workspace's, which the team shares). Existing documents become the unattributed ones.
ALTER TABLE store_persona ADD COLUMN owner TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE store_persona ADD COLUMN created_by TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE store_persona ADD CONSTRAINT store_persona_owner_global CHECK (scope = 'global' OR owner = '');
ALTER TABLE store_persona DROP CONSTRAINT store_persona_pkey;
ALTER TABLE store_persona ADD PRIMARY KEY (scope, workspace, owner);
