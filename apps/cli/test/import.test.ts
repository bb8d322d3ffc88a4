import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { openCueRepository } from '@dsh-memory/cue-bank'
import { ArchiveIndex, PalaceWorkspace, parseQuery, resolvePalaceOptions } from '@dsh-memory/palace'
import { openMemoryStore, type MemoryStore } from '@dsh-memory/store'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { classifyInstruction, splitInstructions } from '@dsh-memory/recall'
import { decodeProjectSlug, detectFormat, instructionTarget } from '../src/import/sources.ts'
import { cli, scratch } from './helpers.ts'
import { CUE_BANK_FILE, writePalace } from './package-fixture.ts'

let temp: ReturnType<typeof scratch>
beforeAll(() => {
  temp = scratch('import')
})
afterAll(() => temp.cleanup())

async function withStore<T>(dataDir: string, fn: (store: MemoryStore) => Promise<T>): Promise<T> {
  const store = openMemoryStore({ path: join(dataDir, 'memory.db'), readonly: true })
  try {
    return await fn(store)
  } finally {
    await store.close()
  }
}

const CLAUDE_MD = `# Shop API

<!-- internal note: keep this file short -->
@docs/architecture.md

This repo is the shop API, written in TypeScript.

## Commands
- Build: \`npm run build\`
- Test:
  \`\`\`sh
  npm test -- --project api
  \`\`\`

## Code style
- Formatting:
  - Use 2-space indentation
  - Prefer single quotes over double quotes
- Never commit directly to main
  (open a pull request instead)

## 部署
1. 部署只在周二进行
2. 我喜欢用 pnpm 而不是 npm
`

describe('instruction files → items', () => {
  it('splits a CLAUDE.md into one item per rule, keeping the heading, nested context and code', () => {
    expect(splitInstructions(CLAUDE_MD)).toEqual([
      { kind: 'instruction', text: 'Shop API: This repo is the shop API, written in TypeScript.', body: 'This repo is the shop API, written in TypeScript.', heading: 'Shop API' },
      { kind: 'instruction', text: 'Commands: Build: `npm run build`', body: 'Build: `npm run build`', heading: 'Commands' },
      { kind: 'instruction', text: 'Commands: Test:\n```sh\nnpm test -- --project api\n```', body: 'Test:\n```sh\nnpm test -- --project api\n```', heading: 'Commands' },
      { kind: 'instruction', text: 'Code style › Formatting: Use 2-space indentation', body: 'Use 2-space indentation', heading: 'Code style' },
      { kind: 'preference', text: 'Code style › Formatting: Prefer single quotes over double quotes', body: 'Prefer single quotes over double quotes', heading: 'Code style' },
      { kind: 'instruction', text: 'Code style: Never commit directly to main\n  (open a pull request instead)', body: 'Never commit directly to main\n  (open a pull request instead)', heading: 'Code style' },
      { kind: 'instruction', text: '部署: 部署只在周二进行', body: '部署只在周二进行', heading: '部署' },
      { kind: 'preference', text: '部署: 我喜欢用 pnpm 而不是 npm', body: '我喜欢用 pnpm 而不是 npm', heading: '部署' },
    ])
  })

  it('tells preferences from instructions in English, Chinese and Japanese', () => {
    const lines = ['I prefer tabs', '我更喜欢简短的回答', '短い回答が好きです', 'Always run the linter before committing', '提交前先运行测试']
    expect(lines.map((line) => classifyInstruction(line))).toEqual(['preference', 'preference', 'preference', 'instruction', 'instruction'])
  })

  it('places files: ~/.claude is global, a project file belongs to its folder, auto memory to the decoded project', () => {
    const home = join(temp.dir, 'home')
    const project = join(temp.dir, 'work', 'shop-api')
    mkdirSync(project, { recursive: true })
    expect(instructionTarget(join(home, '.claude', 'CLAUDE.md'), { home })).toMatchObject({ scope: 'global', workspace: null })
    expect(instructionTarget(join(home, '.claude', 'rules', 'style.md'), { home })).toMatchObject({ scope: 'global' })
    expect(instructionTarget(join(project, 'CLAUDE.md'), { home })).toMatchObject({ scope: 'workspace', workspace: project })
    expect(instructionTarget(join(project, '.claude', 'rules', 'testing.md'), { home })).toMatchObject({ scope: 'workspace', workspace: project })
    expect(instructionTarget(join(project, 'AGENTS.md'), { home, scope: 'global' })).toMatchObject({ scope: 'global', workspace: null })
    const slug = project.replace(/[^A-Za-z0-9]/g, '-')
    expect(decodeProjectSlug(slug)).toBe(project)
    expect(instructionTarget(join(home, '.claude', 'projects', slug, 'memory', 'feedback_tests.md'), { home })).toMatchObject({ scope: 'workspace', workspace: project, autoMemory: true })
    expect(instructionTarget(join(home, '.claude', 'projects', '-no-such-project', 'memory', 'x.md'), { home })).toMatchObject({ autoMemory: true, unresolvedSlug: '-no-such-project' })
  })
})

describe('import', () => {
  it('imports a project CLAUDE.md and AGENTS.md as workspace instruction and preference memories, once', async () => {
    const project = join(temp.dir, 'work', 'api')
    mkdirSync(project, { recursive: true })
    writeFileSync(join(project, 'CLAUDE.md'), CLAUDE_MD)
    writeFileSync(join(project, 'AGENTS.md'), '# Agents\n\n- Reply in English unless the user writes Chinese.\n- I like concise answers.\n- Never commit directly to main\n  (open a pull request instead)\n')
    const dataDir = join(temp.dir, 'claude-md')

    const dry = await cli(['import', join(project, 'CLAUDE.md'), '--data-dir', dataDir, '--dry-run', '--json'])
    expect(dry.code).toBe(0)
    expect(JSON.parse(dry.stdout)).toMatchObject({ format: 'instructions', dryRun: true, inserted: 8, skipped: 0 })
    await withStore(dataDir, async (store) => expect(await store.memories.list()).toEqual([]))

    const first = await cli(['import', join(project, 'CLAUDE.md'), '--data-dir', dataDir])
    expect(first.code).toBe(0)
    expect(first.stdout).toContain(`imported ${join(project, 'CLAUDE.md')}: 8 new memories, 0 already present`)
    expect(first.stdout).toContain(`  ${join(project, 'CLAUDE.md')}: 8 items → workspace ${project}`)
    const agents = JSON.parse((await cli(['import', join(project, 'AGENTS.md'), '--data-dir', dataDir, '--json'])).stdout)
    // The rule both files share is stored once.
    expect(agents).toMatchObject({ inserted: 2, skipped: 1 })
    const again = JSON.parse((await cli(['import', join(project, 'CLAUDE.md'), '--data-dir', dataDir, '--json'])).stdout)
    expect(again).toMatchObject({ inserted: 0, skipped: 8 })

    await withStore(dataDir, async (store) => {
      const memories = await store.memories.list({ workspace: project, includeGlobal: false })
      expect(memories).toHaveLength(10)
      expect(memories.every((memory) => memory.scope === 'workspace' && memory.workspace === project && memory.flags.source === 'import')).toBe(true)
      expect(memories.filter((memory) => memory.kind === 'preference').map((memory) => memory.text).sort()).toEqual(
        ['Agents: I like concise answers.', 'Code style › Formatting: Prefer single quotes over double quotes', '部署: 我喜欢用 pnpm 而不是 npm'].sort(),
      )
      // Searchable like any memory, CJK included.
      expect((await store.search.memories('周二 部署', { workspace: project }))[0]?.memory.text).toBe('部署: 部署只在周二进行')
    })
  })

  it('imports ~/.claude/CLAUDE.md as global memories and a Claude Code auto-memory folder by its typed files', async () => {
    const home = join(temp.dir, 'fake-home')
    const project = join(temp.dir, 'work', 'blog-site')
    mkdirSync(project, { recursive: true })
    mkdirSync(join(home, '.claude'), { recursive: true })
    writeFileSync(join(home, '.claude', 'CLAUDE.md'), '# Me\n\n- Always answer in British English.\n- I prefer Helix over Vim.\n')
    const memoryDir = join(home, '.claude', 'projects', project.replace(/[^A-Za-z0-9]/g, '-'), 'memory')
    mkdirSync(memoryDir, { recursive: true })
    writeFileSync(join(memoryDir, 'MEMORY.md'), '- [Testing](feedback_testing.md) — no mocked databases\n- [Role](user_role.md)\n- [Hosting](project_hosting.md)\n')
    writeFileSync(join(memoryDir, 'feedback_testing.md'), "---\nname: testing approach\ndescription: integration tests hit a real database\ntype: feedback\n---\nDon't mock the database in tests: a mocked test once hid a broken migration.\n")
    writeFileSync(join(memoryDir, 'user_role.md'), '---\nname: user role\ndescription: who the user is\ntype: user\n---\nA data engineer who is new to React.\n')
    writeFileSync(join(memoryDir, 'project_hosting.md'), '---\nname: hosting\ndescription: where the blog runs\ntype: project\n---\nThe blog is hosted on Cloudflare Pages; deploys go out on merge to main.\n')
    const dataDir = join(temp.dir, 'claude-home')
    const previousHome = process.env.HOME
    process.env.HOME = home
    try {
      const user = JSON.parse((await cli(['import', join(home, '.claude', 'CLAUDE.md'), '--data-dir', dataDir, '--json'])).stdout)
      expect(user).toMatchObject({ inserted: 2, files: [{ scope: 'global', workspace: null, items: 2 }] })
      const auto = await cli(['import', memoryDir, '--data-dir', dataDir, '--json'])
      expect(auto.code).toBe(0)
      expect(JSON.parse(auto.stdout)).toMatchObject({ format: 'instructions', inserted: 3, skipped: 0 })
      expect(JSON.parse((await cli(['import', memoryDir, '--data-dir', dataDir, '--json'])).stdout)).toMatchObject({ inserted: 0, skipped: 3 })
    } finally {
      process.env.HOME = previousHome
    }
    await withStore(dataDir, async (store) => {
      const global = await store.memories.list({ scope: 'global' })
      expect(global.map((memory) => [memory.kind, memory.text]).sort()).toEqual(
        [
          ['instruction', 'Me: Always answer in British English.'],
          ['preference', 'Me: I prefer Helix over Vim.'],
          ['preference', 'user role: A data engineer who is new to React.'],
        ].sort(),
      )
      const local = await store.memories.list({ workspace: project, includeGlobal: false })
      expect(local.map((memory) => [memory.kind, memory.text]).sort()).toEqual(
        [
          ['fact', 'hosting: The blog is hosted on Cloudflare Pages; deploys go out on merge to main.'],
          ['instruction', "testing approach: Don't mock the database in tests: a mocked test once hid a broken migration."],
        ].sort(),
      )
      expect(local.find((memory) => memory.kind === 'instruction')!.flags.claudeMemoryType).toBe('feedback')
    })
  })

  it('imports a cue-bank JSON file into the cue tables, idempotently', async () => {
    const file = join(temp.dir, 'cue-bank.json')
    writeFileSync(file, JSON.stringify(CUE_BANK_FILE))
    const dataDir = join(temp.dir, 'cues')
    const project = join(temp.dir, 'work', 'cue-project')
    const result = await cli(['import', file, '--data-dir', dataDir, '--workspace', project, '--json'])
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout)).toEqual({ format: 'cue-bank', path: file, partition: `workspace:${project}`, inserted: { topics: 1, idioms: 1 }, skipped: { topics: 0, idioms: 0 } })
    expect(JSON.parse((await cli(['import', file, '--data-dir', dataDir, '--workspace', project, '--json'])).stdout).skipped).toEqual({ topics: 1, idioms: 1 })
    const store = openMemoryStore({ path: join(dataDir, 'memory.db') })
    try {
      const repository = await openCueRepository(store)
      const cues = repository.listCues(undefined)
      repository.close()
      expect(cues.map((cue) => [cue.id, cue.partition])).toEqual([['topic-db', `workspace:${project}`]])
    } finally {
      await store.close()
    }
    // A broken file is bad input: exit 2, nothing written.
    writeFileSync(join(temp.dir, 'broken-cues.json'), JSON.stringify({ version: 1, topics: [{ id: 7 }] }))
    const broken = await cli(['import', join(temp.dir, 'broken-cues.json'), '--data-dir', dataDir])
    expect(broken.code).toBe(2)
    expect(broken.stderr).toMatch(/^error: .*broken-cues\.json is not a cue-bank file: .*topics\[0\]/)
  })

  it('indexes a memory-palace folder into the palace tables (not L0), so its turns are searchable, once', async () => {
    const workspace = join(temp.dir, 'work', 'palace-project')
    const { turns, sessionId } = await writePalace(workspace, 'Project Alpha', ['The launch codename is 蓝鲸-Orion.', 'Noted the codename.', 'The rollback window is 42 minutes.', 'Rollback window noted.'])
    const palace = new PalaceWorkspace(workspace, resolvePalaceOptions({}), { now: () => new Date() })

    const dataDir = join(temp.dir, 'palace-data')
    const result = await cli(['import', join(workspace, 'memory-palace'), '--data-dir', dataDir])
    expect(result.code).toBe(0)
    expect(result.stdout).toBe(`indexed memory palace ${join(workspace, 'memory-palace')} for workspace ${workspace}\n  "Project Alpha": 4 archived turns, 4 index rows added\n`)
    const again = JSON.parse((await cli(['import', workspace, '--format', 'palace', '--data-dir', dataDir, '--json'])).stdout)
    expect(again.namespaces).toEqual([{ namespace: 'Project Alpha', sessionId, turns: 4, inserted: 0 }])
    await withStore(dataDir, async (store) => {
      // Indexed in the palace's own tables, not as L0 conversations.
      expect(await store.conversations.list()).toEqual([])
      const archive = await palace.openArchive('Project Alpha')
      const candidates = await new ArchiveIndex(store).candidates(workspace, parseQuery('蓝鲸'), [{ namespace: 'Project Alpha', archive }])
      expect([...(candidates?.get('Project Alpha') ?? [])]).toEqual([turns[0]!.turn])
    })
  })

  it('detects formats, and refuses what it cannot read with exit 2', async () => {
    writeFileSync(join(temp.dir, 'notes.txt'), 'hello')
    expect(() => detectFormat(join(temp.dir, 'notes.txt'))).toThrow(/cannot tell the format of .*notes\.txt; pass --format jsonl\|instructions\|cue-bank\|palace/)
    const unknown = await cli(['import', join(temp.dir, 'notes.txt'), '--data-dir', join(temp.dir, 'x')])
    expect(unknown.code).toBe(2)
    const missing = await cli(['import', join(temp.dir, 'missing.jsonl'), '--data-dir', join(temp.dir, 'x')])
    expect(missing.code).toBe(2)
    expect(missing.stderr).toMatch(/cannot read .*missing\.jsonl: no such file or directory/)
    writeFileSync(join(temp.dir, 'other.jsonl'), '{"type":"header","format":"something-else","version":1}\n')
    const other = await cli(['import', join(temp.dir, 'other.jsonl'), '--data-dir', join(temp.dir, 'x')])
    expect(other.code).toBe(2)
    expect(other.stderr).toMatch(/is not a dsh-memory JSONL export/)
  })

  it('shows a progress bar on a terminal and plain lines otherwise', async () => {
    const project = join(temp.dir, 'work', 'progress')
    mkdirSync(project, { recursive: true })
    writeFileSync(join(project, 'CLAUDE.md'), Array.from({ length: 30 }, (_, index) => `- Rule number ${index}: keep it simple`).join('\n'))
    const plain = await cli(['import', join(project, 'CLAUDE.md'), '--data-dir', join(temp.dir, 'progress-plain')])
    expect(plain.stderr.split('\n').filter(Boolean)).toEqual(['import instructions: 0/30', 'import instructions: 3/30', ...Array.from({ length: 9 }, (_, index) => `import instructions: ${(index + 2) * 3}/30`)])
    const tty = await cli(['import', join(project, 'CLAUDE.md'), '--data-dir', join(temp.dir, 'progress-tty')], { tty: true })
    expect(tty.code).toBe(0)
    expect(tty.stderr).toContain('import instructions')
    expect(tty.stderr).toMatch(/\[[█░]+\] 30\/30/)
  })
})
