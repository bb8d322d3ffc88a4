import { describe, expect, it } from 'vitest'
import { DistillError } from '../src/core/errors.js'
import { DEFAULT_DISTILL_OPTIONS, resolveDistillOptions } from '../src/core/options.js'

describe('resolveDistillOptions', () => {
  it('fills the reference defaults and freezes the result', () => {
    const options = resolveDistillOptions({})
    expect(options).toEqual(DEFAULT_DISTILL_OPTIONS)
    expect(options.extract).toMatchObject({ enabled: true, minMessages: 6, idleSeconds: 300, backgroundMessages: 10, candidatePool: 5 })
    expect(options.l2).toEqual({ enabled: true, minNewMemories: 5, maxScenes: 12, sceneContextLimit: 3 })
    expect(options.l3).toEqual({ enabled: true, interval: 20 })
    expect(options.llm).toMatchObject({ provider: '', model: '', fallbacks: [], temperature: 0.3, maxInputChars: 700_000, timeoutMs: 120_000 })
    expect(options.tokenCost.retentionDays).toBe(365)
    expect(Object.isFrozen(options)).toBe(true)
    expect(Object.isFrozen(options.llm.layerRoutes.l1)).toBe(true)
  })

  it('keeps given nested values and defaults the rest of each block', () => {
    const options = resolveDistillOptions({
      extract: { minMessages: 3 },
      llm: { provider: 'p', model: 'm', fallbacks: [{ provider: 'q', model: 'n' }], layerRoutes: { l3: [{ provider: 'big', model: 'pro' }] } },
    })
    expect(options.extract.minMessages).toBe(3)
    expect(options.extract.idleSeconds).toBe(300)
    expect(options.llm.fallbacks).toEqual([{ provider: 'q', model: 'n' }])
    expect(options.llm.layerRoutes).toEqual({ l1: [], l2: [], l3: [{ provider: 'big', model: 'pro' }] })
  })

  const bad: [string, Record<string, unknown>, RegExp][] = [
    ['a non-integer threshold', { extract: { minMessages: 'lots' } }, /extract\.minMessages/],
    ['a zero threshold', { extract: { minMessages: 0 } }, /extract\.minMessages: must be between 1/],
    ['a negative idle time', { extract: { idleSeconds: -1 } }, /extract\.idleSeconds/],
    ['a batch smaller than the threshold', { extract: { minMessages: 10, maxBatchMessages: 5 } }, /extract\.maxBatchMessages/],
    ['provider without model', { llm: { provider: 'deepseek-official' } }, /llm\.model: llm\.provider and llm\.model must be set together/],
    ['model without provider', { llm: { model: 'x' } }, /llm\.provider/],
    ['a fallback without model', { llm: { fallbacks: [{ provider: 'p' }] } }, /llm\.fallbacks\[0\]\.model/],
    ['an unknown layer route', { llm: { layerRoutes: { l4: [] } } }, /llm\.layerRoutes\.l4/],
    ['a misspelt key', { extract: { minMessage: 3 } }, /extract\.minMessage: unknown option/],
    ['a temperature out of range', { llm: { temperature: 3 } }, /llm\.temperature/],
    ['a tiny timeout', { llm: { timeoutMs: 10 } }, /llm\.timeoutMs/],
    ['negative retention', { tokenCost: { retentionDays: -5 } }, /tokenCost\.retentionDays/],
    ['a block that is not an object', { l2: 5 }, /l2: must be an object/],
    ['a non-boolean switch', { l3: { enabled: 'yes' } }, /l3\.enabled/],
    ['a misspelt option', { extract: { minMessage: 3 } }, /extract\.minMessage: unknown option/],
    ['an unknown block', { l4: { enabled: true } }, /memory-distill: l4: unknown option/],
    ['an unknown key in a route', { llm: { fallbacks: [{ provider: 'p', model: 'm', weight: 2 }] } }, /llm\.fallbacks\[0\]\.weight: unknown option/],
    ['an unknown key in the ledger block', { tokenCost: { retentionDays: 30, currency: 'EUR' } }, /tokenCost\.currency/],
  ]
  for (const [label, input, pattern] of bad) {
    it(`rejects ${label}, naming the field`, () => {
      let error: unknown
      try {
        resolveDistillOptions(input as never)
      } catch (caught) {
        error = caught
      }
      expect(error).toBeInstanceOf(DistillError)
      expect((error as DistillError).code).toBe('invalid-config')
      expect((error as Error).message).toMatch(pattern)
    })
  }
})
