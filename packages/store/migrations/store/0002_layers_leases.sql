-- @dsh-memory/store schema v2: layer revisions and leases with fencing tokens.
-- Keep in sync with src/core/schema.ts (a test compares the two).

-- One row per memory layer that ever changed: 'global' or 'workspace:<path>'. The revision
-- is bumped in the same transaction as every write to the layer's memories, scenes or
-- persona, so any process can tell whether what it derived from a layer is current.
CREATE TABLE store_layer_revisions (
  layer_key TEXT PRIMARY KEY NOT NULL,
  revision INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);

-- Time-limited single-writer leases for background work. `token` is the fencing token: it
-- grows on every acquisition by a new holder and is never reused (a released lease keeps its
-- row with expires_at = 0), so a write that names an older token can always be refused.
CREATE TABLE store_leases (
  name TEXT PRIMARY KEY NOT NULL,
  holder TEXT NOT NULL,
  token INTEGER NOT NULL,
  acquired_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
