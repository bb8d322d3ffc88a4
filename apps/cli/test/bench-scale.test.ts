import { MEMORY_CANDIDATES } from '@dsh-memory/recall'
import { dropPostgresStore } from '@dsh-memory/store'
import { describe, expect, it } from 'vitest'
import { latencyStats, parseSizes } from '../src/bench/scale.ts'
import { benchDatabaseUrl, benchSchemasLeft } from './bench-pg.ts'
import { cli } from './helpers.ts'

const stats = { p50: expect.any(Number), p95: expect.any(Number), max: expect.any(Number), runs: expect.any(Number) }

describe('dsh-memory bench scale', () => {
  it('--quick --json prints one object with recall, capture, index, size and memory figures per store', async () => {
    const { code, stdout, stderr } = await cli(['bench', 'scale', '--quick', '--json', '--runs', '5'])
    expect(stderr).toContain('memories_1000: building the search index')
    expect(code).toBe(0)
    const lines = stdout.trim().split('\n')
    expect(lines).toHaveLength(1)
    const report = JSON.parse(lines[0]!)
    // Shape only: timings on a shared CI machine are not asserted.
    expect(report).toMatchObject({
      backend: 'sqlite',
      recall_ms: { memories_1000: stats, messages_2000: stats },
      injection_ms: { messages_2000: stats },
      store_search_ms: { memories_1000: stats, messages_2000: stats },
      recall_cold_ms: { memories_1000: expect.any(Number), messages_2000: expect.any(Number) },
      recall_considered: { memories_1000: expect.any(Number), messages_2000: expect.any(Number) },
      capture_ms_per_event: expect.any(Number),
      capture_ms_per_event_by_store: { memories_1000: expect.any(Number), messages_2000: expect.any(Number) },
      capture_rounds_ms_per_event: { memories_1000: [expect.any(Number), expect.any(Number), expect.any(Number)], messages_2000: [expect.any(Number), expect.any(Number), expect.any(Number)] },
      insert_ms: { memories_1000: expect.any(Number), messages_2000: expect.any(Number) },
      insert_rows_per_s: { memories_1000: expect.any(Number), messages_2000: expect.any(Number) },
      append_rows_per_s: { memories_1000: expect.any(Number), messages_2000: expect.any(Number) },
      index_build_ms: { memories_1000: expect.any(Number), messages_2000: expect.any(Number) },
      db_bytes: { memories_1000: expect.any(Number), messages_2000: expect.any(Number) },
      memory: { memories_1000: { rss_mb: expect.any(Number), heap_used_mb: expect.any(Number) } },
      targets: { capture_ms_per_event: { target_ms: 1, measured_ms: expect.any(Number), met: expect.any(Boolean) } },
      machine: { node: process.version, cpus: expect.any(Number) },
    })
    expect(report.recall_ms.memories_1000.runs).toBe(5)
    // The recall paths rank the store's full-text candidates, not every visible row.
    for (const key of ['memories_1000', 'messages_2000']) expect(report.recall_considered[key]).toBeGreaterThan(0)
    expect(report.recall_considered.memories_1000).toBeLessThanOrEqual(MEMORY_CANDIDATES)
    // The per-store figure is the median of the rounds it reports.
    for (const key of ['memories_1000', 'messages_2000']) {
      const rounds = [...report.capture_rounds_ms_per_event[key]].sort((a: number, b: number) => a - b)
      expect(report.capture_ms_per_event_by_store[key]).toBe(rounds[1])
    }
    expect(report.errors).toEqual({})
    expect(report.skipped).toEqual({})
    expect(report.not_measured).toEqual({})
    expect(report.db_bytes.messages_2000).toBeGreaterThan(report.db_bytes.memories_1000 / 10)
  })

  it('prints a table without --json, and rejects bad sizes and run counts with status 2', async () => {
    const table = await cli(['bench', 'scale', '--sizes', 'memories:200', '--runs', '2', '--quiet'])
    expect(table.code).toBe(0)
    expect(table.stdout).toMatch(/^memories_200 /m)
    expect(table.stderr).toBe('')
    const bad = await cli(['bench', 'scale', '--sizes', 'lots'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toMatch(/--sizes expects entries like memories:100k/)
    const runs = await cli(['bench', 'scale', '--quick', '--runs', '0'])
    expect(runs.code).toBe(2)
    expect(runs.stderr).toMatch(/--runs expects a positive integer/)
  })

  it('parses sizes with k/m suffixes and computes nearest-rank percentiles', () => {
    expect(parseSizes('memories:10k,messages:1m,l0:2.5k,500')).toEqual([
      { kind: 'memories', count: 10_000 },
      { kind: 'messages', count: 1_000_000 },
      { kind: 'messages', count: 2_500 },
      { kind: 'memories', count: 500 },
    ])
    expect(() => parseSizes('memories:5')).toThrow(/at least 10 rows/)
    const samples = Array.from({ length: 100 }, (_, i) => i + 1)
    expect(latencyStats(samples)).toEqual({ p50: 50, p95: 95, max: 100, runs: 100 })
  })
})

describe('dsh-memory bench scale --database-url (the run’s throwaway PostgreSQL cluster)', () => {
  const args = ['bench', 'scale', '--quick', '--sizes', 'memories:50,messages:100', '--runs', '2']
  // Two backends, each building, timing recall and capturing 3 × 200 events per store: slow on a busy 2-core machine.
  const SLOW = 300_000

  it('--json measures both backends in one run: {sqlite, postgres}, the same keys, each naming its backend; the schemas are dropped', async () => {
    const { code, stdout, stderr } = await cli([...args, '--json', '--database-url', benchDatabaseUrl()])
    expect(code).toBe(0)
    const reports = JSON.parse(stdout)
    expect(Object.keys(reports)).toEqual(['sqlite', 'postgres'])
    const { sqlite, postgres } = reports
    expect(Object.keys(postgres)).toEqual(Object.keys(sqlite))
    for (const [backend, report] of Object.entries<Record<string, Record<string, unknown>>>(reports)) {
      expect(report.backend).toBe(backend)
      expect(report.errors).toEqual({})
      // Every phase ran on both: the store core (search, capture, recall's store reads) is on PostgreSQL.
      expect(report.skipped).toEqual({})
      for (const key of ['memories_50', 'messages_100']) {
        expect(report.recall_ms![key]).toMatchObject(stats)
        expect(report.store_search_ms![key]).toMatchObject(stats)
        expect(report.recall_considered![key]).toBeGreaterThan(0)
        expect(report.insert_ms![key]).toEqual(expect.any(Number))
        expect(report.capture_rounds_ms_per_event![key]).toHaveLength(3)
      }
    }
    // A SQLite-only figure is null on PostgreSQL, with its reason; never a missing key.
    expect(sqlite.db_bytes.memories_50).toBeGreaterThan(0)
    expect(postgres.db_bytes).toEqual({ memories_50: null, messages_100: null })
    expect(postgres.not_measured.db_bytes).toMatch(/no file of its own on PostgreSQL/)
    expect(stderr).toMatch(/^\[postgres\] memories_50: postgres store at schema dshm_bench_/m)
    expect(stderr).not.toContain(new URL(benchDatabaseUrl()).password)
    expect(await benchSchemasLeft()).toEqual([])
  }, SLOW)

  it('prints one column per backend, says why a figure is missing, and --keep leaves the schema', async () => {
    const { code, stdout, stderr } = await cli([...args, '--sizes', 'memories:50', '--keep', '--database-url', benchDatabaseUrl()])
    expect(code).toBe(0)
    expect(stdout).toMatch(/^memories_50 +sqlite +postgres$/m)
    expect(stdout).toMatch(/^ {2}recall p50\/p95 \(ms\) +[\d.]+ \/ [\d.]+ +[\d.]+ \/ [\d.]+$/m)
    expect(stdout).toMatch(/^ {2}db MiB +[\d.]+ +-$/m)
    expect(stdout).toContain('postgres: db_bytes not measured: no file of its own on PostgreSQL')
    const kept = await benchSchemasLeft()
    expect(kept).toHaveLength(1)
    expect(stderr).toContain(`memories_50: kept schema ${kept[0]}`)
    await dropPostgresStore({ databaseUrl: benchDatabaseUrl(), schema: kept[0]! })
    expect(await benchSchemasLeft()).toEqual([])
  }, SLOW)

  it('refuses --keep without --database-url and a bad URL, with status 2', async () => {
    const keep = await cli(['bench', 'scale', '--quick', '--keep'])
    expect(keep.code).toBe(2)
    expect(keep.stderr).toMatch(/--keep keeps the PostgreSQL schema of --database-url; give --database-url too/)
    const bad = await cli(['bench', 'scale', '--quick', '--database-url', 'mysql://nobody@localhost/x'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toMatch(/--database-url expects a postgres:\/\/ or postgresql:\/\/ URL/)
  })
})
