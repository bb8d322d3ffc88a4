/**
 * The palace writer the crash suite SIGKILLs: it grows a session log (user and assistant
 * turns, some large enough to split volumes) and archives every finished turn into the
 * workspace's `memory-palace/` through the palace core (`PalaceWorkspace.archive`, the same
 * path as the plugin's `palace_archive` tool and the pre-compaction archive). After each
 * archive resolves it appends `archive <from> <to>` to the side file synchronously.
 *
 * Usage: node palace-writer.ts <workspace> <runId> <mode: write|check> [seed]
 *   write: archive forever (until killed)
 *   check: open the archive (recovering any interrupted commit), print its state as JSON
 */
import { appendFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildTurns, Palace, planArchive, resolvePalaceOptions, type SessionEventLike } from '@dsh-memory/palace'
import { randomInt, seededRandom } from './rng.ts'

const [workspaceDir, runId, mode = 'write', seedText = '1'] = process.argv.slice(2)
if (!workspaceDir || !runId) {
  process.stderr.write('usage: palace-writer.ts <workspace> <runId> <write|check> [seed]\n')
  process.exit(2)
}
const NAMESPACE = 'Crash Palace'
const SESSION = 'palace-crash-session'
const random = seededRandom(Number(seedText))
const palace = new Palace(resolvePalaceOptions({ maxFileBytes: 12_000 }))
const workspace = palace.workspace(workspaceDir)

process.on('unhandledRejection', (error) => {
  process.stderr.write(`unhandled rejection: ${String(error)}\n`)
  process.exit(70)
})

if (mode === 'check') {
  const archive = await workspace.openArchive(NAMESPACE)
  const state = await archive.readState()
  const entries = await archive.entries()
  process.stdout.write(`${JSON.stringify({ state, entries: entries.map((entry) => entry.turn) })}\n`)
  process.exit(0)
}

await workspace.setNamespace(SESSION, NAMESPACE)
const archive = await workspace.openArchive(NAMESPACE)
// Continue the one session across runs: turn numbers are event seqs, so start after the watermark.
const state = await archive.readState()
let seq = (state?.watermark ?? 0) + 1
let time = Date.UTC(2026, 10, 30, 10) + seq * 1000
const events: SessionEventLike[] = []
const push = (type: string, data: unknown) => {
  events.push({ type, seq: seq++, time: (time += 1000), data, surfaceOp: { op: 'append' } } as SessionEventLike)
}
process.stdout.write('ready\n')
for (let round = 0; ; round++) {
  const pairs = randomInt(random, 1, 3)
  for (let i = 0; i < pairs; i++) {
    const size = randomInt(random, 20, 3_000)
    push('user/message', { id: `u-${runId}-${round}-${i}`, role: 'user', content: [{ type: 'text', text: `run ${runId} question ${round}.${i} 检查部署 ${'q'.repeat(size)}` }], source: { kind: 'user' } })
    push('assistant/message', { turn: round, step: 1, message: { id: `a-${runId}-${round}-${i}`, role: 'assistant', content: [{ type: 'text', text: `answer ${round}.${i} デプロイ ${'a'.repeat(size)}` }] } })
  }
  const archivedRanges = await archive.ranges()
  const isArchived = (turn: number) => archivedRanges.some(([rangeFrom, rangeTo]) => turn >= rangeFrom && turn <= rangeTo)
  const turns = buildTurns(events, { includeReasoning: true }).filter((turn) => !isArchived(turn.turn))
  if (turns.length === 0) continue
  const from = turns[0]!.turn
  const to = turns.at(-1)!.turn
  const category = round % 2 === 0 ? 'setup' : 'debugging'
  const plan = planArchive({ segments: [{ category, fromTurn: from, toTurn: to }], summary: `Round ${round} of run ${runId}.`, selfName: 'assistant' }, turns, isArchived, { maxFileBytes: 12_000 })
  await workspace.archive(NAMESPACE, SESSION, plan)
  appendFileSync(join(workspaceDir, 'palace-committed.log'), `archive ${from} ${to}\n`)
}
