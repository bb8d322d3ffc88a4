import { describe, expect, it } from 'vitest'
import type { MigrationSet } from '../../src/index.ts'
import { cueBank, rejectionOf } from '../helpers.ts'
import { backends } from './backends.ts'

const versions = async (store: { meta: { migrations(): Promise<{ owner: string; version: number }[]> } }) => (await store.meta.migrations()).map((m) => `${m.owner}@${m.version}`)

describe.each(backends)('migrations ($name)', (backend) => {
  it('a fresh database gets every store migration at open, recorded with checksums', async () => {
    const store = await backend.open()
    const applied = await store.meta.migrations()
    expect(applied.length).toBeGreaterThan(0)
    // Each backend has its own sequence (SQLite's files never change); both start at 1 and have no gaps.
    expect(applied.map((m) => [m.owner, m.version])).toEqual(applied.map((_, index) => ['store', index + 1]))
    expect(applied[0]).toMatchObject({ name: 'init', checksum: expect.stringMatching(/^[0-9a-f]{64}$/), appliedAt: expect.any(Number) })
    expect(await backend.columns(store, 'store_leases')).toEqual(['name', 'holder', 'token', 'acquired_at', 'expires_at'])
  })

  it('reopening applies nothing', async () => {
    const store = await backend.open()
    const before = await store.meta.migrations()
    await store.close()
    const again = await backend.reopen(store, { now: () => 42 })
    expect(await again.meta.migrations()).toEqual(before)
    expect(await again.migrate([])).toEqual([])
  })

  it('two stores opening one fresh database at once both succeed, and the migrations run once', async () => {
    const location = backend.fresh()
    const [first, second] = await Promise.all([backend.openAt(location), backend.openAt(location)])
    expect(await first.meta.migrations()).toEqual(await second.meta.migrations())
    await first.meta.set('opened.by', 'first')
    expect(await second.meta.get('opened.by')).toBe('first')
  })

  it('applies another owner’s migration set, at open and later through migrate()', async () => {
    const store = await backend.open({ extraMigrations: [cueBank([1])] })
    expect(await store.migrate(cueBank([1, 2]))).toEqual([expect.objectContaining({ owner: 'cue-bank', version: 2, name: 'step_2' })])
    expect(await store.migrate(cueBank([1, 2]))).toEqual([])
    expect((await versions(store)).filter((v) => v.startsWith('cue-bank'))).toEqual(['cue-bank@1', 'cue-bank@2'])
    expect(await backend.columns(store, 'cue_bank_t2')).toEqual(['id'])
    // The other owner's newer version is refused the same way as the store's own.
    await store.close()
    expect((await rejectionOf(backend.reopen(store, { extraMigrations: [cueBank([1])] }))).code).toBe('schema-too-new')
    expect((await rejectionOf(store.migrate({ owner: 'store', migrations: [] }))).code).toBe('invalid-argument')
  })

  it('refuses a database whose store schema is newer, naming both versions', async () => {
    const store = await backend.open()
    const known = (await store.meta.migrations()).length
    await store.close()
    await backend.sql(store, `INSERT INTO store_schema (owner, version, name, checksum, applied_at) VALUES ('store', 99, 'future', 'x', 0)`)
    const error = await rejectionOf(backend.reopen(store))
    expect(error.code).toBe('schema-too-new')
    expect(error.message).toContain('version 99')
    expect(error.message).toContain(`up to version ${known}`)
  })

  it('fails loudly when an applied migration was edited', async () => {
    const store = await backend.open({ extraMigrations: [cueBank([1])] })
    await store.close()
    const edited: MigrationSet = { owner: 'cue-bank', migrations: [{ version: 1, name: 'step_1', sql: 'CREATE TABLE cue_bank_other (x TEXT);' }] }
    const error = await rejectionOf(backend.reopen(store, { extraMigrations: [edited] }))
    expect(error.code).toBe('migration-mismatch')
    expect(error.message).toContain('step_1')
  })

  it('rolls back every migration of a call when one fails', async () => {
    const store = await backend.open()
    const error = await rejectionOf(store.migrate(cueBank([1, 2, 3], 2)))
    expect(error.code).toBe('migration-failed')
    expect(error.message).toContain('step_2')
    // Nothing of that call survived: not v1's record, not its table (v1 applies again cleanly).
    expect((await versions(store)).filter((v) => v.startsWith('cue-bank'))).toEqual([])
    expect(await store.migrate(cueBank([1]))).toHaveLength(1)
  })

  it('a read-only store only checks: schema-too-old while migrations are pending, readonly on writes', async () => {
    const store = await backend.open()
    await store.meta.set('k', 'v')
    await store.close()
    const readonly = await backend.reopen(store, { readonly: true })
    expect(readonly.readonly).toBe(true)
    expect(await readonly.meta.get('k')).toBe('v')
    expect((await rejectionOf(readonly.meta.set('k', 'w'))).code).toBe('readonly')
    expect((await rejectionOf(readonly.leases.acquire('job', 'h', 1_000))).code).toBe('readonly')
    expect((await rejectionOf(readonly.transaction(() => 1, { fence: { name: 'job', token: 1 } }))).code).toBe('readonly')
    expect(await readonly.transaction(async (tx) => tx.meta.get('k'))).toBe('v')
    const pending = await rejectionOf(backend.reopen(store, { readonly: true, extraMigrations: [cueBank([1])] }))
    expect(pending.code).toBe('schema-too-old')
    expect(pending.message).toContain('cue-bank@1')
    expect((await rejectionOf(backend.openAt(backend.fresh(), { readonly: true }))).code).toBe('not-found')
  })
})
