import { randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import type { SessionEventLike, SessionView } from '../src/index.js'

/** A temp folder removed by `remove()`. */
export function tempDir(label = 'palace'): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `dshm-${label}-`))
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) }
}

/** Every file under `dir`, relative and `/`-separated, sorted (the archive layout as a user sees it; the e2e reads it too). */
export function filesUnder(dir: string): string[] {
  const out: string[] = []
  const walk = (folder: string): void => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name)
      if (entry.isDirectory()) walk(path)
      else out.push(relative(dir, path).split('\\').join('/'))
    }
  }
  if (existsSync(dir)) walk(dir)
  return out.sort()
}

/** A fixed clock that tests move by hand (local time noon, 30 Nov 2026). */
export class FakeClock {
  ms = new Date(2026, 10, 30, 12, 0, 0).getTime()
  now = (): Date => new Date(this.ms)
  advance(ms: number): void {
    this.ms += ms
  }
}

interface Call {
  readonly id: string
  readonly name: string
  readonly args: unknown
}

/**
 * Builds a session log shaped like the DSH host's (`session.events`): user/assistant/tool
 * events with surface markers, interleaved with log-only events so seqs have gaps.
 */
export class EventLog {
  readonly events: SessionEventLike[] = []
  private seq = 0
  time = new Date(2026, 10, 30, 11, 0, 0).getTime()

  private push(type: string, data: unknown, surfaceOp?: { op: string }): number {
    this.seq++
    this.time += 1000
    this.events.push({ type, seq: this.seq, time: this.time, data, ...(surfaceOp ? { surfaceOp } : {}) } as SessionEventLike)
    return this.seq
  }

  /** A log-only event (turn boundary, chunk, header) that is not a turn. */
  noise(type = 'assistant/chunk'): this {
    this.push(type, {})
    return this
  }

  user(text: string, source: Record<string, unknown> = { kind: 'user' }): number {
    this.noise('turn/start')
    return this.push('user/message', { id: randomUUID(), role: 'user', content: [{ type: 'text', text }], source }, { op: 'append' })
  }

  plugin(plugin: string, text: string): number {
    return this.push('user/message', { id: randomUUID(), role: 'user', content: [{ type: 'text', text }], source: { kind: 'plugin', plugin } }, { op: 'append' })
  }

  assistant(text: string, options: { reasoning?: string; calls?: Call[] } = {}): number {
    this.noise()
    const content: unknown[] = []
    if (options.reasoning) content.push({ type: 'reasoning', text: options.reasoning })
    if (text) content.push({ type: 'text', text })
    for (const call of options.calls ?? []) content.push({ type: 'tool-call', id: call.id, name: call.name, arguments: JSON.stringify(call.args) })
    return this.push(
      'assistant/message',
      { turn: 1, step: 1, message: { id: randomUUID(), role: 'assistant', content, source: { kind: 'model', provider: 'p', model: 'm' } } },
      { op: 'append' },
    )
  }

  toolResult(callId: string, text: string, isError = false): number {
    return this.push(
      'tool/result',
      {
        turn: 1,
        step: 1,
        message: {
          id: randomUUID(),
          role: 'user',
          content: [{ type: 'tool-result', toolCallId: callId, content: [{ type: 'text', text }], ...(isError ? { isError: true } : {}) }],
          source: { kind: 'tool', callId },
        },
      },
      { op: 'append' },
    )
  }

  /** A compaction checkpoint replacing earlier surface entries. */
  checkpoint(text: string): number {
    this.push('compaction/start', { compactionId: 'c1', turn: 1 })
    const seq = this.push('user/message', { id: randomUUID(), role: 'user', content: [{ type: 'text', text }], source: { kind: 'plugin', plugin: 'compact' } }, { op: 'replace' })
    this.push('compaction/end', { compactionId: 'c1', turn: 1 })
    return seq
  }

  /** One human prompt and one assistant reply. */
  exchange(question: string, answer: string): [number, number] {
    return [this.user(question), this.assistant(answer)]
  }
}

/** A session view over an event log. */
export function sessionOf(log: EventLog, cwd: string, id = 'session-1', root = true): SessionView {
  return { id, cwd, root, events: () => log.events }
}
