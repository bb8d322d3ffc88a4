import { symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type CoordinatedMemoryStore, type MemoryStore, type MessageEmbedding, openMemoryStore, openStore } from '@dsh-memory/store'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
// The cluster comes from the store project's globalSetup (see vitest.config.ts), as `inject('pgUrl')`.
import type {} from '../../../packages/store/test/support/pg-global-setup.ts'
import { type DataSource, postgresSource } from '../src/data/data-dir.ts'
import { type MigrateReport, runMigrate } from '../src/data/migrate.ts'
import { PACKAGE_DECLARATIONS } from '../src/data/package-tables.ts'
import { buildFixture, cli, type Fixture, scratch } from './helpers.ts'
import { importPackageData, seedRecallTables, writePalace } from './package-fixture.ts'
import { clusterPassword, freshDatabase, psql } from './pg-database.ts'

let fixture: Fixture
let temp: ReturnType<typeof scratch>
let serial = 0

beforeAll(async () => {
  temp = scratch('migrate')
  fixture = await buildFixture(join(temp.dir, 'source'))
})
afterAll(() => temp.cleanup())

/** A fresh, not yet existing data dir. */
const freshDir = () => join(temp.dir, `target-${++serial}`)
const sqlite = (dataDir: string): DataSource => ({ kind: 'sqlite', dataDir, label: dataDir })

/** The fixture's records per type (two memory versions of the deploy day, so 6 memories). */
const FIXTURE_COUNTS = { conversations: 2, messages: 6, memories: 6, scenes: 1, persona: 1 }

/** The export of a data dir without its header line (which carries the export time). */
async function records(dataDir: string): Promise<string[]> {
  const store = openMemoryStore({ path: join(dataDir, 'memory.db'), readonly: true })
  try {
    const lines: string[] = []
    for await (const line of store.exportJsonl()) lines.push(line)
    return lines.slice(1)
  } finally {
    await store.close()
  }
}

async function withTarget<T>(dataDir: string, fn: (store: CoordinatedMemoryStore) => Promise<T>): Promise<T> {
  const store = openMemoryStore({ path: join(dataDir, 'memory.db'), actor: 'test' })
  try {
    return await fn(store)
  } finally {
    await store.close()
  }
}

const json = (stdout: string): MigrateReport => JSON.parse(stdout) as MigrateReport

/** Every row of every package table of a data dir, as sorted JSON lines per `<owner>.<table key>` (Buffers as hex). */
async function packageRows(dataDir: string): Promise<Record<string, string[]>> {
  const store = openMemoryStore({ path: join(dataDir, 'memory.db'), readonly: true })
  try {
    const owners = new Set((await store.meta.migrations()).map((migration) => migration.owner))
    const out: Record<string, string[]> = {}
    for (const declare of PACKAGE_DECLARATIONS) {
      const declaration = declare()
      if (!owners.has(declaration.migrations.owner)) continue
      const tables = await store.tables(declaration)
      for (const [key, table] of Object.entries(tables.t)) {
        const rows = await tables.read(async (db) => db.select().from(table as never))
        out[`${declaration.migrations.owner}.${key}`] = rows.map((row) => JSON.stringify(row, (_, value) => (value?.type === 'Buffer' ? Buffer.from(value.data).toString('hex') : value))).sort()
      }
    }
    return out
  } finally {
    await store.close()
  }
}

describe('dsh-memory migrate between two data dirs', () => {
  it('copies every record and the package tables, keeps ids, history and text, and verifies per table', async () => {
    const target = freshDir()
    const result = await cli(['migrate', '--from', fixture.dataDir, '--to', target, '--json'])
    expect(result.stderr).toContain('migrate: copy')
    expect(result.code).toBe(0)
    const report = json(result.stdout)
    expect(report).toMatchObject({ from: fixture.dataDir, to: target, completed: true, ok: true, copied: FIXTURE_COUNTS })
    for (const [type, count] of Object.entries(FIXTURE_COUNTS)) expect(report.verified?.[type as keyof typeof FIXTURE_COUNTS]).toEqual({ source: count, target: count, missing: 0 })
    // The fixture's distill state and ledger are package tables: copied and verified per table.
    expect(report.notMoved).toEqual([])
    expect(report.packages).toEqual(
      expect.arrayContaining([
        { owner: 'distill', table: 'distill_conversations', copied: 2, alreadyPresent: 0, renumbered: 0, refused: 0, refusal: null, differing: 0, verified: { source: 2, target: 2, missing: 0 } },
        // Into a fresh target the identity numbers stay the source's.
        { owner: 'distill', table: 'distill_calls', copied: expect.any(Number), alreadyPresent: 0, renumbered: 0, refused: 0, refusal: null, differing: 0, verified: expect.objectContaining({ missing: 0 }) },
      ]),
    )
    // What status reads from them (distillation state and the token ledger) is the source's.
    const status = async (dataDir: string) => {
      const { distill, cost } = JSON.parse((await cli(['status', '--data-dir', dataDir, '--json'])).stdout)
      return { distill, cost }
    }
    expect(await status(target)).toEqual(await status(fixture.dataDir))

    // Record for record the same (ids, times, revisions, supersededBy, Chinese and Japanese text).
    expect(await records(target)).toEqual(await records(fixture.dataDir))
    const history = await cli(['show', fixture.memories.deployDay, '--data-dir', target, '--json'])
    expect(JSON.parse(history.stdout).history.map((memory: { id: string }) => memory.id)).toEqual([fixture.memories.deployDayOld, fixture.memories.deployDay])
    const zh = JSON.parse((await cli(['search', '数据库', '--data-dir', target, '--json'])).stdout)
    expect(zh.memories.map((hit: { memory: { id: string } }) => hit.memory.id)).toContain(fixture.memories.database)
    const ja = JSON.parse((await cli(['search', 'デプロイ', '--in', 'messages', '--data-dir', target, '--json'])).stdout)
    expect(ja.messages.map((hit: { message: { id: string } }) => hit.message.id)).toContain(fixture.messages.ja)
    // Layer revisions moved on, so a reader of the target sees its layers changed.
    const layers = await withTarget(target, (store) => store.layers.list())
    expect(layers.length).toBeGreaterThan(0)
    expect(layers.every((layer) => layer.revision > 0)).toBe(true)

    // The text report says the same.
    const again = await cli(['migrate', '--from', fixture.dataDir, '--to', target])
    expect(again.code).toBe(0)
    expect(again.stdout).toContain('copied 0 conversations, 0 messages, 0 memories, 0 scenes, 0 persona')
    expect(again.stdout).toContain('package tables: copied 0 rows, already in the target')
    expect(again.stdout).toMatch(/distill: distill_conversations\s+2\s+2\s+0\n/)
    expect(again.stdout).toContain('verified: every record and package row of the source is in the target')
  })

  it('resumes an interrupted run: the second run skips what is there and copies the rest', async () => {
    const target = freshDir()
    const controller = new AbortController()
    // One record per page, stopped after ten pages (the conversations, the messages, two memory
    // pages): the old deploy-day version waited for the page of its successor and went with it.
    const first = await runMigrate(sqlite(fixture.dataDir), sqlite(target), { pageSize: 1, signal: controller.signal, onPage: (pages) => pages === 10 && controller.abort() })
    expect(first).toMatchObject({ completed: false, verified: null, ok: false })
    expect(first.copied).toEqual({ conversations: 2, messages: 6, memories: 3, scenes: 0, persona: 0 })
    expect((await cli(['migrate', '--check', '--from', fixture.dataDir, '--to', target])).code).toBe(1)

    const second = await cli(['migrate', '--from', fixture.dataDir, '--to', target, '--page-size', '1', '--json'])
    expect(second.code).toBe(0)
    const report = json(second.stdout)
    expect(report.ok).toBe(true)
    for (const [type, count] of Object.entries(FIXTURE_COUNTS)) {
      const key = type as keyof typeof FIXTURE_COUNTS
      expect(report.copied[key] + report.alreadyPresent[key]).toBe(count)
      expect(first.copied[key] + report.copied[key]).toBe(count)
    }
    expect(await records(target)).toEqual(await records(fixture.dataDir))
  })

  it('exits 1 and names what is missing when the target lacks source records', async () => {
    const target = freshDir()
    // The target already holds the shop conversation's first host message under another id:
    // the copy skips the source's (one message per host id), and the verification sees it missing.
    await withTarget(target, async (store) => {
      await store.conversations.ensure({ id: fixture.conversations.shop, workspace: fixture.shop })
      await store.messages.append({ conversationId: fixture.conversations.shop, hostMessageId: `h-${fixture.conversations.shop}-0`, role: 'user', text: 'captured on another machine', seq: 0 })
    })
    const result = await cli(['migrate', '--from', fixture.dataDir, '--to', target, '--json'])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('error: the target lacks records or rows of the source')
    const report = json(result.stdout)
    expect(report.ok).toBe(false)
    expect(report.verified?.messages).toEqual({ source: 6, target: 6, missing: 1 })
    expect(report.verified?.memories).toEqual({ source: 6, target: 6, missing: 0 })

    // --check verifies without copying: a record forgotten in the target shows up as missing.
    const whole = freshDir()
    expect((await cli(['migrate', '--from', fixture.dataDir, '--to', whole, '--quiet'])).code).toBe(0)
    expect((await cli(['forget', fixture.memories.editor, '--data-dir', whole])).code).toBe(0)
    const check = await cli(['migrate', '--check', '--from', fixture.dataDir, '--to', whole])
    expect(check.code).toBe(1)
    expect(check.stdout).toMatch(/memories\s+6\s+5\s+1/)
    expect(check.stdout).not.toContain('copied')
  })

  it('refuses to copy a database onto itself, under any of its names', async () => {
    const alias = join(temp.dir, 'alias')
    symlinkSync(fixture.dataDir, alias)
    for (const to of [fixture.dataDir, alias, `${fixture.dataDir}/`]) {
      const result = await cli(['migrate', '--from', fixture.dataDir, '--to', to])
      expect(result.code).toBe(2)
      expect(result.stderr).toBe(`error: --from and --to name the same database (${fixture.dataDir}); there is nothing to move\n`)
    }
    // Two URLs of one PostgreSQL database (another user, localhost for 127.0.0.1): refused before connecting.
    const same = await cli(['migrate', '--from', 'postgres://alice:s3cret@localhost:5432/team', '--to', 'postgresql://bob@127.0.0.1/team'])
    expect(same.code).toBe(2)
    expect(same.stderr).toBe('error: --from and --to name the same database (postgres://alice@localhost:5432/team); there is nothing to move\n')
  })

  it('needs both ends and rejects a bad URL by its flag, without printing the password', async () => {
    expect((await cli(['migrate', '--from', fixture.dataDir])).stderr).toContain("required option '--to <target>' not specified")
    const bad = await cli(['migrate', '--from', fixture.dataDir, '--to', 'postgres://alice:s3cret@/'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toBe('error: --to expects a URL such as postgres://user@host:5432/database, got "postgres://alice@/"\n')
    const noDatabase = await cli(['migrate', '--from', 'postgres://alice:s3cret@db.example:5432/', '--to', fixture.dataDir])
    expect(noDatabase.stderr).toBe('error: --from names no database: expected postgres://user@host:5432/database, got "postgres://alice@db.example:5432/"\n')
    const global = await cli(['--database-url', 'postgres://alice:s3cret@db.example/team', 'migrate', '--from', fixture.dataDir, '--to', freshDir()])
    expect(global.code).toBe(2)
    expect(global.stderr).toBe('error: --database-url does not apply to `migrate` (it takes --from and --to, and --from-schema and --to-schema)\n')
    const schema = await cli(['--schema', 'team', 'bench', 'cjk'])
    expect(schema.stderr).toBe('error: --schema does not apply to `bench cjk`\n')
  })
})

describe('--database-url and DSH_MEMORY_DATABASE_URL', () => {
  const STACK_FRAME = /\n\s+at .+:\d+:\d+/

  async function withEnv<T>(value: string | undefined, fn: () => Promise<T>): Promise<T> {
    const previous = process.env.DSH_MEMORY_DATABASE_URL
    if (value === undefined) delete process.env.DSH_MEMORY_DATABASE_URL
    else process.env.DSH_MEMORY_DATABASE_URL = value
    try {
      return await fn()
    } finally {
      if (previous === undefined) delete process.env.DSH_MEMORY_DATABASE_URL
      else process.env.DSH_MEMORY_DATABASE_URL = previous
    }
  }

  it('names the flag or the variable for a bad URL and never prints the password', async () => {
    const flag = await cli(['status', '--database-url', 'mysql://alice:s3cret@db.example/team'])
    expect(flag.code).toBe(2)
    expect(flag.stderr).toBe('error: --database-url expects a postgres:// or postgresql:// URL, got "mysql://alice@db.example/team"\n')
    // Before or after the command name alike.
    const before = await cli(['--database-url', 'postgres://alice:s3cret@db.example', 'search', 'x'])
    expect(before.stderr).toBe('error: --database-url names no database: expected postgres://user@host:5432/database, got "postgres://alice@db.example"\n')
    const env = await withEnv('postgres://alice:s3cret@db.example:99999/team?password=s3cret&sslmode=require', () => cli(['status']))
    expect(env.code).toBe(2)
    expect(env.stderr).toBe('error: DSH_MEMORY_DATABASE_URL expects a URL such as postgres://user@host:5432/database, got "postgres://alice@db.example:99999/team?password=***&sslmode=require"\n')
    for (const result of [flag, before, env]) {
      expect(result.stderr + result.stdout).not.toContain('s3cret')
      expect(result.stderr).not.toMatch(STACK_FRAME)
    }
  })

  it('checks --schema like the store row, before connecting, and only where a database is named', async () => {
    const url = 'postgres://alice:s3cret@db.example/team'
    const bad = await cli(['status', '--database-url', url, '--schema', 'Team-Memory'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toBe('error: --schema must match /^[a-z_][a-z0-9_]{0,62}$/ (lower-case letters, digits, _), got "Team-Memory"\n')
    const fromEnv = await withEnv(url, () => cli(['--schema', '1x', 'doctor']))
    expect(fromEnv.stderr).toContain('error: --schema must match')
    const noDatabase = await cli(['status', '--data-dir', fixture.dataDir, '--schema', 'team'])
    expect(noDatabase.stderr).toBe('error: --schema applies to a PostgreSQL database only (--database-url or DSH_MEMORY_DATABASE_URL); a data dir has no schemas\n')
    const migrateSchema = await cli(['migrate', '--from', fixture.dataDir, '--from-schema', 'team', '--to', url])
    expect(migrateSchema.stderr).toBe('error: --from-schema applies to a postgres:// --from only; --from names a data dir\n')
    const badTo = await cli(['migrate', '--from', fixture.dataDir, '--to', url, '--to-schema', 'a b'])
    expect(badTo.stderr).toContain('error: --to-schema must match')
    // Two schemas of one database are two stores; the same schema under two URLs is one.
    const same = await cli(['migrate', '--from', url, '--to', 'postgres://bob@db.example:5432/team', '--to-schema', 'dsh_memory'])
    expect(same.stderr).toContain('name the same database')
    for (const result of [bad, fromEnv, noDatabase, migrateSchema, badTo, same]) expect(result.stderr + result.stdout).not.toContain('s3cret')
    // An explicit --data-dir beats the variable; both flags at once are a usage error.
    const explicit = await withEnv(url, () => cli(['status', '--data-dir', fixture.dataDir, '--json']))
    expect(explicit.code).toBe(0)
    expect(JSON.parse(explicit.stdout)).toMatchObject({ backend: 'sqlite', dataDir: fixture.dataDir })
    const both = await cli(['status', '--data-dir', fixture.dataDir, '--database-url', url])
    expect(both.stderr).toBe('error: --database-url and --data-dir name two different stores; give one of them\n')
    const bench = await cli(['--database-url', url, 'bench', 'cjk'])
    expect(bench.stderr).toBe('error: --database-url does not apply to `bench cjk`\n')
  })
})

describe('on PostgreSQL (the run’s throwaway cluster)', () => {
  const adminUrl = () => inject('pgUrl')
  const password = clusterPassword
  const shown = (url: string) => url.replace(`:${encodeURIComponent(password())}@`, '@')

  it('round-trips SQLite → PostgreSQL → SQLite, every record kept, searchable in Chinese and Japanese, no password printed', async () => {
    const url = await freshDatabase()
    const printed: string[] = []
    const step = async (args: string[]) => {
      const result = await cli(args)
      printed.push(result.stdout, result.stderr)
      return result
    }
    const into = await step(['migrate', '--from', fixture.dataDir, '--to', url, '--json'])
    expect(into.code).toBe(0)
    expect(json(into.stdout)).toMatchObject({ to: shown(url), ok: true, copied: FIXTURE_COUNTS })

    const status = await step(['status', '--database-url', url, '--json'])
    expect(status.code).toBe(0)
    const report = JSON.parse(status.stdout)
    expect(report).toMatchObject({ backend: 'postgres', dataDir: shown(url), counts: { conversations: 2, messages: { total: 6 }, memories: { current: 5, superseded: 1 } } })
    // Distillation state and the token ledger came along in distill's tables: status reads them there.
    const local = JSON.parse((await cli(['status', '--data-dir', fixture.dataDir, '--json'])).stdout)
    expect({ distill: report.distill, cost: report.cost }).toEqual({ distill: local.distill, cost: local.cost })

    const zh = await step(['search', '数据库', '--database-url', url, '--json'])
    expect(JSON.parse(zh.stdout).memories.map((hit: { memory: { id: string } }) => hit.memory.id)).toContain(fixture.memories.database)
    const ja = await step(['--database-url', url, 'search', 'デプロイ', '--in', 'messages', '--json'])
    expect(JSON.parse(ja.stdout).messages.map((hit: { message: { id: string } }) => hit.message.id)).toContain(fixture.messages.ja)
    const history = await step(['show', fixture.memories.deployDay, '--database-url', url, '--json'])
    expect(JSON.parse(history.stdout).history.map((memory: { id: string }) => memory.id)).toEqual([fixture.memories.deployDayOld, fixture.memories.deployDay])

    // The JSONL export of the PostgreSQL store is record for record the source's.
    const exported = await step(['export', '--database-url', url, '--quiet'])
    expect(exported.stdout.trim().split('\n').slice(1)).toEqual(await records(fixture.dataDir))

    const back = freshDir()
    const out = await step(['migrate', '--from', url, '--to', back, '--json'])
    expect(out.code).toBe(0)
    expect(json(out.stdout)).toMatchObject({ from: shown(url), ok: true, copied: FIXTURE_COUNTS, notMoved: [] })
    expect(await records(back)).toEqual(await records(fixture.dataDir))
    const again = await step(['search', 'PostgreSQL', '--data-dir', back, '--json'])
    expect(JSON.parse(again.stdout).memories.length).toBeGreaterThan(0)
    expect(printed.join('')).not.toContain(password())
  })

  it('copies the messages’ vectors SQLite → PostgreSQL → SQLite bit for bit, verified, none twice; a vector the target lacks is a mismatch', async () => {
    const source = await buildFixture(join(temp.dir, 'vectors'))
    const hex = (v: Float32Array | undefined) => (v ? Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex') : 'none')
    // Five of the six messages, two models, two messages with both (a team's two embedders);
    // -0 and a subnormal must survive both directions.
    const entries: MessageEmbedding[] = await withTarget(source.dataDir, async (store) => {
      const messages = await store.messages.list({ limit: 100 })
      const made = [...messages.slice(0, 5).entries(), ...messages.slice(0, 2).entries()].map(([i, message], n) => {
        const second = i === 4 || n >= 5
        const embedding = Float32Array.from({ length: second ? 8 : 384 }, (_, k) => Math.sin(n * 31 + k))
        embedding.set([-0, 1e-45])
        return { messageId: message.id, embedding, embeddingModel: second ? 'bge-m3@8' : 'all-MiniLM-L6-v2@384' }
      })
      expect(await store.messages.setEmbeddings(made)).toBe(7)
      return made
    })
    const held = async (store: MemoryStore) => {
      const out: string[] = []
      for (const entry of entries) out.push(hex((await store.messages.embeddings([entry.messageId], entry.embeddingModel)).get(entry.messageId)))
      return out
    }
    const url = await freshDatabase()
    const into = await cli(['migrate', '--from', source.dataDir, '--to', url, '--json'])
    expect(into.code).toBe(0)
    expect(json(into.stdout)).toMatchObject({ ok: true, copied: FIXTURE_COUNTS, vectors: { copied: 7, alreadyPresent: 0, verified: { source: 7, target: 7, missing: 0 } } })
    const pgStore = await openStore({ databaseUrl: url, readonly: true })
    try {
      expect(await held(pgStore)).toEqual(entries.map((entry) => hex(entry.embedding)))
    } finally {
      await pgStore.close()
    }

    const again = await cli(['migrate', '--from', source.dataDir, '--to', url])
    expect(again.code).toBe(0)
    expect(again.stdout).toContain('message vectors: copied 0, already in the target 7')
    expect(again.stdout).toMatch(/message vectors +7 +7 +0/)

    const back = freshDir()
    const out = await cli(['migrate', '--from', url, '--to', back, '--json'])
    expect(json(out.stdout)).toMatchObject({ ok: true, vectors: { copied: 7, alreadyPresent: 0, verified: { source: 7, target: 7, missing: 0 } } })
    expect(await withTarget(back, held)).toEqual(entries.map((entry) => hex(entry.embedding)))

    // The target's vector of one model of a message replaced by a third model's: --check names it
    // missing (the message's vector of the other model still counts as present).
    await psql(url, `UPDATE dsh_memory.store_message_vectors SET embedding_model = 'other@384' WHERE message_id = '${entries[0]!.messageId}' AND embedding_model = '${entries[0]!.embeddingModel}'`)
    const check = await cli(['migrate', '--check', '--from', source.dataDir, '--to', url, '--json'])
    expect(check.code).toBe(1)
    expect(json(check.stdout)).toMatchObject({ ok: false, vectors: { verified: { source: 7, target: 7, missing: 1 } } })
    // Copying again adds the source's vector beside the third model's, which stays.
    const repaired = await cli(['migrate', '--from', source.dataDir, '--to', url, '--json'])
    expect(json(repaired.stdout)).toMatchObject({ ok: true, vectors: { copied: 1, alreadyPresent: 6, verified: { source: 7, target: 8, missing: 0 } } })
  })

  it('resumes an interrupted copy into PostgreSQL and verifies the counts', async () => {
    const url = await freshDatabase()
    const controller = new AbortController()
    const first = await runMigrate(sqlite(fixture.dataDir), postgresSource(url, '--to'), { pageSize: 1, signal: controller.signal, onPage: (pages) => pages === 10 && controller.abort() })
    expect(first).toMatchObject({ completed: false, ok: false, copied: { conversations: 2, messages: 6, memories: 3, scenes: 0, persona: 0 } })
    const check = await cli(['migrate', '--check', '--from', fixture.dataDir, '--to', url, '--json'])
    expect(check.code).toBe(1)
    expect(json(check.stdout).verified?.memories).toEqual({ source: 6, target: 3, missing: 3 })

    const second = await cli(['migrate', '--from', fixture.dataDir, '--to', url, '--json'])
    expect(second.code).toBe(0)
    const report = json(second.stdout)
    expect(report.alreadyPresent).toEqual({ conversations: 2, messages: 6, memories: 3, scenes: 0, persona: 0 })
    expect(report.copied).toEqual({ conversations: 0, messages: 0, memories: 3, scenes: 1, persona: 1 })
    for (const [type, count] of Object.entries(FIXTURE_COUNTS)) expect(report.verified?.[type as keyof typeof FIXTURE_COUNTS]).toEqual({ source: count, target: count, missing: 0 })
  })

  it('moves every package table SQLite → PostgreSQL → SQLite row for row, resumes a copy stopped inside them, keeps identity columns usable', async () => {
    const source = await buildFixture(join(temp.dir, 'full'))
    const files = join(temp.dir, 'full-files')
    const { workspace } = await importPackageData(['--data-dir', source.dataDir], files)
    await withTarget(source.dataDir, (store) => seedRecallTables(store))
    const url = await freshDatabase()

    // Stopped after 12 pages of 2: the store core takes 9, so the copy stops inside the package tables.
    const controller = new AbortController()
    const first = await runMigrate(sqlite(source.dataDir), postgresSource(url, '--to'), { pageSize: 2, signal: controller.signal, onPage: (pages) => pages === 12 && controller.abort() })
    expect(first).toMatchObject({ completed: false, ok: false, copied: FIXTURE_COUNTS })
    const partly = first.packages.reduce((sum, line) => sum + line.copied, 0)
    expect(partly).toBeGreaterThan(0)

    const second = await cli(['migrate', '--from', source.dataDir, '--to', url, '--json'])
    expect(second.stderr).not.toContain('error')
    expect(second.code).toBe(0)
    const report = json(second.stdout)
    expect(report.ok).toBe(true)
    const owners = new Set(report.packages.filter((line) => line.verified!.source > 0).map((line) => line.owner))
    expect([...owners].sort()).toEqual(['cue-bank', 'distill', 'palace', 'recall', 'tree'])
    for (const line of report.packages) {
      expect(line.verified).toEqual({ source: line.verified!.source, target: line.verified!.source, missing: 0 })
      expect(line.copied + line.alreadyPresent).toBe(line.verified!.source)
      expect(line.copied + (first.packages.find((entry) => entry.table === line.table)?.copied ?? 0)).toBe(line.verified!.source)
    }
    expect(report.packages.reduce((sum, line) => sum + line.copied, 0) + partly).toBe(report.packages.reduce((sum, line) => sum + line.verified!.source, 0))

    // And back: every package row is the source's, value for value (flags, times, vectors, Chinese text).
    const back = freshDir()
    const out = await cli(['migrate', '--from', url, '--to', back, '--json'])
    expect(json(out.stdout)).toMatchObject({ ok: true, notMoved: [] })
    const rows = await packageRows(back)
    expect(Object.keys(rows).length).toBeGreaterThanOrEqual(20)
    expect(rows).toEqual(await packageRows(source.dataDir))

    // New rows on PostgreSQL after the copy get fresh identity values (the sequences moved past the copied ids).
    await writePalace(workspace, 'Project Beta', ['Beta ships on Friday.', 'Friday it is.'])
    const beta = await cli(['import', join(workspace, 'memory-palace'), '--database-url', url, '--json', '--quiet'])
    expect(beta.stderr).toBe('')
    expect(JSON.parse(beta.stdout).namespaces).toEqual(expect.arrayContaining([expect.objectContaining({ namespace: 'Project Beta', inserted: 2 })]))
  })

  it('takes the password from PGPASSFILE when the URL has none', async () => {
    const url = await freshDatabase()
    const admin = new URL(url)
    const bare = `postgres://${admin.username}@${admin.host}${admin.pathname}`
    const passfile = join(temp.dir, 'pgpass')
    writeFileSync(passfile, `${admin.hostname}:${admin.port}:*:${decodeURIComponent(admin.username)}:${password()}\n`, { mode: 0o600 })
    const previous = process.env.PGPASSFILE
    process.env.PGPASSFILE = passfile
    try {
      const into = await cli(['migrate', '--from', fixture.dataDir, '--to', bare, '--quiet'])
      expect(into.code).toBe(0)
      const status = await cli(['status', '--database-url', bare, '--json'])
      expect(JSON.parse(status.stdout)).toMatchObject({ backend: 'postgres', dataDir: bare, counts: { conversations: 2 } })
    } finally {
      if (previous === undefined) delete process.env.PGPASSFILE
      else process.env.PGPASSFILE = previous
    }
  })

  it('says which server it cannot reach, without the password', async () => {
    const admin = new URL(adminUrl())
    // A port of the cluster's host that nothing listens on (the cluster's port + 1 is free or not;
    // port 1 never is open to an unprivileged server).
    const url = `postgres://${admin.username}:${admin.password}@127.0.0.1:1/nowhere`
    const result = await cli(['status', '--database-url', url])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('127.0.0.1:1')
    expect(result.stderr).toContain('(unavailable)')
    expect(result.stderr).not.toContain(password())
    expect(result.stderr.trim().split('\n')).toHaveLength(1)
  })
})
