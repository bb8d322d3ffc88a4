import { Vocabulary } from '@dsh-memory/web'
import { describe, expect, it } from 'vitest'
import { runSuggestBench, SUGGEST_ENGINES, suggestCorpus, TYPO_KINDS, typoQueries } from '../src/bench/suggest.ts'
import { cli } from './helpers.ts'

describe('dsh-memory bench suggest', () => {
  it('makes real typos of every kind from the vocabulary: never a vocabulary term, always near the intended word', () => {
    const vocabulary = Vocabulary.fromTexts(suggestCorpus(300, 5))
    const queries = typoQueries(vocabulary, 60, 5)
    expect(queries.length).toBe(60)
    expect(new Set(queries.map((query) => query.kind))).toEqual(new Set(TYPO_KINDS))
    for (const query of queries) {
      expect(vocabulary.has(query.typo), query.typo).toBe(false)
      expect(vocabulary.has(query.intended), query.intended).toBe(true)
      expect(query.typo).not.toBe(query.intended)
    }
    expect(queries.some((query) => query.kind.startsWith('cjk') && /[\u4e00-\u9fff]/.test(query.typo))).toBe(true)
    expect(queries.some((query) => query.kind.startsWith('cjk') && /[\u30a0-\u30ff]/.test(query.typo))).toBe(true)
  })

  it('scores every engine on the same queries from what each returned (not constants)', () => {
    const report = runSuggestBench({ memories: 300, queries: 50, seed: 5 })
    expect(report.queries).toBe(50)
    for (const name of SUGGEST_ENGINES) {
      const { hits } = report.engines[name]
      expect(hits.all.queries).toBe(50)
      expect(TYPO_KINDS.reduce((sum, kind) => sum + hits[kind].queries, 0)).toBe(50)
      expect(hits.all.top1).toBeLessThanOrEqual(hits.all.top3)
      expect(report.engines[name].p95Ms).toBeGreaterThanOrEqual(report.engines[name].p50Ms)
    }
    // The figures differ between engines and with the queries: they come from the suggestions.
    const top3 = SUGGEST_ENGINES.map((name) => report.engines[name].hits.all.top3)
    expect(new Set(top3).size).toBeGreaterThan(1)
    expect(report.engines.scan.hits.all.top3).toBeGreaterThan(0)
    expect(report.engines.scan.hits.transposition.top3).toBeGreaterThan(report.engines.prefix.hits.transposition.top3)
  })

  it('prints the table and --json prints one object; a bad option is a usage error naming it', async () => {
    const text = await cli(['bench', 'suggest', '--memories', '200', '--queries', '30'])
    expect(text.code).toBe(0)
    expect(text.stdout).toMatch(/^did-you-mean over \d+ vocabulary terms \(cap 5000\) of 200 corpus memories/)
    for (const name of SUGGEST_ENGINES) expect(text.stdout).toMatch(new RegExp(`^${name} +[\\d.]+ %`, 'm'))
    expect(text.stdout).toContain('p50 ms   p95 ms   build ms   heap KiB')
    const json = await cli(['bench', 'suggest', '--memories', '200', '--queries', '30', '--json'])
    const report = JSON.parse(json.stdout)
    expect(Object.keys(report.engines).sort()).toEqual([...SUGGEST_ENGINES].sort())
    expect(report.engines.minisearch.heapBytes).toBeGreaterThan(0)
    const bad = await cli(['bench', 'suggest', '--queries', 'lots'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toMatch(/--queries expects/)
  })
})
