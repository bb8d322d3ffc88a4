-- @dsh-memory/store on PostgreSQL, schema v2: full-text search in the database, written in the
-- same transaction as the rows (the analogue of the SQLite schema's FTS5 tables, v3).
--
-- `search_terms` holds the output of the store's own tokenizer (ICU words + CJK bigrams over
-- script-folded text), each term encoded exactly as for FTS5 (src/core/search-plan.ts), as a
-- tsvector literal built in the store (src/core/pg-search.ts: searchVectorOf) and cast with
-- `::tsvector`: no text search configuration ever parses or stems it, so CJK and mixed text
-- match exactly as the tokenizer decides. Positions are occurrence numbers (1..n per term):
-- ranking reads term frequency from them, never proximity. NULL means "not indexed yet"
-- (a row written behind the store's back, or a rebuild in progress). `store.search-pg` in
-- store_meta records the tokenizer the column was written with and how far a rewrite got.
-- Not declared in pg-schema.ts: only search reads the column (in SQL), so row reads never carry
-- it into records; test/pg-schema.test.ts knows it from pg-search-terms.ts.
ALTER TABLE store_messages ADD COLUMN search_terms tsvector;
ALTER TABLE store_memories ADD COLUMN search_terms tsvector;
CREATE INDEX store_messages_search ON store_messages USING gin (search_terms);
CREATE INDEX store_memories_search ON store_memories USING gin (search_terms);

-- The index's vocabulary for typo-tolerant queries (FTS5 has fts5vocab; a GIN index cannot list
-- its keys): the ASCII terms long enough to be a typo variant of a query term. Filled by a
-- trigger from every written search_terms, so no write path can forget it; never pruned on
-- delete (a term with no document left is skipped by the planner; a rebuild clears it).
CREATE TABLE store_search_vocabulary (
  kind TEXT COLLATE "C" NOT NULL,
  -- Binary order, as SQLite's: the planner scans the terms sharing a three-letter head.
  term TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (kind, term)
);

-- search_path pinned to the store's schema (the one this migration runs in), whoever writes.
CREATE FUNCTION store_search_note_terms() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  IF NEW.search_terms IS NOT NULL THEN
    -- Sorted, so two writers adding the same new terms take their locks in one order.
    INSERT INTO store_search_vocabulary (kind, term)
    SELECT TG_ARGV[0], t FROM unnest(tsvector_to_array(NEW.search_terms)) AS t
    WHERE t ~ '^[a-z0-9]{5,}$' ORDER BY t
    ON CONFLICT DO NOTHING;
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER store_messages_search_terms AFTER INSERT OR UPDATE OF search_terms ON store_messages
  FOR EACH ROW EXECUTE FUNCTION store_search_note_terms('messages');
CREATE TRIGGER store_memories_search_terms AFTER INSERT OR UPDATE OF search_terms ON store_memories
  FOR EACH ROW EXECUTE FUNCTION store_search_note_terms('memories');
