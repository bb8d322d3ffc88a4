import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { promisify } from 'node:util'
import { join } from 'node:path'
import { DistillStateRepository } from '@dsh-memory/distill'
import { openMemoryStore } from '@dsh-memory/store'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { resolveCliDataDir } from '../src/data/data-dir.ts'
import { buildFixture, cli, type Fixture, scratch } from './helpers.ts'

let fixture: Fixture
let temp: ReturnType<typeof scratch>

beforeAll(async () => {
  temp = scratch('data')
  fixture = await buildFixture(join(temp.dir, 'memory'))
})
afterAll(() => temp.cleanup())

const dd = () => ['--data-dir', fixture.dataDir]

describe('the data dir', () => {
  it('is --data-dir, else DSH_MEMORY_DIR, else $DSH_HOME/memory, else ~/.dsh/memory', () => {
    expect(resolveCliDataDir('/x/data', { DSH_MEMORY_DIR: '/y', DSH_HOME: '/z' })).toBe('/x/data')
    expect(resolveCliDataDir(undefined, { DSH_MEMORY_DIR: '/y', DSH_HOME: '/z' })).toBe('/y')
    expect(resolveCliDataDir(undefined, { DSH_HOME: '/z' })).toBe('/z/memory')
    expect(resolveCliDataDir(undefined, { HOME: '/home/u' })).toMatch(/\.dsh\/memory$/)
  })

  it('reads DSH_MEMORY_DIR when no --data-dir is given', async () => {
    const previous = process.env.DSH_MEMORY_DIR
    process.env.DSH_MEMORY_DIR = fixture.dataDir
    try {
      const result = await cli(['status', '--json'])
      expect(result.code).toBe(0)
      expect(JSON.parse(result.stdout).dataDir).toBe(fixture.dataDir)
    } finally {
      if (previous === undefined) delete process.env.DSH_MEMORY_DIR
      else process.env.DSH_MEMORY_DIR = previous
    }
  })

  it('exits 3 with a clear message when there is no database', async () => {
    const result = await cli(['status', '--data-dir', join(temp.dir, 'nowhere')])
    expect(result.code).toBe(3)
    expect(result.stderr).toBe(`error: no dsh-memory database at ${join(temp.dir, 'nowhere', 'memory.db')} (pass --data-dir, or set DSH_MEMORY_DIR)\n`)
    expect(result.stdout).toBe('')
  })

  it('exits 2 on bad usage', async () => {
    expect((await cli(['stauts'])).code).toBe(2)
    expect((await cli(['search', 'x', '--scope', 'planet', ...dd()])).stderr).toContain('--scope expects global, workspace, session')
    expect((await cli(['search', 'x', '--limit', '0', ...dd()])).code).toBe(2)
  })
})

describe('status', () => {
  it('counts per layer and scope, sizes, schema, distillation and cost (--json)', async () => {
    const result = await cli(['status', ...dd(), '--json'])
    expect(result.code).toBe(0)
    const report = JSON.parse(result.stdout)
    expect(report.database.path).toBe(join(fixture.dataDir, 'memory.db'))
    expect(report.database.bytes).toBeGreaterThan(0)
    expect(report.database.searchIndexBytes).toBeGreaterThan(0)
    expect(report.schema).toEqual(expect.arrayContaining([{ owner: 'store', version: expect.any(Number) }]))
    expect(report.counts.conversations).toBe(2)
    expect(report.counts.messages).toEqual({ total: 6, user: 3, assistant: 3, withVectors: 0 })
    expect(report.counts.memories).toEqual({
      current: 5,
      superseded: 1,
      byScope: { global: 1, session: 1, workspace: 3 },
      byKind: { episode: 1, fact: 2, instruction: 1, preference: 1 },
    })
    expect(report.counts.scenes).toEqual({ total: 1, byScope: { workspace: 1 } })
    expect(report.counts.persona).toEqual({ total: 1, byScope: { global: 1 } })
    expect(report.counts.workspaces).toEqual([
      { workspace: fixture.shop, conversations: 1, messages: 4, memories: 3 },
      { workspace: fixture.blog, conversations: 1, messages: 2, memories: 1 },
    ])
    expect(report.distill).toMatchObject({
      lastRunAt: fixture.lastRunAt,
      pending: { conversations: 1, messages: 2 },
      failing: [{ conversationId: fixture.conversations.blog, attempts: 2, lastError: 'model call failed: HTTP 500' }],
      error: null,
    })
    expect(report.cost.total).toEqual({ calls: 3, failures: 1, inputTokens: 2400, outputTokens: 550, cacheReadTokens: 300 })
    expect(report.cost.rows).toHaveLength(2)
  })

  it('shows a conversation that distillation gave up on, and that a new message retries it', async () => {
    const { dir, cleanup } = scratch('gave-up')
    try {
      const store = openMemoryStore({ path: join(dir, 'memory.db') })
      await store.conversations.ensure({ id: 'stuck', workspace: '/w' })
      await store.messages.append({ conversationId: 'stuck', hostMessageId: 'h1', role: 'user', text: 'hello' })
      const state = new DistillStateRepository(store)
      const gaveUpAt = Date.UTC(2026, 0, 2, 3, 4, 5)
      await state.putConversation({ ...(await state.conversation('stuck')), attempts: 10, gaveUpAt, lastError: 'transcript unreadable' })
      await store.close()
      const json = JSON.parse((await cli(['status', '--data-dir', dir, '--json'])).stdout)
      expect(json.distill.failing).toEqual([{ conversationId: 'stuck', attempts: 10, notBefore: 0, gaveUpAt, lastError: 'transcript unreadable' }])
      const text = (await cli(['status', '--data-dir', dir])).stdout
      expect(text).toContain('gave up on stuck after 10 failed attempts (2026-01-02 03:04:05 UTC; a new message retries): transcript unreadable')
    } finally {
      cleanup()
    }
  })

  it('prints the same as text', async () => {
    const result = await cli(['status', ...dd()])
    expect(result.code).toBe(0)
    expect(result.stdout).toContain(`data dir  ${fixture.dataDir}`)
    expect(result.stdout).toContain('L0 conversations 2, messages 6 (user 3, assistant 3)')
    expect(result.stdout).toContain('L1 memories 5 current (global 1, session 1, workspace 3; episode 1, fact 2, instruction 1, preference 1), 1 superseded')
    expect(result.stdout).toContain('L2 scenes 1 (workspace 1)')
    expect(result.stdout).toContain('L3 persona documents 1 (global 1)')
    expect(result.stdout).toContain(`last run ${new Date(fixture.lastRunAt).toISOString().replace('T', ' ').slice(0, 19)} UTC`)
    expect(result.stdout).toContain('pending 1 conversations, 2 undistilled messages')
    expect(result.stdout).toMatch(/retrying session-[0-9a-f-]+ after 2 failed attempts .*HTTP 500/)
    expect(result.stdout).toMatch(/deepseek-official\/deepseek-v4-flash\s+l1\s+2 calls\s+2,000 in\s+500 out\s+200 cached, 1 failed/)
    expect(result.stdout).toMatch(/total\s+3 calls\s+2,400 in\s+550 out\s+300 cached/)
  })

  it('never writes: the database file is unchanged by a status run', async () => {
    const path = join(fixture.dataDir, 'memory.db')
    const before = readFileSync(path)
    expect((await cli(['status', ...dd()])).code).toBe(0)
    expect(readFileSync(path).equals(before)).toBe(true)
  })
})

describe('search', () => {
  it('finds memories and messages, Chinese and Japanese included', async () => {
    const zh = JSON.parse((await cli(['search', '数据库', ...dd(), '--json'])).stdout)
    expect(zh.memories.map((hit: { memory: { id: string } }) => hit.memory.id)).toEqual([fixture.memories.database])
    expect(zh.messages.map((hit: { message: { id: string } }) => hit.message.id)).toContain(fixture.messages.zh)
    const ja = JSON.parse((await cli(['search', 'デプロイ', ...dd(), '--json'])).stdout)
    expect(ja.messages.map((hit: { message: { id: string } }) => hit.message.id)).toEqual([fixture.messages.ja])
    const mixed = JSON.parse((await cli(['search', 'Cloudflare ホスト', ...dd(), '--json', '--in', 'memories'])).stdout)
    expect(mixed.memories[0].memory.id).toBe(fixture.memories.blogHost)
    expect(mixed.messages).toEqual([])
  })

  it('filters by scope, kind, workspace and role; hides superseded versions unless asked', async () => {
    const json = async (...args: string[]) => JSON.parse((await cli(['search', ...args, ...dd(), '--json'])).stdout)
    expect((await json('Helix editor', '--scope', 'global')).memories.map((hit: { memory: { id: string } }) => hit.memory.id)).toEqual([fixture.memories.editor])
    expect((await json('Helix editor', '--scope', 'workspace')).memories).toEqual([])
    expect((await json('deploy shop', '--kind', 'instruction', '--in', 'memories')).memories.map((hit: { memory: { id: string } }) => hit.memory.id)).toEqual([fixture.memories.deployDay])
    expect(
      (await json('deploy shop', '--kind', 'instruction', '--in', 'memories', '--include-superseded')).memories.map((hit: { memory: { id: string } }) => hit.memory.id).sort(),
    ).toEqual([fixture.memories.deployDay, fixture.memories.deployDayOld].sort())
    expect((await json('PostgreSQL', '--in', 'messages', '--workspace', fixture.blog)).messages).toEqual([])
    const roles = (await json('PostgreSQL', '--in', 'messages', '--role', 'assistant')).messages.map((hit: { message: { role: string } }) => hit.message.role)
    expect(roles.length).toBeGreaterThan(0)
    expect(new Set(roles)).toEqual(new Set(['assistant']))
  })

  it('says what a misspelt query may have meant when it finds little, in English, Chinese and Japanese', async () => {
    const json = async (...args: string[]) => JSON.parse((await cli(['search', ...args, ...dd(), '--json'])).stdout)
    const english = await json('postgress')
    expect([english.memories, english.suggestions[0]]).toEqual([[], 'postgresql'])
    expect((await json('Helx editor', '--in', 'memories')).suggestions[0]).toBe('helix editor')
    expect((await json('主数剧库', '--in', 'memories')).suggestions[0]).toBe('主数据库')
    expect((await json('クラウドフレア Cloudflair', '--in', 'memories')).suggestions).toContain('クラウドフレア cloudflare')
    // The vocabulary is the filtered memories': another workspace's words are not suggested.
    expect((await json('Cloudflair', '--workspace', fixture.shop)).suggestions).toEqual([])
    const text = await cli(['search', 'postgress', ...dd()])
    expect(text.stdout).toMatch(/\ndid you mean: "postgresql"(, "[^"]+")*\n$/)
  })

  it('suggests nothing when the results are good or every word is known', async () => {
    const found = JSON.parse((await cli(['search', '数据库', ...dd(), '--json'])).stdout)
    expect(found.memories.length + found.messages.length).toBeGreaterThanOrEqual(3)
    expect(found.suggestions).toEqual([])
    expect(JSON.parse((await cli(['search', 'Helix', ...dd(), '--json', '--in', 'memories'])).stdout).suggestions).toEqual([])
    expect((await cli(['search', 'Helix', ...dd()])).stdout).not.toContain('did you mean')
  })

  it('prints ranked hits as text', async () => {
    const result = await cli(['search', '主数据库', ...dd()])
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/^memories \(1\)\n\s+\d+\.\d\d {2}\S+ {2}fact\/workspace \/work\/shop-api {2}by \S+\n\s+主数据库使用 PostgreSQL（不是 MySQL）。\nmessages \(\d+\)/)
  })
})

describe('show', () => {
  it('shows a memory with its history and the messages it was distilled from', async () => {
    const text = await cli(['show', fixture.memories.deployDay, ...dd()])
    expect(text.code).toBe(0)
    expect(text.stdout).toContain(`memory ${fixture.memories.deployDay}  instruction/workspace  workspace ${fixture.shop}`)
    expect(text.stdout).toContain('Deploy the shop API on Tuesdays only.')
    expect(text.stdout).toMatch(/history \(oldest first\)\n.*Deploy the shop API on Mondays\.\n.*Deploy the shop API on Tuesdays only\./)
    const json = JSON.parse((await cli(['show', fixture.memories.database, ...dd(), '--json'])).stdout)
    expect(json.type).toBe('memory')
    expect(json.sources.map((message: { id: string }) => message.id)).toEqual([fixture.messages.zh])
  })

  it('shows a message, a conversation and a scene', async () => {
    const message = JSON.parse((await cli(['show', fixture.messages.ja, ...dd(), '--json'])).stdout)
    expect(message).toMatchObject({ type: 'message', message: { role: 'user' }, conversation: { workspace: fixture.blog } })
    const conversation = await cli(['show', fixture.conversations.shop, ...dd()])
    expect(conversation.stdout).toContain(`conversation ${fixture.conversations.shop}  "Shop API database"  workspace ${fixture.shop}`)
    expect(conversation.stdout.match(/\[turn \d\] (user|assistant)/g)).toHaveLength(4)
    const scene = await cli(['show', fixture.scene, ...dd()])
    expect(scene.stdout).toContain('scene')
    expect(scene.stdout).toContain('Shop API infrastructure')
    expect(scene.stdout).toContain('Deploy the shop API on Tuesdays only.')
  })

  it('exits 3 for an unknown id', async () => {
    const result = await cli(['show', 'no-such-id', ...dd()])
    expect(result.code).toBe(3)
    expect(result.stderr).toBe('error: no memory, message, conversation or scene with id no-such-id\n')
  })
})

describe('export', () => {
  it('writes the versioned JSONL export, which a fresh data dir imports back to the same counts', async () => {
    const out = join(temp.dir, 'export.jsonl')
    const result = await cli(['export', ...dd(), '--out', out])
    expect(result.code).toBe(0)
    const lines = readFileSync(out, 'utf8').trim().split('\n')
    expect(JSON.parse(lines[0]!)).toMatchObject({ type: 'header', format: 'dsh-memory-export', version: 1 })
    expect(lines.map((line) => JSON.parse(line).type).filter((type) => type !== 'header').sort()).toEqual(
      [...Array(2).fill('conversation'), ...Array(6).fill('message'), ...Array(6).fill('memory'), 'scene', 'persona'].sort(),
    )
    // Plain progress lines on a pipe.
    expect(result.stderr).toMatch(/^export jsonl: 0\/17\n(.|\n)*export jsonl: 17\/17\n$/)

    const copy = join(temp.dir, 'copy')
    const imported = await cli(['import', out, '--data-dir', copy, '--json'])
    expect(imported.code).toBe(0)
    expect(JSON.parse(imported.stdout)).toMatchObject({ format: 'jsonl', inserted: { conversations: 2, messages: 6, memories: 6, scenes: 1, persona: 1 } })
    const again = JSON.parse((await cli(['import', out, '--data-dir', copy, '--json'])).stdout)
    expect(again.inserted).toEqual({ conversations: 0, messages: 0, memories: 0, scenes: 0, persona: 0 })
    expect(again.skipped).toEqual({ conversations: 2, messages: 6, memories: 6, scenes: 1, persona: 1 })
    const status = JSON.parse((await cli(['status', '--data-dir', copy, '--json'])).stdout)
    expect(status.counts.memories.current).toBe(5)
    expect(status.counts.messages.total).toBe(6)
  })

  it('writes JSONL to stdout when no --out is given', async () => {
    const result = await cli(['export', ...dd(), '--quiet'])
    expect(result.code).toBe(0)
    expect(result.stderr).toBe('')
    expect(result.stdout.trim().split('\n')).toHaveLength(17)
  })

  it('writes Markdown for reading: persona, memories by scope, scenes, and conversations on request', async () => {
    const result = await cli(['export', ...dd(), '--format', 'markdown', '--messages', '--quiet'])
    expect(result.code).toBe(0)
    const md = result.stdout
    expect(md).toMatch(/^# dsh-memory export\n/)
    expect(md).toContain('## Persona (L3)')
    expect(md).toContain('A TypeScript developer who writes in English and Chinese.')
    expect(md).toContain('## Memories (L1): 5')
    expect(md.indexOf('### Global')).toBeLessThan(md.indexOf(`### Workspace \`${fixture.shop}\``))
    expect(md).toContain('- **fact**')
    expect(md).toContain('主数据库使用 PostgreSQL（不是 MySQL）。')
    expect(md).not.toContain('Deploy the shop API on Mondays.')
    expect(md).toContain('## Scenes (L2): 1')
    expect(md).toContain('### Shop API infrastructure')
    expect(md).toContain('## Conversations (L0)')
    expect(md).toContain('- **user** (turn 1): ブログは Astro で作って、Cloudflare Pages にデプロイしています。')
  })
})

describe('forget', () => {
  it('deletes a memory with its older versions, then a message; both are gone from search and show', async () => {
    const copy = scratch('forget')
    try {
      const own = await buildFixture(join(copy.dir, 'memory'))
      const args = ['--data-dir', own.dataDir]
      const memory = await cli(['forget', own.memories.deployDay, ...args])
      expect(memory.code).toBe(0)
      expect(memory.stdout).toBe(`forgot memory ${own.memories.deployDay} and 1 older version\n`)
      expect((await cli(['show', own.memories.deployDayOld, ...args])).code).toBe(3)
      expect(JSON.parse((await cli(['search', 'deploy shop', ...args, '--json', '--include-superseded', '--in', 'memories'])).stdout).memories).toEqual([])
      const message = JSON.parse((await cli(['forget', own.messages.ja, ...args, '--json'])).stdout)
      expect(message).toEqual({ type: 'message', id: own.messages.ja, deleted: 1 })
      expect(JSON.parse((await cli(['search', 'デプロイ', ...args, '--json'])).stdout).messages).toEqual([])
      const conversation = await cli(['forget', own.conversations.shop, ...args])
      expect(conversation.stdout).toBe(`forgot conversation ${own.conversations.shop} and its 4 messages\n`)
      expect((await cli(['forget', 'no-such-id', ...args])).code).toBe(3)
      // Audited, without content.
      const store = openMemoryStore({ path: join(own.dataDir, 'memory.db'), readonly: true })
      try {
        const audit = await store.audit.list({ actor: 'cli', limit: 100 })
        expect(audit.map((entry) => entry.op)).toEqual(expect.arrayContaining(['memory.delete', 'message.delete', 'conversation.delete']))
      } finally {
        await store.close()
      }
    } finally {
      copy.cleanup()
    }
  })
})

describe('the dsh-memory executable', () => {
  const bin = join(import.meta.dirname, '..', 'src', 'bin.ts')
  const run = (args: string[]) =>
    promisify(execFile)(process.execPath, [bin, ...args], { encoding: 'utf8' }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
    )

  it('searches CJK text and sets the process exit codes', async () => {
    const found = await run(['search', '数据库', '--data-dir', fixture.dataDir, '--json', '--in', 'memories'])
    expect(found.code).toBe(0)
    expect(JSON.parse(found.stdout).memories[0].memory.id).toBe(fixture.memories.database)
    const missing = await run(['show', 'no-such-id', '--data-dir', fixture.dataDir])
    expect(missing.code).toBe(3)
    const usage = await run(['search', 'x', '--in', 'everything', '--data-dir', fixture.dataDir])
    expect(usage.code).toBe(2)
    expect(usage.stderr).toMatch(/option '--in <what>' argument 'everything' is invalid/)
  })
})
