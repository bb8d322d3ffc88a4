import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openMemoryStore } from '@dsh-memory/store'
import { describe, expect, it } from 'vitest'
import { boundedEditDistance, completeQuery, didYouMean, editBudget, loadVocabulary, Vocabulary } from '../src/core/suggest.ts'

const TEXTS = [
  'The staging database runs PostgreSQL 16 in Frankfurt.',
  'PostgreSQL backups go to the postgres replica every night.',
  'The orders service is deployed with Kubernetes.',
  'Kubernetes upgrades wait for the ingress controller.',
  'The CI pipeline caches pnpm downloads between runs.',
  '我们决定周六凌晨进行数据库迁移，回滚预案由小王负责。',
  '订单服务的主数据库是 PostgreSQL，备份保存在杭州。',
  '東京のオフィス移転は来月で、新しい住所は渋谷です。',
  'コードレビューは毎週月曜日の午前に行います。',
  'Vitest でテストを書く方針、CI は GitHub Actions のまま。',
]
const vocabulary = Vocabulary.fromTexts(TEXTS)

describe('bounded edit distance', () => {
  it('counts inserts, deletes, substitutions and swaps of neighbours, and stops past the bound', () => {
    const d = (a: string, b: string, max = 3) => boundedEditDistance([...a], [...b], max)
    expect(d('postgres', 'postgress')).toBe(1)
    expect(d('kubernetes', 'kubernets')).toBe(1)
    expect(d('pipeline', 'pipelnie')).toBe(1)
    expect(d('数据库', '数剧库')).toBe(1)
    expect(d('abcdef', 'uvwxyz', 2)).toBe(3)
    expect(d('same', 'same')).toBe(0)
  })

  it('allows more edits for longer Latin words, one for CJK words, none for very short ones', () => {
    expect([editBudget('ci'), editBudget('pnpm'), editBudget('postgres'), editBudget('数据库'), editBudget('数')]).toEqual([0, 1, 2, 1, 0])
  })
})

describe('did you mean', () => {
  it('corrects misspelt English words against the vocabulary, keeping the known ones', () => {
    expect(didYouMean('postgress backups', vocabulary)[0]).toBe('postgres backups')
    expect(didYouMean('kubernets ingres', vocabulary)[0]).toBe('kubernetes ingress')
    expect(didYouMean('pipelnie caches', vocabulary)).toContain('pipeline caches')
  })

  it('says nothing when every word is known, too short to guess, or has no near term', () => {
    expect(didYouMean('PostgreSQL backups', vocabulary)).toEqual([])
    expect(didYouMean('xq', vocabulary)).toEqual([])
    expect(didYouMean('zzzzzzzzzz', vocabulary)).toEqual([])
  })

  it('corrects a wrong or missing Chinese character inside a run', () => {
    expect(didYouMean('数剧库', vocabulary)[0]).toBe('数据库')
    expect(didYouMean('数据酷迁移', vocabulary)[0]).toBe('数据库迁移')
    expect(didYouMean('回滚预按', vocabulary)[0]).toBe('回滚预案')
    // A fix that leaves an unknown bigram (dropping the wrong character: 主数库) is not offered.
    expect(didYouMean('主数剧库', vocabulary)).toEqual(['主数据库'])
  })

  it('corrects a wrong kana in Japanese, and mixed Japanese / English text', () => {
    expect(didYouMean('オフイス移転', vocabulary)[0]).toBe('オフィス移転')
    expect(didYouMean('コードレビユー', vocabulary)[0]).toBe('コードレビュー')
    // A missing last kana leaves every bigram known: the index matches it, nothing to correct.
    expect(didYouMean('コードレビュ', vocabulary)).toEqual([])
    expect(didYouMean('Vitset テスト', vocabulary)[0]).toBe('vitest テスト')
  })
})

describe('completions', () => {
  it('completes the last word being typed, most frequent first', () => {
    expect(completeQuery('staging postg', vocabulary)).toContain('staging postgresql')
    expect(completeQuery('kube', vocabulary)).toEqual(['kubernetes'])
    expect(completeQuery('', vocabulary)).toEqual([])
    expect(completeQuery('kubernetes ', vocabulary)).toEqual([])
  })

  it('completes Chinese and Japanese from the tail of the run', () => {
    expect(completeQuery('主数据', vocabulary)).toContain('主数据库')
    // Never to a bigram across a particle (服务的).
    expect(completeQuery('订单服', vocabulary)).toContain('订单服务')
    expect(completeQuery('订单服务', vocabulary).filter((text) => /[的是]$/.test(text))).toEqual([])
    expect(completeQuery('コードレ', vocabulary).some((text) => text.startsWith('コードレビ'))).toBe(true)
  })
})

describe('vocabulary', () => {
  it('keeps the terms found in the most texts, up to the cap', () => {
    const small = Vocabulary.fromTexts(TEXTS, 5)
    expect(small.size).toBe(5)
    expect(small.has('postgresql')).toBe(true)
    expect(small.frequency('postgresql')).toBe(3)
    // camelCase parts are terms too (PostgreSQL → postgresql, postgre, sql), as in the index.
    expect(vocabulary.startingWith('post')).toEqual(['postgre', 'postgresql', 'postgres'])
  })

  it('is built from the memories a search with the same filter sees, newest first, capped', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dshm-web-suggest-'))
    const store = openMemoryStore({ path: join(dir, 'memory.db') })
    try {
      await store.memories.add({ kind: 'fact', text: 'The shop deploys to Fly.io from the main branch.', scope: 'workspace', workspace: '/work/shop' })
      await store.memories.add({ kind: 'fact', text: 'The blog is hosted on Cloudflare Pages.', scope: 'workspace', workspace: '/work/blog' })
      await store.memories.add({ kind: 'preference', text: 'The user prefers Helix as their editor.', scope: 'global' })
      const shop = await loadVocabulary(store, { workspace: '/work/shop' })
      expect([shop.has('deploys'), shop.has('helix'), shop.has('cloudflare')]).toEqual([true, true, false])
      expect(didYouMean('cloudflair', shop)).toEqual([])
      expect(didYouMean('cloudflair', await loadVocabulary(store))[0]).toBe('cloudflare')
      // The memory cap: only the newest memory is read.
      const newest = await loadVocabulary(store, {}, { memories: 1 })
      expect([newest.has('helix'), newest.has('cloudflare')]).toEqual([true, false])
    } finally {
      await store.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
