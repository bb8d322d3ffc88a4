import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach } from 'vitest'
import { openMemoryTree, type OpenedMemoryTree, type OpenMemoryTreeOptions } from '../src/core/open.js'

/** A temporary directory removed by `remove()`. */
export function tempDir(label = 'tree'): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `dshm-${label}-`))
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) }
}

/** A temporary directory made before each test of the calling suite and removed after it; read `dir` inside the tests. */
export function tempDirEachTest(label = 'tree'): { readonly dir: string } {
  const current = { dir: '', remove: () => {} }
  beforeEach(() => Object.assign(current, tempDir(label)))
  afterEach(() => current.remove())
  return current
}

/** A controllable clock (epoch ms), starting at 2025-03-01T09:00:00Z. */
export class FakeClock {
  value = Date.UTC(2025, 2, 1, 9, 0, 0)
  now = (): number => this.value
  advance(ms: number): void {
    this.value += ms
  }
}

/** Open a real tree on a real SQLite file in `dir` (store + tree migrations + repository). */
export async function openTestTree(dir: string, options: Partial<Omit<OpenMemoryTreeOptions, 'store' | 'dataDir'>> = {}): Promise<OpenedMemoryTree> {
  return openMemoryTree({ dataDir: dir, projectionDir: join(dir, 'tree'), ...options } as OpenMemoryTreeOptions)
}
