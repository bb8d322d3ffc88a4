import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { openTemp, tempDir } from './helpers.ts'

const run = promisify(execFile)
const entry = pathToFileURL(join(import.meta.dirname, '..', 'src', 'index.ts')).href

describe('several processes on one database', () => {
  it('a write by another process is visible to this store’s next search', async () => {
    const { store, path } = openTemp()
    await store.conversations.ensure({ id: 'shared', workspace: '/w' })
    const local = await store.memories.add({ kind: 'fact', text: 'The build cache lives in Amsterdam', scope: 'global' })
    expect((await store.search.memories('amsterdam')).map((h) => h.memory.id)).toEqual([local.id])

    // A real second process (Node's type stripping runs the sources directly).
    const script = join(tempDir(), 'writer.mjs')
    writeFileSync(
      script,
      `import { openMemoryStore } from ${JSON.stringify(entry)}
const store = openMemoryStore({ path: process.argv[2] })
const memory = await store.memories.add({ kind: 'fact', text: 'Amsterdam also hosts the artifact mirror', scope: 'global' }, { actor: 'other-process' })
await store.messages.append({ conversationId: 'shared', hostMessageId: 'from-child', role: 'assistant', text: '阿姆斯特丹的镜像很快' })
await store.memories.update(process.argv[3], { text: 'The build cache moved to Rotterdam' })
await store.close()
console.log(memory.id)
`,
    )
    const { stdout } = await run(process.execPath, [script, path, local.id], { timeout: 60_000 })
    const remoteId = stdout.trim()

    expect((await store.search.memories('amsterdam')).map((h) => h.memory.id)).toEqual([remoteId])
    expect((await store.search.memories('rotterdam')).map((h) => h.memory.id)).toEqual([local.id])
    expect((await store.search.messages('镜像')).map((h) => h.message.hostMessageId)).toEqual(['from-child'])
    expect((await store.audit.list({ actor: 'other-process', entity: 'memory' })).map((e) => e.entityId)).toEqual([remoteId])
  }, 60_000) // a child Node process on a busy 2-core machine can take several seconds to start
})
