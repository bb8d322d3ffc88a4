import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type CoordinatedMemoryStore, type MemoryStoreOptions, openMemoryStore } from '@dsh-memory/store'

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
