-- The cue bank's tables on PostgreSQL (owner 'cue-bank'), applied by the store's migration
-- runner in the store's schema: the same tables, columns and indexes as migrations/cue-bank on
-- SQLite. Keywords, dimensions and id lists are JSON text; embeddings are little-endian float32
-- bytes; times are epoch milliseconds (BIGINT).

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
  embedding BYTEA,
  embedding_model TEXT,
  created_at BIGINT NOT NULL,
  last_mentioned_at BIGINT NOT NULL,
  last_touched_at BIGINT NOT NULL,
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
  score DOUBLE PRECISION NOT NULL,
  turns INTEGER NOT NULL,
  first_seen BIGINT NOT NULL,
  last_seen BIGINT NOT NULL,
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
  created_at BIGINT NOT NULL,
  PRIMARY KEY (partition, session_id, turn)
);
CREATE INDEX cue_bank_user_turns_recent ON cue_bank_user_turns (partition, created_at);

-- PostgreSQL only: what the cue bank's in-memory view polls to see other processes' writes.
-- One revision per partition, bumped by the triggers below in the writing transaction, so a
-- change of cues or idioms is visible exactly when its rows are, whoever wrote them. Writers
-- are already serialised per schema by the store, so the counter row adds no contention.
CREATE TABLE cue_bank_revisions (
  partition TEXT PRIMARY KEY,
  revision BIGINT NOT NULL
);

-- search_path FROM CURRENT: the function finds this schema's table whatever the writer's path.
CREATE FUNCTION cue_bank_bump_revision() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  changed TEXT := CASE WHEN TG_OP = 'DELETE' THEN OLD.partition ELSE NEW.partition END;
BEGIN
  INSERT INTO cue_bank_revisions (partition, revision) VALUES (changed, 1)
  ON CONFLICT (partition) DO UPDATE SET revision = cue_bank_revisions.revision + 1;
  RETURN NULL;
END
$$;
CREATE TRIGGER cue_bank_topics_revision AFTER INSERT OR UPDATE OR DELETE ON cue_bank_topics
  FOR EACH ROW EXECUTE FUNCTION cue_bank_bump_revision();
CREATE TRIGGER cue_bank_idioms_revision AFTER INSERT OR UPDATE OR DELETE ON cue_bank_idioms
  FOR EACH ROW EXECUTE FUNCTION cue_bank_bump_revision();
