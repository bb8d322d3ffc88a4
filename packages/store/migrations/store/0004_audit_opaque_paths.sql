-- @dsh-memory/store schema v4: the audit log holds no workspace paths.
-- Layer, persona, meta and lease keys embed a workspace path; rows written before v4 kept it in
-- entity_id. store_audit_id() (registered by the store on every connection, see
-- src/core/audit-id.ts) replaces the path part with an opaque digest, the same one new rows get.
UPDATE store_audit
SET entity_id = store_audit_id(entity, entity_id)
WHERE entity IN ('layer', 'persona', 'meta', 'lease')
  AND entity_id <> store_audit_id(entity, entity_id);
