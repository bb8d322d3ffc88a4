import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { openMemoryTree, TREE_GUIDE, TREE_TOOL_NAMES } from '@dsh-memory/tree'
import { Config } from '@dsh-memory/tree/plugin'
import { beforeAll, describe, expect, it } from 'vitest'
import { contentText, lastUserText, type ChatRequestBody, type LoggedRequest, type ScriptedReply } from '../src/model-server.js'
import { useHostProfile } from './helpers.js'

const CHIT_CHAT = '你好!今天天气真好,谢谢你昨天的帮助 😊'
const EXPLORE = "Let's explore which database to use for the orders service."
const LATER = 'Continue with the migration plan for the orders service.'
const DECISION = 'use PostgreSQL 16 for the orders service'
const BRANCH_NOTE = 'Compare PostgreSQL and MySQL for JSONB-heavy order payloads'

/** The system prompt and every message of a request, as one string. */
function everything(body: ChatRequestBody): string {
  return body.messages.map((message) => contentText(message.content)).join('\n')
}
function systemPrompt(body: ChatRequestBody): string {
  return contentText(body.messages.find((message) => message.role === 'system')?.content)
}
function lastToolResult(body: ChatRequestBody): string | undefined {
  const last = body.messages[body.messages.length - 1]
  return last?.role === 'tool' ? contentText(last.content) : undefined
}

// Issue #19, the 004 points seen in the real host: every mt_* tool called by the model with its
// effect in the database, a merge and a checkpoint visible on the very next request, a branch that
// opens by itself for a side question, and the MCP server loaded through DSH's own MCP client.
const ALL_TOOLS = 'Walk through every memory-tree tool for the orders service, please.'
const SIDE_QUESTION = 'By the way, how should we rotate the database credentials for the orders service?'
const VIA_MCP = 'Record through the memory-tree MCP server that order ids are UUIDv7.'
const ROUTED = '顺便问一下,订单数据库的 JSONB 索引怎么建?'
const WALK_DECISION = '订单扩展字段用 JSONB 存储'
const WALK_CONSTRAINT = '金额一律以整数分存储'
const QUESTION = '決済サービスのタイムアウトは何秒にするか'
const CHAT = '谢谢,今天辛苦了!'

function toolResults(body: ChatRequestBody): string[] {
  return body.messages.filter((message) => message.role === 'tool').map((message) => contentText(message.content))
}
function found(results: readonly string[], pattern: RegExp): string {
  for (const result of results) {
    const match = pattern.exec(result)
    if (match) return match[1]!
  }
  throw new Error(`no tool result matches ${pattern}`)
}

/** The twelve calls of the walk-through, each computed from the results so far (ids are read back). */
const WALK: Array<(results: readonly string[]) => { name: string; arguments: Record<string, unknown> }> = [
  () => ({ name: 'mt_help', arguments: {} }),
  () => ({ name: 'mt_set_project', arguments: { name: '订单服务' } }),
  () => ({ name: 'mt_route', arguments: { message: ROUTED } }),
  (r) => ({ name: 'mt_list_branches', arguments: { branchId: found(r, /→ branch (br-[0-9a-z]{8})/) } }),
  (r) => ({ name: 'mt_merge', arguments: { branchId: found(r, /→ branch (br-[0-9a-z]{8})/), summary: `Decision: ${WALK_DECISION}\nConstraint: ${WALK_CONSTRAINT}` } }),
  () => ({ name: 'mt_note', arguments: { kind: 'question', text: QUESTION } }),
  (r) => ({ name: 'mt_resolve', arguments: { itemId: found(r, /^Added \[(it-[0-9a-z]{8})\] question/m), status: 'resolved' } }),
  () => ({ name: 'mt_get_context', arguments: {} }),
  () => ({ name: 'mt_chat', arguments: { message: CHAT } }),
  () => ({ name: 'mt_branch', arguments: { title: '试试 Redis 缓存', note: 'Cache order lookups in Redis?' } }),
  () => ({ name: 'mt_checkpoint', arguments: { title: '阶段1复盘', review: '数据库方案已定。' } }),
  () => ({ name: 'mt_status', arguments: {} }),
]

/** The scripted model of the #19 tests: the walk-through, the MCP calls, the side question. */
function toolResponder(request: LoggedRequest, prompt: string): ScriptedReply | undefined {
  const results = toolResults(request.body)
  if (prompt === ALL_TOOLS) {
    const next = WALK[results.length]
    return next ? { kind: 'tools', calls: [next(results)] } : { kind: 'text', text: 'All memory-tree tools done.' }
  }
  if (prompt === VIA_MCP) {
    if (results.length === 0) return { kind: 'tools', calls: [{ name: 'mcp__memory-tree__mt_note', arguments: { kind: 'constraint', text: 'Order ids are UUIDv7' } }] }
    if (results.length === 1) return { kind: 'tools', calls: [{ name: 'mcp__memory-tree__mt_status', arguments: {} }] }
    return { kind: 'text', text: 'Recorded.' }
  }
  if (prompt === SIDE_QUESTION) return { kind: 'text', text: 'Rotate them monthly through the secrets manager.' }
  return undefined
}

/**
 * The scripted model: chit-chat gets a reply; the exploration prompt opens a branch with
 * mt_branch, merges it with mt_merge (passing the branchId it read from the tool result), then
 * answers; everything else gets a plain answer.
 */
function responder(request: LoggedRequest) {
  if (request.purpose !== 'chat') return undefined
  const scripted = toolResponder(request, lastUserText(request.body))
  if (scripted) return scripted
  const toolResult = lastToolResult(request.body)
  if (toolResult !== undefined) {
    const opened = /Opened branch (br-[0-9a-z]{8})/.exec(toolResult)
    if (opened) {
      return {
        kind: 'tools' as const,
        calls: [{ name: 'mt_merge', arguments: { branchId: opened[1], summary: `Decision: ${DECISION}\nConstraint: order payloads stay JSONB` } }],
      }
    }
    return { kind: 'text' as const, text: `Done: ${toolResult.split('\n')[0]}` }
  }
  const prompt = lastUserText(request.body)
  if (prompt === EXPLORE) return { kind: 'tools' as const, calls: [{ name: 'mt_branch', arguments: { title: '订单数据库选型', note: BRANCH_NOTE } }] }
  if (prompt === CHIT_CHAT) return { kind: 'text' as const, text: '不客气!天气确实很好。' }
  return { kind: 'text' as const, text: `Working on it: ${prompt.slice(0, 40)}` }
}

describe('memory tree in the real DSH host', () => {
  let workspace: string

  const hosted = useHostProfile('tree', { packages: ['@dsh-memory/store', '@dsh-memory/tree'], responder })

  beforeAll(async () => {
    workspace = join(hosted.root, 'work', 'orders-service')
    // Installed the way a user installs: `dsh plugin --profile tree add <tarballs>`.
    })

  it('branches and merges through model tool calls; a later run sees the decision in the mainline, not the chit-chat', async () => {
    const chat = await hosted.home.run({ profile: 'tree', cwd: workspace, modelUrl: hosted.server.url, args: [CHIT_CHAT] })
    expect(chat.stderr).not.toMatch(/Error:/)
    expect(chat.code).toBe(0)

    const before = hosted.server.requests.length
    const explore = await hosted.home.run({ profile: 'tree', cwd: workspace, modelUrl: hosted.server.url, args: [EXPLORE] })
    expect(explore.code).toBe(0)
    const exploreRequests = hosted.server.requests.slice(before).filter((request) => request.purpose === 'chat')
    // prompt → mt_branch, tool result → mt_merge, tool result → answer
    expect(exploreRequests).toHaveLength(3)
    expect(exploreRequests[0]!.body.tools?.map((tool) => tool.function.name)).toEqual(expect.arrayContaining(['mt_branch', 'mt_merge', 'mt_checkpoint', 'mt_status']))
    const branchResult = lastToolResult(exploreRequests[1]!.body)!
    expect(branchResult).toMatch(/^Opened branch br-[0-9a-z]{8} "订单数据库选型"/)
    const mergeResult = lastToolResult(exploreRequests[2]!.body)!
    expect(mergeResult).toContain(`decision: ${DECISION}`)
    expect(mergeResult).toContain('constraint: order payloads stay JSONB')

    const later = hosted.server.requests.length
    const next = await hosted.home.run({ profile: 'tree', cwd: workspace, modelUrl: hosted.server.url, args: [LATER] })
    expect(next.code).toBe(0)
    const request = hosted.server.requests.slice(later).find((r) => r.purpose === 'chat')!
    const system = systemPrompt(request.body)
    expect(system).toContain('<memory-tree-mainline project="orders-service"')
    expect(system).toContain(DECISION)
    expect(system).toContain('order payloads stay JSONB')
    // The exploration prompt is a mainline turn of an earlier session.
    expect(system).toContain(EXPLORE)
    // Chit-chat and the branch's raw log never reach the mainline context.
    expect(everything(request.body)).not.toMatch(/天气|谢谢你昨天/)
    expect(everything(request.body)).not.toContain(BRANCH_NOTE)

    // The data is where the user expects it, and the chat partition holds the chit-chat.
    const opened = await openMemoryTree({ dataDir: join(hosted.home.dir, 'memory') })
    try {
      const partition = await opened.tree.repository.listChat(workspace, 10)
      expect(partition.map((entry) => [entry.role, entry.text])).toEqual([
        ['user', CHIT_CHAT],
        ['assistant', '不客气!天气确实很好。'],
      ])
      const status = await opened.tree.status({ workspace })
      expect(status.project?.name).toBe('orders-service')
      expect(status.items.map((item) => [item.kind, item.text])).toEqual([
        ['decision', DECISION],
        ['constraint', 'order payloads stay JSONB'],
      ])
      expect(status.openBranches).toEqual([])
    } finally {
      await opened.close()
    }
  })

  it('the installed MCP server writes the same tree while the host runs; the next run sees it', async () => {
    // The binary exactly as installed into the profile, on the default data dir ($DSH_HOME/memory),
    // launched in the workspace like an editor agent would launch it.
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [join(hosted.profileDir, 'node_modules', '@dsh-memory', 'tree', 'dist', 'mcp.js')],
      env: { ...(process.env as Record<string, string>), DSH_HOME: hosted.home.dir },
      cwd: workspace,
      stderr: 'pipe',
    })
    const client = new Client({ name: 'e2e-agent', version: '1.0.0' })
    await client.connect(transport)
    try {
      // Both processes write at once: the host routes its prompt, the MCP client adds a constraint.
      const [run, note] = await Promise.all([
        hosted.home.run({ profile: 'tree', cwd: workspace, modelUrl: hosted.server.url, args: ['Please review the orders service schema design.'] }),
        client.callTool({ name: 'mt_note', arguments: { kind: 'constraint', text: 'Order ids are UUIDv7' } }),
      ])
      expect(run.code).toBe(0)
      expect(note.isError).toBe(false)
      const status = (await client.callTool({ name: 'mt_status', arguments: {} })) as { content: Array<{ text: string }> }
      expect(status.content[0]!.text).toContain('Project "orders-service"')
      expect(status.content[0]!.text).toContain('Order ids are UUIDv7')
    } finally {
      await client.close()
    }
    const later = hosted.server.requests.length
    const next = await hosted.home.run({ profile: 'tree', cwd: workspace, modelUrl: hosted.server.url, args: ['What is next for the orders service?'] })
    expect(next.code).toBe(0)
    const system = systemPrompt(hosted.server.requests.slice(later).find((r) => r.purpose === 'chat')!.body)
    expect(system).toContain('Order ids are UUIDv7')
    expect(system).toContain('Please review the orders service schema design.')
  })

  it('loads the bundle with its full default config and fails boot naming a broken field', async () => {
    const dump = await hosted.home.run({ profile: 'tree', cwd: workspace, modelUrl: hosted.server.url, args: ['--dump-config'] })
    expect(dump.code).toBe(0)
    // The composed tree has the store row and our row with every config field of the schema.
    expect(dump.stdout).toMatch(/- id: memory-tree-store\n\s+name: '@dsh-memory\/store\/plugin'/)
    const row = /- id: memory-tree\n\s+name: '@dsh-memory\/tree\/plugin'\n\s+config:\n([\s\S]*?)(?=\n- id: |$)/.exec(dump.stdout)?.[1] ?? ''
    const fields = Object.keys(Config({} as Config))
    expect(fields.length).toBeGreaterThan(15)
    for (const field of fields) expect(row).toMatch(new RegExp(`^    ${field}:`, 'm'))

    const broken = await hosted.home.run({
      profile: 'tree',
      cwd: workspace,
      modelUrl: hosted.server.url,
      patch: '- id: memory-tree\n  config:\n    recentTurns: many\n',
      args: ['hello'],
    })
    expect(broken.code).not.toBe(0)
    expect(broken.stdout + broken.stderr).toMatch(/recentTurns/)
  })

  async function chatRequests(workspace: string, prompt: string, patch?: string): Promise<LoggedRequest[]> {
    const before = hosted.server.requests.length
    const run = await hosted.home.run({ profile: 'tree', cwd: workspace, modelUrl: hosted.server.url, args: [prompt], ...(patch ? { patch } : {}) })
    expect(run.stderr).not.toMatch(/Error:/)
    expect(run.code).toBe(0)
    return hosted.server.requests.slice(before).filter((request) => request.purpose === 'chat')
  }

  it('the model calls every mt_* tool; each result and each effect is checked; merge and checkpoint show on the next request', async () => {
    const workspace = join(hosted.root, 'work', 'orders')
    const requests = await chatRequests(workspace, ALL_TOOLS)
    expect(requests).toHaveLength(WALK.length + 1)
    expect(WALK.map((step) => step([' → branch br-00000000', 'Added [it-00000000] question']).name).sort()).toEqual([...TREE_TOOL_NAMES].sort())
    // The result of call i is the last message of request i + 1.
    const result = (i: number) => toolResults(requests[i + 1]!.body)[i]!

    expect(result(0)).toContain('memory-tree: long-term project memory as a tree.')
    expect(result(1)).toMatch(/^Created project "订单服务" \(pj-[0-9a-z]{8}\)\. Its mainline is empty\./)
    // mt_route: a side question opens a branch by itself (point 1), and the message lands in its log.
    expect(result(2)).toMatch(/^route: \w+ \(score -?\d+\) → branch br-[0-9a-z]{8} "顺便问一下,订单数据库的 JSONB 索引怎么建\?", opened now for this side question or trial/)
    const branchId = found([result(2)], /→ branch (br-[0-9a-z]{8})/)
    expect(result(3)).toContain(`Branch ${branchId} "${ROUTED}" (active, stage 1)`)
    expect(result(3)).toContain(`- user: ${ROUTED}`)
    expect(systemPrompt(requests[3]!.body)).toContain(`(${branchId}, current)`)
    // mt_merge: the conclusions are on the mainline, and in the system prompt of the very next request (point 2).
    expect(result(4)).toContain(`Merged branch ${branchId}`)
    expect(result(4)).toMatch(new RegExp(`decision: ${WALK_DECISION}`))
    expect(systemPrompt(requests[4]!.body)).not.toContain(WALK_DECISION)
    expect(systemPrompt(requests[5]!.body)).toContain(WALK_DECISION)
    expect(systemPrompt(requests[5]!.body)).toContain(WALK_CONSTRAINT)
    expect(result(5)).toMatch(new RegExp(`^Added \\[it-[0-9a-z]{8}\\] question: ${QUESTION}`))
    expect(result(6)).toMatch(/^Item it-[0-9a-z]{8} is now resolved/)
    expect(result(7)).toContain('<memory-tree-mainline project="订单服务"')
    expect(result(7)).toContain(WALK_DECISION)
    expect(result(7)).not.toContain(QUESTION)
    expect(result(8)).toBe('Stored in the chat partition (not the mainline).')
    expect(result(9)).toMatch(/^Opened branch br-[0-9a-z]{8} "试试 Redis 缓存"/)
    const openId = found([result(9)], /^Opened branch (br-[0-9a-z]{8})/)
    // mt_checkpoint clears every branch reference of the stage, the open one included (point 3) ...
    expect(result(10)).toMatch(/^Checkpoint cp-[0-9a-z]{8} "阶段1复盘" froze stage 1 of "订单服务".*Cleared 2 branch reference\(s\)/)
    // ... and the next request's system prompt starts from the new baseline (point 2).
    expect(systemPrompt(requests[10]!.body)).not.toContain('Baseline: checkpoint "阶段1复盘"')
    expect(systemPrompt(requests[11]!.body)).toContain('Baseline: checkpoint "阶段1复盘"')
    expect(systemPrompt(requests[11]!.body)).not.toContain('试试 Redis 缓存')
    expect(result(11)).toContain('Project "订单服务"')
    expect(result(11)).toContain('stage 2')
    expect(result(11)).toContain('Open branches: none')
    // The guide tells the model when to branch, merge and checkpoint; the tools are all there.
    expect(systemPrompt(requests[0]!.body)).toContain(TREE_GUIDE.split('\n')[0]!)
    expect(requests[0]!.body.tools?.map((tool) => tool.function.name)).toEqual(expect.arrayContaining([...TREE_TOOL_NAMES]))

    const opened = await openMemoryTree({ dataDir: join(hosted.home.dir, 'memory') })
    try {
      const tree = opened.tree
      const status = await tree.status({ workspace })
      expect(status.project).toMatchObject({ name: '订单服务', stage: 2, currentBranchId: null })
      expect(status.items.map((item) => [item.kind, item.text, item.source])).toEqual([
        ['decision', WALK_DECISION, `merge:${branchId}`],
        ['constraint', WALK_CONSTRAINT, `merge:${branchId}`],
      ])
      const all = await tree.repository.listItems(status.project!.id, { status: 'all' })
      expect(all.find((item) => item.text === QUESTION)?.status).toBe('resolved')
      const branches = await tree.repository.listBranches(status.project!.id, { status: 'all', includeCleared: true })
      expect(branches.map((branch) => [branch.id, branch.status, branch.checkpointId !== null]).sort()).toEqual(
        [
          [branchId, 'merged', true],
          [openId, 'abandoned', true],
        ].sort(),
      )
      expect(status.baseline?.title).toBe('阶段1复盘')
      expect((await tree.repository.listChat(workspace, 10)).map((entry) => entry.text)).toEqual([CHAT])
    } finally {
      await opened.close()
    }
  })

  it('a side question opens a branch by itself; the first request already tells the model and the exchange is logged there', async () => {
    const workspace = join(hosted.root, 'work', 'orders-side')
    const requests = await chatRequests(workspace, SIDE_QUESTION)
    expect(requests).toHaveLength(1)
    const opened = await openMemoryTree({ dataDir: join(hosted.home.dir, 'memory') })
    try {
      const status = await opened.tree.status({ workspace })
      expect(status.currentBranch?.title).toBe(SIDE_QUESTION.slice(0, 59) + '…')
      // The request's system prompt was assembled before the message was routed: a sourced notice follows the message.
      const branchId = status.currentBranch!.id
      const notice = requests[0]!.body.messages.map((message) => contentText(message.content)).find((text) => text.startsWith(`<memory-tree-branch id="${branchId}">`))
      expect(notice).toContain(`mt_merge(branchId: "${branchId}"`)
      expect(lastUserText(requests[0]!.body)).toBe(SIDE_QUESTION)
      const log = await opened.tree.branchLog(status.currentBranch!.id, { workspace })
      expect(log.events.map((event) => [event.kind, event.text])).toEqual([
        ['opened', 'Opened automatically (side-question: "By the way").'],
        ['user', SIDE_QUESTION],
        ['assistant', 'Rotate them monthly through the secrets manager.'],
      ])
      // Nothing of it reached the mainline turn log.
      expect(status.turns).toBe(0)
    } finally {
      await opened.close()
    }
  })

  it("DSH's own MCP client loads dsh-memory-tree-mcp; the model calls mcp__memory-tree__mt_* and the effect is in the database", async () => {
    const workspace = join(hosted.root, 'work', 'orders-mcp')
    const dataDir = join(hosted.home.dir, 'memory')
    // The host's MCP client row (rc.8: one @deepseek-ai/dsh-mcp-client row per server), pointing at
    // the binary exactly as installed into the profile, with absolute paths as the reference advises.
    const patch = [
      '- insert:',
      '    - id: mcp-memory-tree',
      "      name: '@deepseek-ai/dsh-mcp-client'",
      '      config:',
      '        serverName: memory-tree',
      '        transport: stdio',
      `        command: ${JSON.stringify(process.execPath)}`,
      '        args:',
      `          - ${JSON.stringify(join(hosted.profileDir, 'node_modules', '@dsh-memory', 'tree', 'dist', 'mcp.js'))}`,
      `          - --data-dir`,
      `          - ${JSON.stringify(dataDir)}`,
      `          - --workspace`,
      `          - ${JSON.stringify(workspace)}`,
      '        failOnStartupError: true',
      '',
    ].join('\n')
    const requests = await chatRequests(workspace, VIA_MCP, patch)
    expect(requests).toHaveLength(3)
    const names = requests[0]!.body.tools?.map((tool) => tool.function.name) ?? []
    expect(names).toEqual(expect.arrayContaining(TREE_TOOL_NAMES.map((name) => `mcp__memory-tree__${name}`)))
    const [noted, status] = toolResults(requests[2]!.body)
    expect(noted).toMatch(/^Added \[it-[0-9a-z]{8}\] constraint: Order ids are UUIDv7/)
    expect(status).toContain('Project "orders-mcp"')
    expect(status).toContain('Order ids are UUIDv7')

    const opened = await openMemoryTree({ dataDir })
    try {
      const items = (await opened.tree.status({ workspace })).items
      expect(items.map((item) => [item.kind, item.text, item.source])).toEqual([['constraint', 'Order ids are UUIDv7', 'mcp']])
    } finally {
      await opened.close()
    }
  })
})
