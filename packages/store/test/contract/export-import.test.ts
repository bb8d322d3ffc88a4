import { describe, expect, it } from 'vitest'
import { EXPORT_FORMAT, EXPORT_VERSION } from '../../src/index.ts'
import { postgresStoreMigrations, storeMigrations } from '../../src/core/store-migrations.ts'
import { fakeClock, rejectionOf } from '../helpers.ts'
import { collect, populate, snapshot } from '../support/seed.ts'
import { type Backend, backends } from './backends.ts'

/** The store schema version an export's header names: each backend numbers its own migrations. */
function schemaVersion(backend: Backend): number {
  const set = backend.name === 'sqlite' ? storeMigrations() : postgresStoreMigrations()
  return Math.max(...set.migrations.map((m) => m.version))
}

describe.each(backends)('export / import ($name)', (backend) => {
  it('round-trips everything into a fresh database, idempotently', async () => {
    const store = await backend.open({ now: fakeClock(1_000, 7).now })
    await populate(store)
    const lines = await collect(store.exportJsonl())
    expect(JSON.parse(lines[0]!)).toMatchObject({ type: 'header', format: EXPORT_FORMAT, version: EXPORT_VERSION, schema: schemaVersion(backend) })
    expect(lines.slice(1).map((line) => JSON.parse(line).type)).toEqual([
      'conversation', 'conversation',
      'message', 'message', 'message', 'message',
      'memory', 'memory', 'memory', 'memory',
      'scene',
      'persona', 'persona',
    ])
    for (const line of lines) expect(line).not.toContain('\n')

    const target = await backend.open()
    const result = await target.importJsonl(lines)
    expect(result.inserted).toEqual({ conversations: 2, messages: 4, memories: 4, scenes: 1, persona: 2 })
    expect(await snapshot(target)).toEqual(await snapshot(store))
    const imported = (await target.memories.list({ includeSuperseded: true })).find((m) => m.embedding)
    expect(Array.from(imported!.embedding!)).toEqual([1, 0.5, -2])
    // The imported data is searchable.
    expect((await target.search.messages('数据库')).length).toBe(3)

    const again = await target.importJsonl(lines.join('\n'))
    expect(again.inserted).toEqual({ conversations: 0, messages: 0, memories: 0, scenes: 0, persona: 0 })
    expect(again.skipped).toEqual({ conversations: 2, messages: 4, memories: 4, scenes: 1, persona: 2 })
    expect(await snapshot(target)).toEqual(await snapshot(store))
    expect((await target.audit.list({ op: 'memory.import' })).length).toBe(4)
  })

  it('accepts an async iterable of lines', async () => {
    const store = await backend.open()
    await populate(store)
    const target = await backend.open()
    const result = await target.importJsonl(store.exportJsonl())
    expect(result.inserted.messages).toBe(4)
  })

  it('refuses unknown formats and versions, and imports nothing from a bad stream', async () => {
    const store = await backend.open()
    await populate(store)
    const lines = await collect(store.exportJsonl())
    const target = await backend.open()
    const header = JSON.parse(lines[0]!)
    expect((await rejectionOf(target.importJsonl([JSON.stringify({ ...header, version: 2 }), ...lines.slice(1)]))).code).toBe('unsupported-format')
    expect((await rejectionOf(target.importJsonl([JSON.stringify({ ...header, format: 'other' })]))).code).toBe('unsupported-format')
    expect((await rejectionOf(target.importJsonl(lines.slice(1)))).code).toBe('unsupported-format')
    expect((await rejectionOf(target.importJsonl(''))).code).toBe('unsupported-format')
    expect((await rejectionOf(target.importJsonl([lines[0]!, '{"type":"widget","data":{}}']))).code).toBe('unsupported-format')

    // A broken line late in the file rolls back the lines before it.
    const broken = [...lines.slice(0, 5), '{not json', ...lines.slice(5)]
    const error = await rejectionOf(target.importJsonl(broken))
    expect(error.code).toBe('invalid-argument')
    expect(error.message).toContain('line 6')
    expect(await target.conversations.list()).toEqual([])
    expect(await target.messages.list()).toEqual([])

    // A message whose conversation is missing is reported with its line.
    const orphan = [lines[0]!, lines.find((line) => JSON.parse(line).type === 'message')!]
    expect((await rejectionOf(target.importJsonl(orphan))).message).toMatch(/line 2: message .* conversation sess-1/)
    // A memory superseded by one that never comes.
    const memoryLine = JSON.parse(lines.find((line) => JSON.parse(line).type === 'memory')!)
    memoryLine.data.supersededBy = 'ghost'
    expect((await rejectionOf(target.importJsonl([lines[0]!, JSON.stringify(memoryLine)]))).code).toBe('invalid-argument')
    expect(await target.memories.list({ includeSuperseded: true })).toEqual([])
  })

  it('redacts secrets in imported text', async () => {
    const store = await backend.open()
    const line = JSON.stringify({
      type: 'memory',
      data: { id: 'm-1', kind: 'fact', text: 'key AKIAIOSFODNN7EXAMPLE', scope: 'global', workspace: null, sessionId: null, sourceMessageIds: [], priority: 0, revision: 1, createdAt: 1, updatedAt: 1, lastRecalledAt: null, supersededBy: null, embedding: null, embeddingModel: null, flags: {} },
    })
    await store.importJsonl([JSON.stringify({ type: 'header', format: EXPORT_FORMAT, version: 1, exportedAt: 0, schema: 1 }), line])
    expect((await store.memories.get('m-1'))!.text).toBe('key [REDACTED:aws-access-key]')
  })

  it('stops with closed when the store closes mid-export', async () => {
    const target = await backend.open()
    await populate(target)
    const iterator = target.exportJsonl()[Symbol.asyncIterator]()
    await iterator.next()
    await target.close()
    expect((await rejectionOf(iterator.next())).code).toBe('closed')
  })

  it('exports a consistent snapshot while writes continue', async () => {
    const store = await backend.open()
    await populate(store)
    const iterator = store.exportJsonl()[Symbol.asyncIterator]()
    const first = await iterator.next()
    expect(JSON.parse(first.value as string).type).toBe('header')
    // Written after the export started: not part of it.
    await store.conversations.ensure({ id: 'late', workspace: '' })
    const rest: string[] = []
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) rest.push(next.value)
    expect(rest.filter((line) => line.includes('"late"'))).toEqual([])
    expect(rest.filter((line) => JSON.parse(line).type === 'conversation')).toHaveLength(2)
  })
})

describe('export / import across backends', () => {
  // `dsh-memory migrate` moves data this way: an export of one backend is an import of the other.
  it.each([
    { from: backends[0]!, to: backends[1]! },
    { from: backends[1]!, to: backends[0]! },
  ])('moves everything from $from.name to $to.name, unchanged', async ({ from, to }) => {
    const source = await from.open({ now: fakeClock(1_000, 7).now })
    await populate(source)
    const target = await to.open()
    const result = await target.importJsonl(source.exportJsonl())
    expect(result.inserted).toEqual({ conversations: 2, messages: 4, memories: 4, scenes: 1, persona: 2 })
    expect(await snapshot(target)).toEqual(await snapshot(source))
    expect((await target.search.messages('数据库')).length).toBe(3)
    const back = await from.open()
    await back.importJsonl(target.exportJsonl())
    expect(await snapshot(back)).toEqual(await snapshot(source))
  })
})
