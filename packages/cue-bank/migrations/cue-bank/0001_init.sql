-- The cue bank's tables (owner 'cue-bank'), applied by the store's migration runner.
-- Keywords, dimensions and id lists are JSON text; embeddings are little-endian float32 blobs.

-- Topic cues: one 'conversation' cue per turn, one 'task' cue per session (merged every turn).
CREATE TABLE cue_bank_topics (
  id TEXT PRIMARY KEY,
  partition TEXT NOT NULL,
  level TEXT NOT NULL CHECK (level IN ('conversation', 'task')),
  session_id TEXT NOT NULL,
  turn INTEGER NOT NULL,
  summary TEXT NOT NULL,
  detail TEXT NOT NULL,
  keywords TEXT NOT NULL,
  dimensions TEXT NOT NULL,
  ref_sessions TEXT NOT NULL,
  source_message_ids TEXT NOT NULL,
  embedding BLOB,
  embedding_model TEXT,
  created_at INTEGER NOT NULL,
  last_mentioned_at INTEGER NOT NULL,
  last_touched_at INTEGER NOT NULL,
  hit_count INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX cue_bank_topics_conversation ON cue_bank_topics (partition, session_id, turn) WHERE level = 'conversation';
CREATE UNIQUE INDEX cue_bank_topics_task ON cue_bank_topics (partition, session_id) WHERE level = 'task';
CREATE INDEX cue_bank_topics_lru ON cue_bank_topics (partition, last_touched_at);
CREATE INDEX cue_bank_topics_session ON cue_bank_topics (session_id, turn);

-- User idioms: personal expressions recurring across topics.
CREATE TABLE cue_bank_idioms (
  partition TEXT NOT NULL,
  word TEXT NOT NULL,
  score REAL NOT NULL,
  turns INTEGER NOT NULL,
  first_seen INTEGER NOT NULL,
  last_seen INTEGER NOT NULL,
  PRIMARY KEY (partition, word)
);
CREATE INDEX cue_bank_idioms_lru ON cue_bank_idioms (partition, last_seen);

-- The idiom window: the distinct terms of each recent user turn and its topic segment.
CREATE TABLE cue_bank_user_turns (
  partition TEXT NOT NULL,
  session_id TEXT NOT NULL,
  turn INTEGER NOT NULL,
  segment TEXT NOT NULL,
  terms TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (partition, session_id, turn)
);
CREATE INDEX cue_bank_user_turns_recent ON cue_bank_user_turns (partition, created_at);
