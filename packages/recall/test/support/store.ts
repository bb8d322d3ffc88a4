import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type CoordinatedMemoryStore, type MemoryStoreOptions, openMemoryStore } from '@dsh-memory/store'
import { afterEach } from 'vitest'

/** A real store on a temp file; `reopen` closes and opens the same file (a restart). */
export function tempStore(options: Partial<MemoryStoreOptions> = {}): {
  store: CoordinatedMemoryStore
  path: string
  reopen(): Promise<CoordinatedMemoryStore>
  cleanup(): Promise<void>
} {
  const dir = mkdtempSync(join(tmpdir(), 'dshm-recall-'))
  const path = join(dir, 'memory.db')
  const handle = {
    store: openMemoryStore({ ...options, path }),
    path,
    async reopen() {
      await handle.store.close()
      handle.store = openMemoryStore({ ...options, path })
      return handle.store
    },
    async cleanup() {
      await handle.store.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
  return handle
}

export type TempStore = ReturnType<typeof tempStore>

/**
 * Cleanups a test registers as it makes things, run last-first after that test: one hook
 * for the suite instead of a `let` and an `afterEach` branch per resource.
 */
export function cleanupAfterEach(): (cleanup: () => unknown) => void {
  const pending: (() => unknown)[] = []
  afterEach(async () => {
    for (const cleanup of pending.splice(0).reverse()) await cleanup()
  })
  return (cleanup) => {
    pending.push(cleanup)
  }
}

/** Opens a `tempStore()` per call, each cleaned up after the test that opened it. */
export function tempStoreEachTest(): (options?: Partial<MemoryStoreOptions>) => TempStore {
  const later = cleanupAfterEach()
  return (options = {}) => {
    const handle = tempStore(options)
    later(() => handle.cleanup())
    return handle
  }
}

/** Makes a temp directory per call (`dshm-<label>-…`), removed after the test that made it. */
export function tempDirEachTest(label: string): () => string {
  const later = cleanupAfterEach()
  return () => {
    const dir = mkdtempSync(join(tmpdir(), `dshm-${label}-`))
    later(() => rmSync(dir, { recursive: true, force: true }))
    return dir
  }
}
