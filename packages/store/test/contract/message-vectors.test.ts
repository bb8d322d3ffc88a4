import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import type { MessageEmbedding } from '../../src/index.ts'
import { fakeClock, type OpenedStore, rejectionOf } from '../helpers.ts'
import { backends } from './backends.ts'

const MINI = 'all-MiniLM-L6-v2@384'
const OTHER = 'bge-m3@1024'
const THIRD = 'nomic-embed-text@768'

/** Per backend: the store schema versions that created the vectors table and keyed it by (message, model), and the former's file. */
const VECTOR_MIGRATIONS = {
  sqlite: { table: 7, perModel: 8, tableFile: '../../migrations/store/0007_message_vectors.sql' },
  postgres: { table: 5, perModel: 6, tableFile: '../../migrations-postgres/store/0005_message_vectors.sql' },
} as const

/** Per backend: the first column of each index on the vectors table. */
const FIRST_INDEXED_COLUMNS = {
  sqlite: "SELECT i.name AS column FROM pragma_index_list('store_message_vectors') l, pragma_index_info(l.name) i WHERE i.seqno = 0",
  postgres: `SELECT a.attname AS column FROM pg_index x JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = x.indkey[0]
    WHERE x.indrelid = to_regclass('store_message_vectors')`,
} as const

/** A vector of `dims` values drawn from `seed`, with the float32 edge cases first. */
function vector(seed: number, dims = 384): Float32Array {
  const v = new Float32Array(dims)
  for (let i = 0; i < dims; i++) v[i] = Math.sin(seed * 997 + i * 13) * (i % 7 === 0 ? 1e-3 : 1)
  v.set([-0, 1e-45, 3.4028234663852886e38, -1.1754943508222875e-38].slice(0, dims))
  return v
}

/** `n` messages in conversation `conversationId` (workspace `workspace`), in order; their ids. */
async function messages(store: OpenedStore, conversationId: string, workspace: string, texts: readonly string[], createdAt?: (i: number) => number): Promise<string[]> {
  await store.conversations.ensure({ id: conversationId, workspace })
  const ids: string[] = []
  for (const [i, text] of texts.entries()) {
    const at = createdAt?.(i)
    ids.push((await store.messages.append({ conversationId, hostMessageId: `h${i}`, role: i % 2 ? 'assistant' : 'user', text, ...(at === undefined ? {} : { createdAt: at }) })).message.id)
  }
  return ids
}

/** The bytes of a vector, to compare bit for bit (toEqual treats -0 and 0 alike). */
const bytes = (v: Float32Array | undefined) => (v ? Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex') : undefined)

describe.each(backends)('message vectors ($name)', (backend) => {
  const rowCount = async (store: OpenedStore) => Number((await backend.sql(store, 'SELECT COUNT(*) AS n FROM store_message_vectors'))[0]!.n)

  it('writes vectors and reads them back bit for bit, by model; unknown ids are skipped and ignored', async () => {
    const store = await backend.open()
    const ids = await messages(store, 's', '/w', ['数据库迁移怎么做？', 'Use drizzle-kit.', 'ラーメンが好き'])
    const audit = (await store.audit.list({ limit: 1_000 })).length
    const entries: MessageEmbedding[] = [
      { messageId: ids[0]!, embedding: vector(1), embeddingModel: MINI },
      { messageId: 'no-such-message', embedding: vector(2), embeddingModel: MINI },
      { messageId: ids[1]!, embedding: vector(3, 8), embeddingModel: OTHER },
    ]
    expect(await store.messages.setEmbeddings(entries)).toBe(2)

    const mini = await store.messages.embeddings([ids[0]!, ids[1]!, ids[2]!, 'no-such-message', ids[0]!], MINI)
    expect([...mini.keys()]).toEqual([ids[0]])
    expect(mini.get(ids[0]!)).toBeInstanceOf(Float32Array)
    expect(bytes(mini.get(ids[0]!))).toBe(bytes(vector(1)))
    expect(Object.is(mini.get(ids[0]!)![0], -0)).toBe(true)
    const other = await store.messages.embeddings(ids, OTHER)
    expect([...other.keys()]).toEqual([ids[1]])
    expect(bytes(other.get(ids[1]!))).toBe(bytes(vector(3, 8)))
    expect((await store.messages.embeddings(ids, 'never-used@3')).size).toBe(0)
    expect((await store.messages.embeddings([], MINI)).size).toBe(0)

    // Another store on the database (another process) reads the same bytes.
    const second = await backend.reopen(store)
    expect(bytes((await second.messages.embeddings([ids[0]!], MINI)).get(ids[0]!))).toBe(bytes(vector(1)))

    // Derived data: no audit row, no change-log entry, no revision.
    expect((await store.audit.list({ limit: 1_000 })).length).toBe(audit)
    expect(await rowCount(store)).toBe(2)
    expect(await store.messages.get(ids[0]!)).toMatchObject({ text: '数据库迁移怎么做？' })
  })

  it('a message keeps one vector per model: a new one replaces only its own model’s; a (message, model) named twice in one call keeps the last', async () => {
    const store = await backend.open()
    const [a, b] = await messages(store, 's', '/w', ['first', 'second'])
    await store.messages.setEmbeddings([{ messageId: a!, embedding: vector(1), embeddingModel: MINI }])
    expect(await store.messages.setEmbeddings([{ messageId: a!, embedding: vector(2, 16), embeddingModel: OTHER }])).toBe(1)
    // Both read back, bit for bit, each by its model.
    expect(bytes((await store.messages.embeddings([a!], MINI)).get(a!))).toBe(bytes(vector(1)))
    expect(bytes((await store.messages.embeddings([a!], OTHER)).get(a!))).toBe(bytes(vector(2, 16)))
    expect(await rowCount(store)).toBe(2)

    // Replacing one model's vector (another size too) leaves the other's.
    expect(await store.messages.setEmbeddings([{ messageId: a!, embedding: vector(3, 8), embeddingModel: OTHER }])).toBe(1)
    expect(bytes((await store.messages.embeddings([a!], OTHER)).get(a!))).toBe(bytes(vector(3, 8)))
    expect(bytes((await store.messages.embeddings([a!], MINI)).get(a!))).toBe(bytes(vector(1)))
    expect(await rowCount(store)).toBe(2)

    const written = await store.messages.setEmbeddings([
      { messageId: b!, embedding: vector(3), embeddingModel: MINI },
      { messageId: a!, embedding: vector(4), embeddingModel: MINI },
      { messageId: b!, embedding: vector(6, 4), embeddingModel: OTHER },
      { messageId: b!, embedding: vector(5), embeddingModel: MINI },
    ])
    expect(written).toBe(3)
    const read = await store.messages.embeddings([a!, b!], MINI)
    expect(bytes(read.get(a!))).toBe(bytes(vector(4)))
    expect(bytes(read.get(b!))).toBe(bytes(vector(5)))
    expect(bytes((await store.messages.embeddings([b!], OTHER)).get(b!))).toBe(bytes(vector(6, 4)))
    expect(await rowCount(store)).toBe(4)
    // Stats count messages with a vector, the transfer counts vectors.
    expect((await store.stats.counts()).messages).toMatchObject({ total: 2, withVectors: 2 })
    expect(await store.transfer.messageVectorCount()).toBe(4)
  })

  it('missingEmbeddings: newest first (createdAt, then id), limited, filtered like list; another model’s vector counts as missing', async () => {
    const clock = fakeClock(10_000, 10)
    const store = await backend.open({ now: clock.now })
    // Conversation a in /one at t = 100, 200, 200, 300; b in /two at t = 150, 250.
    const a = await messages(store, 'a', '/one', ['a0', 'a1', 'a2', 'a3'], (i) => [100, 200, 200, 300][i]!)
    const b = await messages(store, 'b', '/two', ['b0', 'b1'], (i) => [150, 250][i]!)
    const missing = async (filter: Partial<Parameters<OpenedStore['messages']['missingEmbeddings']>[0]> = {}) =>
      (await store.messages.missingEmbeddings({ model: MINI, limit: 100, ...filter })).map((m) => m.id)

    const [tiedHigh, tiedLow] = a[1]! > a[2]! ? [a[1]!, a[2]!] : [a[2]!, a[1]!]
    // Ties on createdAt (a1, a2) go by id, descending.
    const all = [a[3]!, b[1]!, tiedHigh, tiedLow, b[0]!, a[0]!]
    expect(await missing()).toEqual(all)
    expect(await missing({ limit: 2 })).toEqual(all.slice(0, 2))

    await store.messages.setEmbeddings([
      { messageId: a[3]!, embedding: vector(1), embeddingModel: MINI },
      { messageId: b[0]!, embedding: vector(2), embeddingModel: MINI },
      // Another model's vector: still missing for MINI.
      { messageId: tiedHigh, embedding: vector(3, 4), embeddingModel: OTHER },
    ])
    expect(await missing()).toEqual([b[1]!, tiedHigh, tiedLow, a[0]!])
    expect(await missing({ model: OTHER })).toEqual([a[3]!, b[1]!, tiedLow, b[0]!, a[0]!])
    expect(await missing({ limit: 1 })).toEqual([b[1]!])
    expect(await missing({ workspace: '/one' })).toEqual([tiedHigh, tiedLow, a[0]!])
    expect(await missing({ workspace: '/two' })).toEqual([b[1]!])
    expect(await missing({ workspace: '/none' })).toEqual([])
    expect(await missing({ conversationId: 'a', limit: 2 })).toEqual([tiedHigh, tiedLow])
    expect(await missing({ since: 200, until: 250 })).toEqual([b[1]!, tiedHigh, tiedLow])
    expect(await missing({ workspace: '/one', since: 150 })).toEqual([tiedHigh, tiedLow])

    // Whole messages, as list returns them.
    const [first] = await store.messages.missingEmbeddings({ model: MINI, limit: 1 })
    expect(first).toEqual(await store.messages.get(b[1]!))

    await store.messages.setEmbeddings([a[0]!, a[1]!, a[2]!, b[1]!].map((id, i) => ({ messageId: id, embedding: vector(10 + i), embeddingModel: MINI })))
    expect(await missing()).toEqual([])

    // Each model's backfill finds only its own work, whatever the other holds: OTHER's vectors
    // neither hide MINI's missing ones nor are hidden by MINI's.
    expect(await missing({ model: OTHER })).toEqual([a[3]!, b[1]!, tiedLow, b[0]!, a[0]!])
    await store.messages.setEmbeddings([a[3]!, b[1]!, tiedLow, b[0]!, a[0]!].map((id, i) => ({ messageId: id, embedding: vector(20 + i, 4), embeddingModel: OTHER })))
    expect(await missing({ model: OTHER })).toEqual([])
    expect(await missing()).toEqual([])
    expect(await missing({ model: THIRD })).toEqual(all)
    expect(await rowCount(store)).toBe(12)
  })

  it('deleting a message or its conversation deletes its vectors, every model’s', async () => {
    const store = await backend.open()
    const a = await messages(store, 'a', '/w', ['one', 'two'])
    const b = await messages(store, 'b', '/w', ['three', 'four'])
    await store.messages.setEmbeddings([...a, ...b].map((id, i) => ({ messageId: id, embedding: vector(i), embeddingModel: MINI })))
    await store.messages.setEmbeddings([a[0]!, a[1]!, b[0]!].map((id, i) => ({ messageId: id, embedding: vector(i, 4), embeddingModel: OTHER })))
    expect(await rowCount(store)).toBe(7)

    expect(await store.messages.delete(a[0]!)).toBe(true)
    expect(await rowCount(store)).toBe(5)
    expect((await store.messages.embeddings(a, MINI)).size).toBe(1)
    expect([...(await store.messages.embeddings(a, OTHER)).keys()]).toEqual([a[1]])

    expect(await store.conversations.delete('b')).toBe(true)
    expect(await rowCount(store)).toBe(2)
    expect([...(await store.messages.embeddings([...a, ...b], MINI)).keys()]).toEqual([a[1]])
    expect([...(await store.messages.embeddings([...a, ...b], OTHER)).keys()]).toEqual([a[1]])
    // A vector for a message deleted meanwhile is skipped, not an error.
    expect(await store.messages.setEmbeddings([{ messageId: b[0]!, embedding: vector(9), embeddingModel: MINI }])).toBe(0)
    expect(await rowCount(store)).toBe(2)
    // One message with two vectors: stats count the message once, the transfer both vectors.
    expect((await store.stats.counts()).messages).toMatchObject({ total: 1, withVectors: 1 })
    expect(await store.transfer.messageVectorCount()).toBe(2)
    // The cascade probes an index that begins with message_id (the primary key's).
    expect((await backend.sql(store, FIRST_INDEXED_COLUMNS[backend.name])).map((row) => row.column)).toContain('message_id')
  })

  it('deleteEmbeddings drops one model’s vectors or every other model’s, everywhere or in one workspace, and refuses bad filters naming the field', async () => {
    const store = await backend.open()
    const one = await messages(store, 'a', '/one', ['a0', 'a1'])
    const two = await messages(store, 'b', '/two', ['b0', 'b1'])
    const all = [...one, ...two]
    const models = [MINI, OTHER, THIRD]
    await store.messages.setEmbeddings(all.flatMap((id, i) => models.map((model, j) => ({ messageId: id, embedding: vector(i * 3 + j, 4 + j), embeddingModel: model }))))
    expect(await rowCount(store)).toBe(12)
    const audit = (await store.audit.list({ limit: 1_000 })).length
    const holding = async (model: string) => [...(await store.messages.embeddings(all, model)).keys()].sort()

    expect(await store.messages.deleteEmbeddings({ model: THIRD, workspace: '/one' })).toBe(2)
    expect(await holding(THIRD)).toEqual([...two].sort())
    expect(await store.messages.deleteEmbeddings({ exceptModel: MINI, workspace: '/two' })).toBe(4)
    expect(await holding(OTHER)).toEqual([...one].sort())
    expect(await holding(THIRD)).toEqual([])
    expect(await store.messages.deleteEmbeddings({ exceptModel: MINI })).toBe(2)
    expect(await store.messages.deleteEmbeddings({ model: 'never-used@3' })).toBe(0)
    expect(await store.messages.deleteEmbeddings({ exceptModel: MINI, workspace: '/none' })).toBe(0)
    expect(await rowCount(store)).toBe(4)
    // The kept model's vectors are untouched, bit for bit; the dropped ones are missing again.
    const kept = await store.messages.embeddings(all, MINI)
    expect(all.map((id) => bytes(kept.get(id)))).toEqual(all.map((_, i) => bytes(vector(i * 3, 4))))
    expect(await store.messages.missingEmbeddings({ model: OTHER, limit: 10 })).toHaveLength(4)
    // Derived data: no audit row.
    expect((await store.audit.list({ limit: 1_000 })).length).toBe(audit)

    for (const [filter, field] of [
      [{}, 'model, exceptModel'],
      [{ model: MINI, exceptModel: OTHER }, 'model, exceptModel'],
      [{ model: '' }, 'model'],
      [{ exceptModel: '' }, 'exceptModel'],
      [{ exceptModel: 3 }, 'exceptModel'],
      [{ model: MINI, workspace: 3 }, 'workspace'],
      [null, 'filter'],
    ] as const) {
      const error = await rejectionOf(store.messages.deleteEmbeddings(filter as never))
      expect(error.code, JSON.stringify(filter)).toBe('invalid-argument')
      expect(error.message, JSON.stringify(filter)).toContain(field)
    }
    expect(await store.messages.deleteEmbeddings({ model: MINI, workspace: '/one' })).toBe(2)
    expect(await rowCount(store)).toBe(2)
  })

  it('refuses bad input naming the field, and writes nothing of a refused call', async () => {
    const store = await backend.open()
    const [id] = await messages(store, 's', '/w', ['hello'])
    const good = { messageId: id!, embedding: vector(1, 4), embeddingModel: MINI }
    const refused = async (entries: unknown[], field: string) => {
      const error = await rejectionOf(store.messages.setEmbeddings(entries as MessageEmbedding[]))
      expect(error.code, field).toBe('invalid-argument')
      expect(error.message, field).toContain(field)
    }
    await refused([good, { ...good, embedding: new Float32Array(0) }], 'entries[1].embedding')
    await refused([good, { ...good, embedding: new Float32Array([1, Number.NaN]) }], 'entries[1].embedding')
    await refused([good, { ...good, embedding: new Float32Array([Number.POSITIVE_INFINITY]) }], 'entries[1].embedding')
    await refused([{ ...good, embedding: [1, 2, 3] }], 'entries[0].embedding')
    await refused([{ ...good, embedding: undefined }], 'entries[0].embedding')
    await refused([good, { ...good, embeddingModel: '' }], 'entries[1].embeddingModel')
    await refused([{ ...good, embeddingModel: undefined }], 'entries[0].embeddingModel')
    await refused([{ ...good, messageId: '' }], 'entries[0].messageId')
    await refused([null], 'entries[0]')
    await refused(Array.from({ length: 1_001 }, () => good), 'entries')
    expect(await rowCount(store)).toBe(0)
    // 1 000 is allowed (the same message 1 000 times: one vector).
    expect(await store.messages.setEmbeddings(Array.from({ length: 1_000 }, () => good))).toBe(1)
    expect(await store.messages.setEmbeddings([])).toBe(0)

    const ids = Array.from({ length: 1_001 }, (_, i) => `m${i}`)
    const tooMany = await rejectionOf(store.messages.embeddings(ids, MINI))
    expect(tooMany).toMatchObject({ code: 'invalid-argument' })
    expect(tooMany.message).toContain('ids')
    expect((await store.messages.embeddings(ids.slice(1), MINI)).size).toBe(0)
    expect(await rejectionOf(store.messages.embeddings([id!], ''))).toMatchObject({ code: 'invalid-argument', message: expect.stringContaining('model') })

    for (const [filter, field] of [
      [{ model: MINI, limit: 0 }, 'limit'],
      [{ model: MINI, limit: 1_001 }, 'limit'],
      [{ model: MINI }, 'limit'],
      [{ model: '', limit: 10 }, 'model'],
      [{ model: MINI, limit: 10, since: -1 }, 'since'],
      [{ model: MINI, limit: 10, conversationId: '' }, 'conversationId'],
      [{ model: MINI, limit: 10, workspace: 3 }, 'workspace'],
    ] as const) {
      const error = await rejectionOf(store.messages.missingEmbeddings(filter as never))
      expect(error.code, JSON.stringify(filter)).toBe('invalid-argument')
      expect(error.message, JSON.stringify(filter)).toContain(field)
    }
    expect(await store.messages.missingEmbeddings({ model: MINI, limit: 1_000 })).toHaveLength(0)
  })

  it('a read-only store reads vectors and refuses to write them', async () => {
    const store = await backend.open()
    const [id] = await messages(store, 's', '/w', ['hello'])
    await store.messages.setEmbeddings([{ messageId: id!, embedding: vector(1, 4), embeddingModel: MINI }])
    const readonly = await backend.reopen(store, { readonly: true })
    expect(bytes((await readonly.messages.embeddings([id!], MINI)).get(id!))).toBe(bytes(vector(1, 4)))
    expect(await readonly.messages.missingEmbeddings({ model: OTHER, limit: 10 })).toHaveLength(1)
    expect((await rejectionOf(readonly.messages.setEmbeddings([{ messageId: id!, embedding: vector(2, 4), embeddingModel: MINI }]))).code).toBe('readonly')
    expect((await rejectionOf(readonly.messages.deleteEmbeddings({ model: MINI }))).code).toBe('readonly')
    expect(await rowCount(store)).toBe(1)
  })

  it('joins a transaction: a rolled-back transaction leaves no vector', async () => {
    const store = await backend.open()
    const [id] = await messages(store, 's', '/w', ['hello'])
    const failed = await rejectionOf(
      store.transaction(async (tx) => {
        expect(await tx.messages.setEmbeddings([{ messageId: id!, embedding: vector(1, 4), embeddingModel: MINI }])).toBe(1)
        expect((await tx.messages.embeddings([id!], MINI)).size).toBe(1)
        throw new Error('abort')
      }),
    )
    expect(failed.message).toBe('abort')
    expect((await store.messages.embeddings([id!], MINI)).size).toBe(0)
  })

  it('transfer pages every vector, every model’s, in (message id, model) order, and counts them', async () => {
    const store = await backend.open()
    const ids = await messages(store, 's', '/w', ['one', 'two', 'three', 'four', 'five'])
    await messages(store, 't', '/w', ['no vector'])
    const entries = [
      ...ids.map((id, i) => ({ messageId: id, embedding: vector(i, 4 + i), embeddingModel: i % 2 ? OTHER : MINI })),
      // Two messages with a second model's vector too.
      ...[ids[0]!, ids[3]!].map((id, i) => ({ messageId: id, embedding: vector(10 + i, 3), embeddingModel: THIRD })),
    ]
    await store.messages.setEmbeddings(entries)
    expect(await store.transfer.messageVectorCount()).toBe(7)
    const key = (e: MessageEmbedding) => [e.messageId, e.embeddingModel]
    const sorted = [...entries].sort((x, y) => (x.messageId < y.messageId ? -1 : x.messageId > y.messageId ? 1 : x.embeddingModel < y.embeddingModel ? -1 : 1))
    // Pages of 1: every page boundary, including between two models of one message.
    const paged: MessageEmbedding[] = []
    for (let page = await store.transfer.messageVectors({ limit: 1 }); page.length > 0; ) {
      paged.push(...page)
      const last = page[0]!
      page = await store.transfer.messageVectors({ after: { messageId: last.messageId, embeddingModel: last.embeddingModel }, limit: 1 })
    }
    expect(paged.map(key)).toEqual(sorted.map(key))
    expect(paged.map((e) => bytes(e.embedding))).toEqual(sorted.map((e) => bytes(e.embedding)))
    const first = await store.transfer.messageVectors({ limit: 3 })
    const rest = await store.transfer.messageVectors({ after: first[2]!, limit: 1_000 })
    expect([...first, ...rest].map(key)).toEqual(sorted.map(key))
    expect(await store.transfer.messageVectors({ after: sorted[6]!, limit: 10 })).toEqual([])
    for (const [page, field] of [
      [{ limit: 0 }, 'limit'],
      [{ limit: 1_001 }, 'limit'],
      [{ after: '', limit: 1 }, 'after'],
      [{ after: { messageId: '', embeddingModel: MINI }, limit: 1 }, 'after.messageId'],
      [{ after: { messageId: ids[0]! }, limit: 1 }, 'after.embeddingModel'],
    ] as const) {
      expect(await rejectionOf(store.transfer.messageVectors(page as never))).toMatchObject({ code: 'invalid-argument', message: expect.stringContaining(field) })
    }
  })

  it('the migrations add the table to a database from before it, its messages then missing every vector', async () => {
    const store = await backend.open()
    const ids = await messages(store, 's', '/w', ['before the upgrade', '升级之前'], (i) => 100 + i)
    const versions = (await store.meta.migrations()).filter((m) => m.owner === 'store').map((m) => m.version)
    await store.close()
    // What a version before the vectors left: everything but the table and its migrations' rows.
    await backend.sql(store, `DROP TABLE store_message_vectors;\nDELETE FROM store_schema WHERE owner = 'store' AND version >= ${VECTOR_MIGRATIONS[backend.name].table}`)
    const upgraded = await backend.reopen(store)
    expect((await upgraded.meta.migrations()).filter((m) => m.owner === 'store').map((m) => m.version)).toEqual(versions)
    expect((await upgraded.messages.missingEmbeddings({ model: MINI, limit: 10 })).map((m) => m.id)).toEqual([...ids].reverse())
    expect(await upgraded.messages.setEmbeddings([{ messageId: ids[0]!, embedding: vector(1), embeddingModel: MINI }])).toBe(1)
    expect(bytes((await upgraded.messages.embeddings(ids, MINI)).get(ids[0]!))).toBe(bytes(vector(1)))
  })

  it('the per-model migration keeps every vector of a database with one vector per message, bit for bit, then holds a second model’s', async () => {
    const store = await backend.open()
    // Distinct times: missingEmbeddings is newest first, and ids of one millisecond do not sort by order of writing.
    const ids = await messages(store, 's', '/w', ['数据库迁移怎么做？', 'Use drizzle-kit.', 'ラーメンが好き', 'no vector'], (i) => 1_700_000_000_000 + i * 1000)
    const written = ids.slice(0, 3).map((id, i) => ({ messageId: id, embedding: vector(i, i === 1 ? 1024 : 384), embeddingModel: i === 1 ? OTHER : MINI }))
    await store.messages.setEmbeddings(written)
    const versions = (await store.meta.migrations()).filter((m) => m.owner === 'store').map((m) => m.version)
    const { table, perModel, tableFile } = VECTOR_MIGRATIONS[backend.name]
    expect(Math.max(...versions)).toBe(perModel)
    await store.close()
    // The database as the previous schema left it: the table its own migration file created
    // (message_id its primary key), holding these rows.
    const previous = readFileSync(new URL(tableFile, import.meta.url), 'utf8')
    await backend.sql(
      store,
      `CREATE TABLE kept AS SELECT * FROM store_message_vectors;\nDROP TABLE store_message_vectors;\n${previous}\nINSERT INTO store_message_vectors SELECT * FROM kept;\nDROP TABLE kept;\nDELETE FROM store_schema WHERE owner = 'store' AND version > ${table}`,
    )
    expect((await backend.sql(store, FIRST_INDEXED_COLUMNS[backend.name])).map((row) => row.column).sort()).toEqual(['embedding_model', 'message_id'])
    expect(await rowCount(store)).toBe(3)

    const upgraded = await backend.reopen(store)
    expect((await upgraded.meta.migrations()).filter((m) => m.owner === 'store').map((m) => m.version)).toEqual(versions)
    expect(await rowCount(upgraded)).toBe(3)
    for (const entry of written) expect(bytes((await upgraded.messages.embeddings([entry.messageId], entry.embeddingModel)).get(entry.messageId)), entry.messageId).toBe(bytes(entry.embedding))
    expect((await upgraded.messages.missingEmbeddings({ model: MINI, limit: 10 })).map((m) => m.id)).toEqual([ids[3], ids[1]])
    // Now keyed by (message, model): a second model's vector joins the first.
    expect(await upgraded.messages.setEmbeddings([{ messageId: ids[0]!, embedding: vector(7, 4), embeddingModel: OTHER }])).toBe(1)
    expect(bytes((await upgraded.messages.embeddings([ids[0]!], MINI)).get(ids[0]!))).toBe(bytes(written[0]!.embedding))
    expect(bytes((await upgraded.messages.embeddings([ids[0]!], OTHER)).get(ids[0]!))).toBe(bytes(vector(7, 4)))
    // The cascade still deletes through an index that begins with message_id.
    expect((await backend.sql(upgraded, FIRST_INDEXED_COLUMNS[backend.name])).map((row) => row.column)).toContain('message_id')
    expect(await upgraded.messages.delete(ids[0]!)).toBe(true)
    expect(await rowCount(upgraded)).toBe(2)
  })
})
