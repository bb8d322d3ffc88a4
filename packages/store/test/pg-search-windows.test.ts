/**
 * PostgreSQL search on a table large enough for the windowed candidate read (`pg-search.ts`:
 * the newest matches looked for in `created_at` windows, newest first): it must pick exactly
 * the rows one sort of every match would, across window boundaries and ties in time.
 */
import { describe, expect, it } from 'vitest'
import { backends } from './contract/backends.ts'

const postgres = backends.find((backend) => backend.name === 'postgres')!

/** Rows seeded: past twice the newest window (32 000 rows), so the search reads windows. */
const ROWS = 70_000

describe('PostgreSQL search over many rows', () => {
  it('ranks the same newest matches window by window as one sort of all matches would', async () => {
    const store = await postgres.open()
    // Seeded in SQL (the store's bulk path would take minutes here): every row says "alpha",
    // every 47th also "beta" (~1 500 rows: more than the 1 000 ranked, fewer than the newest
    // window holds), three rows share each millisecond so ties in time are ordered by id.
    await postgres.sql(
      store,
      `INSERT INTO store_memories (id, kind, text, scope, created_at, updated_at, search_terms)
       SELECT lpad(to_hex((i * 2654435761) % 4294967296), 8, '0') || '-' || i, 'fact',
              CASE WHEN i % 47 = 0 THEN 'alpha beta ' ELSE 'alpha ' END || i, 'global', 1000 + i / 3, 1000 + i / 3,
              (CASE WHEN i % 47 = 0 THEN '''alpha'':1 ''beta'':1 ' ELSE '''alpha'':1 ' END || '''' || i || ''':1')::tsvector
       FROM generate_series(1, ${ROWS}) AS i`,
    )
    for (const term of ['beta', 'alpha']) {
      // What one sort of every match by time picks (the rank cap), then the best by score: the
      // shortest matches (for "alpha" the rows without "beta") score the same, so ties go to the id.
      const shortest = term === 'alpha' ? `WHERE NOT search_terms @@ 'beta'::tsquery` : ''
      const expected = await postgres.sql(
        store,
        `SELECT id FROM (SELECT id, search_terms FROM store_memories WHERE search_terms @@ '${term}'::tsquery ORDER BY created_at DESC, id DESC LIMIT 1000) AS newest ${shortest} ORDER BY id DESC LIMIT 20`,
      )
      const hits = await store.search.memories(term, { limit: 20 })
      expect(hits.map((hit) => hit.memory.id), term).toEqual(expected.map((row) => row.id))
    }
    // A rare term (exact count, far below the cap) is found wherever it is, here in the oldest window.
    const [oldest] = await postgres.sql(store, `UPDATE store_memories SET text = 'alpha zeppelin', search_terms = '''alpha'':1 ''zeppelin'':1' WHERE text = 'alpha 2' RETURNING id`)
    expect((await store.search.memories('zeppelin', { limit: 5 })).map((hit) => hit.memory.id)).toEqual([oldest!.id])
  }, 120_000)
})
