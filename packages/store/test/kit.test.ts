import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  BackgroundWork,
  clip,
  CodedError,
  containsCjk,
  countCjk,
  describeError,
  findCodeFences,
  findUnknownOption,
  isCodedError,
  messageText,
  optionKeysOf,
  parseToolInput,
  replaceCodeFences,
  retryWhileBusy,
  strictOptionsSchema,
  toolOutput,
  toolParameters,
} from '../src/kit/index.ts'

describe('kit: host message text', () => {
  it('joins text blocks, drops reasoning and tool blocks, passes strings through', () => {
    const content = [
      { type: 'reasoning', text: 'thinking' },
      { type: 'text', text: '我们决定用 PostgreSQL' },
      { type: 'tool_call', id: 'x' },
      { type: 'text', text: '' },
      { type: 'text', text: 'それでいい ' },
    ]
    expect(messageText(content)).toBe('我们决定用 PostgreSQL\nそれでいい')
    expect(messageText('  plain  ')).toBe('plain')
    expect(messageText(undefined)).toBe('')
    expect(messageText([null, 3, { type: 'text', text: 7 }])).toBe('')
  })
})

describe('kit: clip', () => {
  it('cuts by code point with the marker inside the limit and never splits CJK or emoji', () => {
    expect(clip('数据库迁移计划已经确定', 5)).toBe('数据库迁…')
    expect(clip('😀😀😀😀😀😀', 4)).toBe('😀😀😀…')
    expect(clip('hello world again', 7)).toBe('hello…')
    expect(clip('short', 10)).toBe('short')
    expect(clip('no limit at all', 0)).toBe('no limit at all')
    expect(clip('abcdefghijklmnopqrstuvwxyz', 20, ' …[truncated]')).toBe('abcdefg …[truncated]')
  })
})

describe('kit: CJK detection', () => {
  it('finds Han, kana, Hangul and the prolonged sound mark, and nothing in Latin text', () => {
    expect(containsCjk('deploy on 周五')).toBe(true)
    expect(containsCjk('カレー')).toBe(true)
    expect(containsCjk('한국어')).toBe(true)
    expect(containsCjk('plain English, café')).toBe(false)
    // 用 写 ラ ー メ ン; the middle dot ・ is punctuation shared by every script.
    expect(countCjk('用 Rust 写・ラーメン')).toBe(6)
  })
})

describe('kit: code fences', () => {
  it('keeps a line-start block open across a mid-line ``` inside the code', () => {
    const text = 'before\n```md\nwrite ```js to open a block\necho "```"\n```\nafter'
    const [fence, ...rest] = findCodeFences(text)
    expect(rest).toEqual([])
    expect(fence).toMatchObject({ language: 'md', closed: true, body: 'write ```js to open a block\necho "```"' })
    expect(replaceCodeFences(text, () => '[code]')).toBe('before\n[code]\nafter')
  })

  it('closes a block only on a fence at least as long, of the same character', () => {
    const text = '````\n```\nnested\n```\n````\nprose\n~~~\ncode\n```\n~~~'
    expect(replaceCodeFences(text, (fence) => `[${fence.fence.length}${fence.fence[0]}]`)).toBe('[4`]\nprose\n[3~]')
  })

  it('finds a fence a chat user opened mid-line, terminated or not', () => {
    expect(replaceCodeFences('看看 ```const x = 1``` 的问题', () => '[code]')).toBe('看看 [code] 的问题')
    const opened = findCodeFences('这样写：```ts\nconst a = 1\n``` 对吗')
    expect(opened).toMatchObject([{ language: 'ts', body: 'const a = 1', closed: true }])
    expect(replaceCodeFences('start ```python\nprint(1)', () => '[code]')).toBe('start [code]')
  })

  it('runs an unterminated block to the end and ignores tildes mid-line', () => {
    const [fence] = findCodeFences('x\n```sh\nls\nrm -rf tmp')
    expect(fence).toMatchObject({ language: 'sh', body: 'ls\nrm -rf tmp', closed: false })
    expect(findCodeFences('wow ~~~ nice ~~~')).toEqual([])
  })
})

class SampleError extends CodedError<'not-found' | 'busy'> {
  override readonly name = 'SampleError'
}

describe('kit: coded errors', () => {
  it('carries code, path and cause and is recognised by shape', () => {
    const cause = new Error('driver')
    const error = new SampleError('not-found', 'no such cue', { path: 'cueId', cause })
    expect(error).toMatchObject({ name: 'SampleError', code: 'not-found', path: 'cueId', message: 'no such cue' })
    expect(error.cause).toBe(cause)
    expect(isCodedError<SampleError>(error, 'SampleError')).toBe(true)
    expect(isCodedError<SampleError>(error, 'SampleError', 'busy')).toBe(false)
    const copy = Object.assign(new Error('from a second copy'), { name: 'SampleError', code: 'busy' })
    expect(isCodedError<SampleError>(copy, 'SampleError', 'busy')).toBe(true)
    expect(isCodedError(new Error('x'), 'SampleError')).toBe(false)
  })

  it('describes any thrown value in the style a package prints', () => {
    const error = new SampleError('busy', 'database locked')
    expect(describeError(error)).toBe('database locked')
    expect(describeError(error, 'prefix')).toBe('busy: database locked')
    expect(describeError(error, 'bracket')).toBe('[busy] database locked')
    expect(describeError(error, 'suffix')).toBe('database locked (busy)')
    expect(describeError(new SampleError('busy', 'busy: twice'), 'prefix')).toBe('busy: twice')
    expect(describeError('a string')).toBe('a string')
  })
})

describe('kit: background work', () => {
  it('waits for tracked work, including work tracked while waiting, and swallows nothing', async () => {
    const work = new BackgroundWork()
    const order: string[] = []
    let release!: () => void
    const first = work.track(new Promise<void>((resolve) => (release = resolve)).then(() => {
      order.push('first')
      void work.track(Promise.resolve().then(() => order.push('second')))
    }))
    const failing = work.track(Promise.reject(new Error('boom')))
    await expect(failing).rejects.toThrow('boom')
    expect(work.size).toBe(1)
    const settled = work.settled().then(() => order.push('settled'))
    release()
    await first
    await settled
    expect(order).toEqual(['first', 'second', 'settled'])
    expect(work.size).toBe(0)
  })
})

describe('kit: busy retry', () => {
  const busy = Object.assign(new Error('locked'), { code: 'busy' })
  const isBusy = (error: unknown) => (error as { code?: unknown }).code === 'busy'

  it('retries busy failures and returns the first success', async () => {
    let calls = 0
    const value = await retryWhileBusy(async () => (++calls < 3 ? Promise.reject(busy) : 'done'), { isBusy, retries: 5, delayMs: () => 0 })
    expect(value).toBe('done')
    expect(calls).toBe(3)
  })

  it('rethrows other errors at once, and busy after the retries or when not retryable', async () => {
    let calls = 0
    const other = new Error('disk full')
    await expect(retryWhileBusy(async () => (calls++, Promise.reject(other)), { isBusy, retries: 5, delayMs: () => 0 })).rejects.toBe(other)
    expect(calls).toBe(1)
    calls = 0
    await expect(retryWhileBusy(async () => (calls++, Promise.reject(busy)), { isBusy, retries: 2, delayMs: () => 0 })).rejects.toBe(busy)
    expect(calls).toBe(3)
    calls = 0
    await expect(retryWhileBusy(async () => (calls++, Promise.reject(busy)), { isBusy, retries: 2, retryable: () => false })).rejects.toBe(busy)
    expect(calls).toBe(1)
    await expect(retryWhileBusy(async () => 1, { isBusy })).rejects.toThrow(TypeError)
  })
})

describe('kit: tool input', () => {
  const input = z.object({
    query: z.string().min(1).describe('What to look for.'),
    limit: z.number().int().min(1).max(20).default(5).describe('How many results.'),
  })

  it('generates plain JSON Schema of the input side', () => {
    const schema = toolParameters(input)
    expect(schema).not.toHaveProperty('$schema')
    expect(schema).toMatchObject({
      type: 'object',
      properties: { query: { type: 'string', minLength: 1, description: 'What to look for.' }, limit: { type: 'integer', minimum: 1, maximum: 20, default: 5 } },
      required: ['query'],
    })
    expect(Object.getPrototypeOf(schema)).toBe(Object.prototype)
  })

  it('generates output schemas in the subset the host enforces (no bounds, boolean additionalProperties)', () => {
    const output = toolOutput(z.looseObject({ count: z.number().int(), items: z.array(z.object({ id: z.string().min(1) })) }))
    expect(output).toEqual({
      type: 'object',
      properties: { count: { type: 'integer' }, items: { type: 'array', items: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'], additionalProperties: false } } },
      required: ['count', 'items'],
      additionalProperties: true,
    })
  })

  it('parses valid input and names the bad field of invalid input', () => {
    expect(parseToolInput(input, { query: '周报' })).toEqual({ ok: true, value: { query: '周报', limit: 5 } })
    const bad = parseToolInput(input, { query: 'x', limit: 99 })
    expect(bad).toMatchObject({ ok: false, path: 'limit' })
    expect(parseToolInput(input, undefined)).toMatchObject({ ok: false, path: 'query' })
  })
})

describe('kit: strict option keys', () => {
  const defaults = { enabled: true, rules: [{ kind: 'fact' }], recall: { maxResults: 5, routes: { l1: [] } } }
  const schema = strictOptionsSchema(optionKeysOf(defaults, { recall: { placement: true } }))

  it('accepts known keys at every level, with any values (the resolver checks values)', () => {
    expect(findUnknownOption({ enabled: 'yes', rules: [], recall: { maxResults: 1, placement: 'end', routes: { l1: [1] } } }, schema)).toBeUndefined()
    expect(findUnknownOption(undefined, schema)).toBeUndefined()
  })

  it('names the dotted path of an unknown key, nested or not', () => {
    expect(findUnknownOption({ enabeld: true }, schema)).toMatchObject({ path: 'enabeld' })
    expect(findUnknownOption({ recall: { maxResult: 3 } }, schema)).toMatchObject({ path: 'recall.maxResult', message: expect.stringContaining('unknown option') })
    expect(findUnknownOption({ recall: { routes: { l4: [] } } }, schema)).toMatchObject({ path: 'recall.routes.l4' })
    expect(findUnknownOption({ recall: 5 }, schema)).toMatchObject({ path: 'recall', message: 'must be an object of options' })
  })
})
