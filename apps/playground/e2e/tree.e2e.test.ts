import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { openMemoryTree } from '@dsh-memory/tree'
import { Config } from '@dsh-memory/tree/plugin'
import { beforeAll, describe, expect, it } from 'vitest'
import { contentText, lastUserText, type ChatRequestBody, type LoggedRequest } from '../src/model-server.js'
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

/**
 * The scripted model: chit-chat gets a reply; the exploration prompt opens a branch with
 * mt_branch, merges it with mt_merge (passing the branchId it read from the tool result), then
 * answers; everything else gets a plain answer.
 */
function responder(request: LoggedRequest) {
  if (request.purpose !== 'chat') return undefined
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
})
