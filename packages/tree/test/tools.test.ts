import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import type { OpenedMemoryTree } from '../src/core/open.js'
import { runTreeTool, TREE_HELP, TREE_TOOL_NAMES, TREE_TOOLS, toolParametersSchema } from '../src/core/tools.js'
import { FakeClock, openTestTree, tempDir } from './helpers.js'

const caller = { workspace: '/work/wiki', sessionId: 'tool-session', source: 'model' }

describe('mt_* tools (core)', () => {
  let temp: ReturnType<typeof tempDir>
  let opened: OpenedMemoryTree

  beforeEach(async () => {
    temp = tempDir('tree-tools')
    opened = await openTestTree(temp.dir, { now: new FakeClock().now })
  })
  afterEach(async () => {
    await opened.close()
    temp.remove()
  })

  const run = (name: string, args: unknown) => runTreeTool(opened.tree, name, args, caller)

  it('has the reference tool names, plus mt_note and mt_resolve', () => {
    expect(TREE_TOOL_NAMES).toEqual([
      'mt_help',
      'mt_status',
      'mt_set_project',
      'mt_route',
      'mt_branch',
      'mt_merge',
      'mt_checkpoint',
      'mt_get_context',
      'mt_chat',
      'mt_list_branches',
      'mt_note',
      'mt_resolve',
    ])
    for (const spec of TREE_TOOLS) {
      const schema = toolParametersSchema(spec)
      expect(schema.type).toBe('object')
      expect(JSON.parse(JSON.stringify(schema))).toEqual(schema)
    }
  })

  it('mt_help, mt_status and mt_set_project describe and switch the project', async () => {
    expect(await run('mt_help', {})).toMatchObject({ ok: true, text: TREE_HELP })
    const empty = await run('mt_status', {})
    expect(empty).toMatchObject({ ok: true, data: { project: null } })
    expect(empty.text).toContain('No project is bound to this workspace yet')
    const set = await run('mt_set_project', { name: 'Team Wiki' })
    expect(set).toMatchObject({ ok: true, data: { created: true, project: { name: 'Team Wiki' } } })
    await run('mt_note', { kind: 'constraint', text: 'Pages are written in Markdown only' })
    const status = await run('mt_status', {})
    expect(status.text).toContain('Project "Team Wiki"')
    expect(status.text).toContain('1 constraints')
    expect(status.text).toContain('Pages are written in Markdown only')
    expect(status.text).toMatch(/routing: \d+ chat \/ \d+ project keywords/)
  })

  it('mt_route classifies, records where it belongs and returns the context', async () => {
    const onlyClassify = await run('mt_route', { message: 'ありがとう!いい天気ですね', record: false })
    expect(onlyClassify).toMatchObject({ ok: true, data: { decision: { route: 'chat' }, recorded: false } })
    const chat = await run('mt_route', { message: 'ありがとう!いい天気ですね' })
    expect(chat).toMatchObject({ ok: true, data: { destination: 'chat', projectId: null } })
    expect(chat.text).toContain('the chat partition (not the mainline)')
    const work = await run('mt_route', { message: '検索機能の実装は必ず既存の API を使うこと。' })
    expect(work).toMatchObject({ ok: true, data: { destination: 'mainline', decision: { route: 'project' } } })
    expect(work.text).toContain('Recorded on the mainline:')
    expect(work.text).toContain('<memory-tree-mainline project="wiki"')
    expect(work.ok && (work.data.extracted as unknown[]).length).toBe(1)
    const twice = await run('mt_route', { message: '検索機能の実装は必ず既存の API を使うこと。' })
    expect(twice).toMatchObject({ ok: true, data: { duplicate: true } })
  })

  it('mt_branch, mt_list_branches, mt_merge, mt_get_context, mt_checkpoint', async () => {
    const opened1 = await run('mt_branch', { title: 'search engine', note: 'lunr or minisearch?' })
    const branchId = opened1.ok ? (opened1.data.branchId as string) : ''
    const listed = await run('mt_list_branches', {})
    expect(listed.text).toContain(`${branchId} "search engine" active (current)`)
    const log = await run('mt_list_branches', { branchId })
    expect(log.text).toContain('opened: lunr or minisearch?')
    const reentered = await run('mt_branch', { branchId })
    expect(reentered).toMatchObject({ ok: true, data: { branchId } })
    const merged = await run('mt_merge', { decisions: ['Use minisearch'], questions: ['Index size limit?'] })
    expect(merged).toMatchObject({ ok: true, data: { heuristic: false, branch: { status: 'merged' } } })
    const context = await run('mt_get_context', { maxRecent: 0 })
    expect(context.text).toContain('Use minisearch')
    expect(context.text).toContain('Index size limit?')
    const checkpoint = await run('mt_checkpoint', { title: 'MVP' })
    expect(checkpoint).toMatchObject({ ok: true, data: { title: 'MVP', stage: 1, clearedBranches: 1 } })
    expect(checkpoint.ok && checkpoint.data.document).toContain('Stage 1 closed with 0 constraints, 1 decisions, 0 outcomes and 1 open questions. Merged branches: "search engine".')
    const cleared = await run('mt_list_branches', { includeCleared: true, status: 'merged' })
    expect(cleared.text).toContain('· cleared')
  })

  it('mt_chat, mt_note and mt_resolve', async () => {
    const chat = await run('mt_chat', { message: '周末愉快!' })
    expect(chat).toMatchObject({ ok: true, data: { folded: 0, digest: null } })
    const note = await run('mt_note', { kind: 'question', text: 'Who reviews new pages?' })
    const itemId = note.ok ? ((note.data.item as { id: string }).id) : ''
    const again = await run('mt_note', { kind: 'question', text: 'who reviews new pages' })
    expect(again).toMatchObject({ ok: true, data: { item: null, duplicateOf: { id: itemId } } })
    expect(await run('mt_resolve', { itemId, status: 'resolved' })).toMatchObject({ ok: true, data: { item: { status: 'resolved' } } })
    expect(await run('mt_resolve', { itemId: 'it-unknown00', status: 'dropped' })).toMatchObject({ ok: false, error: { code: 'not-found' } })
  })

  it('never throws: unknown tools, bad arguments, closed storage', async () => {
    expect(await run('mt_fly', {})).toMatchObject({ ok: false, error: { code: 'not-found' } })
    expect(await run('mt_note', { kind: 'wish', text: 'x' })).toMatchObject({ ok: false, error: { code: 'invalid-argument', message: expect.stringContaining('kind') } })
    expect(await run('mt_route', null)).toMatchObject({ ok: false, error: { code: 'invalid-argument' } })
    expect(await run('mt_merge', { branchId: 42 })).toMatchObject({ ok: false, error: { code: 'invalid-argument', message: expect.stringContaining('branchId') } })
    await opened.tree.close()
    expect(await run('mt_status', {})).toMatchObject({ ok: false, error: { code: 'closed' } })
  })
})
