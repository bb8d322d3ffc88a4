import { describe, expect, it } from 'vitest'
import { CaptureOptionsError, DEFAULT_CAPTURE_OPTIONS, resolveCaptureOptions } from '../src/core/options.js'

describe('resolveCaptureOptions', () => {
  it('refuses a misspelt key, naming it', () => {
    expect(() => resolveCaptureOptions({ maxMesageChars: 100 } as never)).toThrow(expect.objectContaining({ path: 'maxMesageChars', message: expect.stringContaining('unknown option') }))
  })

  it('fills the reference defaults and freezes the result', () => {
    const options = resolveCaptureOptions()
    expect(options).toEqual(DEFAULT_CAPTURE_OPTIONS)
    expect(options).toEqual({ enabled: true, stripCodeBlocks: true, maxMessageChars: 4000 })
    expect(Object.isFrozen(options)).toBe(true)
  })

  it.each([
    [{ maxMessageChars: -1 }, 'maxMessageChars'],
    [{ maxMessageChars: 1.5 }, 'maxMessageChars'],
    [{ maxMessageChars: 10 }, 'maxMessageChars'],
    [{ maxMessageChars: 'lots' as unknown as number }, 'maxMessageChars'],
    [{ enabled: 'yes' as unknown as boolean }, 'enabled'],
  ])('rejects %j naming the field', (input, path) => {
    try {
      resolveCaptureOptions(input)
      expect.unreachable('should have thrown')
    } catch (error) {
      expect(error).toBeInstanceOf(CaptureOptionsError)
      expect((error as CaptureOptionsError).path).toBe(path)
      expect((error as CaptureOptionsError).code).toBe('invalid-config')
      expect((error as Error).message).toContain(path)
    }
  })

  it('accepts 0 as unlimited', () => {
    expect(resolveCaptureOptions({ maxMessageChars: 0 }).maxMessageChars).toBe(0)
  })
})
