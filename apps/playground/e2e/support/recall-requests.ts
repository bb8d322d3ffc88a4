import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { zstdDecompressSync } from 'node:zlib'
import { contentText, type LoggedRequest } from '../../src/model-server.js'

/** The fence every recall message starts with (kept in sync with @dsh-memory/recall). */
export const RECALL_FENCE = '<recalled-memories source="dsh-memory" untrusted="true">'

/** Texts of the user-role messages of a request that carry recalled memories. */
export function recallTexts(request: LoggedRequest): string[] {
  return request.body.messages
    .filter((message) => message.role === 'user')
    .map((message) => contentText(message.content))
    .filter((text) => text.startsWith(RECALL_FENCE))
}

/** The system prompt of a request ('' when there is none). */
export function systemText(request: LoggedRequest): string {
  return request.body.messages
    .filter((message) => message.role === 'system')
    .map((message) => contentText(message.content))
    .join('\n')
}

const ZSTD_MAGIC = Buffer.from([0x28, 0xb5, 0x2f, 0xfd])

/**
 * The host writes `session.jsonl.zstd` as a concatenation of independent Zstandard frames;
 * Node's one-shot decoder stops after the first, so decode frame by frame (a magic number
 * inside compressed data would fail to decode alone and is then merged with the next part).
 */
function decodeFrames(buffer: Buffer): string {
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

/** Every `user/message` event the host logged under `sessionsRoot`, with its source. */
export async function loggedUserMessages(sessionsRoot: string): Promise<{ text: string; source: Record<string, unknown> }[]> {
  const out: { text: string; source: Record<string, unknown> }[] = []
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) await walk(path)
      else if (entry.name.endsWith('.jsonl') || entry.name.endsWith('.jsonl.zstd')) {
        const raw = await readFile(path)
        const text = entry.name.endsWith('.zstd') ? decodeFrames(raw) : raw.toString('utf8')
        for (const line of text.split('\n')) {
          if (!line.trim()) continue
          let event: { type?: string; data?: { content?: { text?: string }[]; source?: Record<string, unknown> } }
          try {
            event = JSON.parse(line)
          } catch {
            continue
          }
          if (event.type !== 'user/message' || !event.data) continue
          out.push({ text: (event.data.content ?? []).map((block) => block.text ?? '').join(''), source: event.data.source ?? {} })
        }
      }
    }
  }
  await walk(sessionsRoot)
  return out
}
