import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { beforeAll } from 'vitest'

/** The built server (`npx tsup` in packages/tree); the test runs what users run. */
export const SERVER = fileURLToPath(new URL('../dist/mcp.js', import.meta.url))

/** Fails the calling suite up front, with the fix, when the server bundle its tests spawn is not built. */
export function requireServerBuild(): void {
  beforeAll(() => {
    if (!existsSync(SERVER)) throw new Error(`build the package first (cd packages/tree && npx tsup): ${SERVER} is missing`)
  })
}

export interface CallResult {
  isError?: boolean
  content: Array<{ type: string; text?: string }>
  structuredContent?: { ok: boolean; text: string; data?: Record<string, unknown>; error?: { code: string } }
}

/** Spawn the server over stdio and connect the official SDK client to it. */
export async function connect(options: { env?: Record<string, string>; args?: string[]; cwd?: string }): Promise<{ client: Client; stderr: () => string; close: () => Promise<void> }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [SERVER, ...(options.args ?? [])],
    env: { ...(process.env as Record<string, string>), ...options.env },
    ...(options.cwd ? { cwd: options.cwd } : {}),
    stderr: 'pipe',
  })
  let stderr = ''
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')))
  const client = new Client({ name: 'memory-tree-test', version: '1.0.0' })
  await client.connect(transport)
  return { client, stderr: () => stderr, close: () => client.close() }
}

export async function callTool(client: Client, name: string, args: Record<string, unknown>): Promise<CallResult> {
  return (await client.callTool({ name, arguments: args })) as CallResult
}

