import { closeSync, existsSync, openSync, readSync, writeSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { DistillStateRepository } from '@dsh-memory/distill'
import { loadMigrationDir, openMemoryStore } from '@dsh-memory/store'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
// Writing behind the store's back needs the driver, which only the store package depends on.
import { withRawDatabase } from '../../../packages/store/test/support/raw-database.ts'
import { buildFixture, cli, type Fixture, scratch } from './helpers.ts'

let temp: ReturnType<typeof scratch>
beforeAll(() => {
  temp = scratch('doctor')
})
afterAll(() => temp.cleanup())

interface Check {
  name: string
  status: 'ok' | 'warning' | 'problem'
  summary: string
  details: string[]
  fixed?: string
  found?: { status: string; summary: string; details: string[] }
}

const checksOf = (stdout: string) => Object.fromEntries((JSON.parse(stdout).checks as Check[]).map((check) => [check.name, check]))

/**
 * Damage a data dir the ways real life does: a search index missing a row, rows written
 * behind the store's back with foreign keys off, a scene naming a deleted memory, bookkeeping
 * of a deleted conversation, and one flipped byte in an index page of the database file.
 */
function damage(fixture: Fixture): void {
  const path = join(fixture.dataDir, 'memory.db')
  const { pageSize, root } = withRawDatabase(path, (db) => {
    // The search index loses a memory (its FTS rows edited behind the store's back).
    db.exec(`DELETE FROM store_search_memories_fts WHERE rowid = (SELECT min(doc) FROM store_search_memories);
      DELETE FROM store_search_memories WHERE doc = (SELECT min(doc) FROM store_search_memories)`)
    db.pragma('foreign_keys = OFF')
    db.prepare("INSERT INTO store_messages (id, conversation_id, host_message_id, role, text, turn, seq, created_at) VALUES ('orphan-message', 'session-deleted', 'h-x', 'user', 'an orphan about PostgreSQL', 1, 0, 0)").run()
    db.prepare("UPDATE store_memories SET superseded_by = 'memory-that-never-was' WHERE id = ?").run(fixture.memories.editor)
    db.prepare('UPDATE store_scenes SET memory_ids = ? WHERE id = ?').run(JSON.stringify([fixture.memories.database, 'deleted-memory-id']), fixture.scene)
    db.prepare("INSERT INTO store_meta (key, value, updated_at) VALUES ('distill.conversation.session-deleted', '{}', 0)").run()
    db.prepare("INSERT INTO distill_conversations (conversation_id, cursor_seq, last_error) VALUES ('会话-deleted', 3, 'gone')").run()
    db.pragma('wal_checkpoint(TRUNCATE)')
    return {
      pageSize: Number(db.pragma('page_size', { simple: true })),
      root: Number(db.prepare("SELECT rootpage FROM sqlite_schema WHERE name = 'store_messages_created'").pluck().get()),
    }
  })
  // Flip the last byte of the index's (single, leaf) page: one entry now points at the wrong row.
  const fd = openSync(path, 'r+')
  const page = Buffer.alloc(pageSize)
  readSync(fd, page, 0, pageSize, (root - 1) * pageSize)
  page[pageSize - 1]! ^= 0x01
  writeSync(fd, page, 0, pageSize, (root - 1) * pageSize)
  closeSync(fd)
}

describe('doctor', () => {
  it('reports a healthy data dir and exits 0', async () => {
    const fixture = await buildFixture(join(temp.dir, 'healthy'))
    const result = await cli(['doctor', '--data-dir', fixture.dataDir])
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/\[ok {2}\] schema {9}migrations applied \(.*store v\d+.*\)/)
    expect(result.stdout).toContain('[ok  ] integrity      integrity_check ok')
    expect(result.stdout).toContain('[ok  ] foreign-keys   no orphan rows')
    expect(result.stdout).toContain('[ok  ] search-index   index current (6 messages, 6 memories)')
    expect(result.stdout.trim().endsWith('healthy')).toBe(true)
  })

  it('finds every deliberate damage without changing anything, exits 4; --fix repairs it all; a rerun is healthy', async () => {
    const fixture = await buildFixture(join(temp.dir, 'damaged'))
    damage(fixture)
    const path = join(fixture.dataDir, 'memory.db')

    const found = await cli(['doctor', '--data-dir', fixture.dataDir, '--json'])
    expect(found.code).toBe(4)
    expect(found.stderr).toBe('error: 4 problems found\n')
    const before = checksOf(found.stdout)
    expect(before.schema!.status).toBe('ok')
    expect(before.integrity!.status).toBe('problem')
    expect(before.integrity!.details.length).toBeGreaterThan(0)
    for (const line of before.integrity!.details) expect(line).toMatch(/^row \d+ missing from index store_messages_created$/)
    expect(before['foreign-keys']).toMatchObject({ status: 'problem', summary: '2 orphan rows' })
    expect(before['foreign-keys']!.details.sort()).toEqual(
      [
        'store_messages row orphan-message: conversation_id points to a missing store_conversations row',
        `store_memories row ${fixture.memories.editor}: superseded_by points to a missing store_memories row`,
      ].sort(),
    )
    expect(before['scene-members']).toMatchObject({ status: 'problem', details: [`scene ${fixture.scene}: missing deleted-memory-id`] })
    expect(before['distill-state']).toMatchObject({
      status: 'warning',
      summary: '2 distill state rows of deleted conversations',
      details: ['distill.conversation.session-deleted', 'distill_conversations 会话-deleted'],
    })
    expect(before['search-index']).toMatchObject({ status: 'problem' })
    expect(before['search-index']!.details.join('\n')).toMatch(/index holds 6 messages and 5 memories, the database 7 and 6/)
    // Without --fix, nothing was written: the orphan is still there.
    expect(withRawDatabase(path, (raw) => raw.prepare("SELECT COUNT(*) FROM store_messages WHERE id = 'orphan-message'").pluck().get(), { readonly: true })).toBe(1)

    const text = await cli(['doctor', '--data-dir', fixture.dataDir])
    expect(text.stdout).toContain('[FAIL] foreign-keys   2 orphan rows')
    expect(text.stdout).toContain('4 problems: run `dsh-memory doctor --fix`')

    const fixed = await cli(['doctor', '--fix', '--data-dir', fixture.dataDir, '--json'])
    expect(fixed.stderr).toBe('')
    expect(fixed.code).toBe(0)
    const after = checksOf(fixed.stdout)
    expect(Object.values(after).every((check) => check.status === 'ok')).toBe(true)
    expect(after.integrity!.fixed).toBe('rebuilt every index (REINDEX)')
    expect(after.integrity!.found!.summary).toMatch(/^integrity_check found \d+ problems?$/)
    expect(after['foreign-keys']!.found!.summary).toBe('2 orphan rows')
    expect(after['foreign-keys']!.fixed).toBe('deleted 1 orphan row, cleared 1 dangling reference')
    expect(after['scene-members']!.fixed).toBe('removed deleted memory ids from 1 scene')
    expect(after['distill-state']!.fixed).toBe('deleted 2 state rows')
    expect(after['search-index']!.fixed).toBe('rebuilt (6 messages, 6 memories)')
    expect(JSON.parse(fixed.stdout).problems).toBe(0)

    const rerun = await cli(['doctor', '--data-dir', fixture.dataDir])
    expect(rerun.code).toBe(0)
    expect(rerun.stdout.trim().endsWith('healthy')).toBe(true)
    expect(existsSync(`${path}.search-index`)).toBe(false)

    // The repaired data reads right: the orphan is gone, the memory with the dangling
    // reference is current again, the scene keeps its live member.
    const store = openMemoryStore({ path, readonly: true })
    try {
      expect(await store.messages.get('orphan-message')).toBeUndefined()
      expect((await store.search.messages('orphan PostgreSQL')).map((hit) => hit.message.id)).not.toContain('orphan-message')
      expect((await store.memories.get(fixture.memories.editor))!.supersededBy).toBeNull()
      expect((await store.search.memories('Helix', { scope: 'global' })).map((hit) => hit.memory.id)).toEqual([fixture.memories.editor])
      expect((await store.scenes.get(fixture.scene))!.memoryIds).toEqual([fixture.memories.database])
      expect(await store.meta.get('distill.conversation.session-deleted')).toBeUndefined()
      expect((await new DistillStateRepository(store).conversations()).map((state) => state.conversationId)).not.toContain('会话-deleted')
    } finally {
      await store.close()
    }
  })

  it('applies pending migrations with --fix (a database written by an older dsh-memory)', async () => {
    const fixture = await buildFixture(join(temp.dir, 'old'))
    const path = join(fixture.dataDir, 'memory.db')
    // Turn the file into what an older store version wrote: undo its newest migration that only
    // creates tables (one that adds columns cannot be undone by dropping what it created).
    const migrations = loadMigrationDir(join(dirname(createRequire(import.meta.url).resolve('@dsh-memory/store/package.json')), 'migrations', 'store'))
    const latest = migrations.migrations[migrations.migrations.length - 1]!
    const newest = [...migrations.migrations].reverse().find((migration) => !/\bALTER\s+TABLE\b/i.test(migration.sql))!
    withRawDatabase(path, (db) => {
      for (const [, kind, name] of newest.sql.matchAll(/CREATE\s+(VIRTUAL TABLE|TABLE|UNIQUE INDEX|INDEX)\s+(?:IF NOT EXISTS\s+)?(\w+)/gi)) {
        db.exec(`DROP ${kind!.toUpperCase().includes('INDEX') ? 'INDEX' : 'TABLE'} IF EXISTS ${name}`)
      }
      db.prepare("DELETE FROM store_schema WHERE owner = 'store' AND version = ?").run(newest.version)
    })

    const result = await cli(['doctor', '--data-dir', fixture.dataDir, '--json'])
    expect(result.code).toBe(4)
    expect(checksOf(result.stdout).schema).toMatchObject({ status: 'problem', summary: 'migrations pending (the database was written by an older dsh-memory)' })
    // Read commands say why they cannot open it, with the store's error code.
    const status = await cli(['status', '--data-dir', fixture.dataDir])
    expect(status.code).toBe(1)
    expect(status.stderr).toMatch(/\(schema-too-old\)\n$/)

    const fixed = await cli(['doctor', '--fix', '--data-dir', fixture.dataDir, '--json'])
    expect(fixed.code).toBe(0)
    const schema = checksOf(fixed.stdout).schema!
    expect(schema.fixed).toBe('applied the pending migrations')
    expect(schema.summary).toMatch(new RegExp(`store v${latest.version}`))
    expect((await cli(['status', '--data-dir', fixture.dataDir])).code).toBe(0)
    // The rows the older version wrote were indexed when the upgraded store opened.
    expect(checksOf(fixed.stdout)['search-index']).toMatchObject({ status: 'ok', summary: 'index current (6 messages, 6 memories)' })
  })

  it('refuses a database written by a newer dsh-memory, and --fix leaves it alone', async () => {
    const fixture = await buildFixture(join(temp.dir, 'future'))
    const path = join(fixture.dataDir, 'memory.db')
    withRawDatabase(path, (db) => db.prepare("INSERT INTO store_schema (owner, version, name, checksum, applied_at) VALUES ('store', 99, 'from-the-future', '-', 0)").run())
    const result = await cli(['doctor', '--data-dir', fixture.dataDir, '--json'])
    expect(result.code).toBe(4)
    const schema = checksOf(result.stdout).schema!
    expect(schema).toMatchObject({ status: 'problem', summary: 'written by a newer dsh-memory: upgrade dsh-memory (nothing here can fix it)' })
    expect(schema.details[0]).toMatch(/99/)
    const fix = await cli(['doctor', '--fix', '--data-dir', fixture.dataDir])
    expect(fix.code).toBe(4)
    expect(withRawDatabase(path, (after) => after.prepare('SELECT COUNT(*) FROM store_schema WHERE version = 99').pluck().get(), { readonly: true })).toBe(1)
    const status = await cli(['status', '--data-dir', fixture.dataDir])
    expect(status.code).toBe(1)
    expect(status.stderr).toMatch(/^error: .*99.*\(schema-too-new\)\n$/)
  })
})
