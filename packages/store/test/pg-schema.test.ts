/**
 * The PostgreSQL drizzle schema (`pg-schema.ts`) and its SQL (`migrations-postgres/store/`)
 * describe the same tables, columns and indexes, and its rows map to records through the same
 * `rows.ts` as SQLite's (the embedding's real[] reads back as the same float32 bytes).
 */
import { getTableConfig } from 'drizzle-orm/pg-core'
import { describe, expect, it } from 'vitest'
import { pgSchema } from '../src/core/pg-schema.ts'
import { PG_SEARCH_COLUMNS, PG_SEARCH_INDEXES } from '../src/core/pg-search-terms.ts'
import { toMemory } from '../src/core/rows.ts'
import { embeddingToBuffer } from '../src/core/validate.ts'
import { backends } from './contract/backends.ts'
import { pgSessionOn } from './support/pg-session.ts'

const postgres = backends.find((backend) => backend.name === 'postgres')!

describe('PostgreSQL drizzle schema and SQL migrations', () => {
  it('describe the same tables, columns, NOT NULLs and indexes', async () => {
    const store = await postgres.open()
    const columns = await postgres.sql(
      store,
      `SELECT table_name AS "table", column_name AS name, is_nullable = 'NO' AS "notNull" FROM information_schema.columns
       WHERE table_schema = current_schema() ORDER BY column_name`,
    )
    const indexes = await postgres.sql(store, `SELECT tablename AS "table", indexname AS name FROM pg_indexes WHERE schemaname = current_schema() AND indexname NOT LIKE '%_pkey' ORDER BY indexname`)
    for (const table of Object.values(pgSchema)) {
      const config = getTableConfig(table)
      const searchOwned = PG_SEARCH_COLUMNS[config.name] ?? []
      const live = columns.filter((column) => column.table === config.name && !searchOwned.includes(String(column.name))).map(({ name, notNull }) => ({ name, notNull }))
      expect(live.length, config.name).toBeGreaterThan(0)
      const declared = config.columns.map((column) => ({ name: column.name, notNull: column.notNull || column.primary }))
      expect(live, config.name).toEqual(declared.sort((a, b) => (a.name < b.name ? -1 : 1)))
      expect(indexes.filter((index) => index.table === config.name && !PG_SEARCH_INDEXES.includes(String(index.name))).map((index) => index.name), config.name).toEqual(config.indexes.map((index) => index.config.name).sort())
    }
  })

  it('map rows through rows.ts like SQLite’s: JSON, CJK text, bigint times and the float32 embedding', async () => {
    const store = await postgres.open()
    const s = await pgSessionOn(postgres.location(store))
    const embedding = new Float32Array([0.1, -2.5, 3.4028234663852886e38, 1e-45])
    await s.write((tx) =>
      tx.db.insert(pgSchema.memories).values({
        id: 'm1',
        kind: 'fact',
        text: '数据库用 PostgreSQL、日本語もOK',
        scope: 'workspace',
        workspace: '/repo',
        sourceMessageIds: ['a', 'b'],
        priority: 0.25,
        createdAt: 1_733_000_000_123,
        updatedAt: 1_733_000_000_456,
        embedding: embeddingToBuffer(embedding),
        embeddingDims: 4,
        embeddingModel: 'model@4',
        flags: { pinned: true, 标签: ['一'] },
      }),
    )
    const [row] = await s.read((tx) => tx.db.select().from(pgSchema.memories))
    expect(toMemory(row!)).toEqual({
      id: 'm1',
      kind: 'fact',
      text: '数据库用 PostgreSQL、日本語もOK',
      scope: 'workspace',
      workspace: '/repo',
      sessionId: null,
      sourceMessageIds: ['a', 'b'],
      priority: 0.25,
      revision: 1,
      createdAt: 1_733_000_000_123,
      updatedAt: 1_733_000_000_456,
      lastRecalledAt: null,
      supersededBy: null,
      embedding,
      embeddingModel: 'model@4',
      flags: { pinned: true, 标签: ['一'] },
      createdBy: '',
    })
  })
})
