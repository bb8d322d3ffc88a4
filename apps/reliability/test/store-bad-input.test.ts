/**
 * Bad input at the storage layer and from the future: oversized, binary and control-character
 * text through the store and capture, and a database written by a newer version of the store
 * or of a plugin (its migrations or its versioned state). Each gets a clear error with a
 * stable code, and nothing invalid is stored or overwritten.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { CaptureRecorder, resolveCaptureOptions } from '@dsh-memory/capture'
import { cueBankMigrations } from '@dsh-memory/cue-bank'
import { DistillStateRepository } from '@dsh-memory/distill'
import { RecallEngine, resolveRecallOptions, settingsOrDefaults } from '@dsh-memory/recall'
import { openMemoryStore } from '@dsh-memory/store'
import { openMemoryTree } from '@dsh-memory/tree'
import { afterAll, describe, expect, it } from 'vitest'

const dirs: string[] = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})
const fresh = (label: string) => {
  const dir = mkdtempSync(join(tmpdir(), `dshm-${label}-`))
  dirs.push(dir)
  return dir
}

/** Record a schema version of `owner` that no released code knows. */
function recordFutureVersion(path: string, owner: string, version = 999): void {
  const db = new DatabaseSync(path)
  try {
    db.prepare('INSERT INTO store_schema (owner, version, name, checksum, applied_at) VALUES (?, ?, ?, ?, ?)').run(owner, version, 'from-the-future', 'f'.repeat(64), Date.now())
  } finally {
    db.close()
  }
}

function schemaRows(path: string): unknown[] {
  const db = new DatabaseSync(path, { readOnly: true })
  try {
    return db.prepare('SELECT owner, version, name FROM store_schema ORDER BY owner, version').all()
  } finally {
    db.close()
  }
}

async function codeOf(fn: () => unknown): Promise<{ code: string; message: string }> {
  try {
    await fn()
  } catch (error) {
    return { code: String((error as { code?: unknown }).code), message: String((error as Error).message) }
  }
  throw new Error('expected a failure')
}

describe('oversized, binary and control-character text', () => {
  it('the store cleans and caps every text, and refuses what is not text', async () => {
    const store = openMemoryStore({ path: join(fresh('store-text'), 'memory.db') })
    await store.conversations.ensure({ id: 'c', workspace: '/w' })
    const huge = await store.messages.append({ conversationId: 'c', hostMessageId: 'huge', role: 'user', text: '数据'.repeat(1_000_000) })
    expect(huge.message.text.length).toBeLessThanOrEqual(100_000 + 20)
    expect(huge.message.text).toMatch(/…\[truncated\]$/)
    const binary = await store.messages.append({ conversationId: 'c', hostMessageId: 'bin', role: 'user', text: 'a\u0000b\u0001c\u0007d\u001b[2Je\u007ff\ttab\nline' })
    expect(binary.message.text).toBe('abcd[2Jef\ttab\nline')
    for (const bad of [
      () => store.messages.append({ conversationId: 'c', hostMessageId: 'e', role: 'user', text: '' }),
      () => store.messages.append({ conversationId: 'c', hostMessageId: 'n', role: 'user', text: 42 as never }),
      () => store.messages.append({ conversationId: 'c', hostMessageId: 'r', role: 'system' as never, text: 'x' }),
      () => store.messages.append({ conversationId: 'nope', hostMessageId: 'x', role: 'user', text: 'x' }),
      () => store.memories.add({ kind: 'fact', text: '\u0000\u0001', scope: 'global' }),
      () => store.memories.add({ kind: 'fact', text: 'x', scope: 'galaxy' as never }),
      () => store.memories.add({ kind: 'fact', text: 'x', scope: 'workspace' }),
    ]) {
      const error = await codeOf(bad)
      expect(['invalid-argument', 'not-found']).toContain(error.code)
      expect(error.message.length).toBeGreaterThan(10)
    }
    const memory = await store.memories.add({ kind: 'fact', text: 'm'.repeat(50_000), scope: 'global' })
    expect(memory.text.length).toBeLessThanOrEqual(8_000 + 20)
    expect(await store.messages.list({ conversationId: 'c' })).toHaveLength(2)
    await store.close()
  })

  it('capture stores binary and oversized host messages cleaned and capped, and never throws', async () => {
    const store = openMemoryStore({ path: join(fresh('capture-text'), 'memory.db') })
    const errors: unknown[] = []
    const recorder = new CaptureRecorder(store, resolveCaptureOptions({ maxMessageChars: 4000 }), { onError: (error) => errors.push(error) })
    const session = { id: 'bin', header: { cwd: '/w' } }
    await recorder.handle(session, { type: 'user/message', seq: 1, data: { id: 'u1', role: 'user', content: [{ type: 'text', text: `\u0000\u0007${'日本語'.repeat(10_000)}` }], source: { kind: 'user' } } })
    await recorder.handle(session, { type: 'user/message', seq: 2, data: { id: 'u2', role: 'user', content: 'not blocks' as never, source: { kind: 'user' } } })
    await recorder.handle(session, { type: 'user/message', seq: 3, data: null })
    await recorder.handle(session, { type: 'assistant/message', seq: 4, data: { message: { id: 'a1', content: [{ type: 'text', text: 42 }] } } })
    await recorder.whenIdle()
    const rows = await store.messages.list({ conversationId: 'bin' })
    // A plain-string content is text too (the shared host-message reader accepts it); the null
    // event and the non-text block are skipped.
    expect(rows.map((row) => row.text.slice(0, 10))).toEqual(['日本語日本語日本語日', 'not blocks'])
    expect(rows[0]!.text).not.toMatch(/[\u0000\u0007]/)
    expect([...rows[0]!.text].length).toBeLessThanOrEqual(4000)
    await store.close()
  })
})

describe('a database from a future schema version', () => {
  it('the store refuses to open it (schema-too-new, naming both versions) and changes nothing', async () => {
    const path = join(fresh('future-store'), 'memory.db')
    await openMemoryStore({ path }).close()
    recordFutureVersion(path, 'store')
    const before = schemaRows(path)
    const error = await codeOf(() => openMemoryStore({ path }))
    expect(error.code).toBe('schema-too-new')
    expect(error.message).toMatch(/999/)
    expect(schemaRows(path)).toEqual(before)
    // Read-only opens are refused the same way: no tool reads a layout it does not understand.
    expect((await codeOf(() => openMemoryStore({ path, readonly: true }))).code).toBe('schema-too-new')
  })

  it('cue-bank and tree migrations refuse a newer version of their own tables', async () => {
    const dir = fresh('future-plugins')
    const path = join(dir, 'memory.db')
    const store = openMemoryStore({ path })
    await store.migrate(cueBankMigrations())
    await store.close()
    recordFutureVersion(path, 'cue-bank')
    recordFutureVersion(path, 'tree')
    const before = schemaRows(path)
    const cue = await codeOf(() => openMemoryStore({ path, extraMigrations: [cueBankMigrations()] }))
    expect(cue.code).toBe('schema-too-new')
    expect(cue.message).toMatch(/cue-bank/)
    const tree = await codeOf(() => openMemoryTree({ dataDir: dir, projectionDir: false as never }))
    expect(tree.message).toMatch(/tree/)
    expect(tree.message).toMatch(/999|newer/)
    expect(schemaRows(path)).toEqual(before)
    // The store alone still opens: other owners' data is not affected.
    const plain = openMemoryStore({ path })
    expect((await codeOf(() => plain.migrate(cueBankMigrations()))).code).toBe('schema-too-new')
    await plain.close()
  })

  it('distill state and recall session settings of a newer version fail loudly or fall back, and are not overwritten', async () => {
    const store = openMemoryStore({ path: join(fresh('future-state'), 'memory.db') })
    const future = JSON.stringify({ version: 99, cursorSeq: 5, whatever: true })
    await store.meta.set('distill.conversation.c1', future)
    const state = new DistillStateRepository(store)
    const error = await codeOf(() => state.conversation('c1'))
    expect(error.code).toBe('unsupported-state')
    expect(error.message).toMatch(/distill\.conversation\.c1 has version/)
    expect(await store.meta.get('distill.conversation.c1')).toBe(future)

    // Recall keeps settings in its own tables; an old-format record it cannot read is left
    // in the meta table at the upgrade, named in a warning, and the session uses the defaults.
    await store.meta.set('recall.session.s1', JSON.stringify({ version: 99, mode: 'telepathy' }))
    const warnings: string[] = []
    const engine = new RecallEngine(store, resolveRecallOptions({}), { onWarning: (message) => warnings.push(message) })
    const settings = await settingsOrDefaults(engine, 's1', (message) => warnings.push(message))
    expect(settings.mode).toBe(resolveRecallOptions({}).defaultMode)
    expect(warnings.join('\n')).toMatch(/recall\.session\.s1: version is 99, expected 1/)
    expect(JSON.parse((await store.meta.get('recall.session.s1'))!).version).toBe(99)
    await store.close()

    // Recall's tables written by a newer version: schema-too-new, the turn falls back to the defaults.
    const newer = join(fresh('future-recall'), 'memory.db')
    await openMemoryStore({ path: newer }).close()
    recordFutureVersion(newer, 'recall')
    const reopened = openMemoryStore({ path: newer })
    const later = new RecallEngine(reopened, resolveRecallOptions({}))
    expect((await codeOf(() => later.settings.get('s1'))).code).toBe('schema-too-new')
    const fallback: string[] = []
    expect((await settingsOrDefaults(later, 's1', (message) => fallback.push(message))).mode).toBe(resolveRecallOptions({}).defaultMode)
    expect(fallback.join('\n')).toMatch(/recall/)
    await reopened.close()
  })
})
