import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { isMemoryStoreError, loadMigrationDir, migrationChecksum, openMemoryStore } from '../src/index.ts'
import type { MigrationSet } from '../src/index.ts'
import { cueBank, onCleanup, openTemp, rejectionOf, reopen, tempDir } from './helpers.ts'

function tables(path: string): string[] {
  const db = new Database(path, { readonly: true })
  try {
    return (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`).all() as { name: string }[]).map((r) => r.name)
  } finally {
    db.close()
  }
}

function openError(fn: () => unknown): Error & { code?: string } {
  try {
    const store = fn() as { close?: () => Promise<void> }
    void store?.close?.()
  } catch (error) {
    return error as Error & { code?: string }
  }
  throw new Error('expected openMemoryStore to throw')
}

// The rules both backends share (reopening, newer schemas, other owners, edited migrations,
// read-only checks) are test/contract/migrations.test.ts; SQLite's own behaviour stays here.
describe('migrations', () => {
  it('a fresh open creates the parent directory, applies the store migrations and enables WAL', async () => {
    const { store, path } = openTemp()
    const applied = await store.meta.migrations()
    expect(applied.map((m) => [m.owner, m.version, m.name])).toEqual([
      ['store', 1, 'init'],
      ['store', 2, 'layers_leases'],
      ['store', 3, 'search_fts'],
      ['store', 4, 'audit_opaque_paths'],
      ['store', 5, 'palace_index_cleanup'],
      ['store', 6, 'user_identity'],
      ['store', 7, 'message_vectors'],
      ['store', 8, 'message_vectors_per_model'],
    ])
    expect(applied[0]!.checksum).toMatch(/^[0-9a-f]{64}$/)
    expect(tables(path)).toEqual(
      expect.arrayContaining(['store_schema', 'store_meta', 'store_conversations', 'store_messages', 'store_message_vectors', 'store_memories', 'store_scenes', 'store_persona', 'store_audit', 'store_changes', 'store_layer_revisions', 'store_leases', 'store_search_messages', 'store_search_messages_fts', 'store_search_memories', 'store_search_memories_fts']),
    )
    const raw = new Database(path, { readonly: true })
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal')
    raw.close()
  })

  it('opening an up-to-date database does not need the write lock', async () => {
    const { store, path } = openTemp()
    await store.close()
    const other = new Database(path)
    other.exec('BEGIN IMMEDIATE')
    try {
      // With no wait allowed, the open could not succeed if it needed the lock.
      const again = openMemoryStore({ path, busyTimeoutMs: 0 })
      expect((await again.meta.migrations()).length).toBe(8)
      await again.close()
    } finally {
      other.exec('ROLLBACK')
      other.close()
    }
  })

  it('rolls back every migration of the open when one fails', () => {
    const path = join(tempDir(), 'memory.db')
    const error = openError(() => openMemoryStore({ path, extraMigrations: [cueBank([1, 2, 3], 2)] }))
    expect(isMemoryStoreError(error, 'migration-failed')).toBe(true)
    expect(error.message).toContain('step_2')
    // Nothing of that open survived: not the store's tables, not cue-bank v1.
    expect(tables(path).filter((name) => name !== 'sqlite_sequence')).toEqual([])
    const store = openMemoryStore({ path, extraMigrations: [cueBank([1])] })
    onCleanup(() => store.close())
    expect(tables(path)).toContain('cue_bank_t1')
  })

  it('validates migration sets', () => {
    const path = join(tempDir(), 'memory.db')
    expect(openError(() => openMemoryStore({ path, extraMigrations: [{ owner: 'store', migrations: [] }] })).code).toBe('invalid-argument')
    expect(openError(() => openMemoryStore({ path, extraMigrations: [{ owner: 'Bad Owner', migrations: [] }] })).code).toBe('invalid-argument')
    const duplicate: MigrationSet = { owner: 'tree', migrations: [{ version: 1, name: 'a', sql: '' }, { version: 1, name: 'b', sql: '' }] }
    expect(openError(() => openMemoryStore({ path, extraMigrations: [duplicate] })).code).toBe('invalid-argument')
  })

  it('loadMigrationDir reads NNNN_name.sql files in version order', () => {
    const dir = join(tempDir(), 'palace')
    mkdirSync(dir)
    writeFileSync(join(dir, '0002_add_index.sql'), 'CREATE INDEX palace_x ON palace_rooms (id);')
    writeFileSync(join(dir, '0001_init.sql'), 'CREATE TABLE palace_rooms (id TEXT);\r\n')
    writeFileSync(join(dir, 'README.md'), 'not a migration')
    const set = loadMigrationDir(dir)
    expect(set.owner).toBe('palace')
    expect(set.migrations.map((m) => [m.version, m.name])).toEqual([
      [1, 'init'],
      [2, 'add_index'],
    ])
    // Line endings do not change the checksum.
    expect(migrationChecksum(set.migrations[0]!.sql)).toBe(migrationChecksum('CREATE TABLE palace_rooms (id TEXT);\n'))
    writeFileSync(join(dir, '2_dup.sql'), '')
    expect(() => loadMigrationDir(dir)).toThrowError(expect.objectContaining({ code: 'invalid-argument' }))
    expect(() => loadMigrationDir(join(dir, 'missing'))).toThrowError(expect.objectContaining({ code: 'invalid-argument' }))
  })

  it('opens read-only without writing, and refuses writes', async () => {
    const { store, path } = openTemp()
    await store.conversations.ensure({ id: 'c', workspace: '/w' })
    await store.close()
    const ro = reopen(path, { readonly: true })
    expect(ro.readonly).toBe(true)
    expect((await ro.conversations.get('c'))?.workspace).toBe('/w')
    expect((await rejectionOf(ro.conversations.ensure({ id: 'd', workspace: '' }))).code).toBe('readonly')
    expect(openError(() => openMemoryStore({ path, readonly: true, extraMigrations: [cueBank([1])] })).code).toBe('schema-too-old')
    expect(openError(() => openMemoryStore({ path: join(tempDir(), 'none.db'), readonly: true })).code).toBe('not-found')
  })

  it('reports a file that is not a database as corrupt', () => {
    const path = join(tempDir(), 'memory.db')
    writeFileSync(path, 'this is not sqlite, just some text that is long enough to have a header'.repeat(20))
    expect(openError(() => openMemoryStore({ path })).code).toBe('corrupt')
  })

  it('waits busyTimeoutMs for another connection’s lock, then fails with busy', async () => {
    const { store, path } = openTemp({ busyTimeoutMs: 150 })
    const other = new Database(path)
    other.exec('BEGIN IMMEDIATE')
    try {
      const started = Date.now()
      const error = await rejectionOf(store.conversations.ensure({ id: 'x', workspace: '' }))
      expect(error.code).toBe('busy')
      expect(Date.now() - started).toBeGreaterThanOrEqual(140)
    } finally {
      other.exec('ROLLBACK')
      other.close()
    }
    // Once the lock is gone the same write succeeds.
    expect((await store.conversations.ensure({ id: 'x', workspace: '' })).created).toBe(true)
  })

  it('waits for another connection’s write lock without blocking the event loop, then writes', async () => {
    const { store, path } = openTemp({ busyTimeoutMs: 10_000 })
    const other = new Database(path)
    other.exec('BEGIN IMMEDIATE')
    // The other writer holds the lock for 1.2 s; meanwhile a timer must keep firing.
    let ticks = 0
    const ticker = setInterval(() => ticks++, 20)
    setTimeout(() => {
      other.exec('ROLLBACK')
      other.close()
    }, 1_200)
    try {
      const [single, transactional] = await Promise.all([
        store.conversations.ensure({ id: 'waits', workspace: '' }),
        store.transaction(async (tx) => {
          await tx.conversations.ensure({ id: 'waits-in-tx', workspace: '' })
          return 'committed'
        }),
      ])
      expect(single.created).toBe(true)
      expect(transactional).toBe('committed')
    } finally {
      clearInterval(ticker)
    }
    // SQLite's own wait would block the thread for the whole 1.2 s: the timer could fire
    // once, after it. Waiting between short slices lets it fire throughout.
    expect(ticks).toBeGreaterThan(5)
    expect((await store.conversations.get('waits-in-tx'))?.id).toBe('waits-in-tx')
  })
})
