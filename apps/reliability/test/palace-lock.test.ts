/**
 * Regression test (a bug this suite found): the palace's cross-process lock
 * (`memory-palace/.lock`) used to be broken only when older than 60 s, although it recorded
 * its owner's pid. A process killed while archiving (SIGKILL, OOM, a laptop lid…) left the lock
 * behind, and for the next minute every archive, rename and `palace_config set` of every DSH
 * process on that workspace failed with `busy` after waiting 10 s — the pre-compaction archive
 * included. Now a lock whose owner pid is dead on this host is taken over at once.
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Palace, resolvePalaceOptions } from '@dsh-memory/palace'
import { afterAll, describe, expect, it } from 'vitest'

const dirs: string[] = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

describe('palace lock left by a killed process', () => {
  it('is taken over at once when its owner pid is dead', async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'dshm-palace-lock-'))
    dirs.push(workspace)
    // A pid that certainly belonged to a process that is gone now.
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' })
    const pid = Number(dead.stdout)
    expect(Number.isInteger(pid) && pid > 0).toBe(true)
    const lock = join(workspace, 'memory-palace', '.lock')
    mkdirSync(lock, { recursive: true })
    writeFileSync(join(lock, 'owner.json'), JSON.stringify({ pid, at: Date.now() }))

    const palace = new Palace(resolvePalaceOptions({}))
    const outcome = await palace
      .workspace(workspace)
      .setNamespace('session-after-crash', 'After Crash')
      .then(
        () => 'ok',
        (error: { code?: string; message?: string }) => `${error.code}: ${error.message}`,
      )
    // A lock that was waited out rather than taken over would end in a busy error, not 'ok'.
    expect(outcome).toBe('ok')
  }, 30_000)
})
