import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { openMemoryTree } from '@dsh-memory/tree'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { detectFormat } from '../src/import/sources.ts'
import { cli, scratch } from './helpers.ts'

// A root in the reference memory-tree plugin's on-disk layout (its README's "数据存储"), with
// Chinese and Japanese content: two projects, an archived and an open branch, a checkpoint, chat.
const FIXTURE = fileURLToPath(new URL('./fixtures/memory-tree-root', import.meta.url))

let temp: ReturnType<typeof scratch>
beforeAll(() => {
  temp = scratch('import-tree')
})
afterAll(() => temp.cleanup())

describe('import of a reference memory-tree root', () => {
  it('is detected as a memory-tree root', () => {
    expect(detectFormat(FIXTURE)).toBe('memory-tree')
  })

  it('brings in mainline state, turns, branches, checkpoints and chat; binds the active project; twice adds nothing', async () => {
    const dataDir = join(temp.dir, 'data')
    const workspace = join(temp.dir, 'work', 'orders')
    const result = await cli(['import', FIXTURE, '--data-dir', dataDir, '--workspace', workspace])
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    expect(result.stdout).toBe(
      [
        `imported memory-tree root ${FIXTURE} (active project "订单服务")`,
        '  "notes-app": 1 mainline items, 0 turns, 0 open + 0 archived branches, 0 checkpoints, 0 chat messages',
        '  "订单服务": 5 mainline items, 2 turns, 1 open + 1 archived branches, 1 checkpoints, 2 chat messages',
        '',
      ].join('\n'),
    )

    const opened = await openMemoryTree({ dataDir })
    try {
      const tree = opened.tree
      // The active project is what a session in the given workspace gets.
      const status = await tree.status({ workspace })
      expect(status.project?.name).toBe('订单服务')
      expect(status.items.map((item) => [item.kind, item.text, item.source])).toEqual([
        ['constraint', '订单金额一律用整数分存储,禁止浮点', 'import:memory-tree'],
        ['constraint', 'All order APIs must stay backward compatible', 'import:memory-tree'],
        ['decision', '数据库选用 PostgreSQL 16', 'import:memory-tree'],
        ['outcome', '下单接口 p99 延迟降到 120ms', 'import:memory-tree'],
        ['question', '決済サービスのタイムアウトは何秒にするか', 'import:memory-tree'],
      ])
      // The checkpoint is the baseline, its document kept verbatim; the state after it is stage 2.
      expect(status.baseline?.title).toBe('阶段1复盘')
      expect(status.baseline?.document).toBe(readFileSync(join(FIXTURE, '订单服务', 'checkpoints', 'cp-1763900000000-x1.md'), 'utf8').trim())
      expect(status.project?.stage).toBe(2)
      // The open branch stays open (not current: the reference has no current branch); the archived one is merged with its conclusion.
      expect(status.openBranches.map((branch) => branch.title)).toEqual(['試しに Redis キャッシュを入れる'])
      const { branches } = await tree.listBranches({ workspace }, { status: 'all' })
      const archived = branches.find((branch) => branch.title === '数据库选型调研')!
      expect(archived.status).toBe('merged')
      expect(archived.conclusion).toContain('决策:数据库选用 PostgreSQL 16')
      const log = await tree.branchLog(archived.id, { workspace })
      expect(log.events.map((event) => [event.kind, event.text])).toEqual([
        ['opened', 'Imported from memory-tree branch br-1764000000000-a1.'],
        ['user', '比较一下 PostgreSQL 和 MySQL 的 JSONB 支持'],
        ['assistant', 'PostgreSQL 的 JSONB 支持 GIN 索引,MySQL 的 JSON 类型不支持同等的索引。'],
        ['merged', expect.any(String)],
      ])
      // Recent mainline turns and the chat partition (of the bound workspace), never mixed.
      const context = await tree.getContext({ workspace })
      expect(context.text).toContain('继续优化下单接口的性能')
      expect(context.text).toContain('Baseline: checkpoint "阶段1复盘"')
      expect(context.text).not.toContain('天气')
      expect((await tree.repository.listChat(workspace, 10)).map((entry) => entry.text)).toEqual(['你好!今天天气真好', '你好!是的,天气很好。'])
      // The workspace-less project came in too.
      const notes = await tree.repository.findProject('notes-app')
      expect((await tree.repository.listItems(notes!.id)).map((item) => item.text)).toEqual(['Use SQLite for local notes'])
    } finally {
      await opened.close()
    }
    // The readable projection is written where the plugin writes it.
    expect(existsSync(join(dataDir, 'tree'))).toBe(true)

    const again = JSON.parse((await cli(['import', FIXTURE, '--data-dir', dataDir, '--json'])).stdout) as { format: string; projects: Array<{ name: string; alreadyImported: boolean }> }
    expect(again.format).toBe('memory-tree')
    expect(again.projects.map((project) => [project.name, project.alreadyImported])).toEqual([
      ['notes-app', true],
      ['订单服务', true],
    ])
    const reopened = await openMemoryTree({ dataDir })
    try {
      expect((await reopened.tree.status({ workspace })).items).toHaveLength(5)
    } finally {
      await reopened.close()
    }
  })

  it('refuses a root with a malformed state file, naming the file and the field, and writes nothing', async () => {
    const root = join(temp.dir, 'bad-root')
    cpSync(FIXTURE, root, { recursive: true })
    const stateFile = join(root, '订单服务', 'mainline.state.json')
    writeFileSync(stateFile, JSON.stringify({ constraints: ['好的约束', { note: 42 }] }))
    const dataDir = join(temp.dir, 'bad-data')
    const result = await cli(['import', root, '--data-dir', dataDir, '--format', 'memory-tree'])
    expect(result.code).not.toBe(0)
    expect(result.stderr).toContain(`${stateFile}: constraints[1] must be a string or an object with one of text, content, summary, title, message`)
    const opened = await openMemoryTree({ dataDir })
    try {
      expect(await opened.tree.repository.listProjects()).toEqual([])
    } finally {
      await opened.close()
    }
  })
})
