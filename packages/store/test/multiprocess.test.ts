import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { openTemp, reopen, tempDir } from './helpers.ts'

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

  it('a process killed in the middle of a write leaves the search index consistent with the rows', async () => {
    const { store, path } = openTemp()
    await store.conversations.ensure({ id: 'shared', workspace: '/w' })
    const kept = await store.memories.add({ kind: 'fact', text: 'Committed before the crash: Lisbon', scope: 'global' })
    await store.close()

    const script = join(tempDir(), 'crasher.mjs')
    writeFileSync(
      script,
      `import { openMemoryStore } from ${JSON.stringify(entry)}
const store = openMemoryStore({ path: process.argv[2] })
await store.memories.add({ kind: 'fact', text: 'Committed by the child: Porto', scope: 'global' })
await store.transaction(async (tx) => {
  await tx.messages.append({ conversationId: 'shared', hostMessageId: 'lost', role: 'user', text: 'Lisbon never committed 里斯本' })
  await tx.memories.add({ kind: 'fact', text: 'Lisbon never committed either', scope: 'global' })
  await tx.memories.update(process.argv[3], { text: 'Renamed to Faro, never committed' })
  // Rows and FTS terms are written; the process dies before COMMIT.
  process.kill(process.pid, 'SIGKILL')
})
`,
    )
    await expect(run(process.execPath, [script, path, kept.id], { timeout: 60_000 })).rejects.toMatchObject({ signal: 'SIGKILL' })

    const next = reopen(path)
    expect((await next.search.memories('lisbon')).map((h) => h.memory.id)).toEqual([kept.id])
    expect(await next.search.memories('faro')).toEqual([])
    expect(await next.search.messages('里斯本')).toEqual([])
    expect((await next.search.memories('porto')).map((h) => h.memory.text)).toEqual(['Committed by the child: Porto'])
    const status = await next.search.status()
    expect(status.documents).toEqual({ messages: (await next.messages.list()).length, memories: (await next.memories.list({ includeSuperseded: true })).length })
    expect(status.documents).toEqual({ messages: 0, memories: 2 })
  }, 60_000)
})
