/**
 * Concurrency: on one data dir at once — three writer processes on the store API, two
 * host-like processes (a real Cordis context with the store service and the capture plugin
 * fed `session/event` traffic), two tree MCP servers driven through the official MCP SDK
 * client, the real `dsh-memory` CLI importing rule files and reading (`status`, `search`,
 * `export`), and a read-only reader loop. No `busy`/`SQLITE_BUSY` reaches any caller and no
 * update is lost (every count is exact). Two real DSH hosts distilling on one data dir are
 * covered by apps/playground/e2e/layers-concurrent.e2e.test.ts.
 */
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { openMemoryStore } from '@dsh-memory/store'
import { afterAll, describe, expect, it } from 'vitest'
import { integrityCheck } from '../src/verify.ts'

const here = dirname(fileURLToPath(import.meta.url))
const CHILD = join(here, '../src/concurrent-writer.ts')
const TREE_MCP = join(dirname(createRequire(import.meta.url).resolve('@dsh-memory/tree/package.json')), 'dist/mcp.js')
const CLI = join(dirname(createRequire(import.meta.url).resolve('dsh-memory/package.json')), 'dist/bin.js')
const WRITERS = 3
const HOSTS = 2
const ITERATIONS = Number(process.env.RELIABILITY_ITERATIONS ?? 40)
const NOTES_PER_SERVER = 25
/** Rule files the CLI imports (one memory per list item), per importing CLI process. */
const CLI_IMPORTERS = 2
const CLI_FILES = 2
const RULES_PER_FILE = 15

const dirs: string[] = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

interface ChildReport {
  id: string
  mode: string
  ops: number
  errors: { op: string; code: string; message: string }[]
}

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: join(here, '..'), stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

async function runChild(dataDir: string, mode: 'writer' | 'reader' | 'host', id: string): Promise<ChildReport & { stderr: string }> {
  const { code, stdout, stderr } = await run(['--no-warnings', CHILD, dataDir, mode, id, String(ITERATIONS)])
  if (code !== 0) throw new Error(`${mode} ${id} exited ${code}: ${stderr}`)
  return { ...(JSON.parse(stdout.trim().split('\n').at(-1)!) as ChildReport), stderr }
}

type CliResult = { args: string[]; code: number | null; stdout: string; stderr: string }

/** One `dsh-memory` CLI invocation (the built bin, as a user runs it). */
async function cli(dataDir: string, ...args: string[]): Promise<CliResult> {
  return { args, ...(await run(['--no-warnings', CLI, ...args, '--data-dir', dataDir])) }
}

/** A rule file for `dsh-memory import` (instructions format): one memory per list item. */
function ruleFile(dir: string, importer: number, file: number): string {
  const folder = join(dir, `rules-${importer}-${file}`)
  mkdirSync(folder, { recursive: true })
  const rules = Array.from({ length: RULES_PER_FILE }, (_, rule) => `- CLI rule ${importer}.${file}.${rule}: keep 共享 module ${importer}-${file}-${rule} documented.`)
  writeFileSync(join(folder, 'AGENTS.md'), `# Team rules\n\n${rules.join('\n')}\n`)
  return join(folder, 'AGENTS.md')
}

async function treeClient(dataDir: string, workspace: string): Promise<Client> {
  const client = new Client({ name: 'reliability-suite', version: '0.0.0' })
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args: [TREE_MCP, '--data-dir', dataDir, '--workspace', workspace], stderr: 'pipe' }),
  )
  return client
}

const text = (result: unknown) => ((result as { content?: { type: string; text?: string }[] }).content ?? []).map((part) => part.text ?? '').join('\n')

describe('several processes on one data dir', () => {
  it('surfaces no busy error and loses no update', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'dshm-concurrency-'))
    dirs.push(dataDir)
    const workspace = join(dataDir, 'project')
    // Create the database (and the tree's tables) before the crowd arrives.
    await openMemoryStore({ path: join(dataDir, 'memory.db') }).close()
    const trees = [await treeClient(dataDir, workspace), await treeClient(dataDir, workspace)]
    const setProject = await trees[0]!.callTool({ name: 'mt_set_project', arguments: { name: 'concurrency' } })
    expect(setProject.isError ?? false, text(setProject)).toBe(false)

    const files = Array.from({ length: CLI_IMPORTERS }, (_, importer) => Array.from({ length: CLI_FILES }, (_, file) => ruleFile(dataDir, importer, file)))
    const reader = runChild(dataDir, 'reader', 'reader')
    let writing = true
    const started = Date.now()
    const took: Record<string, number> = {}
    const timed = <T>(name: string, promise: Promise<T>) => promise.finally(() => (took[name] = Date.now() - started))
    const writes = Promise.all([
      timed('writers', Promise.all(Array.from({ length: WRITERS }, (_, i) => runChild(dataDir, 'writer', String(i))))),
      timed('hosts', Promise.all(Array.from({ length: HOSTS }, (_, i) => runChild(dataDir, 'host', String(i))))),
      timed('mcp', Promise.all(
        trees.map(async (client, server) => {
          const results: unknown[] = []
          for (let i = 0; i < NOTES_PER_SERVER; i++) results.push(await client.callTool({ name: 'mt_note', arguments: { kind: 'decision', text: `server ${server} decision ${i}` } }))
          return results
        }),
      )),
      // The CLI importing rule files (each import is one store transaction of many rows).
      timed('cli imports', Promise.all(
        files.map(async (paths) => {
          const results: CliResult[] = []
          for (const path of paths) results.push(await cli(dataDir, 'import', path, '--scope', 'global', '--json', '--quiet'))
          return results
        }),
      )),
    ]).finally(() => (writing = false))
    // The CLI reading the live data dir while everyone writes (at least one round).
    const reads = (async () => {
      const results: CliResult[] = []
      do {
        results.push(await cli(dataDir, 'status', '--json'))
        results.push(await cli(dataDir, 'search', '共享', '--in', 'all', '--json'))
        results.push(await cli(dataDir, 'export', '--out', join(dataDir, `export-${results.length}.jsonl`), '--quiet'))
      } while (writing)
      return results
    })()
    const [[writerReports, hostReports, noteResults, cliImports], cliReads] = await Promise.all([writes, reads])
    writeFileSync(join(dataDir, 'stop'), '')
    const readerReport = await reader
    console.log(
      `concurrency: ${WRITERS} writers × ${ITERATIONS} iterations, ${HOSTS} capture hosts × ${ITERATIONS} turns, 2 tree MCP servers × ${NOTES_PER_SERVER} notes, ` +
        `${CLI_IMPORTERS * CLI_FILES} CLI imports, ${cliReads.length} CLI reads, reader ${readerReport.ops} reads, ${Date.now() - started} ms (done after: ${Object.entries(took).map(([name, ms]) => `${name} ${ms} ms`).join(', ')})`,
    )

    // No error of any kind reached a caller; in particular no busy.
    for (const report of [...writerReports, ...hostReports, readerReport]) {
      expect(report.errors, `${report.mode} ${report.id}: ${report.errors.length} errors, first ${JSON.stringify(report.errors.slice(0, 3))}`).toEqual([])
    }
    for (const report of hostReports) {
      expect(report.ops, `host ${report.id} memory-capture/captured events; stderr: ${report.stderr.slice(0, 600)}`).toBe(2 * ITERATIONS)
      expect(report.stderr, `host ${report.id} stderr`).not.toMatch(/could not store|busy|SQLITE_|error/i)
    }
    for (const result of [...cliImports.flat(), ...cliReads]) {
      expect(result.code, `dsh-memory ${result.args.join(' ')}: ${result.stderr}`).toBe(0)
      expect(result.stderr, `dsh-memory ${result.args.join(' ')}`).not.toMatch(/busy|SQLITE_|error/i)
    }
    for (const result of cliImports.flat()) expect(JSON.parse(result.stdout)).toMatchObject({ inserted: RULES_PER_FILE, skipped: 0 })
    for (const result of noteResults.flat()) {
      expect((result as { isError?: boolean }).isError ?? false, text(result)).toBe(false)
      expect(text(result)).not.toMatch(/busy|SQLITE_BUSY/i)
    }
    expect(readerReport.ops).toBeGreaterThan(0)

    const store = openMemoryStore({ path: join(dataDir, 'memory.db') })
    try {
      // Exact counts: nothing lost, nothing doubled.
      expect(await store.meta.get('reliability.counter')).toBe(String(WRITERS * ITERATIONS))
      expect((await store.persona.get({ scope: 'global' }))!.version).toBe(WRITERS * ITERATIONS)
      for (let i = 0; i < WRITERS; i++) expect(await store.messages.list({ conversationId: `concurrency-${i}`, limit: 10_000 })).toHaveLength(ITERATIONS)
      for (let i = 0; i < HOSTS; i++) expect(await store.messages.list({ conversationId: `host-${i}`, limit: 10_000 })).toHaveLength(2 * ITERATIONS)
      const imported = CLI_IMPORTERS * CLI_FILES * RULES_PER_FILE
      expect(await store.memories.list({ scope: 'global', limit: 10_000 })).toHaveLength(WRITERS * ITERATIONS + imported)
      // The store's index sees every other process's writes.
      expect((await store.search.memories('fact 共享', { limit: 1_000 })).filter((hit) => hit.memory.text.startsWith('writer ')).length).toBe(WRITERS * ITERATIONS)
      expect((await store.search.memories('CLI rule', { limit: 1_000 })).filter((hit) => hit.memory.text.includes('CLI rule ')).length).toBe(imported)
      expect((await store.search.messages('问题', { limit: 1_000 })).filter((hit) => hit.message.text.startsWith('host ')).length).toBe(HOSTS * ITERATIONS)
    } finally {
      await store.close()
    }
    const status = text(await trees[1]!.callTool({ name: 'mt_status', arguments: {} }))
    for (let server = 0; server < 2; server++) for (let i = 0; i < NOTES_PER_SERVER; i++) expect(status).toContain(`server ${server} decision ${i}`)
    for (const client of trees) await client.close()
    expect(integrityCheck(join(dataDir, 'memory.db')).integrity).toEqual(['ok'])
  })
})
