/**
 * From the host's session log to archivable turns.
 *
 * A turn is numbered by the log event sequence number (`seq`) of the event that opens it, as
 * in the reference: system directives, plugin steering and pure tool rounds are turns too,
 * so turn numbers have gaps and must not be derived from "the n-th message". One turn is
 * either one `user/message` (a human prompt or a plugin-sourced message) or one
 * `assistant/message` together with the `tool/result` events answering its tool calls, so
 * a read turn shows the reasoning, the calls and what they returned in one place.
 *
 * Replacement events (a compaction checkpoint, a pruned tool result) are rewrites of history,
 * not history: they are skipped, and the original events, still in the append-only log, are
 * what gets archived.
 */
import { estimateTokens } from '@dsh-memory/store'

/** The part of a host session event the turn builder reads (structural, no host import). */
export interface SessionEventLike {
  readonly type: string
  readonly seq: number
  readonly time?: number
  readonly data?: unknown
  readonly surfaceOp?: { readonly op?: string }
}

/** Who speaks in a turn: `user`, `assistant`, `tool`, or `plugin:<name>` for plugin-made messages. */
export type Speaker = 'user' | 'assistant' | 'tool' | `plugin:${string}` | (string & {})

/** One archivable turn. */
export interface Turn {
  /** The seq of the event that opens the turn. */
  readonly turn: number
  readonly speaker: Speaker
  /** Epoch ms of the opening event. */
  readonly at: number
  /** Markdown body as archived (verbatim text; reasoning, tool calls and results in sections). */
  readonly body: string
  /** The first 70 characters of the turn's plain text, whitespace collapsed. */
  readonly head: string
  /** Token estimate of the body (the store's CJK-aware estimate). */
  readonly tokens: number
  /** False while an assistant turn still waits for tool results: it cannot be archived yet. */
  readonly complete: boolean
  /** Names of the tools the turn called. */
  readonly tools: readonly string[]
  /** Seqs of every event the turn is made of (the opener first). */
  readonly seqs: readonly number[]
  /** Host message ids of the turn's messages (used to match a compaction request). */
  readonly messageIds: readonly string[]
}

/** Options of {@link buildTurns}. */
export interface BuildTurnsOptions {
  /** Include reasoning text in the body. */
  readonly includeReasoning: boolean
}

interface BlockLike {
  readonly type?: string
  readonly text?: string
  readonly id?: string
  readonly name?: string
  readonly arguments?: string
  readonly toolCallId?: string
  readonly content?: readonly BlockLike[]
  readonly isError?: boolean
}

interface MessageLike {
  readonly id?: string
  readonly role?: string
  readonly content?: readonly BlockLike[]
  readonly source?: { readonly kind?: string; readonly plugin?: string; readonly callId?: string }
}

interface Draft {
  turn: number
  speaker: Speaker
  at: number
  sections: string[]
  plain: string[]
  pendingCalls: Set<string>
  callNames: Map<string, string>
  tools: string[]
  seqs: number[]
  messageIds: string[]
}

const HEAD_LENGTH = 70

/**
 * Group a session log into turns, oldest first.
 * @param events - the session's events in log order (`session.events`).
 */
export function buildTurns(events: readonly SessionEventLike[], options: BuildTurnsOptions): Turn[] {
  const drafts: Draft[] = []
  const byCall = new Map<string, Draft>()
  for (const event of events) {
    if (event.surfaceOp?.op === 'replace') continue
    if (event.type === 'user/message') {
      const message = event.data as MessageLike | undefined
      if (!message || !Array.isArray(message.content)) continue
      const draft = newDraft(event, speakerOf(message))
      const text = blocksText(message.content)
      draft.sections.push(text)
      draft.plain.push(text)
      if (message.id) draft.messageIds.push(message.id)
      drafts.push(draft)
    } else if (event.type === 'assistant/message') {
      const message = (event.data as { message?: MessageLike } | undefined)?.message
      if (!message || !Array.isArray(message.content)) continue
      const draft = newDraft(event, 'assistant')
      if (message.id) draft.messageIds.push(message.id)
      renderAssistant(draft, message.content, options)
      for (const call of draft.pendingCalls) byCall.set(call, draft)
      drafts.push(draft)
    } else if (event.type === 'tool/result') {
      const message = (event.data as { message?: MessageLike } | undefined)?.message
      if (!message || !Array.isArray(message.content)) continue
      for (const block of message.content) {
        if (block.type !== 'tool-result') continue
        const callId = block.toolCallId ?? message.source?.callId ?? ''
        const owner = byCall.get(callId)
        const draft = owner ?? newDraft(event, 'tool')
        if (!owner) drafts.push(draft)
        renderResult(draft, callId, block)
        draft.pendingCalls.delete(callId)
        if (!draft.seqs.includes(event.seq)) draft.seqs.push(event.seq)
        if (message.id) draft.messageIds.push(message.id)
      }
    }
  }
  return drafts.map(finish)
}

function newDraft(event: SessionEventLike, speaker: Speaker): Draft {
  return {
    turn: event.seq,
    speaker,
    at: typeof event.time === 'number' ? event.time : 0,
    sections: [],
    plain: [],
    pendingCalls: new Set(),
    callNames: new Map(),
    tools: [],
    seqs: [event.seq],
    messageIds: [],
  }
}

function speakerOf(message: MessageLike): Speaker {
  const source = message.source
  if (!source || source.kind === 'user') return 'user'
  if (source.kind === 'plugin') return `plugin:${source.plugin ?? 'unknown'}`
  return source.kind ?? 'user'
}

function renderAssistant(draft: Draft, content: readonly BlockLike[], options: BuildTurnsOptions): void {
  for (const block of content) {
    if (block.type === 'reasoning') {
      if (options.includeReasoning && block.text?.trim()) draft.sections.push(`### Reasoning\n\n${block.text}`)
    } else if (block.type === 'text') {
      if (block.text) {
        draft.sections.push(block.text)
        draft.plain.push(block.text)
      }
    } else if (block.type === 'tool-call') {
      const id = block.id ?? ''
      const name = block.name ?? 'unknown'
      draft.pendingCalls.add(id)
      draft.callNames.set(id, name)
      draft.tools.push(name)
      const args = block.arguments ?? ''
      draft.sections.push(`### Tool call · ${name} (${id})\n\n${fenced(prettyJson(args), 'json')}`)
      draft.plain.push(`→ ${name}(${oneLine(args)})`)
    } else if (block.type === 'image') {
      draft.sections.push('[image]')
    }
  }
}

function renderResult(draft: Draft, callId: string, block: BlockLike): void {
  const name = draft.callNames.get(callId)
  const text = blocksText(block.content ?? [])
  const label = `### Tool result${name ? ` · ${name}` : ''} (${callId})${block.isError ? ' · error' : ''}`
  draft.sections.push(`${label}\n\n${fenced(text, '')}`)
  if (draft.speaker === 'tool') draft.plain.push(text)
}

function finish(draft: Draft): Turn {
  const body = draft.sections.filter((section) => section.length > 0).join('\n\n')
  const plain = oneLine(draft.plain.join(' '))
  return Object.freeze({
    turn: draft.turn,
    speaker: draft.speaker,
    at: draft.at,
    body,
    head: [...plain].slice(0, HEAD_LENGTH).join(''),
    tokens: body.length === 0 ? 0 : estimateTokens(body),
    complete: draft.pendingCalls.size === 0,
    tools: Object.freeze([...new Set(draft.tools)]),
    seqs: Object.freeze([...draft.seqs]),
    messageIds: Object.freeze([...draft.messageIds]),
  })
}

/**
 * How many turns a log holds, without rendering them (the cadence check runs every step;
 * building the turns only happens when a check is due). Tool results count only when no
 * assistant message of the log called them, as in {@link buildTurns}.
 */
export function countTurns(events: readonly SessionEventLike[]): number {
  let count = 0
  for (const event of events) {
    if (event.surfaceOp?.op === 'replace') continue
    if (event.type === 'user/message' || event.type === 'assistant/message') count++
  }
  return count
}

/** Plain text of content blocks: text verbatim, images and unknown blocks as short placeholders. */
export function blocksText(blocks: readonly BlockLike[]): string {
  const parts: string[] = []
  for (const block of blocks) {
    if (block.type === 'text' && typeof block.text === 'string') parts.push(block.text)
    else if (block.type === 'image') parts.push('[image]')
    else if (block.type === 'tool-result') parts.push(blocksText(block.content ?? []))
    else if (block.type === 'reasoning') continue
    else if (typeof block.text === 'string') parts.push(block.text)
  }
  return parts.join('\n')
}

/** Wrap `text` in a code fence longer than any backtick run inside it, so the fence cannot close early. */
export function fenced(text: string, lang: string): string {
  let longest = 0
  for (const match of text.matchAll(/`+/g)) longest = Math.max(longest, match[0].length)
  const fence = '`'.repeat(Math.max(3, longest + 1))
  return `${fence}${lang}\n${text}${text.endsWith('\n') ? '' : '\n'}${fence}`
}

function prettyJson(raw: string): string {
  try {
    return JSON.stringify(JSON.parse(raw), null, 2)
  } catch {
    return raw
  }
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim()
}
