import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { SessionEventLike, SessionLike } from '../src/core/recorder.js'

/** A temp directory removed by the returned function. */
export function tempDir(): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'dshm-capture-'))
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) }
}

/** A session shaped like the host's (id + header.cwd). */
export function session(cwd = '/work/alpha', id = `session-${randomUUID()}`): SessionLike {
  return { id, header: { cwd, createdAt: 1_700_000_000_000 } }
}

/** Builds host-shaped events with increasing seq numbers. */
export class EventScript {
  private seq = 0
  turn(turn: number): SessionEventLike {
    return { type: 'turn/start', seq: this.seq++, time: 1_700_000_000_000 + this.seq, data: { turn } }
  }
  user(text: string, source: Record<string, unknown> = { kind: 'user' }, id: string = randomUUID()): SessionEventLike {
    return {
      type: 'user/message',
      seq: this.seq++,
      time: 1_700_000_000_000 + this.seq,
      data: { id, role: 'user', content: [{ type: 'text', text }], source },
    }
  }
  assistant(turn: number, blocks: { type: string; text?: string }[], id: string = randomUUID()): SessionEventLike {
    return {
      type: 'assistant/message',
      seq: this.seq++,
      time: 1_700_000_000_000 + this.seq,
      data: { turn, step: 0, message: { id, role: 'assistant', content: blocks, source: { kind: 'model' } } },
    }
  }
}
