/**
 * `dsh-memory migrate` for a team (issue #18): two members' data dirs, written by two users,
 * merged one after the other into one PostgreSQL database (the run's throwaway cluster), then
 * moved back to SQLite. Every record, package row (identity-numbered ones renumbered), meta key
 * and audit entry of both must arrive once, `--check` must be clean as either user, and a merge
 * stopped again and again must not duplicate anything.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { getTableColumns, getTableName, type Table } from 'drizzle-orm'
import { bigint, pgTable, text as pgText } from 'drizzle-orm/pg-core'
import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { openMemoryStore, type AuditEntry, type MemoryStore } from '@dsh-memory/store'
import { openMemoryTree } from '@dsh-memory/tree'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type {} from '../../../packages/store/test/support/pg-global-setup.ts'
import { type DataSource, openSourceStore, postgresSource } from '../src/data/data-dir.ts'
import { runMigrate, type MigrateReport } from '../src/data/migrate.ts'
import { PER_STORE_META } from '../src/data/migrate-history.ts'
import { SourceLedger, sourceFingerprint } from '../src/data/migrate-ledger.ts'
import { migratePackageTables, PACKAGE_DECLARATIONS } from '../src/data/package-tables.ts'
import { REEMBED_CHECKPOINT_KEY } from '../src/commands/reembed.ts'
import { buildFixture, cli, type Fixture, scratch } from './helpers.ts'
import { CUE_BANK_FILE, seedRecallTables, writePalace } from './package-fixture.ts'
import { freshDatabase } from './pg-database.ts'

const ALICE = 'alice@example.com'
const BOB = 'bob@example.com'

let temp: ReturnType<typeof scratch>
let alice: Fixture
let bob: Fixture
let serial = 0

const sqlite = (dataDir: string): DataSource => ({ kind: 'sqlite', dataDir, label: dataDir })
const json = (stdout: string): MigrateReport => JSON.parse(stdout) as MigrateReport

/** A memory-tree project with mainline turns, a branch with events and a chat line, written through the tree's API. */
async function writeTree(store: MemoryStore, workspace: string, project: string, t0: number): Promise<void> {
  let clock = t0
  const { tree, close } = await openMemoryTree({ store, now: () => (clock += 1_000) })
  try {
    const caller = { workspace, sessionId: `session-${project}`, source: 'user' }
    await tree.setProject(project, caller)
    for (const text of ['部署 the API on Tuesdays only.', 'bug: the checkout test is flaky', '架构：订单走消息队列。']) {
      await tree.recordMessage({ role: 'user', text, caller, follow: 'mainline' })
      await tree.recordMessage({ role: 'assistant', text: `Noted: ${text}`, caller, follow: 'mainline' })
    }
    const { branch } = await tree.openBranch({ title: `${project} cache`, note: 'Try a read-through cache.' }, caller)
    await tree.logToBranch({ branchId: branch.id, text: 'The cache halves the p95.' }, caller)
    await tree.chat('你好', caller)
  } finally {
    await close()
  }
}

/** One member's data dir: the store core and distill (the CLI fixture), tree, palace, cue bank, meta. */
async function memberDataDir(label: string, user: string, t0: number, recall: boolean): Promise<Fixture> {
  const fixture = await buildFixture(join(temp.dir, label), { user, t0 })
  const files = join(temp.dir, `${label}-files`)
  const cueFile = join(temp.dir, `${label}-cue-bank.json`)
  writeFileSync(cueFile, JSON.stringify({ ...CUE_BANK_FILE, topics: CUE_BANK_FILE.topics.map((topic) => ({ ...topic, id: `${topic.id}-${label}` })) }))
  const palace = join(files, 'palace-project')
  await writePalace(palace, `${label} launch`, [`${label}: the launch codename is 蓝鲸.`, 'Noted.', 'The rollback window is 42 minutes.', 'Noted too.'])
  for (const args of [[cueFile, '--workspace', join(files, 'cue-project')], [join(palace, 'memory-palace')]]) {
    const result = await cli(['import', ...args, '--data-dir', fixture.dataDir, '--user', user, '--quiet'])
    if (result.code !== 0) throw new Error(`import failed: ${result.stderr}`)
  }
  const store = openMemoryStore({ path: join(fixture.dataDir, 'memory.db'), user, actor: 'fixture' })
  try {
    await writeTree(store, join(files, 'tree-project'), `${label}-service`, t0)
    if (recall) await seedRecallTables(store)
    await store.meta.set(`${label}.setting`, `${label}'s value`)
    await store.meta.set('team.shared-flag', label)
    await store.meta.set(REEMBED_CHECKPOINT_KEY, JSON.stringify({ after: `${label}-cursor` }))
  } finally {
    await store.close()
  }
  return fixture
}

beforeAll(async () => {
  temp = scratch('migrate-team')
  const t0 = Date.UTC(2025, 10, 1, 9, 0, 0)
  alice = await memberDataDir('alice', ALICE, t0, true)
  bob = await memberDataDir('bob', BOB, t0 + 86_400_000, false)
})
afterAll(() => temp.cleanup())

/** The identity column (property key) of a package table, from its PostgreSQL declaration. */
function identityKey(pgTable: Table): string | undefined {
  return Object.entries(getTableColumns(pgTable)).find(([, column]) => column.primary && (column as { generatedIdentity?: unknown }).generatedIdentity)?.[0]
}

/** Every package row of a store, per table, as JSON without the identity number (Buffers as hex). */
async function packageRows(store: MemoryStore): Promise<Map<string, string[]>> {
  const owners = new Set((await store.meta.migrations()).map((migration) => migration.owner))
  const out = new Map<string, string[]>()
  for (const declare of PACKAGE_DECLARATIONS) {
    const declaration = declare()
    if (!owners.has(declaration.migrations.owner)) continue
    const tables = await store.tables(declaration)
    for (const [key, table] of Object.entries(tables.t)) {
      const identity = identityKey(declaration.postgres!.schema[key] as Table)
      const rows = await tables.read(async (db) => db.select().from(table as never))
      const text = rows.map((row: Record<string, unknown>) => {
        const { [identity ?? '']: _number, ...rest } = row
        return JSON.stringify(rest, (_, value) => (value?.type === 'Buffer' ? Buffer.from(value.data).toString('hex') : value))
      })
      out.set(getTableName(table as Table), text)
    }
  }
  return out
}

/** Every record line of a store's export, header dropped. */
async function records(store: MemoryStore): Promise<string[]> {
  const lines: string[] = []
  for await (const line of store.exportJsonl()) lines.push(line)
  return lines.slice(1)
}

/** An audit entry without its id: what a copy must keep. */
const entryKey = ({ id: _id, ...entry }: AuditEntry) => JSON.stringify(entry)

async function auditKeys(store: MemoryStore): Promise<string[]> {
  const keys: string[] = []
  for (let after = 0; ; ) {
    const page = await store.audit.list({ afterId: after, limit: 10_000 })
    keys.push(...page.map(entryKey))
    if (page.length < 10_000) return keys
    after = page[page.length - 1]!.id
  }
}

/** How often each element occurs. */
function tally(values: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>()
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1)
  return counts
}

async function withStore<T>(source: DataSource, fn: (store: MemoryStore) => Promise<T>): Promise<T> {
  const store = await openSourceStore(source, { readonly: true })
  try {
    return await fn(store)
  } finally {
    await store.close()
  }
}

/** What each member's data dir holds, read once. */
async function member(fixture: Fixture) {
  return withStore(sqlite(fixture.dataDir), async (store) => ({ rows: await packageRows(store), records: await records(store), audit: await auditKeys(store) }))
}

describe('migrate: two members into one team database and back', () => {
  it('merges both data dirs into PostgreSQL: every record, package row, meta key and audit entry of both, --check clean as either user', async () => {
    const url = await freshDatabase('team')
    const first = await cli(['migrate', '--from', alice.dataDir, '--to', url, '--user', ALICE, '--json'])
    expect(first.stderr).not.toContain('error')
    expect(first.code).toBe(0)
    const second = await cli(['migrate', '--from', bob.dataDir, '--to', url, '--user', BOB])
    expect(second.code).toBe(0)
    expect(second.stdout).toContain('verified: every record and package row of the source is in the target')
    // Bob's identity-numbered rows (distill's ledger, tree turns and events, palace turns) took new numbers.
    expect(second.stdout).toMatch(/package tables: copied \d+ rows \(\d+ under new numbers\)/)
    expect(second.stdout).toMatch(/audit log\s+(\d+)\s+\d+\s+0\n/)
    expect(second.stdout).toContain("meta keys the target holds with another value (the target's kept): team.shared-flag")
    // Distill's scan mark is one row per database under one key: the team database keeps Alice's, and says so.
    expect(second.stdout).toContain("kept the target's row: distill: distill_marks, 1 source row(s) under a key the target holds with other values")

    // Each member checks their own data dir, and the other's, as themselves: nothing missing
    // (the other user's global memories, scenes and persona are private to them, yet found).
    for (const fixture of [alice, bob]) {
      for (const user of [ALICE, BOB]) {
        const check = await cli(['migrate', '--check', '--from', fixture.dataDir, '--to', url, '--user', user, '--json'])
        expect(check.code, `${fixture.dataDir} as ${user}: ${check.stdout}`).toBe(0)
        const report = json(check.stdout)
        expect(report.verified?.memories.missing).toBe(0)
        expect(report.verified?.persona.missing).toBe(0)
        expect(report.verified?.memories.target).toBe(12)
      }
    }

    // Run again: nothing copied twice.
    const again = json((await cli(['migrate', '--from', bob.dataDir, '--to', url, '--user', BOB, '--json'])).stdout)
    expect(again).toMatchObject({ ok: true, copied: { conversations: 0, messages: 0, memories: 0, scenes: 0, persona: 0 }, audit: { copied: 0 }, meta: { copied: 0 } })
    expect(again.packages.every((line) => line.copied === 0 && line.renumbered === 0)).toBe(true)

    // And back to a data dir: the team database, record for record and row for row.
    const back = join(temp.dir, `back-${++serial}`)
    const out = await cli(['migrate', '--from', url, '--to', back, '--user', ALICE, '--json'])
    expect(out.code).toBe(0)
    expect(json(out.stdout)).toMatchObject({ ok: true, notMoved: [] })

    const [a, b, merged] = [await member(alice), await member(bob), await withStore(sqlite(back), async (store) => ({ rows: await packageRows(store), records: await records(store), audit: await auditKeys(store), meta: await store.meta.list('') }))]
    const mergedRecords = new Set(merged.records)
    for (const line of [...a.records, ...b.records]) expect(mergedRecords.has(line), line).toBe(true)
    expect(merged.records).toHaveLength(a.records.length + b.records.length)
    for (const [table, rows] of merged.rows) {
      // distill's scan mark is one row per database (key `scan`): the team database keeps the first one.
      const wanted = table === 'distill_marks' ? (a.rows.get(table) ?? []) : [...(a.rows.get(table) ?? []), ...(b.rows.get(table) ?? [])]
      const held = tally(rows)
      for (const [row, times] of tally(wanted)) expect(held.get(row) ?? 0, `${table}: ${row}`).toBe(times)
    }
    for (const table of ['tree_turns', 'tree_branch_events', 'tree_chat', 'palace_turns', 'distill_calls']) {
      expect(a.rows.get(table)!.length, table).toBeGreaterThan(0)
      expect(merged.rows.get(table), table).toHaveLength(a.rows.get(table)!.length + b.rows.get(table)!.length)
    }
    // References intact: bob's tree, read through the tree, has its own turns and branch events.
    const { tree, close } = await openMemoryTree({ dataDir: back })
    try {
      const caller = { workspace: join(temp.dir, 'bob-files', 'tree-project'), sessionId: 'check' }
      const project = await tree.resolveProject(caller, { create: false })
      expect(project?.name).toBe('bob-service')
      const snapshot = await tree.snapshot(project!.id)
      expect(JSON.stringify(snapshot)).toContain('架构：订单走消息队列。')
      const { branches } = await tree.listBranches(caller, { status: 'all' })
      const log = await tree.branchLog(branches[0]!.id, caller)
      expect(log.events.map((event) => event.text)).toContain('The cache halves the p95.')
    } finally {
      await close()
    }

    // The audit log: every entry of both members, once (the team database's own entries of the copies besides).
    const mergedAudit = tally(merged.audit)
    for (const [entry, times] of tally([...a.audit, ...b.audit])) expect(mergedAudit.get(entry), entry).toBe(times)
    expect(merged.audit.some((entry) => entry.includes(`"createdBy":"${BOB}"`) && entry.includes('"op":"memory.add"'))).toBe(true)
    // Meta: both members' settings; the per-store reembed checkpoint stays behind.
    const meta = new Map(merged.meta.map((entry) => [entry.key, entry.value]))
    expect(meta.get('alice.setting')).toBe("alice's value")
    expect(meta.get('bob.setting')).toBe("bob's value")
    expect(meta.get('team.shared-flag')).toBe('alice')
    expect(meta.has(REEMBED_CHECKPOINT_KEY)).toBe(false)
    expect(PER_STORE_META.keys).toContain(REEMBED_CHECKPOINT_KEY)
  })

  it('a merge stopped again and again resumes without duplicating a row, a record or an audit entry', async () => {
    const url = await freshDatabase('team-resume')
    expect((await cli(['migrate', '--from', alice.dataDir, '--to', url, '--user', ALICE, '--quiet'])).code).toBe(0)
    const target = postgresSource(url, '--to')
    const runs: MigrateReport[] = []
    // One record or row per page; each run stops a few pages further than the last one got.
    for (let stopAt = 20; runs.length < 200; stopAt += 7) {
      const controller = new AbortController()
      const report = await runMigrate(sqlite(bob.dataDir), { ...target, user: BOB }, { pageSize: 1, signal: controller.signal, onPage: (pages) => pages === stopAt && controller.abort() })
      runs.push(report)
      if (report.completed) break
    }
    const last = runs[runs.length - 1]!
    expect(runs.length).toBeGreaterThan(3)
    expect(last.ok).toBe(true)
    expect(runs.slice(0, -1).every((report) => !report.completed)).toBe(true)
    // Bob's renumbered rows were copied across several runs, each exactly once.
    const renumbered = runs.reduce((sum, report) => sum + report.packages.reduce((total, line) => total + line.renumbered, 0), 0)
    expect(renumbered).toBeGreaterThan(0)

    const [a, b] = [await member(alice), await member(bob)]
    await withStore(target, async (store) => {
      const rows = await packageRows(store)
      for (const table of ['tree_turns', 'tree_branch_events', 'tree_chat', 'palace_turns', 'distill_calls']) {
        expect(rows.get(table), table).toHaveLength(a.rows.get(table)!.length + b.rows.get(table)!.length)
      }
      expect(await records(store)).toHaveLength(a.records.length + b.records.length)
      const held = tally(await auditKeys(store))
      for (const [entry, times] of tally([...a.audit, ...b.audit])) expect(held.get(entry), entry).toBe(times)
    })
  })

  it('refuses a memory-tree project named like one already in the team database, copies the rest and says so', async () => {
    const url = await freshDatabase('team-clash')
    expect((await cli(['migrate', '--from', alice.dataDir, '--to', url, '--user', ALICE, '--quiet'])).code).toBe(0)
    // Carol's tree project has Alice's project's name (each laptop made its own, under its own id).
    const carol = await buildFixture(join(temp.dir, 'carol'), { user: 'carol@example.com', t0: Date.UTC(2025, 10, 3, 9) })
    const store = openMemoryStore({ path: join(carol.dataDir, 'memory.db'), user: 'carol@example.com' })
    try {
      await writeTree(store, join(temp.dir, 'carol-files', 'tree-project'), 'alice-service', Date.UTC(2025, 10, 3, 9))
    } finally {
      await store.close()
    }
    const result = await cli(['migrate', '--from', carol.dataDir, '--to', url, '--user', 'carol@example.com', '--json'])
    expect(result.code).toBe(1)
    const report = json(result.stdout)
    const line = (table: string) => report.packages.find((entry) => entry.table === table)!
    expect(line('tree_projects')).toMatchObject({ copied: 0, refused: 1, refusal: 'another row of the target holds one of its unique values', verified: { missing: 1 } })
    expect(line('tree_turns').refused).toBeGreaterThan(0)
    expect(line('tree_turns').verified?.missing).toBe(line('tree_turns').refused)
    // Everything else of Carol's arrived: her records, her distill ledger (renumbered), her history.
    expect(report.verified?.memories).toMatchObject({ missing: 0 })
    expect(line('distill_calls')).toMatchObject({ renumbered: 4, verified: { missing: 0 } })
    expect(report.audit?.verified?.missing).toBe(0)
    const text = await cli(['migrate', '--check', '--from', carol.dataDir, '--to', url, '--user', 'carol@example.com'])
    expect(text.stdout).toMatch(/tree: tree_projects\s+1\s+1\s+1\n/)
  })

  it('rewrites a child row’s reference to a renumbered row (a package whose tables reference identity numbers)', async () => {
    const notes = sqliteTable('fktest_notes', { id: integer('id').primaryKey({ autoIncrement: true }), text: text('text').notNull() })
    const replies = sqliteTable('fktest_replies', { id: integer('id').primaryKey({ autoIncrement: true }), noteId: integer('note_id').notNull(), text: text('text').notNull() })
    const links = sqliteTable('fktest_links', { id: text('id').primaryKey(), noteId: integer('note_id').notNull(), label: text('label').notNull() })
    const pgNotes = pgTable('fktest_notes', { id: bigint('id', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(), text: pgText('text').notNull() })
    const pgReplies = pgTable('fktest_replies', { id: bigint('id', { mode: 'number' }).primaryKey().generatedByDefaultAsIdentity(), noteId: bigint('note_id', { mode: 'number' }).notNull(), text: pgText('text').notNull() })
    const pgLinks = pgTable('fktest_links', { id: pgText('id').primaryKey(), noteId: bigint('note_id', { mode: 'number' }).notNull(), label: pgText('label').notNull() })
    const sql = (id: string) => `CREATE TABLE fktest_notes (id ${id} PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE fktest_replies (
  id ${id} PRIMARY KEY,
  note_id BIGINT NOT NULL REFERENCES fktest_notes (id),
  text TEXT NOT NULL
);
CREATE TABLE fktest_links (
  id TEXT PRIMARY KEY,
  note_id BIGINT NOT NULL,
  label TEXT NOT NULL,
  FOREIGN KEY (note_id) REFERENCES fktest_notes (id)
);`
    const declaration = () => ({
      migrations: { owner: 'fktest', migrations: [{ version: 1, name: 'init', sql: sql('INTEGER') }] },
      schema: { notes, replies, links },
      postgres: { migrations: { owner: 'fktest', migrations: [{ version: 1, name: 'init', sql: sql('BIGINT GENERATED BY DEFAULT AS IDENTITY') }] }, schema: { notes: pgNotes, replies: pgReplies, links: pgLinks } },
    })
    /** A source whose notes 1..3 are its own, each with a reply and a link naming it. */
    const member = async (label: string) => {
      const store = openMemoryStore({ path: join(temp.dir, `fk-${label}`, 'memory.db') })
      const tables = await store.tables(declaration())
      await tables.write(async (db, t) => {
        for (const n of [1, 2, 3]) {
          await db.insert(t.notes).values({ text: `${label} note ${n}` })
          await db.insert(t.replies).values({ noteId: n, text: `${label} reply to ${n}` })
          await db.insert(t.links).values({ id: `${label}-${n}`, noteId: n, label: `${label} link ${n}` })
        }
      })
      return store
    }
    const [first, second] = [await member('first'), await member('second')]
    const target = await openSourceStore(postgresSource(await freshDatabase('team-fk'), '--to'), { create: true })
    try {
      const run = async (source: MemoryStore) =>
        migratePackageTables(source, target, { ledger: await SourceLedger.open(target, await sourceFingerprint(source), false, Date.now()), declarations: [declaration as never] })
      await run(first)
      const merged = await run(second)
      expect(merged.tables.map(({ table, copied, renumbered, verified }) => ({ table, copied, renumbered, missing: verified?.missing }))).toEqual([
        { table: 'fktest_notes', copied: 3, renumbered: 3, missing: 0 },
        { table: 'fktest_replies', copied: 3, renumbered: 3, missing: 0 },
        { table: 'fktest_links', copied: 3, renumbered: 0, missing: 0 },
      ])
      // Every reply and link of the second source names its own note under the note's new number.
      const tables = await target.tables(declaration())
      const texts = new Map((await tables.read(async (db, t) => db.select().from(t.notes))).map((row) => [row.id, row.text]))
      for (const row of await tables.read(async (db, t) => db.select().from(t.replies))) expect(texts.get(row.noteId)).toBe(row.text.replace('reply to', 'note'))
      for (const row of await tables.read(async (db, t) => db.select().from(t.links))) expect(texts.get(row.noteId)).toBe(row.label.replace('link', 'note'))
      expect(texts.size).toBe(6)
      // Again: nothing copied twice.
      const again = await run(second)
      expect(again.tables.every((line) => line.copied === 0 && line.verified?.missing === 0)).toBe(true)
    } finally {
      await Promise.all([first.close(), second.close(), target.close()])
    }
  })
})
