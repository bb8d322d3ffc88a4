import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { TreeChange } from '../src/core/tree-contract.js'
import { backends, type BackendTree, FakeClock, openBackendTree, tempDir } from './helpers.js'

const ws = '/work/orders-service'
const caller = { workspace: ws, sessionId: 'session-1', source: 'model' }

describe.each(backends)('memory tree core on a real database ($name)', (backend) => {
  let temp: ReturnType<typeof tempDir>
  let opened: BackendTree
  /** A second tree on the same database, as another process would open it. */
  const sameDatabase = (options: Parameters<typeof openBackendTree>[2] = {}) => openBackendTree(backend, temp.dir, options, opened)
  let clock: FakeClock
  let changes: TreeChange[]
  let errors: unknown[]

  beforeEach(async () => {
    temp = tempDir()
    clock = new FakeClock()
    changes = []
    errors = []
    opened = await openBackendTree(backend, temp.dir, { now: clock.now, onChange: (change) => changes.push(change), onError: (error) => errors.push(error) })
  })
  afterEach(async () => {
    await opened.close()
    temp.remove()
  })

  it('keeps chit-chat out of the mainline and records project messages there', async () => {
    const { tree } = opened
    const chat = await tree.recordMessage({ role: 'user', text: '你好!今天天气真好,周末去看电影吗?', caller })
    expect(chat).toMatchObject({ destination: 'chat', project: undefined })
    await tree.recordMessage({ role: 'assistant', text: '是啊,天气很好!', caller, follow: chat.destination })
    // No project exists yet: chit-chat never creates or touches one.
    expect(await tree.repository.listProjects()).toEqual([])

    const work = await tree.recordMessage({ role: 'user', text: 'The orders API must stay backwards compatible. Please fix the deploy bug in src/deploy.ts.', caller })
    expect(work.destination).toBe('mainline')
    expect(work.project?.name).toBe('orders-service')
    expect(work.extracted.map((item) => [item.kind, item.text, item.source])).toEqual([['constraint', 'The orders API must stay backwards compatible.', 'model']])
    await tree.recordMessage({ role: 'assistant', text: 'Fixed the deploy script.', caller, follow: work.destination })

    const chatRows = await tree.repository.listChat(ws, 10)
    expect(chatRows.map((row) => [row.role, row.text])).toEqual([
      ['user', '你好!今天天气真好,周末去看电影吗?'],
      ['assistant', '是啊,天气很好!'],
    ])
    // A later session sees the project turns and the constraint, never the chit-chat.
    const context = await tree.getContext({ workspace: ws, sessionId: 'session-2' }, { excludeSessionId: 'session-2' })
    expect(context.text).toContain('The orders API must stay backwards compatible.')
    expect(context.text).toContain('Fixed the deploy script.')
    expect(context.text).not.toMatch(/天气|电影/)
    // The current session's own turns are already in its conversation: not repeated.
    const own = await tree.getContext(caller, { excludeSessionId: 'session-1' })
    expect(own.text).not.toContain('Fixed the deploy script.')
    expect(own.text).toContain('backwards compatible')
  })

  it('routes unknown messages by unknownRoute and never records the same message twice', async () => {
    const { tree } = opened
    const first = await tree.recordMessage({ role: 'user', text: 'okay, go ahead', caller })
    expect(first).toMatchObject({ destination: 'mainline', duplicate: false })
    const again = await tree.recordMessage({ role: 'user', text: 'okay, go ahead', caller })
    expect(again.duplicate).toBe(true)
    expect((await tree.repository.turnWatermark(first.project!.id)).count).toBe(1)
    // An assistant reply without a routed user message is skipped.
    expect((await tree.recordMessage({ role: 'assistant', text: 'done', caller })).destination).toBe('skipped')

    const strict = await sameDatabase({ options: { unknownRoute: 'chat' } })
    try {
      expect((await strict.tree.recordMessage({ role: 'user', text: 'sounds reasonable', caller })).destination).toBe('chat')
    } finally {
      await strict.close()
    }
  })

  it('logs project messages of an open branch to the branch only, and merges its conclusions', async () => {
    const { tree } = opened
    await tree.recordMessage({ role: 'user', text: '我们决定订单服务只用 TypeScript 实现。', caller })
    const { branch, project } = await tree.openBranch({ title: '数据库选型', note: 'PostgreSQL or MySQL for orders?' }, caller)
    expect(project.currentBranchId).toBe(branch.id)
    const inBranch = await tree.recordMessage({ role: 'user', text: 'Compare the database options for the orders schema.', caller })
    expect(inBranch).toMatchObject({ destination: 'branch', branchId: branch.id, extracted: [] })
    await tree.recordMessage({ role: 'assistant', text: 'PostgreSQL handles the JSONB order payloads better; MySQL lacks partial indexes.', caller, follow: 'branch' })

    const during = await tree.getContext({ workspace: ws, sessionId: 'other' })
    expect(during.text).toContain('数据库选型')
    expect(during.text).not.toContain('JSONB')
    expect(during.text).not.toContain('Compare the database options')

    const merged = await tree.merge({ summary: 'Decision: use PostgreSQL 16 for the orders service\nConstraint: order payloads are stored as JSONB\nQuestion: when do we shard?' }, caller)
    expect(merged.heuristic).toBe(false)
    expect(merged.branch).toMatchObject({ id: branch.id, status: 'merged' })
    expect(merged.project.currentBranchId).toBeNull()
    expect(merged.added.map((item) => [item.kind, item.text, item.source])).toEqual([
      ['decision', 'use PostgreSQL 16 for the orders service', `merge:${branch.id}`],
      ['constraint', 'order payloads are stored as JSONB', `merge:${branch.id}`],
      ['question', 'when do we shard?', `merge:${branch.id}`],
    ])
    const after = await tree.getContext({ workspace: ws, sessionId: 'other' })
    expect(after.text).toContain('use PostgreSQL 16 for the orders service')
    expect(after.text).toContain('我们决定订单服务只用 TypeScript 实现')
    expect(after.text).not.toContain('MySQL lacks partial indexes')
    expect(after.text).not.toContain('Open branches')
    // The raw log is kept for review.
    const log = await tree.branchLog(branch.id, caller)
    expect(log.events.map((event) => event.kind)).toEqual(['opened', 'user', 'assistant', 'merged'])
    expect(log.branch.conclusion).toContain('decision: use PostgreSQL 16')
    // A new message goes to the mainline again.
    expect((await tree.recordMessage({ role: 'user', text: 'next: write the migration code', caller })).destination).toBe('mainline')
    expect(changes.filter((change) => change.type === 'merged')).toHaveLength(1)
  })

  it('extracts conclusions heuristically when no summary is given, skipping what the mainline already says', async () => {
    const { tree } = opened
    await tree.note({ kind: 'decision', text: 'We decided to adopt Drizzle.' }, caller)
    const { branch } = await tree.openBranch({ title: 'ORM comparison' }, caller)
    await tree.logToBranch({ branchId: branch.id, kind: 'assistant', text: 'Drizzle turned out 2x faster on inserts. We decided to adopt Drizzle.' }, caller)
    const merged = await tree.merge({ branchId: branch.id }, caller)
    expect(merged.heuristic).toBe(true)
    expect(merged.added.map((item) => [item.kind, item.text])).toEqual([['outcome', 'Drizzle turned out 2x faster on inserts.']])
    expect(merged.skipped.map((item) => item.text)).toEqual(['We decided to adopt Drizzle.'])
  })

  it('keeps long branch messages whole, so a conclusion at the end of a long reply is merged', async () => {
    const { tree } = opened
    const { branch } = await tree.openBranch({ title: 'profiling' }, caller)
    const long = `${'The flame graph shows many small allocations in the parser. '.repeat(40)}Conclusion: the JSON parser dominates CPU time.`
    await tree.recordMessage({ role: 'user', text: 'Profile the checkout service build for performance issues.', caller })
    await tree.recordMessage({ role: 'assistant', text: long, caller, follow: 'branch' })
    const merged = await tree.merge({ branchId: branch.id }, caller)
    expect(merged.added.map((item) => [item.kind, item.text])).toContainEqual(['outcome', 'the JSON parser dominates CPU time.'])
  })

  it('refuses to merge a branch twice and to merge without a branch', async () => {
    const { tree } = opened
    await expect(tree.merge({ summary: 'Decision: x' }, caller)).rejects.toMatchObject({ code: 'invalid-argument' })
    const { branch } = await tree.openBranch({ title: 'try caching' }, caller)
    await tree.merge({ branchId: branch.id, abandon: true }, caller)
    const closed = await tree.repository.getBranch(branch.id)
    expect(closed).toMatchObject({ status: 'abandoned', conclusion: 'Abandoned without conclusions.' })
    await expect(tree.merge({ branchId: branch.id, summary: 'Decision: cache' }, caller)).rejects.toMatchObject({ code: 'conflict' })
    await expect(tree.merge({ branchId: 'br-missing1' }, caller)).rejects.toMatchObject({ code: 'not-found' })
    expect(await tree.repository.listItems(closed!.projectId)).toEqual([])
  })

  it('checkpoints: freezes the mainline into the new baseline and clears the stage, open branches included', async () => {
    const { tree } = opened
    await tree.recordMessage({ role: 'user', text: 'Deploys must go through staging first.', caller })
    await tree.recordMessage({ role: 'assistant', text: 'Understood, staging first.', caller, follow: 'mainline' })
    const first = await tree.openBranch({ title: 'queue choice' }, caller)
    await tree.merge({ decisions: ['Use Redis streams for the order queue'] }, caller)
    const open = await tree.openBranch({ title: 'still exploring', checkout: false }, caller)
    clock.advance(60_000)

    const result = await tree.checkpoint({ title: 'Stage 1 review', review: 'Queue decided; staging rule in place.' }, caller)
    expect(result.checkpoint).toMatchObject({ title: 'Stage 1 review', stage: 1, review: 'Queue decided; staging rule in place.' })
    expect(result.project).toMatchObject({ stage: 2, baselineCheckpointId: result.checkpoint.id })
    // The open branch is closed unmerged first (checkpointBranches: 'close', the reference's behaviour).
    expect(result.clearedBranches).toBe(2)
    expect(result.clearedTurns).toBe(2)
    const doc = result.checkpoint.document
    expect(doc).toContain('# Checkpoint: Stage 1 review')
    expect(doc).toContain('Deploys must go through staging first.')
    expect(doc).toContain('Use Redis streams for the order queue')
    expect(doc).toContain(`\`${first.branch.id}\` "queue choice" — merged`)
    expect(doc).toContain(`\`${open.branch.id}\` "still exploring" — abandoned`)
    expect((await tree.repository.getBranch(open.branch.id))?.conclusion).toBe('Closed unmerged by checkpoint "Stage 1 review"; its log is kept.')
    expect(result.checkpoint.state.items.map((item) => item.kind).sort()).toEqual(['constraint', 'decision'])

    // The baseline and the state stay in context; the cleared turns do not.
    const context = await tree.getContext({ workspace: ws, sessionId: 'later' })
    expect(context.text).toContain('Baseline: checkpoint "Stage 1 review"')
    expect(context.text).toContain('Deploys must go through staging first.')
    expect(context.text).not.toContain('Understood, staging first.')
    // Every branch reference of the stage is cleared; the logs stay readable.
    expect((await tree.listBranches(caller)).branches).toEqual([])
    expect(result.project.currentBranchId).toBeNull()
    expect((await tree.listBranches(caller, { includeCleared: true })).branches).toHaveLength(2)
    // New items belong to stage 2.
    const next = await tree.note({ kind: 'outcome', text: 'Stage 2 started' }, caller)
    expect(next.item?.stage).toBe(2)

    // The document is projected as markdown next to the database.
    expect(result.path && existsSync(result.path)).toBe(true)
    expect(readFileSync(result.path!, 'utf8')).toBe(doc)
  })

  it('checkpoint retries from a fresh read when the mainline moves meanwhile (no stale document)', async () => {
    const { tree } = opened
    await tree.note({ kind: 'decision', text: 'First decision' }, caller)
    const second = await sameDatabase({ now: clock.now })
    try {
      // Slip a write in between the checkpoint's read and its write, from a second handle.
      const repository = tree.repository
      const original = repository.createCheckpoint.bind(repository)
      let raced = false
      repository.createCheckpoint = async (input) => {
        if (!raced) {
          raced = true
          await second.tree.note({ kind: 'decision', text: 'Sneaked-in decision' }, caller)
        }
        return original(input)
      }
      const result = await tree.checkpoint({ title: 'raced' }, caller)
      expect(result.checkpoint.document).toContain('Sneaked-in decision')
      expect(result.checkpoint.revision).toBe((await tree.repository.getProject(result.project.id))!.revision - 1)
    } finally {
      await second.close()
    }
  })

  it('keeps constraints in a small budget and says what it left out', async () => {
    const { tree } = opened
    for (let i = 0; i < 30; i++) await tree.note({ kind: 'outcome', text: `Outcome number ${i} with some descriptive text about benchmarks` }, caller)
    await tree.note({ kind: 'constraint', text: 'Never store card numbers' }, caller)
    const context = await tree.getContext(caller, { maxTokens: 200 })
    expect(context.text).toContain('Never store card numbers')
    expect(context.text).toContain('Outcome number 29')
    expect(context.text).not.toContain('Outcome number 0 ')
    expect(context.text).toMatch(/\(\d+ older outcomes not shown for length; mt_status lists them all\)/)
  })

  it('binds projects to workspaces: nearest ancestor, set_project, the workspace-less default', async () => {
    const { tree } = opened
    const { project } = await tree.setProject('Orders', caller)
    expect((await tree.resolveProject({ workspace: `${ws}/packages/api` }, { create: false }))?.id).toBe(project.id)
    // A different folder with the same base name is a different project.
    const other = await tree.resolveProject({ workspace: '/elsewhere/orders-service' }, { create: true })
    expect(other?.id).not.toBe(project.id)
    // MCP-style callers without a workspace share one active project.
    const none = await tree.resolveProject({}, { create: true })
    expect(none?.name).toBe('default')
    const switched = await tree.setProject('Research', {})
    expect((await tree.resolveProject({}, { create: false }))?.id).toBe(switched.project.id)
    // Rebinding a workspace moves it.
    await tree.setProject('Research', caller)
    expect((await tree.resolveProject(caller, { create: false }))?.name).toBe('Research')
  })

  it('orders and matches like SQLite: bindings by code point, names case- and width-insensitively, ties by insertion', async () => {
    const { tree } = opened
    const { repository } = tree
    // Upper case before lower case and '_' between them, as SQLite's BINARY order (never a locale's).
    const workspaces = ['/work/zeta', '/work/数据平台', '/work/Alpha', '/work/_tools', '/work/alpha', '/work/オーダー']
    for (const workspace of workspaces) await tree.setProject('订单服务 Orders', { workspace })
    const project = (await repository.findProject('订单服务 orders'))!
    expect(await repository.bindings(project.id)).toEqual([...workspaces].sort())
    expect((await repository.findProject('订单服务　ＯＲＤＥＲＳ'))?.id).toBe(project.id)
    // Three checkpoints in one clock tick list newest first; a CJK item text round-trips as written.
    const inAlpha = { workspace: '/work/alpha', sessionId: 's', source: 'model' }
    await tree.note({ kind: 'decision', text: '使用 PostgreSQL 共享团队记忆、日本語も同じ' }, inAlpha)
    for (const title of ['一', '二', '三']) await tree.checkpoint({ title }, inAlpha)
    expect((await repository.listCheckpoints(project.id)).map((checkpoint) => checkpoint.title)).toEqual(['三', '二', '一'])
    expect((await repository.listItems(project.id, { status: 'all' })).map((item) => item.text)).toEqual(['使用 PostgreSQL 共享团队记忆、日本語も同じ'])
  })

  it('redacts secrets, rejects empty input, and resolves items', async () => {
    const { tree } = opened
    const { item } = await tree.note({ kind: 'constraint', text: 'Deploy with token ghp_abcdefghijklmnopqrstuvwxyz0123456789 only from CI' }, caller)
    expect(item?.text).toContain('[REDACTED:github-token]')
    expect(item?.text).not.toContain('ghp_abc')
    await expect(tree.note({ kind: 'decision', text: '   ' }, caller)).rejects.toMatchObject({ code: 'invalid-argument', message: 'text must not be empty' })
    await expect(tree.note({ kind: 'wish' as never, text: 'x' }, caller)).rejects.toMatchObject({ code: 'invalid-argument' })
    const question = await tree.note({ kind: 'question', text: 'Which region?' }, caller)
    const resolved = await tree.setItemStatus({ itemId: question.item!.id, status: 'resolved' }, caller)
    expect(resolved.item.status).toBe('resolved')
    expect((await tree.getContext(caller)).text).not.toContain('Which region?')
    await expect(tree.setItemStatus({ itemId: question.item!.id, status: 'active', expectedRevision: 1 }, caller)).rejects.toMatchObject({ code: 'conflict' })
  })

  it('compresses the chat partition aggressively into a digest', async () => {
    const small = await sameDatabase({ now: clock.now, options: { chatKeep: 3 } })
    try {
      const messages = ['你好', '今天天气不错', '周末去看电影', 'thanks, have a nice weekend', 'こんにちは、いい天気ですね']
      for (const message of messages) {
        await small.tree.chat(message, caller)
        clock.advance(1_000)
      }
      const rows = await small.tree.repository.listChat(ws, 10)
      expect(rows[0]).toMatchObject({ kind: 'digest', count: 2 })
      expect(rows[0]!.text).toMatch(/^2 chit-chat message\(s\) from 2025-03-01 to 2025-03-01; topics: /)
      expect(rows[0]!.text).toContain('天气')
      expect(rows.slice(1).map((row) => row.text)).toEqual(messages.slice(2))
      expect(await small.tree.repository.listProjects()).toEqual([])
    } finally {
      await small.close()
    }
  })

  it('writes a rebuildable markdown projection', async () => {
    const { tree } = opened
    await tree.recordMessage({ role: 'user', text: 'Constraint: keep the public API stable', caller })
    const { branch } = await tree.openBranch({ title: 'API review' }, caller)
    await tree.merge({ outcomes: ['The v1 API has 12 endpoints'] }, caller)
    const project = (await tree.resolveProject(caller, { create: false }))!
    const dir = tree.projection!.projectDir(project)
    const mainline = readFileSync(join(dir, 'mainline.md'), 'utf8')
    expect(mainline).toContain(`at revision ${(await tree.repository.getProject(project.id))!.revision}`)
    expect(mainline).toContain('keep the public API stable')
    expect(mainline).toContain('The v1 API has 12 endpoints')
    expect(readFileSync(join(dir, 'branches', `${branch.id}.md`), 'utf8')).toContain('**merged**')
    // Delete and rebuild from the database.
    const { rmSync } = await import('node:fs')
    rmSync(dir, { recursive: true })
    const written = await tree.rebuildProjection()
    expect(written).toEqual([dir])
    expect(readdirSync(dir).sort()).toEqual(['branches', 'mainline.md'])
    expect(readFileSync(join(dir, 'mainline.md'), 'utf8')).toBe(mainline)
    expect(errors).toEqual([])
  })

  it('stores its tables through the store migration runner under owner "tree"', async () => {
    const store = await backend.reopen(opened.database, { readonly: true })
    const applied = (await store.meta.migrations()).filter((m) => m.owner === 'tree')
    expect(applied.map((m) => [m.version, m.name])).toEqual([[1, 'init']])
  })
})
