/**
 * One of several processes writing to one data dir at once (the concurrency suite). Modes:
 * - `writer`: appends messages to its own conversation, adds memories, increments a shared
 *   counter with a read-modify-write inside `store.transaction` (a lost update would show as
 *   a short count), and bumps a shared persona document with optimistic `expectedVersion`
 *   retries.
 * - `reader`: a read-only store searching, listing, exporting and auditing in a loop until
 *   the stop file appears (what a CLI or a browser does on a live data dir).
 * - `host`: what a DSH host does: a real Cordis `Context` with the store service
 *   (`@dsh-memory/store/plugin`) and the capture plugin, fed `session/event` traffic of one
 *   session (a turn, the user message, the assistant reply) and flushed at the end, as the
 *   host does before it exits. Capture reports failures only to its logger, so the parent
 *   checks this process's stderr and the exact row count.
 * Every error is caught and reported (never thrown), so the parent can assert that no
 * `SQLITE_BUSY`/`busy` ever reached a caller.
 *
 * Usage: node concurrent-writer.ts <dataDir> <writer|reader|host> <id> <iterations>
 * Prints one JSON line: { id, mode, ops, errors: [{ code, message }] }.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { Context, type Plugin } from '@deepseek-ai/cordis'
import * as capture from '@dsh-memory/capture/plugin'
import { isMemoryStoreError, openMemoryStore } from '@dsh-memory/store'
import MemoryStoreService from '@dsh-memory/store/plugin'

const [dataDir, mode, id, iterationsText] = process.argv.slice(2)
const iterations = Number(iterationsText ?? 50)
const errors: { code: string; message: string; op: string }[] = []
let ops = 0

async function attempt(op: string, fn: () => Promise<unknown>): Promise<void> {
  try {
    await fn()
    ops++
  } catch (error) {
    errors.push({ op, code: String((error as { code?: unknown }).code ?? 'none'), message: String((error as Error).message).slice(0, 300) })
  }
}

if (!dataDir || (mode !== 'writer' && mode !== 'reader' && mode !== 'host') || !id) {
  process.stderr.write('usage: concurrent-writer.ts <dataDir> <writer|reader|host> <id> <iterations>\n')
  process.exit(2)
}
const path = join(dataDir, 'memory.db')

if (mode === 'host') {
  const root = new Context()
  await root.plugin(MemoryStoreService, { dataDir })
  await root.plugin(capture as unknown as Plugin, { enabled: true })
  // The host's events are not in cordis' static event map; address them by name.
  const host = root as unknown as {
    emit(name: string, ...args: unknown[]): void
    on(name: string, listener: (...args: unknown[]) => void): () => void
    parallel(name: string, ...args: unknown[]): Promise<void>
  }
  const session = { id: `host-${id}`, header: { cwd: '/work/concurrency-host' } }
  let captured = 0
  host.on('memory-capture/captured', () => void captured++)
  let seq = 0
  for (let turn = 0; turn < iterations; turn++) {
    host.emit('session/event', session, { type: 'turn/start', seq: seq++, time: Date.now(), data: { turn } })
    host.emit('session/event', session, { type: 'user/message', seq: seq++, time: Date.now(), data: { id: `u${turn}`, role: 'user', content: [{ type: 'text', text: `host ${id} question ${turn} 问题` }], source: { kind: 'user' } } })
    host.emit('session/event', session, { type: 'assistant/message', seq: seq++, time: Date.now(), data: { turn, step: 0, message: { id: `a${turn}`, role: 'assistant', content: [{ type: 'text', text: `host ${id} answer ${turn} 回答` }] } } })
    // A turn takes a while in a real host; let the others interleave.
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  await attempt('session/flush', () => host.parallel('session/flush', session))
  // Reported as the op count: one memory-capture/captured per stored message.
  ops = captured
  await root.fiber.dispose()
} else if (mode === 'reader') {
  const store = openMemoryStore({ path, readonly: true })
  const stopFile = join(dataDir, 'stop')
  while (!existsSync(stopFile)) {
    // A reader that polls, not one that spins: the other processes need the 2 cores too.
    await new Promise((resolve) => setTimeout(resolve, 25))
    await attempt('search.memories', () => store.search.memories('shared counter 共享 decision'))
    await attempt('search.messages', () => store.search.messages('writer message 消息'))
    await attempt('messages.list', () => store.messages.list({ limit: 200, order: 'desc' }))
    await attempt('audit.list', () => store.audit.list({ limit: 200 }))
    await attempt('export', async () => {
      let lines = 0
      for await (const _line of store.exportJsonl()) lines++
      return lines
    })
  }
  await store.close()
} else {
  const store = openMemoryStore({ path, actor: `writer-${id}` })
  const conversationId = `concurrency-${id}`
  await attempt('conversations.ensure', () => store.conversations.ensure({ id: conversationId, workspace: '/work/concurrency' }))
  for (let i = 0; i < iterations; i++) {
    await attempt('messages.append', () => store.messages.append({ conversationId, hostMessageId: `m${i}`, role: i % 2 ? 'assistant' : 'user', text: `writer ${id} message ${i} 消息 ${i}` }))
    await attempt('memories.add', () => store.memories.add({ kind: 'fact', text: `writer ${id} fact ${i}: 共享 decision ${i}`, scope: 'global' }))
    await attempt('counter', () =>
      store.transaction(async (tx) => {
        const value = Number((await tx.meta.get('reliability.counter')) ?? '0')
        // Give the other processes every chance to interleave between the read and the write.
        await new Promise((resolve) => setImmediate(resolve))
        await tx.meta.set('reliability.counter', String(value + 1))
      }),
    )
    await attempt('persona.put', async () => {
      for (let tries = 0; ; tries++) {
        const current = await store.persona.get({ scope: 'global' })
        try {
          return await store.persona.put({ scope: 'global', text: `persona touched by writer ${id} (${i})`, expectedVersion: current?.version ?? 0 })
        } catch (error) {
          if (!isMemoryStoreError(error, 'conflict') || tries > 100) throw error
        }
      }
    })
  }
  await store.close()
}
process.stdout.write(`${JSON.stringify({ id, mode, ops, errors })}\n`)
