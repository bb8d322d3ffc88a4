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

/** Host session-log reading lives in the playground's own source (the demo uses it too). */
export { loggedUserMessages } from '../../src/session-log.js'
