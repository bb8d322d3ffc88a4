import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { scopeOf } from '../src/core/host-agent.ts'
import { placeRecallMessage, RecallInjector } from '../src/core/injector.ts'
import { resolveRecallOptions } from '../src/core/options.ts'
import { RecallEngine } from '../src/core/recall-engine.ts'
import { RECALL_TOOLS } from '../src/core/tools.ts'
import { tempDirEachTest, tempStore, tempStoreEachTest } from './support/store.ts'

const AGENTS_MD = `# Project rules

- Run \`npm test\` before every commit.
- 提交前必须运行 lint。
- コミットメッセージは日本語で書く。

## Style

I prefer tabs over spaces.
`

describe('memory_import (rule files of the workspace → memories)', () => {
  const openStore = tempStoreEachTest()
  const makeRoot = tempDirEachTest('import-tool')
  let root: string | undefined

  const setup = () => {
    const handle = openStore()
    root = makeRoot()
    const workspace = join(root, 'project')
    mkdirSync(join(workspace, '.claude', 'rules'), { recursive: true })
    writeFileSync(join(workspace, 'AGENTS.md'), AGENTS_MD)
    writeFileSync(join(workspace, '.claude', 'rules', 'db.md'), '- Migrations run with sqitch.\n')
    writeFileSync(join(workspace, 'notes.txt'), 'not a rule file')
    writeFileSync(join(root, 'SECRET.md'), '- outside the workspace\n')
    const engine = new RecallEngine(handle.store, resolveRecallOptions())
    const importTool = RECALL_TOOLS.find((spec) => spec.name === 'memory_import')!
    const scope = { sessionId: 's1', workspace }
    return { engine, importTool, scope, workspace, store: handle.store }
  }

  it('in a git project, reads the files from the session directory and keys the memories by the project id', async () => {
    const { engine, importTool, workspace, store } = setup()
    // What the store service's workspaceOf gives a clone with a remote (a pure function of the cwd).
    const scope = scopeOf({ id: 's1', session: { header: { cwd: workspace } } }, (cwd) => (cwd === workspace ? 'git:example.com/team/project' : cwd))!
    expect(scope).toEqual({ sessionId: 's1', workspace: 'git:example.com/team/project', directory: workspace })
    const result = (await importTool.run(engine, scope, { path: 'AGENTS.md' })) as { inserted: number; memories: { id: string }[] }
    expect(result.inserted).toBe(4)
    expect((await store.memories.get(result.memories[0]!.id))?.workspace).toBe('git:example.com/team/project')
    expect(await store.memories.list({ scope: 'workspace', workspace, includeGlobal: false })).toEqual([])
  })

  it('imports each rule as a workspace memory (CJK included), tagged as imported; a second import adds nothing', async () => {
    const { engine, importTool, scope, workspace, store } = setup()
    const first = (await importTool.run(engine, scope, { path: 'AGENTS.md' })) as { inserted: number; skipped: number; memories: { id: string; kind: string; text: string }[] }
    expect(first.inserted).toBe(4)
    expect(first.memories.map((memory) => memory.text)).toEqual([
      'Project rules: Run `npm test` before every commit.',
      'Project rules: 提交前必须运行 lint。',
      'Project rules: コミットメッセージは日本語で書く。',
      'Style: I prefer tabs over spaces.',
    ])
    expect(first.memories.map((memory) => memory.kind)).toEqual(['instruction', 'instruction', 'instruction', 'preference'])
    const stored = await store.memories.get(first.memories[1]!.id)
    expect(stored).toMatchObject({ scope: 'workspace', workspace, priority: 3, flags: { source: 'import', rule: '提交前必须运行 lint。' } })
    expect(importTool.render(first as never)).toContain('Imported 4 memories from 1 file(s) (0 already stored, skipped).')

    const again = (await importTool.run(engine, scope, { path: join(workspace, 'AGENTS.md') })) as { inserted: number; skipped: number }
    expect(again).toMatchObject({ inserted: 0, skipped: 4 })
    // A folder imports its Markdown files; global scope goes to the global layer.
    const folder = (await importTool.run(engine, scope, { path: '.claude/rules', scope: 'global' })) as { inserted: number; memories: { scope: string }[] }
    expect(folder.inserted).toBe(1)
    expect(folder.memories[0]!.scope).toBe('global')
    expect(await store.memories.list({ workspace, includeGlobal: true })).toHaveLength(5)
  })

  it('a dry run lists what it would store and stores nothing', async () => {
    const { engine, importTool, scope, store } = setup()
    const dry = (await importTool.run(engine, scope, { path: 'AGENTS.md', dry_run: true })) as { inserted: number; dryRun: boolean }
    expect(dry).toMatchObject({ inserted: 4, dryRun: true })
    expect(importTool.render(dry as never)).toMatch(/^Dry run: 1 file\(s\) would give 4 new memories/)
    expect(await store.memories.list()).toEqual([])
  })

  it('refuses paths outside the workspace (also through a symlink), missing files and non-Markdown files, naming the argument', async () => {
    const { engine, importTool, scope, workspace, store } = setup()
    await expect(importTool.run(engine, scope, { path: '../SECRET.md' })).rejects.toMatchObject({ code: 'invalid-argument', path: 'path', message: expect.stringContaining('outside the workspace') })
    symlinkSync(join(root!, 'SECRET.md'), join(workspace, 'linked.md'))
    await expect(importTool.run(engine, scope, { path: 'linked.md' })).rejects.toMatchObject({ code: 'invalid-argument', path: 'path' })
    await expect(importTool.run(engine, scope, { path: 'MISSING.md' })).rejects.toMatchObject({ code: 'not-found', path: 'path' })
    await expect(importTool.run(engine, scope, { path: 'notes.txt' })).rejects.toMatchObject({ code: 'invalid-argument', path: 'path', message: expect.stringContaining('not a Markdown rule file') })
    await expect(importTool.run(engine, scope, { path: '' })).rejects.toMatchObject({ code: 'invalid-argument', path: 'path' })
    await expect(importTool.run(engine, { sessionId: 's', workspace: '' }, { path: 'AGENTS.md' })).rejects.toMatchObject({ code: 'invalid-argument', path: 'path' })
    expect(await store.memories.list()).toEqual([])
  })
})

describe('recall placement and miss codes', () => {
  const human = { role: 'user', source: { kind: 'user' }, content: [{ type: 'text', text: 'question' }] }
  const context = { role: 'user', source: { kind: 'plugin' }, content: [{ type: 'text', text: 'runtime context' }] }
  const recall = { role: 'user', source: { kind: 'plugin' }, content: [{ type: 'text', text: '<recalled-memories>' }] }

  it('before-user puts the block just before the human message; after-user appends it; no human message appends', () => {
    expect(placeRecallMessage([context, human], recall, 'before-user')).toEqual([context, recall, human])
    expect(placeRecallMessage([human, context], recall, 'before-user')).toEqual([recall, human, context])
    expect(placeRecallMessage([human, context], recall, 'after-user')).toEqual([human, context, recall])
    expect(placeRecallMessage([context], recall, 'before-user')).toEqual([context, recall])
  })

  it('a turn without a match reports the stable code memory.log writes', async () => {
    const handle = tempStore()
    try {
      const injector = new RecallInjector(new RecallEngine(handle.store, resolveRecallOptions()))
      const result = await injector.prepare({ sessionId: 's', workspace: '/w' }, [human], [])
      expect(result).toMatchObject({ skipped: 'no memory matched', miss: 'no-match', ms: expect.any(Number) })
    } finally {
      await handle.cleanup()
    }
  })
})
