import { contentText, type LoggedRequest, type ScriptedReply } from '../../src/model-server.js'

/** The distill layer a request belongs to, from the marker every distill system prompt starts with. */
export function distillLayer(request: LoggedRequest): 'l1' | 'dedup' | 'l2' | 'l3' | undefined {
  for (const message of request.body.messages) {
    const match = /\[dsh-memory:distill\/(l1|dedup|l2|l3)\]/.exec(contentText(message.content))
    if (match) return match[1] as 'l1' | 'dedup' | 'l2' | 'l3'
  }
  return undefined
}

/** A fact the scripted extractor "finds" when a new user line contains `match`. */
export interface ScriptedFact {
  readonly match: string
  readonly kind: 'fact' | 'preference' | 'instruction' | 'episode'
  readonly text: string
  readonly scope: 'global' | 'workspace' | 'session'
}

/** The new (`[mN]`) lines of an L1 prompt. */
export function newLines(request: LoggedRequest): { alias: string; role: string; text: string }[] {
  const prompt = request.body.messages
    .filter((message) => message.role === 'user')
    .map((message) => contentText(message.content))
    .join('\n')
  return [...prompt.matchAll(/^\[(m\d+)\] (user|assistant): (.*)$/gm)].map((match) => ({ alias: match[1]!, role: match[2]!, text: match[3]! }))
}

/**
 * A scripted model for distill requests: L1 returns the facts whose `match` occurs in a new
 * user line (sourced to that line), dedup adds everything, L2/L3 change nothing.
 */
export function distillReply(request: LoggedRequest, facts: readonly ScriptedFact[]): ScriptedReply | undefined {
  const layer = distillLayer(request)
  if (!layer) return undefined
  if (layer === 'l1') {
    const memories = newLines(request)
      .filter((line) => line.role === 'user')
      .flatMap((line) => facts.filter((fact) => line.text.includes(fact.match)).map((fact) => ({ kind: fact.kind, text: fact.text, scope: fact.scope, priority: 3, src: [line.alias] })))
    // Fenced, as real models often answer: the plugin must repair it.
    return { kind: 'text', text: '```json\n' + JSON.stringify({ memories }) + '\n```' }
  }
  if (layer === 'dedup') return { kind: 'text', text: '{"decisions":[]}' }
  if (layer === 'l2') return { kind: 'text', text: '{"ops":[]}' }
  return { kind: 'text', text: '# Persona\n' }
}
