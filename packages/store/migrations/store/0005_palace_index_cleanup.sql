-- @dsh-memory/store schema v5: L0 holds conversations only.
-- Until v5 the memory palace indexed its archive as fake conversations ('memory-palace:<hash>',
-- workspace key 'memory-palace:<workspace>'). The distiller's start-up scan took them for
-- conversations and extracted junk memories from archived tool output under that fake
-- workspace, which status views then listed as a workspace. The palace now keeps its index in
-- its own tables (owner 'palace') and rebuilds it from the archive files on disk, which stay
-- the source of truth: nothing here is the only copy of anything. This removes the fake
-- conversations, their messages and search rows, every memory, scene, persona and layer row
-- under a 'memory-palace:' key or sourced only from those messages, and meta keys naming them.
-- Each removal is written to store_changes, so derived indexes in other processes catch up.

CREATE TEMP TABLE palace_cleanup_conversations AS
SELECT id FROM store_conversations WHERE workspace LIKE 'memory-palace:%' OR id LIKE 'memory-palace:%';

CREATE TEMP TABLE palace_cleanup_messages AS
SELECT id FROM store_messages WHERE conversation_id IN (SELECT id FROM palace_cleanup_conversations);

-- Junk memories: placed under a fake workspace or session, or sourced only from archive rows.
CREATE TEMP TABLE palace_cleanup_memories AS
SELECT id FROM store_memories
WHERE workspace LIKE 'memory-palace:%'
   OR session_id LIKE 'memory-palace:%'
   OR (json_array_length(source_message_ids) > 0
       AND NOT EXISTS (SELECT 1 FROM json_each(store_memories.source_message_ids) AS src
                       WHERE src.value NOT IN (SELECT id FROM palace_cleanup_messages)));

-- A real memory a junk one superseded is current again.
UPDATE store_memories SET superseded_by = NULL
WHERE superseded_by IN (SELECT id FROM palace_cleanup_memories)
  AND id NOT IN (SELECT id FROM palace_cleanup_memories);

DELETE FROM store_search_memories_fts
WHERE rowid IN (SELECT doc FROM store_search_memories WHERE memory_id IN (SELECT id FROM palace_cleanup_memories));
DELETE FROM store_search_memories WHERE memory_id IN (SELECT id FROM palace_cleanup_memories);
INSERT INTO store_changes (entity, entity_id, op, at)
SELECT 'memory', id, 'delete', CAST(unixepoch('subsec') * 1000 AS INTEGER) FROM palace_cleanup_memories;
DELETE FROM store_memories WHERE id IN (SELECT id FROM palace_cleanup_memories);

-- Scenes: fake-workspace ones go; real ones forget the junk memories they listed.
INSERT INTO store_changes (entity, entity_id, op, at)
SELECT 'scene', id, 'delete', CAST(unixepoch('subsec') * 1000 AS INTEGER) FROM store_scenes
WHERE workspace LIKE 'memory-palace:%' OR session_id LIKE 'memory-palace:%';
DELETE FROM store_scenes WHERE workspace LIKE 'memory-palace:%' OR session_id LIKE 'memory-palace:%';
INSERT INTO store_changes (entity, entity_id, op, at)
SELECT 'scene', id, 'update', CAST(unixepoch('subsec') * 1000 AS INTEGER) FROM store_scenes
WHERE EXISTS (SELECT 1 FROM json_each(store_scenes.memory_ids) AS m WHERE m.value IN (SELECT id FROM palace_cleanup_memories));
UPDATE store_scenes
SET memory_ids = (SELECT json_group_array(m.value) FROM json_each(store_scenes.memory_ids) AS m
                  WHERE m.value NOT IN (SELECT id FROM palace_cleanup_memories)),
    revision = revision + 1
WHERE EXISTS (SELECT 1 FROM json_each(store_scenes.memory_ids) AS m WHERE m.value IN (SELECT id FROM palace_cleanup_memories));

DELETE FROM store_persona WHERE workspace LIKE 'memory-palace:%';
DELETE FROM store_layer_revisions WHERE layer_key LIKE 'workspace:memory-palace:%';

-- The fake conversations: search rows first (the FTS table is contentless), then the rows.
DELETE FROM store_search_messages_fts
WHERE rowid IN (SELECT doc FROM store_search_messages WHERE conversation_id IN (SELECT id FROM palace_cleanup_conversations));
DELETE FROM store_search_messages WHERE conversation_id IN (SELECT id FROM palace_cleanup_conversations);
INSERT INTO store_changes (entity, entity_id, op, at)
SELECT 'message', id, 'delete', CAST(unixepoch('subsec') * 1000 AS INTEGER) FROM palace_cleanup_messages;
DELETE FROM store_messages WHERE conversation_id IN (SELECT id FROM palace_cleanup_conversations);
INSERT INTO store_changes (entity, entity_id, op, at)
SELECT 'conversation', id, 'delete', CAST(unixepoch('subsec') * 1000 AS INTEGER) FROM palace_cleanup_conversations;
DELETE FROM store_conversations WHERE id IN (SELECT id FROM palace_cleanup_conversations);

-- The old index's progress ('palace.index.<conversation>') and state other packages kept per
-- fake conversation or layer (distill cursors, recall schedules).
DELETE FROM store_meta WHERE key LIKE 'palace.index.%' OR key LIKE '%memory-palace:%';
-- The distiller's per-layer counters (one JSON map) name the fake workspace's layer too.
UPDATE store_meta
SET value = json_set(value, '$.keys', (SELECT json_group_object(entry.key, json(entry.value)) FROM json_each(store_meta.value, '$.keys') AS entry
                                       WHERE entry.key NOT LIKE 'workspace:memory-palace:%'))
WHERE key = 'distill.layers' AND json_valid(value)
  AND EXISTS (SELECT 1 FROM json_each(store_meta.value, '$.keys') AS entry WHERE entry.key LIKE 'workspace:memory-palace:%');

DROP TABLE palace_cleanup_conversations;
DROP TABLE palace_cleanup_messages;
DROP TABLE palace_cleanup_memories;
