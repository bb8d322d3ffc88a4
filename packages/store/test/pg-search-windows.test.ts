/**
 * PostgreSQL search on a table large enough for the windowed candidate read (`pg-search.ts`:
 * the newest matches looked for in `created_at` windows, newest first): it must pick exactly
 * the rows one sort of every match would, across window boundaries and ties in time.
 */
import { describe, expect, it } from "vitest";
import { backends } from "./contract/backends.ts";

const postgres = backends.find((backend) => backend.name === "postgres")!;

/** Rows seeded: past twice the newest window (32 000 rows), so the search reads windows. */
const ROWS = 70_000;
/** The newest 4 000 rows are written a year after the rest (a history imported at once, then today's rows). */
const SKEW = `CASE WHEN i > ${ROWS - 4_000} THEN 31536000000 ELSE 0 END`;

describe("PostgreSQL search over many rows", () => {
  it("ranks the same newest matches window by window as one sort of all matches would", async () => {
    const store = await postgres.open();
    // Seeded in SQL (the store's bulk path would take minutes here): every row says "alpha",
    // every 47th also "beta" (~1 500 rows: more than the 1 000 ranked, fewer than the newest
    // window holds), three rows share each millisecond so ties in time are ordered by id.
    await postgres.sql(
      store,
      `INSERT INTO store_memories (id, kind, text, scope, created_at, updated_at, search_terms)
       SELECT lpad(to_hex((i * 2654435761) % 4294967296), 8, '0') || '-' || i, 'fact',
              CASE WHEN i % 47 = 0 THEN 'alpha beta ' ELSE 'alpha ' END || i, 'global', 1000 + i / 3 + ${SKEW}, 1000 + i / 3 + ${SKEW},
              (CASE WHEN i % 47 = 0 THEN '''alpha'':1 ''beta'':1 ' ELSE '''alpha'':1 ' END || '''' || i || ''':1')::tsvector
       FROM generate_series(1, ${ROWS}) AS i`
    );
    // Windows placed by the spread over time first, then (after ANALYZE) by the created_at
    // histogram of PostgreSQL's statistics; the result must be the same either way.
    for (const windows of ["time", "histogram"]) {
      // (A store reads the statistics at most once a minute: a second store sees the fresh ones.)
      if (windows === "histogram")
        await postgres.sql(store, "ANALYZE store_memories");
      const searcher =
        windows === "histogram" ? await postgres.reopen(store) : store;
      for (const term of ["beta", "alpha"]) {
        // What one sort of every match by time picks (the rank cap), then the best by score: the
        // shortest matches (for "alpha" the rows without "beta") score the same, so ties go to the id.
        const shortest =
          term === "alpha" ? `WHERE NOT search_terms @@ 'beta'::tsquery` : "";
        const expected = await postgres.sql(
          store,
          `SELECT id FROM (SELECT id, search_terms FROM store_memories WHERE search_terms @@ '${term}'::tsquery ORDER BY created_at DESC, id DESC LIMIT 1000) AS newest ${shortest} ORDER BY id DESC LIMIT 20`
        );
        const hits = await searcher.search.memories(term, { limit: 20 });
        expect(
          hits.map((hit) => hit.memory.id),
          `${term} (${windows})`
        ).toEqual(expected.map((row) => row.id));
      }
    }
    // A rare term (exact count, far below the cap) is found wherever it is, here in the oldest window.
    const [oldest] = await postgres.sql(
      store,
      `UPDATE store_memories SET text = 'alpha zeppelin', search_terms = '''alpha'':1 ''zeppelin'':1' WHERE text = 'alpha 2' RETURNING id`
    );
    expect(
      (await store.search.memories("zeppelin", { limit: 5 })).map(
        (hit) => hit.memory.id
      )
    ).toEqual([oldest!.id]);
  }, 120_000);

  it("finds the newest matches of one workspace window by window, as one sort of its matches would", async () => {
    const store = await postgres.open();
    // Two workspaces of 100 conversations each, their messages interleaved in time; "alpha" in
    // every message, "beta" in every 47th. The workspace is the messages' own copy, kept by triggers.
    await postgres.sql(
      store,
      `INSERT INTO store_conversations (id, workspace, started_at, updated_at)
       SELECT 'c' || c, '/ws' || (c % 2), 1000, 1000 FROM generate_series(0, 199) AS c`
    );
    await postgres.sql(
      store,
      `INSERT INTO store_messages (id, conversation_id, host_message_id, role, text, turn, seq, created_at, search_terms)
       SELECT lpad(to_hex((i * 2654435761) % 4294967296), 8, '0') || '-' || i, 'c' || (i % 200), 'h' || i, 'user',
              CASE WHEN i % 47 = 0 THEN 'alpha beta ' ELSE 'alpha ' END || i, i / 200, i / 200, 1000 + i / 3 + ${SKEW},
              (CASE WHEN i % 47 = 0 THEN '''alpha'':1 ''beta'':1 ' ELSE '''alpha'':1 ' END || '''' || i || ''':1')::tsvector
       FROM generate_series(1, ${ROWS}) AS i`
    );
    await postgres.sql(store, "ANALYZE store_messages");
    const searcher = await postgres.reopen(store);
    for (const term of ["beta", "alpha"]) {
      const shortest =
        term === "alpha" ? `WHERE NOT search_terms @@ 'beta'::tsquery` : "";
      const expected = await postgres.sql(
        store,
        `SELECT id FROM (SELECT m.id, m.search_terms FROM store_messages m JOIN store_conversations c ON c.id = m.conversation_id
           WHERE c.workspace = '/ws1' AND m.search_terms @@ '${term}'::tsquery ORDER BY m.created_at DESC, m.id DESC LIMIT 1000) AS newest ${shortest} ORDER BY id DESC LIMIT 20`
      );
      const hits = await searcher.search.messages(term, {
        workspace: "/ws1",
        limit: 20,
      });
      expect(
        hits.map((hit) => hit.message.id),
        term
      ).toEqual(expected.map((row) => row.id));
      expect(
        hits.every(
          (hit) => Number(hit.message.conversationId.slice(1)) % 2 === 1
        )
      ).toBe(true);
    }
  }, 120_000);
});
