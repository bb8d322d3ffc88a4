import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { contentText, type LoggedRequest } from '../../src/model-server.js'

// The palace's own tests list its archive files the same way.
export { filesUnder } from '../../../../packages/palace/test/fixtures.js'

/** A small context window, so the host's own compaction (80 % of it) runs after a few reads. */
export const SMALL_WINDOW = `- id: llm-deepseek
  config:
    retryPolicy:
      mode: normal
      maxRetries: 0
    models:
      - id: deepseek-v4-flash
        contextWindow: 24000
`

/** The tool results a request replays, oldest first. */
export function toolResults(request: LoggedRequest): string[] {
  return request.body.messages.filter((message) => message.role === 'tool').map((message) => contentText(message.content))
}

/** Write `<prefix>-0.txt` … `<prefix>-<count-1>.txt` of 80 lines each into a new workspace folder. */
export function writeReadingFiles(workspace: string, prefix: string, count: number, line: (file: number, line: number) => string): void {
  mkdirSync(workspace, { recursive: true })
  for (let i = 0; i < count; i++) writeFileSync(join(workspace, `${prefix}-${i}.txt`), Array.from({ length: 80 }, (_, n) => line(i, n)).join('\n'))
}
