import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { ActivityLog, formatActivityLine } from '../src/index.ts'

const AT = Date.UTC(2026, 11, 1, 15, 20, 0, 101)

describe('memory.log (ActivityLog)', () => {
  const dirs: string[] = []
  const dir = () => {
    const made = mkdtempSync(join(tmpdir(), 'dshm-log-'))
    dirs.push(made)
    return made
  }
  afterEach(() => {
    for (const made of dirs.splice(0)) rmSync(made, { recursive: true, force: true })
  })

  it('writes `<time> <stage> <event> key=value` lines with codes and numbers only', () => {
    expect(formatActivityLine(AT, 'recall', 'hit', { session: 'sess-01', memories: 2, chars: 118, ms: 6.12345, ok: true, none: null, skip: undefined })).toBe(
      '2026-12-01T15:20:00.101Z recall hit session=sess-01 memories=2 chars=118 ms=6.123 ok=true none=-\n',
    )
  })

  it('never writes text: a value with whitespace, "=", control characters or over 80 characters becomes its length', () => {
    const line = formatActivityLine(AT, 'capture', 'stored', {
      sentence: 'Staging deploys go out with Kamal',
      chinese: '我们的 API 用哪个数据库',
      equals: 'a=b',
      newline: 'x\ny',
      long: 'k'.repeat(81),
      japanese: '日本語のメモ',
    })
    expect(line).toBe('2026-12-01T15:20:00.101Z capture stored sentence=<33chars> chinese=<14chars> equals=<3chars> newline=<3chars> long=<81chars> japanese=日本語のメモ\n')
    expect(line).not.toContain('Kamal')
    expect(line).not.toContain('数据库')
  })

  it('rotates at maxBytes, keeping `files` older files and never splitting a line', () => {
    const path = join(dir(), 'memory.log')
    let now = AT
    const log = new ActivityLog({ path, maxBytes: 200, files: 2, now: () => now++ })
    for (let index = 0; index < 20; index++) log.write('distill', 'batch', { index, messages: 6 })
    expect(existsSync(`${path}.1`)).toBe(true)
    expect(existsSync(`${path}.2`)).toBe(true)
    expect(existsSync(`${path}.3`)).toBe(false)
    const lines = [`${path}.2`, `${path}.1`, path].flatMap((file) => {
      const text = readFileSync(file, 'utf8')
      expect(Buffer.byteLength(text)).toBeLessThanOrEqual(200)
      expect(text.endsWith('\n')).toBe(true)
      return text.trimEnd().split('\n')
    })
    // The newest lines survive, in order, whole.
    const indexes = lines.map((line) => Number(/index=(\d+)/.exec(line)![1]))
    expect(indexes.at(-1)).toBe(19)
    expect(indexes).toEqual([...indexes].sort((a, b) => a - b))
    for (const line of lines) expect(line).toMatch(/^\S+Z distill batch index=\d+ messages=6$/)
  })

  it('picks up a file another process already rotated, and appends to an existing log', () => {
    const path = join(dir(), 'memory.log')
    writeFileSync(path, 'earlier line\n')
    const log = new ActivityLog({ path, maxBytes: 150, files: 1, now: () => AT })
    log.write('recall', 'miss', { reason: 'no-match' })
    expect(readFileSync(path, 'utf8')).toBe('earlier line\n2026-12-01T15:20:00.101Z recall miss reason=no-match\n')
    // Another process rotated: the file is small again, so this one does not rotate a second time.
    writeFileSync(path, '')
    log.write('recall', 'miss', { reason: 'no-match' })
    log.write('recall', 'miss', { reason: 'no-match' })
    expect(existsSync(`${path}.1`)).toBe(false)
    expect(readFileSync(path, 'utf8').trimEnd().split('\n')).toHaveLength(2)
  })

  it('maxBytes 0 writes nothing; a write failure is reported once and never thrown', () => {
    const root = dir()
    const off = new ActivityLog({ path: join(root, 'off.log'), maxBytes: 0, files: 3 })
    off.write('recall', 'hit')
    expect(off.enabled).toBe(false)
    expect(existsSync(join(root, 'off.log'))).toBe(false)

    const errors: unknown[] = []
    // A file where the log's directory should be: every append fails.
    const blocked = join(root, 'blocked')
    const log = new ActivityLog({ path: join(blocked, 'sub', 'memory.log'), maxBytes: 1000, files: 1, onError: (error) => errors.push(error) })
    writeFileSync(blocked, 'a file, not a directory')
    expect(() => log.write('capture', 'stored')).not.toThrow()
    expect(() => log.write('capture', 'stored')).not.toThrow()
    expect(errors).toHaveLength(1)
  })
})
