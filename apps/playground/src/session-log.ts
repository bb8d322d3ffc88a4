import { readdir, readFile } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { zstdDecompressSync } from 'node:zlib'

const ZSTD_MAGIC = Buffer.from([0x28, 0xb5, 0x2f, 0xfd])

/**
 * The host writes `session.jsonl.zstd` as a concatenation of independent Zstandard frames;
 * Node's one-shot decoder stops after the first, so decode frame by frame (a magic number
 * inside compressed data would fail to decode alone and is then merged with the next part).
 */
export function decodeSessionLog(buffer: Buffer): string {
  const offsets: number[] = []
  for (let index = buffer.indexOf(ZSTD_MAGIC); index >= 0; index = buffer.indexOf(ZSTD_MAGIC, index + 1)) offsets.push(index)
  let text = ''
  let start = offsets[0] ?? buffer.length
  for (let k = 1; k <= offsets.length; k++) {
    const end = k < offsets.length ? offsets[k]! : buffer.length
    try {
      text += zstdDecompressSync(buffer.subarray(start, end)).toString('utf8')
      start = end
    } catch {
      // Not a frame boundary: keep extending this part.
    }
  }
  return text
}

/** One `user/message` event from a host session log. */
export interface LoggedUserMessage {
  readonly text: string
  readonly source: Record<string, unknown>
  /** The session folder name (`session-<id>`). */
  readonly session: string
}

/**
 * Every `user/message` event the host logged under `sessionsRoot`
 * (`sessions/<workspace>/<session id>/session.jsonl[.zstd]`), optionally of one session only.
 * Reading the host's own log makes the checks independent of the model server.
 */
export async function loggedUserMessages(sessionsRoot: string, options: { sessionId?: string } = {}): Promise<LoggedUserMessage[]> {
  const out: LoggedUserMessage[] = []
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) await walk(path)
      else if (entry.name.endsWith('.jsonl') || entry.name.endsWith('.jsonl.zstd')) {
        const session = basename(dir)
        if (options.sessionId && !session.endsWith(options.sessionId)) continue
        const raw = await readFile(path)
        const text = entry.name.endsWith('.zstd') ? decodeSessionLog(raw) : raw.toString('utf8')
        for (const line of text.split('\n')) {
          if (!line.trim()) continue
          let event: { type?: string; data?: { content?: { text?: string }[]; source?: Record<string, unknown> } }
          try {
            event = JSON.parse(line)
          } catch {
            continue // a partial last line
          }
          if (event.type !== 'user/message' || !event.data) continue
          out.push({ text: (event.data.content ?? []).map((block) => block.text ?? '').join(''), source: event.data.source ?? {}, session })
        }
      }
    }
  }
  await walk(sessionsRoot)
  return out
}
