import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { applyFeedback, clearFeedback, feedbackOf, feedbackWeight, needsReview } from '../src/core/feedback.ts'
import { rankMemories } from '../src/core/memory-ranking.ts'
import { chunkManifest, chunkText } from '../src/core/memory-read.ts'
import { LayerProjection, projectedRevision, projectionPath } from '../src/core/projection.ts'
import { tempDirEachTest, tempStoreEachTest } from './support/store.ts'

describe('Markdown projection of the layers', () => {
  const openStore = tempStoreEachTest()
  const makeDir = tempDirEachTest('projection')

  it('writes one file per layer, rebuilds on change and on demand, and deleting it loses nothing', async () => {
    const { store } = openStore()
    const dir = makeDir()
    const fact = await store.memories.add({ kind: 'fact', text: 'Deploys use Kamal.\nSecond line of detail.', scope: 'workspace', workspace: '/work/alpha' })
    await store.memories.add({ kind: 'preference', text: '用户喜欢深色主题', scope: 'global' })
    await store.persona.put({ scope: 'global', text: 'A platform engineer.' })
    await store.memories.add({ kind: 'fact', text: 'session only', scope: 'session', sessionId: 's1' })
    const projection = new LayerProjection(() => store, dir)
    const written = await projection.refresh()
    const globalFile = projectionPath(dir, 'global')
    const alphaFile = projectionPath(dir, 'workspace:/work/alpha')
    expect(written.sort()).toEqual([globalFile, alphaFile].sort())
    expect(alphaFile).toMatch(/workspaces\/alpha-[0-9a-f]{10}\.md$/)
    const alpha = readFileSync(alphaFile, 'utf8')
    expect(alpha.split('\n')[0]).toBe('<!-- dsh-memory layer projection {"version":1,"layer":"workspace:/work/alpha","revision":1} -->')
    expect(alpha).toContain(`- \`${fact.id}\``)
    expect(alpha).toContain('  Deploys use Kamal.\n  Second line of detail.')
    expect(alpha).not.toContain('session only')
    const global = readFileSync(globalFile, 'utf8')
    expect(global).toContain('用户喜欢深色主题')
    expect(global).toContain('## Persona (version 1)')

    // Nothing changed: nothing written.
    expect(await projection.refresh()).toEqual([])
    // A change rebuilds only that layer.
    await store.memories.update(fact.id, { text: 'Deploys use Kamal 2.' })
    expect(await projection.refresh()).toEqual([alphaFile])
    expect(projectedRevision(alphaFile)).toBe(2)
    const before = readFileSync(alphaFile, 'utf8')

    // Deleting the directory (or editing a file) loses nothing: it is rebuilt identically.
    rmSync(dir, { recursive: true, force: true })
    expect(existsSync(alphaFile)).toBe(false)
    const fresh = new LayerProjection(() => store, dir)
    expect((await fresh.refresh()).sort()).toEqual([globalFile, alphaFile].sort())
    expect(readFileSync(alphaFile, 'utf8')).toBe(before)
    writeFileSync(alphaFile, 'edited by hand')
    expect(projectedRevision(alphaFile)).toBeUndefined()
    expect(await new LayerProjection(() => store, dir).refresh()).toEqual([alphaFile])
    expect(readFileSync(alphaFile, 'utf8')).toBe(before)
    expect((await fresh.refresh(true)).length).toBe(2)
    expect(await store.memories.list({ limit: 10 })).toHaveLength(3)
  })
})

describe('feedback', () => {
  it('one vote per session (the latest counts); incorrect flags for review; a correction clears it', () => {
    let flags = applyFeedback({ origin: 'user' }, 's1', 'helpful', 1)
    flags = applyFeedback(flags, 's2', 'helpful', 2)
    flags = applyFeedback(flags, 's1', 'unhelpful', 3)
    expect(feedbackOf(flags)).toMatchObject({ helpful: 1, unhelpful: 1, incorrect: 0, bySession: { s1: 'unhelpful', s2: 'helpful' }, lastAt: 3 })
    expect(flags.origin).toBe('user')
    expect(needsReview(flags)).toBe(false)
    const wrong = applyFeedback(flags, 's3', 'incorrect', 4)
    expect(needsReview(wrong)).toBe(true)
    expect(feedbackWeight(wrong)).toBe(0.25)
    // The session that said "incorrect" changes its mind: the flag goes.
    expect(needsReview(applyFeedback(wrong, 's3', 'helpful', 5))).toBe(false)
    expect(needsReview(clearFeedback(wrong))).toBe(false)
    expect(feedbackOf(clearFeedback(wrong)).helpful).toBe(0)
    expect(feedbackWeight(undefined)).toBe(1)
    expect(feedbackWeight(applyFeedback(undefined, 's', 'helpful', 1))).toBeCloseTo(1.15)
    expect(feedbackWeight(applyFeedback(undefined, 's', 'unhelpful', 1))).toBeCloseTo(0.75)
  })

  it('changes the ranking: an unhelpful or incorrect memory drops below an equal one, a helpful one rises', () => {
    const base = { kind: 'fact', scope: 'global', createdAt: 0, updatedAt: 0 }
    const memories = [
      { ...base, id: 'a', text: 'The build cache lives in Amsterdam.' },
      { ...base, id: 'b', text: 'The build cache lives in Amsterdam!', flags: applyFeedback(undefined, 's', 'helpful', 1) },
      { ...base, id: 'c', text: 'The build cache lives in Amsterdam?', flags: applyFeedback(undefined, 's', 'incorrect', 1) },
    ]
    const ranked = rankMemories('where is the build cache', memories, { strategy: 'keyword', decayHalfLifeDays: 0, now: 0 })
    expect(ranked.map((entry) => entry.memory.id)).toEqual(['b', 'a', 'c'])
    expect(ranked[2]!.score).toBeCloseTo(ranked[1]!.score * 0.25)
  })
})

describe('memory_read chunks', () => {
  it('splits long text deterministically at spaces and lists a manifest', () => {
    const text = Array.from({ length: 120 }, (_, i) => `word${i}`).join(' ')
    const chunks = chunkText(text, 200)
    expect(chunks.map((chunk) => chunk.text).join('')).toBe(text)
    expect(chunks.every((chunk) => [...chunk.text].length <= 200)).toBe(true)
    expect(chunks.slice(0, -1).every((chunk) => chunk.text.endsWith(' '))).toBe(true)
    expect(chunkText(text, 200)).toEqual(chunks)
    const manifest = chunkManifest(text, 200)
    expect(manifest.chunks.map((chunk) => chunk.chunk)).toEqual(chunks.map((chunk) => chunk.index))
    expect(manifest.chunks[0]!.starts).toMatch(/^word0 word1/)
    const cjk = '長'.repeat(450)
    expect(chunkText(cjk, 200).map((chunk) => [...chunk.text].length)).toEqual([200, 200, 50])
  })
})
