import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { gunzipSync } from 'node:zlib'
import { openMemoryStore, type MemoryStore } from '@dsh-memory/store'
import { sql } from 'drizzle-orm'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ArchiveIndex, createPalaceTools, Palace, palaceTurns, resolvePalaceOptions } from '../src/index.js'
import { EventLog, sessionOf, tempDir } from './fixtures.js'

/**
 * A data dir written by the code before the palace tables (commit daff86b, by
 * `fixtures/pre-index-generate.mjs`): the archive indexed as a fake L0 conversation under
 * `memory-palace:<workspace>`, and a junk memory the distiller's start-up scan extracted from
 * it under that fake workspace, next to a real conversation and real memories. The archive
 * folder (the source of truth) is copied into a fresh workspace.
 */
function writePreIndexDataDir(dir: string): { path: string; workspace: string } {
  mkdirSync(join(dir, 'data'), { recursive: true })
  const path = join(dir, 'data', 'memory.db')
  writeFileSync(path, gunzipSync(readFileSync(join(import.meta.dirname, 'fixtures', 'pre-index-memory.db.gz'))))
  const workspace = join(dir, 'work', 'app')
  cpSync(join(import.meta.dirname, 'fixtures', 'pre-index-archive', 'memory-palace'), join(workspace, 'memory-palace'), { recursive: true })
  return { path, workspace }
}

/** Every text cell of every table that holds `needle`, as `table.column: value`. */
async function cellsContaining(store: MemoryStore, needle: string): Promise<string[]> {
  const tables = await new ArchiveIndex(store).tables()
  return tables.read((db) => {
    const out: string[] = []
    const names = db.all<{ name: string }>(sql`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND sql NOT LIKE 'CREATE VIRTUAL%'`)
    for (const { name } of names) {
      // FTS5 shadow tables hold encoded terms, not keys.
      if (/_fts_|_vocab/.test(name)) continue
      const columns = db.all<{ name: string }>(sql`SELECT name FROM pragma_table_info(${name})`)
      for (const { name: column } of columns) {
        const rows = db.all<{ value: string }>(sql.raw(`SELECT CAST("${column}" AS TEXT) AS value FROM "${name}" WHERE instr(CAST("${column}" AS TEXT), '${needle.replace(/'/g, "''")}') > 0`))
        out.push(...rows.map((row) => `${name}.${column}: ${row.value.slice(0, 120)}`))
      }
    }
    return out
  })
}

describe('a data dir written before the palace tables', () => {
  let temp: ReturnType<typeof tempDir>
  beforeEach(() => {
    temp = tempDir('palace-upgrade')
  })
  afterEach(() => temp.remove())

  it('is cleaned at open: no fake conversation, no junk memory, no memory-palace: key; the index is rebuilt from disk and search still finds the archive', async () => {
    const { path, workspace } = writePreIndexDataDir(temp.dir)
    const store = openMemoryStore({ path })
    try {
      // L0 holds the real conversation only, with both its messages.
      const conversations = await store.conversations.list()
      expect(conversations.map((conversation) => [conversation.id, conversation.title])).toEqual([['conv-real', '发布计划']])
      expect((await store.messages.list({ conversationId: 'conv-real' })).map((message) => message.text)).toEqual([
        'We ship on Friday; 周五发布，リリースノートは田中さんが書く。',
        'Noted: Friday release, 田中さん writes the notes.',
      ])
      // The junk memory is gone; the real ones are untouched.
      const memories = await store.memories.list({ limit: 100 })
      expect(memories.map((memory) => [memory.scope, memory.text]).sort()).toEqual([
        ['global', 'Prefers answers in Japanese when the question is in Japanese'],
        ['workspace', '发布日定在周五'],
      ])
      // The store's own search sees no archived text any more, and still finds the real rows.
      expect(await store.search.messages('LEDGER')).toEqual([])
      expect((await store.search.memories('Ledger checksum')).map((hit) => hit.memory.text)).toEqual([])
      expect((await store.search.messages('周五')).map((hit) => hit.message.conversationId)).toEqual(['conv-real'])
      expect((await store.search.memories('发布日')).map((hit) => hit.memory.text)).toEqual(['发布日定在周五'])
      // Per-conversation state of the fake conversation is gone, the real one's kept.
      expect(await store.meta.get('distill.conversation.conv-real')).toBeDefined()
      const layers = JSON.parse((await store.meta.get('distill.layers'))!) as { keys: Record<string, unknown> }
      expect(Object.keys(layers.keys).filter((key) => key.includes('memory-palace'))).toEqual([])
      // No workspace key `memory-palace:<dir>` anywhere in the database.
      expect(await cellsContaining(store, 'memory-palace:/')).toEqual([])

      // The palace tables start empty and are rebuilt from the archive files by the first search.
      const index = new ArchiveIndex(store)
      const tables = await index.tables()
      expect(await tables.read((db) => db.select().from(palaceTurns).all())).toEqual([])
      const palace = new Palace(resolvePalaceOptions({}), { index })
      const tools = new Map(createPalaceTools(palace).map((tool) => [tool.name, tool]))
      const session = sessionOf(new EventLog(), workspace, 'session-ledger')
      const found = await tools.get('palace_search')!.run({ keyword: '"LEDGER-0-39-QX5109" 校验码' }, { session })
      expect(found.ok).toBe(true)
      expect(found.text).toMatch(/^palace_search .*: 1 matching turn/)
      expect(found.text).toContain('LEDGER-0-39-QX5109')
      const japanese = await tools.get('palace_search')!.run({ keyword: '帳簿の監査' }, { session })
      expect(japanese.text).toMatch(/1 matching turn/)
      const rows = await tables.read((db) => db.select({ workspace: palaceTurns.workspace, namespace: palaceTurns.namespace }).from(palaceTurns).all())
      expect(rows.length).toBeGreaterThan(0)
      expect(new Set(rows.map((row) => `${row.workspace}|${row.namespace}`))).toEqual(new Set([`${workspace}|Ledger Audit`]))
      // Still nothing in L0.
      expect((await store.conversations.list()).map((conversation) => conversation.id)).toEqual(['conv-real'])
    } finally {
      await store.close()
    }
    // Opening again changes nothing (the migration ran once).
    const again = openMemoryStore({ path })
    try {
      expect((await again.conversations.list()).map((conversation) => conversation.id)).toEqual(['conv-real'])
      expect((await again.memories.list({ limit: 100 })).length).toBe(2)
    } finally {
      await again.close()
    }
  })
})
