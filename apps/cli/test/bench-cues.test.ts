import { describe, expect, it } from 'vitest'
import { benchCues, runCueBench } from '../src/bench/cues.ts'
import { CUE_QUERIES, CUE_TOPICS } from '../src/bench/cue-set.ts'
import { cli } from './helpers.ts'

describe('dsh-memory bench cues', () => {
  it('the labelled set covers every kind in Chinese, Japanese and English, and every query names a real topic or none', () => {
    const ids = new Set(CUE_TOPICS.map((topic) => topic.id))
    for (const query of CUE_QUERIES) if (query.expect !== null) expect(ids.has(query.expect), query.text).toBe(true)
    const kinds = new Set(CUE_QUERIES.map((query) => query.kind))
    expect([...kinds].sort()).toEqual(['direct', 'idiom', 'mixed', 'negative', 'paraphrase', 'typo'])
    expect(CUE_QUERIES.some((query) => /[\u4e00-\u9fff]/.test(query.text) && !/[\u3040-\u30ff]/.test(query.text))).toBe(true)
    expect(CUE_QUERIES.some((query) => /[\u3040-\u30ff]/.test(query.text))).toBe(true)
    // The partition is filled to the cap with distractors, the same for the same seed.
    expect(benchCues(1, 200)).toHaveLength(200)
    expect(benchCues(3, 200).map((cue) => cue.summary)).toEqual(benchCues(3, 200).map((cue) => cue.summary))
  })

  it('measures both matchers on the same cues; the figures the cue-bank README quotes hold', () => {
    const [report] = runCueBench({ runs: 1, repeat: 1 })
    expect(report!.cues).toBe(200)
    const { keyword, minisearch } = report!.quality
    // The keyword matcher the cue bank keeps: every idiom query, no false wake.
    expect(keyword.idiom.hitAt1).toBe(keyword.idiom.queries)
    expect(keyword.negative.falseWakes).toBe(0)
    expect(keyword.all.hitAt1).toBeGreaterThanOrEqual(minisearch.all.hitAt1)
    expect(report!.misses.keyword).toEqual(['vitset snapshot failing on CI'])
    expect(minisearch.all.queries).toBe(CUE_QUERIES.length)
  })

  it('--json prints one array of per-run reports; a bad --runs is a usage error naming the option', async () => {
    const ok = await cli(['bench', 'cues', '--runs', '1', '--cap', '40', '--json'])
    expect(ok.code).toBe(0)
    const reports = JSON.parse(ok.stdout) as { seed: number; cues: number }[]
    expect(reports.map((report) => [report.seed, report.cues])).toEqual([[1, 40]])
    const bad = await cli(['bench', 'cues', '--runs', 'many'])
    expect(bad.code).not.toBe(0)
    expect(bad.stderr).toMatch(/--runs expects/)
  })
})
