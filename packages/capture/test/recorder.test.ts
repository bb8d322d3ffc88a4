import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { openMemoryStore, type MemoryStore } from '@dsh-memory/store'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { resolveCaptureOptions } from '../src/core/options.js'
import { CaptureRecorder, type CapturedMessage } from '../src/core/recorder.js'
import { EventScript, session, tempDir } from './fixtures.js'

describe('CaptureRecorder on a real store', () => {
  let temp: ReturnType<typeof tempDir>
  let store: MemoryStore

  beforeEach(() => {
    temp = tempDir()
    store = openMemoryStore({ path: join(temp.dir, 'memory.db') })
  })
  afterEach(async () => {
    await store.close()
    temp.remove()
  })

  it('stores the human prompt and the assistant text with session, workspace and turn', async () => {
    const captured: CapturedMessage[] = []
    const recorder = new CaptureRecorder(store, resolveCaptureOptions(), { onCaptured: (message) => captured.push(message) })
    const s = session('/work/alpha')
    const events = new EventScript()
    await recorder.handle(s, events.turn(3))
    await recorder.handle(s, events.user('We deploy on Fridays.'))
    await recorder.handle(s, events.assistant(3, [{ type: 'reasoning', text: 'secret thoughts' }, { type: 'text', text: 'Understood.' }]))

    const rows = await store.messages.list({ conversationId: s.id })
    expect(rows.map((row) => [row.role, row.text, row.turn])).toEqual([
      ['user', 'We deploy on Fridays.', 3],
      ['assistant', 'Understood.', 3],
    ])
    expect((await store.conversations.get(s.id))?.workspace).toBe('/work/alpha')
    expect(captured.map((message) => message.role)).toEqual(['user', 'assistant'])
    expect(captured[0]).toMatchObject({ conversationId: s.id, workspace: '/work/alpha', turn: 3, truncated: false })
    expect(recorder.stats).toMatchObject({ captured: 2, errors: 0 })
  })

  it('skips plugin-sourced messages, compaction checkpoints and goal rounds', async () => {
    const recorder = new CaptureRecorder(store, resolveCaptureOptions())
    const s = session()
    const events = new EventScript()
    await recorder.handle(s, events.turn(1))
    await recorder.handle(s, events.user('[recalled memory] …', { kind: 'plugin', plugin: 'memory-recall', form: 'recall' }))
    await recorder.handle(s, events.user('Summary of earlier turns', { kind: 'plugin', plugin: 'compact' }))
    await recorder.handle(s, events.user('system prompt snapshot', { kind: 'plugin', plugin: '@deepseek-ai/dsh-system-prompt', form: 'snapshot' }))
    await recorder.handle(s, events.user('continue the goal', { kind: 'goal' }))
    expect(await store.messages.list({ conversationId: s.id })).toHaveLength(0)
    expect(recorder.stats.skipped).toBe(4)
  })

  it('is idempotent: a replayed or resumed event is stored once', async () => {
    const recorder = new CaptureRecorder(store, resolveCaptureOptions())
    const s = session()
    const events = new EventScript()
    const prompt = events.user('Remember the staging URL is internal.')
    const reply = events.assistant(0, [{ type: 'text', text: 'Will do.' }])
    for (const event of [prompt, reply, prompt, reply]) await recorder.handle(s, event)
    // A second recorder (a restarted host) replaying the same events adds nothing either.
    const restarted = new CaptureRecorder(store, resolveCaptureOptions())
    for (const event of [prompt, reply]) await restarted.handle(s, event)
    expect(await store.messages.list({ conversationId: s.id })).toHaveLength(2)
    expect(recorder.stats.duplicates).toBe(2)
    expect(restarted.stats.duplicates).toBe(2)
  })

  it('strips assistant code blocks but keeps user code, and cuts long messages', async () => {
    const recorder = new CaptureRecorder(store, resolveCaptureOptions({ maxMessageChars: 100 }))
    const s = session()
    const events = new EventScript()
    await recorder.handle(s, events.user('Here is my config:\n```yaml\nport: 8080\n```'))
    await recorder.handle(s, events.assistant(0, [{ type: 'text', text: 'Use:\n```sh\nnpm run build\n```' }]))
    await recorder.handle(s, events.user('长'.repeat(500)))
    const [user, assistant, long] = await store.messages.list({ conversationId: s.id })
    expect(user!.text).toContain('port: 8080')
    expect(assistant!.text).toBe('Use:\n[code block: sh, 1 lines omitted]')
    expect(Array.from(long!.text)).toHaveLength(100)
    expect(long!.text.endsWith('…[truncated]')).toBe(true)
  })

  it('commits queued writes in event order when the host does not wait', async () => {
    const recorder = new CaptureRecorder(store, resolveCaptureOptions())
    const s = session()
    const events = new EventScript()
    for (let turn = 0; turn < 5; turn++) {
      void recorder.handle(s, events.turn(turn))
      void recorder.handle(s, events.user(`question ${turn}`))
      void recorder.handle(s, events.assistant(turn, [{ type: 'text', text: `answer ${turn}` }]))
    }
    await recorder.whenIdle()
    const rows = await store.messages.list({ conversationId: s.id })
    expect(rows.map((row) => `${row.turn}:${row.text}`)).toEqual(
      [0, 1, 2, 3, 4].flatMap((turn) => [`${turn}:question ${turn}`, `${turn}:answer ${turn}`]),
    )
  })

  it('records the session title the host derives', async () => {
    const recorder = new CaptureRecorder(store, resolveCaptureOptions())
    const s = session('/work/gamma')
    const events = new EventScript()
    await recorder.handle(s, events.user('Plan the migration'))
    await recorder.handle(s, { type: 'session/title', seq: 9, data: { title: 'Migration plan', messageSeqs: [0], source: { kind: 'fallback' } } })
    expect((await store.conversations.get(s.id))?.title).toBe('Migration plan')
  })

  it('writes nothing when disabled', async () => {
    const recorder = new CaptureRecorder(store, resolveCaptureOptions({ enabled: false }))
    const s = session()
    await recorder.handle(s, new EventScript().user('hello'))
    expect(await store.messages.list({ conversationId: s.id })).toHaveLength(0)
  })

  it('never throws into the host when the store fails; the error is reported and counted', async () => {
    const errors: unknown[] = []
    const recorder = new CaptureRecorder(store, resolveCaptureOptions(), { onError: (error) => errors.push(error) })
    await store.close()
    const result = await recorder.handle(session(), new EventScript().user('this write will fail'))
    expect(result).toBeUndefined()
    expect(recorder.stats.errors).toBe(1)
    expect(errors).toHaveLength(1)
    store = openMemoryStore({ path: join(temp.dir, 'memory.db') })
  })

  it("creates a session's conversation in the same write as its first message", async () => {
    const errors: unknown[] = []
    const recorder = new CaptureRecorder(store, resolveCaptureOptions(), { onError: (error) => errors.push(error) })
    const s = session('/work/alpha')
    const events = new EventScript()
    // The store rejects the first message (an empty host id): the conversation rolls back with it.
    expect(await recorder.handle(s, events.user('first words', { kind: 'user' }, ''))).toBeUndefined()
    expect(errors).toEqual([expect.objectContaining({ code: 'invalid-argument' })])
    expect(await store.conversations.get(s.id)).toBeUndefined()
    // The next message creates both; later ones append to it.
    await recorder.handle(s, events.user('second words'))
    await recorder.handle(s, events.user('third words'))
    expect(await store.conversations.get(s.id)).toMatchObject({ id: s.id, workspace: '/work/alpha' })
    expect((await store.messages.list({ conversationId: s.id })).map((message) => message.text)).toEqual(['second words', 'third words'])
  })

  it('keeps secrets out of the database (the store redacts before writing)', async () => {
    const recorder = new CaptureRecorder(store, resolveCaptureOptions())
    const s = session()
    await recorder.handle(s, new EventScript().user('my key is sk-proj-abcdefghijklmnopqrstuvwxyz0123456789 ok'))
    const [row] = await store.messages.list({ conversationId: s.id })
    expect(row!.text).not.toContain('abcdefghijklmnopqrstuvwxyz0123456789')
    expect(row!.text).toContain('REDACTED')
  })
})

/** A child script: take the write lock of a database, say so, hold it for argv[2] ms, commit. */
const LOCK_HOLDER = `
const { DatabaseSync } = require('node:sqlite')
const db = new DatabaseSync(process.argv[1])
db.exec('BEGIN IMMEDIATE')
db.exec("UPDATE store_meta SET updated_at = updated_at")
process.stdout.write('locked')
setTimeout(() => { db.exec('COMMIT'); db.close() }, Number(process.argv[2]))
`

describe('CaptureRecorder when another process holds the database lock', () => {
  it('retries a busy write in the background and stores the message once', async () => {
    const temp = tempDir()
    // A short busy timeout so the lock outlives it and the store reports `busy`.
    const store = openMemoryStore({ path: join(temp.dir, 'memory.db'), busyTimeoutMs: 50 })
    try {
      const errors: unknown[] = []
      const recorder = new CaptureRecorder(store, resolveCaptureOptions({}), { onError: (error) => errors.push(error) })
      const s = session('/work/locked')
      const events = new EventScript()
      await recorder.handle(s, events.user('first message'))
      // Another process holds the write lock for 600 ms. (A process, not a second connection
      // here: SQLite's POSIX locks do not separate two SQLite copies inside one process.)
      const holder = spawn(process.execPath, ['--no-warnings', '-e', LOCK_HOLDER, join(temp.dir, 'memory.db'), '600'], { stdio: ['ignore', 'pipe', 'inherit'] })
      await new Promise<void>((resolve) => holder.stdout!.once('data', () => resolve()))
      const release = new Promise<void>((resolve) => holder.once('close', () => resolve()))
      const stored = await recorder.handle(s, events.user('written while locked'))
      await release
      expect(errors).toEqual([])
      expect(stored?.role).toBe('user')
      expect((await store.messages.list({ conversationId: s.id })).map((message) => message.text)).toEqual(['first message', 'written while locked'])
      expect(recorder.stats).toMatchObject({ captured: 2, errors: 0 })
    } finally {
      await store.close()
      temp.remove()
    }
  })
})
