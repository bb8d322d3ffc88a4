import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type MemoryStore, openMemoryStore } from '@dsh-memory/store'
import { inject } from 'vitest'
import { DshHome } from '../src/host.js'

/** A fresh DSH home under the OS temp dir; removed by the returned cleanup unless KEEP_E2E is set. */
export async function freshHome(label: string): Promise<{ home: DshHome; root: string; cleanup: () => Promise<void> }> {
  const root = await mkdtemp(join(tmpdir(), `dshm-${label}-`))
  const home = new DshHome(join(root, 'dsh-home'))
  return {
    home,
    root,
    cleanup: async () => {
      if (!process.env.KEEP_E2E) await rm(root, { recursive: true, force: true })
    },
  }
}

/** The packed tarballs from the global setup. */
export function tarballs(): Record<string, string> {
  return inject('tarballs')
}

/** Run `fn` on the memory store of a DSH home (`<home>/memory/memory.db`), closing it afterwards. */
export async function withHomeStore<T>(home: DshHome, fn: (store: MemoryStore) => Promise<T>): Promise<T> {
  const store = openMemoryStore({ path: join(home.dir, 'memory', 'memory.db') })
  try {
    return await fn(store)
  } finally {
    await store.close()
  }
}
