/**
 * The commands that read or write plugin tables, on PostgreSQL (the run's throwaway cluster):
 * `import` of a cue bank / palace / memory tree, `reembed --only cues`, `doctor`, and `--schema`.
 * (`status` and `migrate` are in migrate.test.ts, `serve` in serve.test.ts.)
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { openCueRepository } from '@dsh-memory/cue-bank'
import { openStore } from '@dsh-memory/store'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startEmbeddingServer } from '../../../packages/recall/test/support/loopback.ts'
import { buildFixture, cli, type Fixture, scratch } from './helpers.ts'
import { CUE_BANK_FILE, MEMORY_TREE_ROOT, writePalace } from './package-fixture.ts'
import { clusterPassword, freshDatabase, psql } from './pg-database.ts'

let temp: ReturnType<typeof scratch>
let fixture: Fixture
beforeAll(async () => {
  temp = scratch('pg-commands')
  fixture = await buildFixture(join(temp.dir, 'data'))
})
afterAll(() => temp.cleanup())

const json = (stdout: string) => JSON.parse(stdout) as Record<string, unknown>

describe('on PostgreSQL', () => {
  it('imports a cue bank, a memory palace and a memory tree into the database, idempotently, and reembeds the cues there', async () => {
    const url = await freshDatabase('imports')
    const db = ['--database-url', url, '--json', '--quiet']
    const cueFile = join(temp.dir, 'cues.json')
    writeFileSync(cueFile, JSON.stringify(CUE_BANK_FILE))
    const project = join(temp.dir, 'cue-project')
    const cues = await cli(['import', cueFile, '--workspace', project, ...db])
    expect(cues.stderr).toBe('')
    expect(json(cues.stdout)).toMatchObject({ format: 'cue-bank', partition: `workspace:${project}`, inserted: { topics: 1, idioms: 1 } })
    expect(json((await cli(['import', cueFile, '--workspace', project, ...db])).stdout)).toMatchObject({ inserted: { topics: 0, idioms: 0 }, skipped: { topics: 1, idioms: 1 } })

    const workspace = join(temp.dir, 'palace-project')
    await writePalace(workspace, 'Project Alpha', ['上线代号是蓝鲸-Orion。', '记下了代号。'])
    const palace = await cli(['import', join(workspace, 'memory-palace'), ...db])
    expect(json(palace.stdout)).toMatchObject({ format: 'palace', workspace, namespaces: [{ namespace: 'Project Alpha', turns: 2, inserted: 2 }] })
    expect(json((await cli(['import', workspace, '--format', 'palace', ...db])).stdout)).toMatchObject({ namespaces: [{ inserted: 0 }] })

    const tree = await cli(['import', MEMORY_TREE_ROOT, '--workspace', join(temp.dir, 'tree-project'), ...db])
    expect(tree.stderr).toBe('')
    const projects = (json(tree.stdout).projects as { name: string; alreadyImported: boolean; items: number }[]).map((entry) => [entry.name, entry.alreadyImported])
    expect(projects).toEqual(expect.arrayContaining([['订单服务', false]]))
    const again = json((await cli(['import', MEMORY_TREE_ROOT, '--workspace', join(temp.dir, 'tree-project'), ...db])).stdout)
    expect((again.projects as { alreadyImported: boolean }[]).every((entry) => entry.alreadyImported)).toBe(true)

    // The cue is in the cue bank's tables of the database: reembed finds it there and writes its vector.
    const endpoint = await startEmbeddingServer('vectors')
    try {
      const reembed = await cli(['reembed', '--only', 'cues', '--url', endpoint.url, '--model', 'concepts', ...db])
      expect(reembed.stderr).toBe('')
      expect(json(reembed.stdout)).toMatchObject({ completed: true, cues: { cueBank: true, total: 1, pending: 1, embedded: 1 } })
      expect(json((await cli(['reembed', '--only', 'cues', '--url', endpoint.url, '--model', 'concepts', ...db])).stdout)).toMatchObject({ cues: { pending: 0 } })
    } finally {
      await endpoint.close()
    }
    const store = await openStore({ databaseUrl: url, actor: 'test' })
    try {
      const repository = await openCueRepository(store, { pollMs: 0 })
      const [cue] = repository.listCues(undefined)
      repository.close()
      expect(cue).toMatchObject({ id: 'topic-db', partition: `workspace:${project}`, embeddingModel: 'concepts' })
      expect(cue!.embedding?.length).toBeGreaterThan(0)
    } finally {
      await store.close()
    }
  })

  it('doctor checks schema versions, package tables, orphan references and search terms, and --fix repairs them', async () => {
    const url = await freshDatabase('doctor')
    expect((await cli(['migrate', '--from', fixture.dataDir, '--to', url, '--quiet'])).code).toBe(0)
    const healthy = await cli(['doctor', '--database-url', url, '--json'])
    expect(healthy.code).toBe(0)
    const report = json(healthy.stdout) as { database: string; checks: { name: string; status: string; summary: string }[] }
    expect(report.checks.map((check) => [check.name, check.status])).toEqual([
      ['schema', 'ok'],
      ['package-tables', 'ok'],
      ['scene-members', 'ok'],
      ['distill-state', 'ok'],
      ['search-index', 'ok'],
    ])
    // The distill tables the fixture has, and the ledger `migrate` keeps in its target.
    expect(report.checks[1]!.summary).toBe('current (distill, migrate)')
    expect(report.database).not.toContain(clusterPassword())

    // Behind the store's back: a memory of the scene deleted, a conversation with distill state
    // deleted, a message's search terms dropped.
    await psql(
      url,
      `SET search_path TO dsh_memory;
       DELETE FROM store_memories WHERE id = '${fixture.memories.database}';
       DELETE FROM store_messages WHERE conversation_id = '${fixture.conversations.blog}';
       DELETE FROM store_conversations WHERE id = '${fixture.conversations.blog}';
       UPDATE store_messages SET search_terms = NULL WHERE id = '${fixture.messages.zh}';`,
    )
    const sick = await cli(['doctor', '--database-url', url])
    expect(sick.code).toBe(4)
    expect(sick.stdout).toContain(`[FAIL] scene-members  1 scene lists deleted memories`)
    expect(sick.stdout).toContain(`scene ${fixture.scene}: missing ${fixture.memories.database}`)
    expect(sick.stdout).toContain(`[warn] distill-state  1 distill state row of deleted conversations`)
    expect(sick.stdout).toContain('[FAIL] search-index   index out of sync with the database')
    expect(sick.stdout).toContain('2 problems: run `dsh-memory doctor --fix`')

    const fixed = await cli(['doctor', '--fix', '--database-url', url])
    expect(fixed.code).toBe(0)
    expect(fixed.stdout).toContain('fixed: removed deleted memory ids from 1 scene')
    expect(fixed.stdout).toContain('fixed: deleted 1 state row')
    expect(fixed.stdout).toMatch(/fixed: rewrote the search terms \(4 messages, 5 memories\)/)
    expect(fixed.stdout).toContain('healthy (after fixes)')
    const zh = await cli(['search', '周二', '--in', 'messages', '--database-url', url, '--json'])
    expect(JSON.parse(zh.stdout).messages.map((hit: { message: { id: string } }) => hit.message.id)).toContain(fixture.messages.zh)
  })

  it('--schema puts a second store in the same database, and every command follows it', async () => {
    const url = await freshDatabase('schemas')
    expect((await cli(['migrate', '--from', fixture.dataDir, '--to', url, '--to-schema', 'team_b', '--quiet'])).code).toBe(0)
    const status = await cli(['status', '--database-url', url, '--schema', 'team_b', '--json'])
    expect(json(status.stdout)).toMatchObject({ backend: 'postgres', dataDir: `${url.replace(`:${encodeURIComponent(clusterPassword())}@`, '@')} (schema team_b)`, counts: { conversations: 2 } })
    expect((await cli(['--schema', 'team_b', 'doctor', '--database-url', url])).code).toBe(0)
    expect(await psql(url, "SELECT count(*) FROM pg_namespace WHERE nspname = 'dsh_memory'")).toBe('0\n')
    // The default schema is another, empty store: a write there leaves team_b alone.
    const cueFile = join(temp.dir, 'schema-cues.json')
    writeFileSync(cueFile, JSON.stringify(CUE_BANK_FILE))
    expect((await cli(['import', cueFile, '--database-url', url, '--quiet'])).code).toBe(0)
    expect(await psql(url, 'SELECT (SELECT count(*) FROM dsh_memory.cue_bank_topics), (SELECT count(*) FROM team_b.store_conversations)')).toBe('1|2\n')
  })
})
