import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { openMemoryStore } from '@dsh-memory/store'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cli, scratch } from './helpers.ts'

// The real executable, as `npx dsh-memory` starts it (the committed shim, then dist/bin.js).
const BIN = fileURLToPath(new URL('../bin/dsh-memory.js', import.meta.url))
const STACK_FRAME = /\n\s+at .+:\d+:\d+/

/** Run `dsh-memory args | head -n 1` in bash; returns the CLI's own exit status and stderr. */
function pipedIntoHead(args: string): { status: number; stderr: string; head: string } {
  const script = `set -o pipefail; "${process.execPath}" "${BIN}" ${args} 2>"$ERR" | head -n 1; echo "status=\${PIPESTATUS[0]}" >&2`
  const temp = scratch('pipe')
  try {
    const errFile = join(temp.dir, 'stderr')
    const run = spawnSync('bash', ['-c', script], { env: { ...process.env, ERR: errFile }, encoding: 'utf8' })
    const status = Number(/status=(\d+)/.exec(run.stderr)?.[1] ?? -1)
    return { status, stderr: spawnSync('cat', [errFile], { encoding: 'utf8' }).stdout, head: run.stdout }
  } finally {
    temp.cleanup()
  }
}

/** Start the CLI, wait for `ready` on stderr or stdout (or a second), send SIGINT, and collect the end. */
function interrupt(args: string[], ready: RegExp | 'after-a-second', env: NodeJS.ProcessEnv = process.env): Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env })
    let seen = ''
    let stdout = ''
    let stderr = ''
    let sent = false
    const check = (chunk: string) => {
      seen += chunk
      if (!sent && ready !== 'after-a-second' && ready.test(seen)) {
        sent = true
        child.kill('SIGINT')
      }
    }
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
      check(chunk)
    })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
      check(chunk)
    })
    if (ready === 'after-a-second') child.once('spawn', () => setTimeout(() => child.kill('SIGINT'), 1000))
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }))
  })
}

describe('the dsh-memory process and its terminal', () => {
  const temp = scratch('exits')
  const dataDir = join(temp.dir, 'data')

  beforeAll(async () => {
    // Enough rows that `search`/`export` write far more than a pipe buffer (64 KiB) holds.
    const store = openMemoryStore({ path: join(dataDir, 'memory.db'), actor: 'fixture' })
    try {
      // One transaction: 1500 separate commits took over the hook's 10 s on a loaded machine.
      await store.transaction(async (tx) => {
        for (let index = 0; index < 1500; index++) {
          await tx.memories.add({ kind: 'fact', text: `Deploy note ${index}: the database 数据库 for service ${index} runs on host db-${index}.example ${'padding '.repeat(8)}`, scope: 'global' })
        }
      })
    } finally {
      await store.close()
    }
  })
  afterAll(() => temp.cleanup())

  it('exits 0 without a stack trace when the reader of stdout closes early (| head)', () => {
    for (const args of [`search database --limit 1000 --data-dir "${dataDir}"`, `export --quiet --data-dir "${dataDir}"`, `search 数据库 --limit 1000 --json --data-dir "${dataDir}"`]) {
      const run = pipedIntoHead(args)
      expect(run.head.length).toBeGreaterThan(0)
      expect(run.stderr).not.toMatch(STACK_FRAME)
      expect(run.stderr).not.toContain('EPIPE')
      expect(run.status).toBe(0)
    }
  })

  it('ends quietly on Ctrl-C: plain commands die of the signal (the shell shows 130), owners clean up and exit 130', async () => {
    // No handler: the process ends at once, even inside synchronous work, with no output. The
    // command must outlast the second (bench token-cost took 1.1 s idle and once ended first):
    // bench cjk over 20 000 distractors takes several seconds; its scratch stays in this test's.
    const plainTemp = join(temp.dir, 'plain-tmp')
    mkdirSync(plainTemp)
    const plain = await interrupt(['bench', 'cjk', '--distractors', '20000'], 'after-a-second', { ...process.env, TMPDIR: plainTemp })
    expect(plain.stderr).not.toMatch(STACK_FRAME)
    expect([plain.code, plain.signal]).toEqual([null, 'SIGINT'])

    // bench scale owns gigabytes of scratch: it removes them, then exits 130.
    const benchTemp = join(temp.dir, 'bench-tmp')
    mkdirSync(benchTemp)
    const bench = await interrupt(['bench', 'scale', '--sizes', 'memories:10k', '--runs', '5'], /writing/, { ...process.env, TMPDIR: benchTemp })
    expect(bench.stderr).not.toMatch(STACK_FRAME)
    expect(bench.code).toBe(130)
    expect(readdirSync(benchTemp)).toEqual([])

    // serve closes its listener first.
    const serve = await interrupt(['serve', '--port', '0', '--data-dir', dataDir], /dsh-memory web: http/)
    expect(serve.stderr).not.toMatch(STACK_FRAME)
    expect(serve.code).toBe(130)

    // migrate finishes the page in flight, says where it stands and exits 130; run again, it completes.
    const target = join(temp.dir, 'migrated')
    const migrate = await interrupt(['migrate', '--from', dataDir, '--to', target, '--page-size', '1'], /migrate: copy: 0\/1500/)
    expect(migrate.stderr).not.toMatch(STACK_FRAME)
    expect(migrate.code).toBe(130)
    expect(migrate.stdout).toContain('interrupted: every page copied so far is committed; run the same command again to copy the rest')
    const copied = Number(/copied \d+ conversations, \d+ messages, (\d+) memories/.exec(migrate.stdout)?.[1])
    expect(copied).toBeGreaterThan(0)
    expect(copied).toBeLessThan(1500)
    const resumed = await cli(['migrate', '--from', dataDir, '--to', target, '--json'])
    expect(resumed.code).toBe(0)
    expect(JSON.parse(resumed.stdout)).toMatchObject({ ok: true, copied: { memories: 1500 - copied }, alreadyPresent: { memories: copied }, verified: { memories: { source: 1500, target: 1500, missing: 0 } } })
  })
})
