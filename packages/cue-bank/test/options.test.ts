import { describe, expect, it } from 'vitest'
import { isCueBankError } from '../src/core/errors.js'
import { DEFAULT_CUE_BANK_OPTIONS, resolveCueBankOptions } from '../src/core/options.js'

function failure(fn: () => unknown): { code?: string; path?: string; message: string } {
  try {
    fn()
  } catch (error) {
    expect(isCueBankError(error, 'invalid-config')).toBe(true)
    return error as { code: string; path: string; message: string }
  }
  throw new Error('expected a failure')
}

describe('resolveCueBankOptions', () => {
  it('fills the reference defaults and freezes the result deeply', () => {
    const options = resolveCueBankOptions({}, {})
    expect(options.topic).toEqual({ switchDetection: true, switchThreshold: 0.25, scanEveryTurn: false, maxKeywords: 10 })
    expect(options.inject.maxCues).toBe(3)
    expect(options.inject.maxDetailChars).toBe(400)
    expect(options.extract).toMatchObject({ maxKeywordsPerTurn: 12, keywordMinLen: 2, userIdiomWindowTurns: 10, maxIdiomHints: 5 })
    expect(options.maxTopics).toBe(200)
    expect(options.maxIdioms).toBe(50)
    expect(options.embedding.baseURL).toBe('https://api.siliconflow.cn/v1')
    expect(Object.isFrozen(options)).toBe(true)
    expect(Object.isFrozen(options.topic)).toBe(true)
    expect(() => {
      ;(options.topic as { switchThreshold: number }).switchThreshold = 0.9
    }).toThrow()
    expect(DEFAULT_CUE_BANK_OPTIONS.topic.switchThreshold).toBe(0.25)
  })

  it('merges partial sections over the defaults', () => {
    const options = resolveCueBankOptions({ topic: { switchThreshold: 0.5 }, inject: { maxCues: 5 } }, {})
    expect(options.topic.switchThreshold).toBe(0.5)
    expect(options.topic.maxKeywords).toBe(10)
    expect(options.inject).toMatchObject({ maxCues: 5, maxDetailChars: 400 })
  })

  it('names the offending field', () => {
    expect(failure(() => resolveCueBankOptions({ topic: { switchThreshold: 1.5 } }, {})).path).toBe('topic.switchThreshold')
    expect(failure(() => resolveCueBankOptions({ matchMode: 'semantic' as never }, {})).path).toBe('matchMode')
    expect(failure(() => resolveCueBankOptions({ inject: { maxCues: 0 } }, {})).path).toBe('inject.maxCues')
    expect(failure(() => resolveCueBankOptions({ extract: { userIdiomWindowTurns: 1 } }, {})).path).toBe('extract.userIdiomWindowTurns')
    expect(failure(() => resolveCueBankOptions({ embedding: { baseURL: 'ftp://x' } }, {})).path).toBe('embedding.baseURL')
    expect(failure(() => resolveCueBankOptions({ decay: { pruneBelow: 1 } }, {})).path).toBe('decay.pruneBelow')
    expect(failure(() => resolveCueBankOptions({ maxTopics: -1 }, {})).message).toMatch(/maxTopics/)
    // A misspelt key fails too instead of being ignored.
    expect(failure(() => resolveCueBankOptions({ inject: { maxCue: 3 } } as never, {})).path).toBe('inject.maxCue')
  })

  it('checks cross-field rules', () => {
    expect(failure(() => resolveCueBankOptions({ embedding: { timeoutMs: 1000, waitMs: 2000 } }, {})).path).toBe('embedding.waitMs')
    // An explicit 'vector' that can never work is a config error; 'auto' quietly falls back.
    expect(failure(() => resolveCueBankOptions({ matchMode: 'vector' }, {})).path).toBe('embedding.apiKey')
    expect(failure(() => resolveCueBankOptions({ matchMode: 'vector', embedding: { baseURL: '' } }, {})).path).toBe('embedding.baseURL')
    expect(resolveCueBankOptions({ matchMode: 'auto' }, {}).vectorAvailable).toBe(false)
  })

  it('derives vector availability from a configured key or the environment variable', () => {
    expect(resolveCueBankOptions({}, { SILICONFLOW_API_KEY: 'sk-env' })).toMatchObject({ vectorAvailable: true, embeddingKey: 'sk-env' })
    expect(resolveCueBankOptions({ embedding: { apiKey: 'sk-config' } }, { SILICONFLOW_API_KEY: 'sk-env' }).embeddingKey).toBe('sk-config')
    expect(resolveCueBankOptions({ matchMode: 'keyword' }, { SILICONFLOW_API_KEY: 'sk-env' }).vectorAvailable).toBe(false)
    expect(resolveCueBankOptions({ matchMode: 'vector', embedding: { apiKeyEnv: 'MY_KEY' } }, { MY_KEY: 'k' }).vectorAvailable).toBe(true)
  })
})
