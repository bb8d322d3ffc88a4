/**
 * A team's memory on PostgreSQL: two real DSH hosts with two different DSH_HOMEs (two
 * machines, as far as the hosts can tell) whose store rows point at one database on the run's
 * throwaway cluster (`postgresDatabase` in helpers.ts). What host A is told, host B recalls;
 * with both hosts running at once each session gets a memory, and a layer snapshot, exactly
 * once; each host keeps only its local files.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { runProgram } from 'dsh-memory'
import { beforeAll, describe, expect, it } from 'vitest'
import { REPO_ROOT } from '../src/host.js'
import { lastUserText, type LoggedRequest, type ScriptedReply } from '../src/model-server.js'
import { expectBootRejects, type HostedProfile, postgresDatabase, type PostgresDatabase, useHostProfile } from './helpers.js'
import { distillLayer, distillReply, type ScriptedFact } from './support/distill-model.js'
import { driverOverlay, readReport, startHost, writeLayersDriver } from './support/layers-driver.js'
import { loggedUserMessages, RECALL_FENCE, recallTexts } from './support/recall-requests.js'

const PACKAGES = ['@dsh-memory/store', '@dsh-memory/capture', '@dsh-memory/distill', '@dsh-memory/recall']

/** What the scripted extractor "finds" in host A's session: team-wide (global) facts. */
const FACTS: ScriptedFact[] = [
  { match: 'heron', kind: 'fact', text: "The team's staging server is called heron.", scope: 'global' },
  { match: 'Kamal', kind: 'fact', text: 'The team deploys the staging server with Kamal.', scope: 'global' },
]
const KAMAL = FACTS[1]!.text
/** A project fact (workspace scope): shared by every clone of the project's git remote. */
const PROJECT_FACT: ScriptedFact = { match: 'vitest', kind: 'fact', text: 'The payments project runs its test suite with vitest.', scope: 'workspace' }
/** What the scripted extractor finds in Alice's session: one fact about the shared project, one about her. */
const TWO_USERS_FACTS: ScriptedFact[] = [
  { match: 'otter', kind: 'fact', text: 'The shop service is released by the otter pipeline.', scope: 'workspace' },
  { match: '抹茶', kind: 'preference', text: 'Alice drinks 抹茶 every morning before the stand-up.', scope: 'global' },
]
const ALICE = 'alice@team.example'
const BOB = 'bob@team.example'
const twoUsersTitle = "two users on one database: B's model request holds A's workspace fact (with A as its author), never A's global fact"

/** The two hosts above are one person on two machines: one user identity on both. */
const SAME_PERSON = 'dev@team.example'
const TOLD = 'Our staging server is called heron and we deploy it with Kamal. 我们决定使用 PostgreSQL 作为主数据库。'
/** How recall's layer index snapshots start (explicit layers). */
const INDEX = '<memory-layer-index'

const responder = (request: LoggedRequest): ScriptedReply => distillReply(request, [...FACTS, PROJECT_FACT, ...TWO_USERS_FACTS]) ?? { kind: 'text', text: `Noted: ${lastUserText(request.body).slice(0, 60)}` }

/** Real git, without the machine's own config: a bare "remote" and clones of it. */
function git(cwd: string, ...args: string[]): void {
  execFileSync('git', args, { cwd, stdio: 'ignore', env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' } })
}

describe('two DSH hosts sharing one PostgreSQL database', () => {
  let database: PostgresDatabase
  const a = useHostProfile('pg-host-a', { profile: 'team', packages: PACKAGES, responder })
  const b = useHostProfile('pg-host-b', { profile: 'team', packages: PACKAGES, responder })
  const workspace = (host: HostedProfile, name: string) => join(host.root, 'work', name)
  const run = (host: HostedProfile, name: string, prompt: string) =>
    host.home.run({ profile: 'team', cwd: workspace(host, name), modelUrl: host.server.url, patch: database.storeRows(PACKAGES, { user: SAME_PERSON }), args: [prompt] })
  const memoryTexts = () =>
    database.withStore(async (store) => (await store.memories.list({ scope: 'global', includeSuperseded: true })).map((memory) => memory.text).sort(), { user: SAME_PERSON })

  beforeAll(async () => {
    database = await postgresDatabase('two-hosts')
  })

  it('what host A is told, host B (another home, another workspace) recalls; the CLI on B\'s machine finds A\'s words; local files stay local', async () => {
    const told = await run(a, 'alpha', TOLD)
    expect(told.stderr).not.toMatch(/Error:/)
    expect(told.code).toBe(0)
    // Capture and distillation of host A wrote to the shared database.
    expect(await memoryTexts()).toEqual(FACTS.map((fact) => fact.text).sort())

    const before = b.server.requests.length
    const asked = await run(b, 'beta', 'Which tool do we use to deploy the staging server?')
    expect(asked.stderr).not.toMatch(/Error:/)
    expect(asked.code).toBe(0)
    const chats = b.server.requests.slice(before).filter((request) => request.purpose === 'chat' && !distillLayer(request))
    expect(chats).toHaveLength(1)
    const recalled = recallTexts(chats[0]!)
    expect(recalled).toHaveLength(1)
    expect(recalled[0]).toContain(KAMAL)

    // On B's machine the CLI reads the team's database through DSH_MEMORY_DATABASE_URL.
    const cli = await runProgram(process.execPath, [join(REPO_ROOT, 'apps/cli/dist/bin.js'), 'search', '数据库', '--in', 'messages', '--json'], {
      cwd: b.root,
      env: { ...b.home.env(), DSH_MEMORY_DATABASE_URL: database.databaseUrl, DSH_MEMORY_DIR: '' },
      timeoutMs: 60_000,
    })
    expect(cli.stderr).toBe('')
    expect(cli.code).toBe(0)
    const found = JSON.parse(cli.stdout) as { messages: { message: { role: string; text: string } }[] }
    expect(found.messages.filter((hit) => hit.message.role === 'user').map((hit) => hit.message.text)).toEqual([TOLD])

    for (const host of [a, b]) {
      const dataDir = join(host.home.dir, 'memory')
      // The stage log stays on each machine; there is no SQLite database beside it.
      expect(readFileSync(join(dataDir, 'memory.log'), 'utf8')).toMatch(/ capture stored /)
      expect(existsSync(join(dataDir, 'memory.db'))).toBe(false)
    }
    expect(readFileSync(join(b.home.dir, 'memory', 'memory.log'), 'utf8')).toMatch(/ recall hit /)
  })

  it('with both hosts running at once, each session gets a memory and a layer snapshot exactly once', async () => {
    const steps = [
      { say: 'How do we deploy the staging server?' },
      { say: 'Remind me: which tool deploys the staging server?' },
      { command: '/memory enable global' },
      { say: 'Thanks. Anything else about the staging server?' },
    ]
    const drive = async (host: HostedProfile, sessionId: string) => {
      const driver = await writeLayersDriver(join(host.root, 'plugins'))
      const reportFile = join(host.root, `report-${sessionId}.json`)
      const patch = database.storeRows(PACKAGES, { user: SAME_PERSON }) + driverOverlay(driver, { sessionId, resume: false, reportFile, steps })
      const running = await startHost(host.home, { profile: 'team', cwd: workspace(host, 'gamma'), modelUrl: host.server.url, name: sessionId, patch })
      return { result: await running.done, reportFile }
    }
    const sessions = [[a, 'pg-concurrent-a'], [b, 'pg-concurrent-b']] as const
    const runs = await Promise.all(sessions.map(([host, sessionId]) => drive(host, sessionId)))
    for (const { result, reportFile } of runs) {
      expect(result.stderr).not.toMatch(/Error:/)
      expect(result.code).toBe(0)
      expect((await readReport(reportFile)).error).toBeUndefined()
    }

    for (const [host, sessionId] of sessions) {
      const logged = await loggedUserMessages(join(host.home.dir, 'sessions'), { sessionId })
      expect(logged.filter((message) => message.source.kind === 'user')).toHaveLength(3)
      // Recalled once, at the first question: the second question of the session does not repeat it.
      expect(logged.filter((message) => message.text.startsWith(RECALL_FENCE) && message.text.includes(KAMAL))).toHaveLength(1)
      // The global layer's index snapshot landed once, listing the team's facts.
      const snapshots = logged.filter((message) => message.text.startsWith(INDEX))
      expect(snapshots).toHaveLength(1)
      expect(snapshots[0]!.text).toContain('Kamal')
    }
    await database.withStore(async (store) => {
      for (const [host, sessionId] of sessions) expect((await store.conversations.list({ workspace: workspace(host, 'gamma') })).map((conversation) => conversation.id)).toEqual([sessionId])
    })
    // Neither host distilled the team's facts a second time.
    expect(await memoryTexts()).toEqual(FACTS.map((fact) => fact.text).sort())
  })

  it(twoUsersTitle, async () => {
    await twoUsersOneDatabase(database, a, b)
  })

  it('refuses a store row with a bad databaseUrl at boot, naming the field and never printing the password', async () => {
    const rows = database.storeRows(PACKAGES).replaceAll(database.databaseUrl, 'mysql://team:hunter2-not-printed@db.internal/team')
    const output = await expectBootRejects(a, rows, [/memory-store: databaseUrl: must start with postgres:\/\//])
    expect(output).not.toContain('hunter2-not-printed')
  })

  it('two clones of one git remote at different paths, on two hosts, are one workspace: what A learns there reaches B; the CLI shows the project id', async () => {
    // The team's "remote": a bare repository (any URL normalizes the same way; a local one to its path).
    mkdirSync(join(a.root, 'remotes'), { recursive: true })
    git(join(a.root, 'remotes'), 'init', '-q', '--bare', 'payments.git')
    const project = `git:${join(a.root, 'remotes', 'payments')}`
    const cloneA = join(a.root, 'work', 'payments')
    const cloneB = join(b.root, 'src', 'checkout-of-payments')
    for (const clone of [cloneA, cloneB]) {
      mkdirSync(join(clone, '..'), { recursive: true })
      git(join(clone, '..'), 'clone', '-q', join(a.root, 'remotes', 'payments.git'), clone)
    }
    const inClone = (host: HostedProfile, cwd: string, prompt: string) =>
      host.home.run({ profile: 'team', cwd, modelUrl: host.server.url, patch: database.storeRows(PACKAGES), args: [prompt] })

    const told = await inClone(a, cloneA, 'In the payments project we run the test suite with vitest, never jest.')
    expect(told.stderr).not.toMatch(/Error:/)
    expect(told.code).toBe(0)
    await database.withStore(async (store) => {
      const learned = await store.memories.list({ scope: 'workspace', workspace: project, includeGlobal: false })
      expect(learned.map((memory) => memory.text)).toEqual([PROJECT_FACT.text])
      // Keyed by the project, never by A's path.
      expect(await store.memories.list({ scope: 'workspace', workspace: cloneA, includeGlobal: false })).toEqual([])
      expect((await store.conversations.list({ workspace: project })).length).toBe(1)
    })

    const before = b.server.requests.length
    const asked = await inClone(b, cloneB, 'Which test suite runner does the payments project use?')
    expect(asked.stderr).not.toMatch(/Error:/)
    expect(asked.code).toBe(0)
    const chats = b.server.requests.slice(before).filter((request) => request.purpose === 'chat' && !distillLayer(request))
    expect(chats).toHaveLength(1)
    expect(recallTexts(chats[0]!).join('\n')).toContain(PROJECT_FACT.text)

    // On B's machine, the CLI: `search --workspace <B's clone>` finds the project's memory under
    // its id, and `status` lists the project (both hosts' conversations) under that id.
    const cli = (args: string[]) =>
      runProgram(process.execPath, [join(REPO_ROOT, 'apps/cli/dist/bin.js'), ...args], {
        cwd: cloneB,
        env: { ...b.home.env(), DSH_MEMORY_DATABASE_URL: database.databaseUrl, DSH_MEMORY_DIR: '' },
        timeoutMs: 60_000,
      })
    const searched = await cli(['search', 'vitest', '--in', 'memories', '--workspace', cloneB, '--json'])
    expect(searched.stderr).toBe('')
    expect(searched.code).toBe(0)
    const hits = (JSON.parse(searched.stdout) as { memories: { memory: { text: string; workspace: string | null } }[] }).memories
    expect(hits.map((hit) => [hit.memory.text, hit.memory.workspace])).toEqual([[PROJECT_FACT.text, project]])
    const status = await cli(['status'])
    expect(status.code).toBe(0)
    const line = status.stdout.split('\n').find((text) => text.trim().startsWith(`${project}  `))
    expect(line).toMatch(/ 2 conversations,/)
    expect(status.stdout).not.toContain(cloneB)
  })
})

// Two people on one database: their workspace memories are the team's, their global ones their own.

async function twoUsersOneDatabase(database: PostgresDatabase, a: HostedProfile, b: HostedProfile): Promise<void> {
  const [team, personal] = TWO_USERS_FACTS as [ScriptedFact, ScriptedFact]
  // One project directory, used by both hosts: the same workspace whatever machine runs it.
  const project = join(a.root, 'work', 'shop')
  mkdirSync(project, { recursive: true })
  const run = (host: HostedProfile, user: string, prompt: string) =>
    host.home.run({ profile: 'team', cwd: project, modelUrl: host.server.url, patch: database.storeRows(PACKAGES, { user }), args: [prompt] })

  const told = await run(a, ALICE, 'The shop service ships through the otter pipeline. 我每天早上喝抹茶。')
  expect(told.stderr).not.toMatch(/Error:/)
  expect(told.code).toBe(0)
  await database.withStore(
    async (store) => {
      const mine = await store.memories.list({ workspace: project })
      expect(mine.filter((memory) => memory.text === team.text || memory.text === personal.text).map((memory) => [memory.text, memory.createdBy]).sort()).toEqual(
        [
          [team.text, ALICE],
          [personal.text, ALICE],
        ].sort(),
      )
    },
    { user: ALICE },
  )

  const before = b.server.requests.length
  const asked = await run(b, BOB, 'How is the shop service released, and what does Alice drink in the morning?')
  expect(asked.stderr).not.toMatch(/Error:/)
  expect(asked.code).toBe(0)
  const chats = b.server.requests.slice(before).filter((request) => request.purpose === 'chat' && !distillLayer(request))
  expect(chats).toHaveLength(1)
  const recalled = recallTexts(chats[0]!).join('\n')
  expect(recalled).toContain(team.text)
  // Nothing B's host sent the model (recall, layers, persona, tools) holds A's private fact.
  for (const request of b.server.requests.slice(before)) expect(JSON.stringify(request.body)).not.toContain('every morning before the stand-up')

  await database.withStore(
    async (store) => {
      const visible = await store.memories.list({ workspace: project })
      expect(visible.map((memory) => memory.text)).toContain(team.text)
      expect(visible.map((memory) => memory.text)).not.toContain(personal.text)
      expect(visible.find((memory) => memory.text === team.text)!.createdBy).toBe(ALICE)
    },
    { user: BOB },
  )
}
