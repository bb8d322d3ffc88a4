/**
 * `dsh-memory import` keys what it writes for a folder (instructions, a cue bank's workspace
 * partition, the memory tree's binding) by the folder's workspace id, as the hosts key a session
 * there: in a git clone with a remote, its project id, right away (not at the next host start).
 * On a SQLite data dir and on PostgreSQL.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { openCueRepository } from '@dsh-memory/cue-bank'
import { type MemoryStore, openMemoryStore, openStore } from '@dsh-memory/store'
import { openMemoryTree } from '@dsh-memory/tree'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cli, scratch } from './helpers.ts'
import { CUE_BANK_FILE, MEMORY_TREE_ROOT } from './package-fixture.ts'
import { freshDatabase } from './pg-database.ts'

let temp: ReturnType<typeof scratch>
beforeAll(() => {
  temp = scratch('import-workspace')
})
afterAll(() => temp.cleanup())

const PROJECT_ID = 'git:github.com/acme/shop'

/** A git clone (its `.git/config` names a remote; the id is read from files, no git process) holding a CLAUDE.md. */
function cloneWithInstructions(name: string): string {
  const dir = join(temp.dir, name, 'shop')
  mkdirSync(join(dir, '.git'), { recursive: true })
  writeFileSync(join(dir, '.git', 'config'), '[core]\n\tbare = false\n[remote "origin"]\n\turl = https://ci:t0ken@github.com/acme/shop.git\n')
  writeFileSync(join(dir, 'CLAUDE.md'), '# Shop\n\n- 部署只在周二进行\n- Run `npm test` before every commit.\n')
  return dir
}

/** Where the import goes: the CLI flags, and how the test opens the same store. */
const targets = {
  sqlite: async (name: string) => {
    const dataDir = join(temp.dir, name, 'data')
    return { flags: ['--data-dir', dataDir], open: (): MemoryStore => openMemoryStore({ path: join(dataDir, 'memory.db') }), tree: { dataDir } }
  },
  postgres: async (name: string) => {
    const url = await freshDatabase(name)
    return { flags: ['--database-url', url], open: () => openStore({ databaseUrl: url }), tree: { databaseUrl: url } }
  },
}

describe.each(['sqlite', 'postgres'] as const)('import into a git clone\'s workspace on %s', (backend) => {
  it('writes instructions, the cue partition and the tree binding under the project id; search --workspace <dir> finds them at once', async () => {
    const clone = cloneWithInstructions(`ws-${backend}`)
    const target = await targets[backend](`ws_${backend}`)
    const instructions = await cli(['import', join(clone, 'CLAUDE.md'), ...target.flags, '--json', '--quiet'])
    expect(instructions.stderr).toBe('')
    expect(JSON.parse(instructions.stdout)).toMatchObject({ format: 'instructions', inserted: 2, files: [{ scope: 'workspace', workspace: PROJECT_ID, items: 2 }] })
    // The token in the remote URL reaches neither the report nor the id.
    expect(instructions.stdout).not.toContain('t0ken')

    const search = JSON.parse((await cli(['search', '周二 部署', '--workspace', clone, '--in', 'memories', ...target.flags, '--json'])).stdout)
    expect(search.memories.map((hit: { memory: { text: string; workspace: string } }) => [hit.memory.text, hit.memory.workspace])).toEqual([['Shop: 部署只在周二进行', PROJECT_ID]])

    const cueFile = join(temp.dir, `cues-${backend}.json`)
    writeFileSync(cueFile, JSON.stringify(CUE_BANK_FILE))
    const cues = await cli(['import', cueFile, '--workspace', clone, ...target.flags, '--json', '--quiet'])
    expect(JSON.parse(cues.stdout)).toMatchObject({ format: 'cue-bank', partition: `workspace:${PROJECT_ID}` })
    const byPartition = await cli(['import', cueFile, '--partition', `workspace:${clone}`, ...target.flags, '--json', '--quiet'])
    expect(JSON.parse(byPartition.stdout)).toMatchObject({ partition: `workspace:${PROJECT_ID}`, inserted: { topics: 0, idioms: 0 } })

    const tree = await cli(['import', MEMORY_TREE_ROOT, '--workspace', clone, ...target.flags, '--json', '--quiet'])
    expect(tree.stderr).toBe('')

    const store = await target.open()
    try {
      const memories = await store.memories.list({ workspace: PROJECT_ID, includeGlobal: false })
      expect(memories.map((memory) => memory.text).sort()).toEqual(['Shop: Run `npm test` before every commit.', 'Shop: 部署只在周二进行'])
      expect(await store.memories.list({ workspace: clone, includeGlobal: false })).toEqual([])
      const repository = await openCueRepository(store)
      try {
        expect(repository.listCues(undefined).map((cue) => cue.partition)).toEqual([`workspace:${PROJECT_ID}`])
      } finally {
        repository.close()
      }
    } finally {
      await store.close()
    }
    const opened = await openMemoryTree({ ...target.tree, projectionDir: null })
    try {
      // A session in the clone (the host keys it by the project id) gets the imported active project.
      expect((await opened.tree.status({ workspace: PROJECT_ID })).project?.name).toBe('订单服务')
      expect((await opened.tree.status({ workspace: clone })).project?.name).toBeUndefined()
    } finally {
      await opened.close()
    }
  })
})

describe('import --workspace-identity path', () => {
  it('keys the clone by its folder, as a store row with workspaceIdentity: path does', async () => {
    const clone = cloneWithInstructions('ws-path')
    const dataDir = join(temp.dir, 'ws-path', 'data')
    const result = await cli(['import', join(clone, 'CLAUDE.md'), '--data-dir', dataDir, '--workspace-identity', 'path', '--json', '--quiet'])
    expect(JSON.parse(result.stdout)).toMatchObject({ inserted: 2, files: [{ workspace: clone }] })
    const store = openMemoryStore({ path: join(dataDir, 'memory.db'), readonly: true })
    try {
      expect((await store.memories.list({ workspace: clone, includeGlobal: false })).length).toBe(2)
    } finally {
      await store.close()
    }
    const bad = await cli(['import', join(clone, 'CLAUDE.md'), '--data-dir', dataDir, '--workspace-identity', 'remote'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('--workspace-identity')
  })
})
