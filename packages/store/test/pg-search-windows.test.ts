/**
 * PostgreSQL search on a table large enough for the windowed candidate read (`pg-search.ts`:
 * the newest matches looked for in `created_at` windows, newest first): it must pick exactly
 * the rows one sort of every match would, across window boundaries and ties in time.
 */
import { describe, expect, it } from "vitest";
import { backends } from "./contract/backends.ts";
import {
  matchShare,
  walksNewestWindow,
  windowBounds,
} from "../src/core/pg-search.ts";

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
    // Two workspaces, their messages interleaved in time: /ws1 holds 95 % of the rows (its
    // search reads windows), /ws0 5 % (PostgreSQL's statistics show it so small that its search
    // reads no windows). "alpha" in every message, "beta" in every 47th: in /ws1 the newest
    // window is walked in time order for "alpha" and read through the GIN index for "beta".
    // The workspace is the messages' own copy, kept by triggers.
    await postgres.sql(
      store,
      `INSERT INTO store_conversations (id, workspace, started_at, updated_at)
       SELECT 'c' || c, CASE WHEN c % 20 = 0 THEN '/ws0' ELSE '/ws1' END, 1000, 1000 FROM generate_series(0, 199) AS c`
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
    for (const workspace of ["/ws1", "/ws0"])
      for (const term of ["beta", "alpha"]) {
        const shortest =
          term === "alpha" ? `WHERE NOT search_terms @@ 'beta'::tsquery` : "";
        const expected = await postgres.sql(
          store,
          `SELECT id FROM (SELECT m.id, m.search_terms FROM store_messages m JOIN store_conversations c ON c.id = m.conversation_id
             WHERE c.workspace = '${workspace}' AND m.search_terms @@ '${term}'::tsquery ORDER BY m.created_at DESC, m.id DESC LIMIT 1000) AS newest ${shortest} ORDER BY id DESC LIMIT 20`
        );
        const hits = await searcher.search.messages(term, {
          workspace,
          limit: 20,
        });
        expect(expected).toHaveLength(20);
        expect(
          hits.map((hit) => hit.message.id),
          `${term} in ${workspace}`
        ).toEqual(expected.map((row) => row.id));
        expect(
          hits.every(
            (hit) =>
              (Number(hit.message.conversationId.slice(1)) % 20 === 0) ===
              (workspace === "/ws0")
          )
        ).toBe(true);
      }
    // One conversation's matches (read through its own index, never walked): the same rows too.
    const inConversation = await postgres.sql(
      store,
      `SELECT id FROM (SELECT id, search_terms FROM store_messages WHERE conversation_id = 'c1' AND search_terms @@ 'alpha'::tsquery
         ORDER BY created_at DESC, id DESC LIMIT 1000) AS newest WHERE NOT search_terms @@ 'beta'::tsquery ORDER BY id DESC LIMIT 10`
    );
    expect(inConversation).toHaveLength(10);
    expect(
      (
        await searcher.search.messages("alpha", {
          conversationId: "c1",
          limit: 10,
        })
      ).map((hit) => hit.message.id)
    ).toEqual(inConversation.map((row) => row.id));
    // A workspace the statistics do not know yet (written after ANALYZE): the same rows too.
    await postgres.sql(
      store,
      `INSERT INTO store_conversations (id, workspace, started_at, updated_at) VALUES ('new', '/ws2', 1000, 1000)`
    );
    await postgres.sql(
      store,
      `INSERT INTO store_messages (id, conversation_id, host_message_id, role, text, turn, seq, created_at, search_terms)
       SELECT 'n-' || lpad(i::text, 5, '0'), 'new', 'n' || i, 'user', 'alpha ' || i, i, i, 1000 + i * 7,
              ('''alpha'':1 ''' || i || ''':1')::tsvector
       FROM generate_series(1, 1500) AS i`
    );
    const fresh = await searcher.search.messages("alpha", {
      workspace: "/ws2",
      limit: 5,
    });
    // Every match scores the same: the newest 1 000 are ranked, ties to the id (highest first).
    expect(fresh.map((hit) => hit.message.id)).toEqual([
      "n-01500",
      "n-01499",
      "n-01498",
      "n-01497",
      "n-01496",
    ]);
  }, 120_000);
});

describe("how PostgreSQL search reads the newest matches", () => {
  const extent = { total: 1_000_000, newest: 1_000_000, oldest: 0 };

  it("sizes windows by the rows the filter keeps", () => {
    // The whole table: the newest 32 000 rows, then 128 000, then 512 000 (times spread evenly).
    expect(windowBounds(extent)).toEqual([968_000, 872_000, 488_000]);
    // A workspace of a tenth of the rows: windows of 320 000 rows of the table (32 000 of its own).
    expect(windowBounds(extent, [], 0.1)).toEqual([680_000]);
    // A workspace of 1 % of the rows: one read of all its matches.
    expect(windowBounds(extent, [], 0.01)).toEqual([]);
  });

  it("walks the newest window in time order when the query matches a large share of the rows", () => {
    // A form counted very common (capped) takes its share from the statistics.
    const shares = new Map([["orders", 0.147]]);
    const planned = {
      total: 1_000_000,
      forms: [{ term: "orders", prefix: false, docs: 5_001 }],
    };
    expect(matchShare(planned, shares)).toBeCloseTo(0.147);
    expect(matchShare(planned, new Map())).toBeCloseTo(0.005001);
    expect(walksNewestWindow(0.147, 1_000_000, 32_000)).toBe(true);
    // 4 %: reading the GIN index's 40 000 ids is cheaper than walking 25 000 rows...
    expect(walksNewestWindow(0.04, 1_000_000, 32_000)).toBe(false);
    // ...unless the filter keeps so few rows that the walk reads all of them sooner.
    expect(walksNewestWindow(0.04, 1_000_000, 5_000)).toBe(true);
    expect(walksNewestWindow(0, 1_000_000, 5_000)).toBe(false);
    // A smaller table: the bitmap is cheaper.
    expect(walksNewestWindow(0.147, 100_000, 32_000)).toBe(false);
  });
});
