/**
 * The writer the crash-safety suite SIGKILLs: a Node process that does what a host with
 * capture + distill does, on the built packages — CaptureRecorder feeding scripted session
 * events into a real store, the Distiller core distilling them in the background through
 * an in-process model stand-in, plus multi-row store transactions. After every commit it
 * appends a line to the side file synchronously (`fs.appendFileSync`), so whatever the
 * parent finds there was committed before the kill.
 *
 * Usage: node crash-writer.ts <dataDir> <runId> <mode: write|resume> [seed]
 *   write:  write forever (until killed)
 *   resume: start a distiller, distill everything pending, print a JSON status, exit 0
 */
import { appendFileSync } from 'node:fs'
import { join } from 'node:path'
import { CaptureRecorder, resolveCaptureOptions } from '@dsh-memory/capture'
import { Distiller, resolveDistillOptions } from '@dsh-memory/distill'
import { openMemoryStore } from '@dsh-memory/store'
import { randomInt, seededRandom } from './rng.ts'
import { ScriptedDistillModel } from './scripted-model.ts'

const [dataDir, runId, mode = 'write', seedText = '1'] = process.argv.slice(2)
if (!dataDir || !runId) {
  process.stderr.write('usage: crash-writer.ts <dataDir> <runId> <write|resume> [seed]\n')
  process.exit(2)
}
const random = seededRandom(Number(seedText))
const log = join(dataDir, 'committed.log')
const committed = (line: string) => appendFileSync(log, `${line}\n`)

const store = openMemoryStore({ path: join(dataDir, 'memory.db') })
const model = new ScriptedDistillModel(() => randomInt(random, 0, 4))
const distiller = new Distiller({
  store,
  transport: model.transport,
  // minMessages 2 keeps distillation busy, so kills land inside model calls and commits too.
  options: resolveDistillOptions({ llm: { provider: 'scripted', model: 'stand-in', timeoutMs: 5_000 }, extract: { minMessages: 2, idleSeconds: 0 }, l2: { minNewMemories: 4 }, l3: { interval: 6 } }),
  logger: { debug() {}, info() {}, warn: (message) => process.stderr.write(`[distill] ${message}\n`) },
  events: {
    memoriesUpdated: (event) => {
      for (const id of event.added) committed(`memory ${id}`)
    },
  },
})
const recorder = new CaptureRecorder(store, resolveCaptureOptions({}), {
  onCaptured: (message) => {
    committed(`message ${message.conversationId} ${message.hostMessageId} ${message.messageId}`)
    distiller.noteCaptured({ conversationId: message.conversationId, workspace: message.workspace })
  },
  onError: (error) => process.stderr.write(`[capture] ${String(error)}\n`),
})

process.on('unhandledRejection', (error) => {
  process.stderr.write(`unhandled rejection: ${String(error)}\n`)
  process.exit(70)
})

if (mode === 'resume') {
  await distiller.start()
  await distiller.runPending(60_000)
  const status = distiller.status()
  await distiller.close()
  await store.close()
  process.stdout.write(`${JSON.stringify({ status, l1Calls: model.callsOf('l1').length })}\n`)
  process.exit(0)
}

await distiller.start()
process.stdout.write('ready\n')
const session = { id: `crash-${runId}`, header: { cwd: `/work/crash-${Number(runId) % 2}`, createdAt: Date.now() } }
let seq = 0
for (let turn = 0; ; turn++) {
  distiller.noteAgentStatus(session.id, true, session.header.cwd)
  await recorder.handle(session, { type: 'turn/start', seq: seq++, data: { turn } })
  await recorder.handle(session, {
    type: 'user/message',
    seq: seq++,
    data: { id: `u${turn}`, role: 'user', content: [{ type: 'text', text: `Run ${runId} turn ${turn}: the build uses tool-${runId}-${turn} and 数据库-${turn}` }], source: { kind: 'user' } },
  })
  await recorder.handle(session, {
    type: 'assistant/message',
    seq: seq++,
    data: { turn, step: 0, message: { id: `a${turn}`, role: 'assistant', content: [{ type: 'text', text: `Noted turn ${turn} of run ${runId}.` }] } },
  })
  distiller.noteAgentStatus(session.id, false)
  // A multi-row transaction: its three memories commit together or not at all.
  const batch = `${runId}-${turn}`
  await store.transaction(async (tx) => {
    for (let part = 0; part < 3; part++) {
      await tx.memories.add({ kind: 'episode', text: `batch ${batch} part ${part}`, scope: 'session', sessionId: session.id, flags: { batch, part } })
    }
  })
  committed(`batch ${batch}`)
  // Let the background distiller interleave with the writes.
  await new Promise((resolve) => setTimeout(resolve, randomInt(random, 0, 6)))
}
