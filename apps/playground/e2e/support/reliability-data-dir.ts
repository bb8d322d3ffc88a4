import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { openMemoryStore, type MemoryStore } from '@dsh-memory/store'

/** Every file under `dir` (recursively), absolute paths. */
export async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = []
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) out.push(...(await filesUnder(path)))
    else if (entry.isFile()) out.push(path)
  }
  return out
}

/**
 * Scan every byte of every file under `dir` for each needle (as UTF-8 and as UTF-16LE, so a
 * secret cannot hide in a differently encoded index). Returns `file: needle` for each hit.
 */
export async function findSecrets(dir: string, needles: readonly string[]): Promise<string[]> {
  const hits: string[] = []
  for (const file of await filesUnder(dir)) {
    const bytes = await readFile(file)
    for (const needle of needles) {
      if (bytes.includes(Buffer.from(needle, 'utf8')) || bytes.includes(Buffer.from(needle, 'utf16le'))) hits.push(`${file}: ${needle.slice(0, 24)}…`)
    }
  }
  return hits
}

/** Open the host's store for a look, closed afterwards. */
export async function withStore<T>(path: string, fn: (store: MemoryStore) => Promise<T>): Promise<T> {
  const store = openMemoryStore({ path })
  try {
    return await fn(store)
  } finally {
    await store.close()
  }
}
