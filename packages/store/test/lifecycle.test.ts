import { homedir } from 'node:os'
import { join, resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { openMemoryStore, resolveDataDir } from '../src/index.ts'
import { openTemp } from './helpers.ts'

// Transactions, close and meta run on both backends: contract/lifecycle.test.ts.
describe('lifecycle (SQLite only)', () => {
  it('validates options', () => {
    const bad = [{ path: '' }, { path: 'x.db', busyTimeoutMs: -1 }, { path: 'x.db', limits: { bogus: 10 } }, { path: 'x.db', limits: { message: 3 } }, { path: 'x.db', actor: '' }, { path: 'x.db', cacheMiB: 0 }, { path: 'x.db', cacheMiB: 1.5 }, { path: 'x.db', cacheMiB: 5000 }]
    for (const options of bad) expect(() => openMemoryStore(options as never), JSON.stringify(options)).toThrowError(expect.objectContaining({ code: 'invalid-argument' }))
  })
})

describe('resolveDataDir', () => {
  it('prefers the configured directory, then DSH_HOME, then ~/.dsh', () => {
    expect(resolveDataDir('/data/mem', { DSH_HOME: '/h' })).toBe('/data/mem')
    expect(resolveDataDir('~/mem', {})).toBe(join(homedir(), 'mem'))
    expect(resolveDataDir('', { DSH_HOME: '/h' })).toBe('/h/memory')
    expect(resolveDataDir(undefined, { DSH_HOME: '  ' })).toBe(join(homedir(), '.dsh', 'memory'))
    expect(resolveDataDir('  ', {})).toBe(join(homedir(), '.dsh', 'memory'))
    expect(resolveDataDir('relative/dir', {})).toBe(resolve('relative/dir'))
  })
})

describe('diagnostics', () => {
  it('reports the connection settings the store promises', async () => {
    const { store, path } = openTemp()
    const report = await store.meta.diagnostics()
    expect(report).toMatchObject({
      backend: 'sqlite',
      location: path,
      details: { journalMode: 'wal', synchronous: 'NORMAL', foreignKeys: true, busyTimeoutMs: 30000, cacheMiB: 64, readonly: false },
    })
    expect(report.details.sizeBytes).toBeGreaterThan(0)
    const custom = openTemp({ busyTimeoutMs: 1234, cacheMiB: 8 }).store
    expect((await custom.meta.diagnostics()).details).toMatchObject({ busyTimeoutMs: 1234, cacheMiB: 8 })
  })
})
