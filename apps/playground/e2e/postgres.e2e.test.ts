/**
 * A team's memory on PostgreSQL: two real DSH hosts with two different DSH_HOMEs (two
 * machines, as far as the hosts can tell) whose store rows point at one database on the run's
 * throwaway cluster (`postgresDatabase` in helpers.ts). Both write it at once; what host A
 * says, the other side finds; each host keeps only its local files.
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { runProgram } from 'dsh-memory'
import { beforeAll, describe, expect, it } from 'vitest'
import { REPO_ROOT } from '../src/host.js'
import { lastUserText, type LoggedRequest, type ScriptedReply } from '../src/model-server.js'
import { expectBootRejects, type HostedProfile, postgresDatabase, type PostgresDatabase, useHostProfile } from './helpers.js'

const PACKAGES = ['@dsh-memory/store', '@dsh-memory/capture']

const responder = (request: LoggedRequest): ScriptedReply => ({ kind: 'text', text: `Noted: ${lastUserText(request.body).slice(0, 60)}` })

describe('two DSH hosts sharing one PostgreSQL database', () => {
  let database: PostgresDatabase
  const a = useHostProfile('pg-host-a', { profile: 'team', packages: PACKAGES, responder })
  const b = useHostProfile('pg-host-b', { profile: 'team', packages: PACKAGES, responder })
  const workspace = (host: HostedProfile, name: string) => join(host.root, 'work', name)
  const run = (host: HostedProfile, name: string, prompt: string) =>
    host.home.run({ profile: 'team', cwd: workspace(host, name), modelUrl: host.server.url, patch: database.storeRows(PACKAGES), args: [prompt] })

  beforeAll(async () => {
    database = await postgresDatabase('two-hosts')
  })

  it('both hosts capture into the one database at once; the CLI on the other machine finds host A\'s words; local files stay local', async () => {
    const runs = await Promise.all([
      run(a, 'alpha', 'Our staging server is called heron. 我们决定使用 PostgreSQL 作为主数据库。'),
      run(b, 'beta', 'チームのデプロイは金曜日に行います。'),
    ])
    for (const result of runs) {
      expect(result.stderr).not.toMatch(/Error:/)
      expect(result.code).toBe(0)
    }
    const fromA = await database.withStore(async (store) => {
      const conversations = await store.conversations.list()
      expect(conversations.map((conversation) => conversation.workspace).sort()).toEqual([workspace(a, 'alpha'), workspace(b, 'beta')].sort())
      for (const conversation of conversations) {
        expect((await store.messages.list({ conversationId: conversation.id })).map((message) => message.role)).toEqual(['user', 'assistant'])
      }
      const alpha = conversations.find((conversation) => conversation.workspace === workspace(a, 'alpha'))!.id
      expect((await store.search.messages('数据库', { role: 'user' })).map((hit) => hit.message.conversationId)).toEqual([alpha])
      return alpha
    })

    // On B's machine the CLI reads the team's database through DSH_MEMORY_DATABASE_URL.
    const cli = await runProgram(process.execPath, [join(REPO_ROOT, 'apps/cli/dist/bin.js'), 'search', '数据库', '--in', 'messages', '--json'], {
      cwd: b.root,
      env: { ...b.home.env(), DSH_MEMORY_DATABASE_URL: database.databaseUrl, DSH_MEMORY_DIR: '' },
      timeoutMs: 60_000,
    })
    expect(cli.stderr).toBe('')
    expect(cli.code).toBe(0)
    const found = JSON.parse(cli.stdout) as { messages: { message: { conversationId: string; text: string } }[] }
    expect(found.messages.filter((hit) => hit.message.conversationId === fromA).map((hit) => hit.message.text)).toContain('Our staging server is called heron. 我们决定使用 PostgreSQL 作为主数据库。')

    for (const host of [a, b]) {
      const dataDir = join(host.home.dir, 'memory')
      // The stage log stays on each machine; there is no SQLite database beside it.
      expect(readFileSync(join(dataDir, 'memory.log'), 'utf8')).toMatch(/ capture stored /)
      expect(existsSync(join(dataDir, 'memory.db'))).toBe(false)
    }
  })

  it('refuses a store row with a bad databaseUrl at boot, naming the field and never printing the password', async () => {
    const rows = database.storeRows(PACKAGES).replaceAll(database.databaseUrl, 'mysql://team:hunter2-not-printed@db.internal/team')
    const output = await expectBootRejects(a, rows, [/memory-store: databaseUrl: must start with postgres:\/\//])
    expect(output).not.toContain('hunter2-not-printed')
  })
})
