import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { isRecallError } from '../src/core/errors.ts'
import { DEFAULT_RECALL_OPTIONS, resolveRecallOptions } from '../src/core/options.ts'
import { Config } from '../src/plugin.ts'

function fieldOf(run: () => unknown): string | undefined {
  try {
    run()
  } catch (error) {
    if (isRecallError(error, 'invalid-config')) return error.path
    throw error
  }
  return undefined
}

describe('resolveRecallOptions', () => {
  it('fills the reference defaults and freezes the result', () => {
    const options = resolveRecallOptions()
    expect(options).toEqual(DEFAULT_RECALL_OPTIONS)
    expect(options.recall).toMatchObject({ maxResults: 5, maxCharsPerMemory: 500, maxTotalRecallChars: 2000, timeoutMs: 5000, strategy: 'hybrid', scoreThreshold: 0.3, hybridThreshold: 0.85, decayHalfLifeDays: 30, placement: 'before-user' })
    expect(Object.isFrozen(options) && Object.isFrozen(options.recall) && Object.isFrozen(options.embedding)).toBe(true)
  })

  it('names the offending field', () => {
    expect(fieldOf(() => resolveRecallOptions({ defaultMode: 'sometimes' as never }))).toBe('defaultMode')
    expect(fieldOf(() => resolveRecallOptions({ recall: { maxResults: 0 } }))).toBe('recall.maxResults')
    expect(fieldOf(() => resolveRecallOptions({ recall: { maxResults: 1.5 } }))).toBe('recall.maxResults')
    expect(fieldOf(() => resolveRecallOptions({ recall: { maxCharsPerMemory: 5 } }))).toBe('recall.maxCharsPerMemory')
    expect(fieldOf(() => resolveRecallOptions({ recall: { maxCharsPerMemory: 500, maxTotalRecallChars: 100 } }))).toBe('recall.maxTotalRecallChars')
    expect(fieldOf(() => resolveRecallOptions({ recall: { scoreThreshold: 1.5 } }))).toBe('recall.scoreThreshold')
    expect(fieldOf(() => resolveRecallOptions({ recall: { hybridThreshold: -0.1 } }))).toBe('recall.hybridThreshold')
    expect(fieldOf(() => resolveRecallOptions({ recall: { hybridThreshold: '0.6' as unknown as number } }))).toBe('recall.hybridThreshold')
    expect(fieldOf(() => resolveRecallOptions({ recall: { decayHalfLifeDays: -1 } }))).toBe('recall.decayHalfLifeDays')
    expect(fieldOf(() => resolveRecallOptions({ recall: { strategy: 'vector' as never } }))).toBe('recall.strategy')
    expect(fieldOf(() => resolveRecallOptions({ recall: { placement: 'first' as never } }))).toBe('recall.placement')
    expect(fieldOf(() => resolveRecallOptions({ recall: { strategy: 'embedding' } }))).toBe('recall.strategy')
    expect(fieldOf(() => resolveRecallOptions({ embedding: { enabled: true } }))).toBe('embedding.baseUrl')
    expect(fieldOf(() => resolveRecallOptions({ embedding: { enabled: true, baseUrl: 'ftp://x' } }))).toBe('embedding.baseUrl')
    expect(fieldOf(() => resolveRecallOptions({ embedding: { enabled: true, baseUrl: 'http://127.0.0.1:1/v1' } }))).toBe('embedding.model')
    expect(fieldOf(() => resolveRecallOptions({ embedding: { enabled: true, baseUrl: 'http://127.0.0.1:1/v1', model: 'm' } }))).toBe('embedding.dimensions')
    expect(fieldOf(() => resolveRecallOptions({ recall: { enabled: 'yes' as never } }))).toBe('recall.enabled')
    expect(fieldOf(() => resolveRecallOptions({ embedding: { provider: 'onnx' as never } }))).toBe('embedding.provider')
    expect(fieldOf(() => resolveRecallOptions({ embedding: { enabled: true, provider: 'minilm', timeoutMs: 0 } }))).toBe('embedding.timeoutMs')
    // The in-process model names itself: no endpoint fields needed.
    expect(resolveRecallOptions({ embedding: { enabled: true, provider: 'minilm' } }).embedding).toMatchObject({ enabled: true, provider: 'minilm', baseUrl: '' })
    // The host's schema refuses an unknown provider before the core sees it.
    expect(() => Config({ embedding: { provider: 'onnx' } } as never)).toThrow(/provider/)
    // The host's Config passes unknown keys through; the core refuses them with their path.
    expect(fieldOf(() => resolveRecallOptions(Config({ recall: { maxResult: 3 } } as never) as never))).toBe('recall.maxResult')
    expect(fieldOf(() => resolveRecallOptions({ strategy: 'keyword' } as never))).toBe('strategy')
  })

  it('names the offending field of the layer, lifecycle, retention and limit blocks', () => {
    expect(fieldOf(() => resolveRecallOptions({ layers: { snapshotMaxEntries: 0 } }))).toBe('layers.snapshotMaxEntries')
    expect(fieldOf(() => resolveRecallOptions({ layers: { readChunkChars: 10 } }))).toBe('layers.readChunkChars')
    expect(fieldOf(() => resolveRecallOptions({ lifecycle: { consolidationSimilarity: 0 } }))).toBe('lifecycle.consolidationSimilarity')
    expect(fieldOf(() => resolveRecallOptions({ lifecycle: { idleDelayMinutes: -1 } }))).toBe('lifecycle.idleDelayMinutes')
    expect(fieldOf(() => resolveRecallOptions({ lifecycle: { leaseTtlSeconds: 1 } }))).toBe('lifecycle.leaseTtlSeconds')
    expect(fieldOf(() => resolveRecallOptions({ retention: { rules: [{ kind: 'episode', maxAgeDays: 1, maxCount: 1 }, { kind: 'episode', maxAgeDays: 2, maxCount: 2 }] } }))).toBe('retention.rules.1.kind')
    expect(fieldOf(() => resolveRecallOptions({ retention: { rules: [{ kind: '', maxAgeDays: 1, maxCount: 1 }] } }))).toBe('retention.rules.0.kind')
    expect(fieldOf(() => resolveRecallOptions({ limits: { memoryChars: 9000 } }))).toBe('limits.memoryChars')
    expect(resolveRecallOptions({ retention: { rules: [] } }).retention.rules).toEqual([])
  })

  it('accepts 0 as "unlimited" for the budgets and "disabled" for decay', () => {
    const options = resolveRecallOptions({ recall: { maxCharsPerMemory: 0, maxTotalRecallChars: 0, timeoutMs: 0, decayHalfLifeDays: 0 } })
    expect(options.recall).toMatchObject({ maxCharsPerMemory: 0, maxTotalRecallChars: 0, timeoutMs: 0, decayHalfLifeDays: 0 })
  })
})

describe('Config schema and README', () => {
  it('the schema fills the same defaults as the core', () => {
    const config = Config({} as never)
    expect(resolveRecallOptions(config)).toEqual(DEFAULT_RECALL_OPTIONS)
  })

  it('the README config table lists every field with its default', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
    const defaults = Config({} as never) as unknown as Record<string, unknown>
    const rows: [string, unknown][] = []
    for (const [key, value] of Object.entries(defaults)) {
      if (value && typeof value === 'object') for (const [inner, innerValue] of Object.entries(value)) rows.push([`${key}.${inner}`, innerValue])
      else rows.push([key, value])
    }
    for (const [field, value] of rows) {
      const shown = value === '' ? "''" : Array.isArray(value) ? JSON.stringify(value) : String(value)
      expect(readme, `README row for ${field}`).toMatch(new RegExp(`\\| \`${field.replace('.', '\\.')}\` \\| \`${shown.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\` \\|`))
    }
  })
})
