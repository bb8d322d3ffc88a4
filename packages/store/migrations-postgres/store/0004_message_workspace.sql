-- @dsh-memory/store on PostgreSQL, schema v4: each message carries its conversation's workspace,
-- so a message search in one workspace reads only that workspace's matches.
--
-- Before, the workspace filter of a message search was a join to store_conversations applied
-- after the heap read: a common term's matches in every workspace were read and nine in ten
-- thrown away (at a million messages in ten workspaces, ~46 000 rows read for 1 000 kept). With
-- the column, PostgreSQL ANDs the GIN index's bitmap with the (workspace, created_at) btree
-- before it reads a row (src/core/pg-search.ts).
--
-- Derived data kept by triggers, so no write path (the repositories, the bulk import, a
-- migrate, a conversation moved to another workspace by the workspace carry-over) can forget it.
-- Not declared in pg-schema.ts, like search_terms: only search reads it (test/pg-schema.test.ts
-- knows it from pg-search-terms.ts). SQLite's search keeps its own (conversation, created_at) rows
-- beside FTS5 and needs no such column.
ALTER TABLE store_messages ADD COLUMN workspace TEXT COLLATE "C";
UPDATE store_messages AS m SET workspace = c.workspace FROM store_conversations AS c WHERE c.id = m.conversation_id;
CREATE INDEX store_messages_workspace_created ON store_messages (workspace, created_at);

-- search_path pinned to the store's schema (the one this migration runs in), whoever writes.
CREATE FUNCTION store_messages_set_workspace() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  NEW.workspace := (SELECT workspace FROM store_conversations WHERE id = NEW.conversation_id);
  RETURN NEW;
END
$$;

CREATE TRIGGER store_messages_workspace BEFORE INSERT OR UPDATE OF conversation_id, workspace ON store_messages
  FOR EACH ROW EXECUTE FUNCTION store_messages_set_workspace();

CREATE FUNCTION store_conversations_move_messages() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  UPDATE store_messages SET workspace = NEW.workspace WHERE conversation_id = NEW.id;
  RETURN NULL;
END
$$;

CREATE TRIGGER store_conversations_workspace AFTER UPDATE OF workspace ON store_conversations
  FOR EACH ROW WHEN (OLD.workspace IS DISTINCT FROM NEW.workspace) EXECUTE FUNCTION store_conversations_move_messages();
