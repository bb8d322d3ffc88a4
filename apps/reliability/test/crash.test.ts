/**
 * Crash safety: SIGKILL a writer (capture + distill + multi-row transactions on the built
 * packages) at seeded random points, then check the database with SQLite's own integrity
 * check, find every row the writer reported committed, and let a fresh process resume the
 * pending distillation.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { readdirSync, readFileSync } from 'node:fs'
import { relative } from 'node:path'
import { DistillStateRepository } from '@dsh-memory/distill'
import { JOURNAL_FILE, scanVolume, TEMP_MARKER } from '@dsh-memory/palace'
import { openMemoryStore } from '@dsh-memory/store'
import { afterAll, describe, expect, it } from 'vitest'
import { randomInt, seededRandom } from '../src/rng.ts'
import { integrityCheck, readCommitted } from '../src/verify.ts'

const here = dirname(fileURLToPath(import.meta.url))
const WRITER = join(here, '../src/crash-writer.ts')
const PALACE_WRITER = join(here, '../src/palace-writer.ts')
/** Kills in CI; raise with RELIABILITY_KILLS for a longer soak. */
const KILLS = Number(process.env.RELIABILITY_KILLS ?? 8)
const SEED = Number(process.env.RELIABILITY_SEED ?? 20261130)

const dirs: string[] = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

function startWriter(dataDir: string, runId: number, mode: 'write' | 'resume' | 'check', seed: number, script = WRITER): { child: ChildProcess; ready: Promise<void>; exit: Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }> } {
  const child = spawn(process.execPath, ['--no-warnings', script, dataDir, String(runId), mode, String(seed)], { cwd: join(here, '..'), stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  let onReady: () => void = () => {}
  const ready = new Promise<void>((resolve) => (onReady = resolve))
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk
    if (stdout.includes('ready\n')) onReady()
  })
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  const exit = new Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code, signal) => {
      onReady()
      resolve({ code, signal, stdout, stderr })
    }),
  )
  return { child, ready, exit }
}

describe('crash safety (SIGKILL at random points)', () => {
  it(`keeps the database intact, loses no committed row and resumes distillation after ${KILLS} kills`, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'dshm-crash-'))
    dirs.push(dataDir)
    const random = seededRandom(SEED)
    const kills: { run: number; afterMs: number; signal: string | null }[] = []
    for (let run = 0; run < KILLS; run++) {
      const writer = startWriter(dataDir, run, 'write', SEED + run)
      await writer.ready
      const afterMs = randomInt(random, 30, 700)
      await new Promise((resolve) => setTimeout(resolve, afterMs))
      writer.child.kill('SIGKILL')
      const exit = await writer.exit
      kills.push({ run, afterMs, signal: exit.signal })
      // A writer that died on its own (not by our signal) is a failure, with its stderr.
      expect(exit.signal, exit.stderr).toBe('SIGKILL')
      expect(exit.stderr).not.toMatch(/unhandled rejection|SQLITE_|busy/i)

      // After every kill: SQLite says the file is sound.
      const check = integrityCheck(join(dataDir, 'memory.db'))
      expect(check.integrity).toEqual(['ok'])
      expect(check.foreignKeyViolations).toBe(0)
    }
    console.log(`crash suite: ${KILLS} kills at ${kills.map((kill) => `${kill.afterMs}ms`).join(', ')}`)

    const lines = readCommitted(dataDir)
    const store = openMemoryStore({ path: join(dataDir, 'memory.db') })
    try {
      // Every row reported committed is there.
      const messages = lines.filter((line) => line.kind === 'message')
      const memories = lines.filter((line) => line.kind === 'memory')
      const batches = lines.filter((line) => line.kind === 'batch')
      expect(messages.length).toBeGreaterThan(KILLS * 2)
      expect(batches.length).toBeGreaterThan(KILLS)
      for (const line of messages) {
        const [conversationId, hostMessageId, messageId] = line.fields
        const row = await store.messages.getByHostId(conversationId!, hostMessageId!)
        expect(row?.id, `message ${hostMessageId} of ${conversationId}`).toBe(messageId)
      }
      for (const line of memories) expect(await store.memories.get(line.fields[0]!), `memory ${line.fields[0]}`).toBeDefined()

      // Multi-row transactions are all or nothing, committed or not.
      const batchRows = new Map<string, number>()
      for (const conversation of await store.conversations.list({ limit: 1_000 })) {
        for (const memory of await store.memories.list({ scope: 'session', sessionId: conversation.id, includeGlobal: false, limit: 10_000 })) {
          const batch = String(memory.flags.batch)
          batchRows.set(batch, (batchRows.get(batch) ?? 0) + 1)
        }
      }
      for (const [batch, rows] of batchRows) expect(rows, `batch ${batch}`).toBe(3)
      for (const line of batches) expect(batchRows.get(line.fields[0]!), `batch ${line.fields[0]}`).toBe(3)
    } finally {
      await store.close()
    }

    // A fresh process resumes everything left pending by the kills (leases of dead pids are taken over).
    const resume = startWriter(dataDir, 999, 'resume', SEED)
    const result = await resume.exit
    expect(result.code, result.stderr).toBe(0)
    const { status } = JSON.parse(result.stdout.trim().split('\n').at(-1)!) as { status: { conversations: { pending: number }[]; counters: { failures: number } } }
    expect(status.conversations.every((conversation) => conversation.pending === 0)).toBe(true)
    expect(integrityCheck(join(dataDir, 'memory.db')).integrity).toEqual(['ok'])

    const after = openMemoryStore({ path: join(dataDir, 'memory.db') })
    try {
      const distillState = new DistillStateRepository(after)
      expect(await distillState.pendingIds()).toEqual([])
      const distilled = (await after.memories.list({ scope: 'global', limit: 10_000 })).map((memory) => memory.text)
      for (const conversation of await after.conversations.list({ limit: 1_000 })) {
        const rows = await after.messages.list({ conversationId: conversation.id, limit: 10_000 })
        // Capture creates a conversation and stores its first message in one write: a kill
        // never leaves an empty conversation behind.
        expect(rows.length, conversation.id).toBeGreaterThan(0)
        const state = await distillState.conversation(conversation.id)
        // Every captured message is behind the cursor: nothing is left undistilled.
        expect(state.cursorSeq, conversation.id).toBe(rows.at(-1)!.seq)
        expect(state.lease).toBeNull()
        // Each user message was distilled exactly once: no slice lost, none stored twice.
        for (const row of rows.filter((message) => message.role === 'user')) {
          expect(distilled.filter((text) => text === `Remembered: ${row.text}`), row.text).toHaveLength(1)
        }
      }
    } finally {
      await after.close()
    }
  })
})

function filesUnder(dir: string): string[] {
  const out: string[] = []
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) out.push(...filesUnder(path))
    else out.push(path)
  }
  return out
}

describe('crash safety of palace archive files (SIGKILL at random points)', () => {
  it(`leaves no half file, no temp file and no range gap after ${KILLS} kills`, async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'dshm-crash-palace-'))
    dirs.push(workspace)
    const random = seededRandom(SEED + 1)
    for (let run = 0; run < KILLS; run++) {
      const writer = startWriter(workspace, run, 'write', SEED + run, PALACE_WRITER)
      await writer.ready
      await new Promise((resolve) => setTimeout(resolve, randomInt(random, 30, 500)))
      writer.child.kill('SIGKILL')
      const exit = await writer.exit
      expect(exit.signal, exit.stderr).toBe('SIGKILL')
      expect(exit.stderr).not.toMatch(/unhandled rejection|busy/i)
    }
    // A fresh process opens the archive: an interrupted commit is replayed or discarded.
    const check = startWriter(workspace, 999, 'check', SEED, PALACE_WRITER)
    const result = await check.exit
    expect(result.code, result.stderr).toBe(0)
    const { state, entries } = JSON.parse(result.stdout.trim()) as { state: { ranges: [number, number][]; watermark: number }; entries: number[] }

    const root = join(workspace, 'memory-palace')
    const files = filesUnder(root).map((path) => relative(root, path))
    // No staged temp file and no journal survive recovery.
    expect(files.filter((file) => file.includes(TEMP_MARKER) || file.endsWith(JOURNAL_FILE))).toEqual([])
    // Archived ranges are contiguous (one range: every turn of the session up to the watermark).
    expect(state.ranges).toHaveLength(1)
    const [from, to] = state.ranges[0]!
    expect(to).toBe(state.watermark)
    // Every archive the writers reported finished is inside it.
    const committed = readFileSync(join(workspace, 'palace-committed.log'), 'utf8').split('\n').filter((line) => /^archive \d+ \d+$/.test(line))
    expect(committed.length).toBeGreaterThan(0)
    for (const line of committed) {
      const [, a, b] = line.split(' ').map(Number)
      expect(a! >= from && b! <= to, line).toBe(true)
    }
    // The index lists each archived turn exactly once, with no hole.
    expect(entries).toEqual(Array.from({ length: to - from + 1 }, (_, i) => from + i))
    // Every volume is whole: a valid header, and its turn markers are exactly the indexed turns.
    const inVolumes: number[] = []
    for (const file of files.filter((name) => /\/\d{4}-\d{2}\/[^/]+\/[^/]+\.md$/.test(name))) {
      const content = readFileSync(join(root, file), 'utf8')
      const turns = scanVolume(content)
      expect(turns.length, `${file} has no turns (a half file?)`).toBeGreaterThan(0)
      inVolumes.push(...turns.map((turn) => turn.turn))
    }
    expect(inVolumes.sort((a, b) => a - b)).toEqual(entries)
  })
})
