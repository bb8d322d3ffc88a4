import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

/** What kind of request the host sent, derived from its body and headers. */
export type RequestPurpose = 'chat' | 'title' | 'compaction' | 'background'

/** One request the scripted server received, as the tests read it back. */
export interface LoggedRequest {
  readonly index: number
  readonly at: number
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly purpose: RequestPurpose
  /** Parsed JSON body (the OpenAI-compatible chat-completions request). */
  readonly body: ChatRequestBody
}

/** The subset of the chat-completions request body the scripts look at. */
export interface ChatRequestBody {
  model?: string
  max_tokens?: number
  stream?: boolean
  tools?: { type: string; function: { name: string } }[]
  messages: { role: string; content?: unknown; tool_calls?: unknown[]; tool_call_id?: string }[]
  [key: string]: unknown
}

/** A tool call the scripted model makes. */
export interface ScriptedToolCall {
  readonly name: string
  readonly arguments: Record<string, unknown> | string
}

/** One scripted answer. */
export type ScriptedReply =
  | { readonly kind: 'text'; readonly text: string; readonly usage?: Usage }
  | { readonly kind: 'tools'; readonly calls: readonly ScriptedToolCall[]; readonly text?: string }
  | { readonly kind: 'http-error'; readonly status: number; readonly body?: string }
  /** A 200 response whose body is not an SSE stream at all. */
  | { readonly kind: 'garbage'; readonly body: string }
  /** Sends one delta and then nothing until the client gives up (a stalled stream). */
  | { readonly kind: 'stall'; readonly text?: string; readonly ms: number }

/** Token usage reported in the final frame. */
export interface Usage {
  readonly prompt_tokens: number
  readonly completion_tokens: number
}

/** Picks the reply for a request; return undefined to fall through to the default. */
export type Responder = (request: LoggedRequest) => ScriptedReply | undefined | Promise<ScriptedReply | undefined>

/** Options of {@link startModelServer}. */
export interface ModelServerOptions {
  /** 0 (default) picks a free port. The server only ever binds 127.0.0.1. */
  readonly port?: number
  readonly responder?: Responder
}

/** A running scripted model server. */
export interface ModelServer {
  /** Base URL to put in `DEEPSEEK_BASE_URL`. */
  readonly url: string
  /** Every request received so far, oldest first. */
  readonly requests: LoggedRequest[]
  /** Replace the responder (tests script each phase). */
  setResponder(responder: Responder | undefined): void
  close(): Promise<void>
}

/**
 * Text of the newest user message that a human typed, or ''. The host appends its own
 * user-role context after the prompt (the "Current runtime context" snapshot) and plugins add
 * fenced blocks (`<recalled-memories …>`, `<system-reminder>`); those are skipped.
 */
export function lastUserText(body: ChatRequestBody): string {
  for (let i = body.messages.length - 1; i >= 0; i--) {
    const message = body.messages[i]
    if (message?.role !== 'user') continue
    const text = contentText(message.content)
    if (isHostContext(text)) continue
    return text
  }
  return ''
}

/** True for user-role text the host or a plugin added rather than the human. */
export function isHostContext(text: string): boolean {
  const head = text.trimStart()
  return head.startsWith('Current runtime context.') || head.startsWith('<')
}

/** Flatten OpenAI-style content (string or parts) to text. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content
  if (Array.isArray(content)) {
    return content
      .map((part) => (part && typeof part === 'object' && 'text' in part ? String((part as { text: unknown }).text) : ''))
      .join('')
  }
  return ''
}

/** Everything the model was shown in one request, as one string (system + all messages). */
export function requestText(body: ChatRequestBody): string {
  return body.messages.map((message) => `[${message.role}] ${contentText(message.content)}`).join('\n')
}

function classify(body: ChatRequestBody, headers: IncomingHttpHeaders): RequestPurpose {
  if (headers['x-deepseek-harness-compact'] === '1') return 'compaction'
  const hasSessionHeader = typeof headers['x-deepseek-harness-session-id'] === 'string'
  if (body.max_tokens === 64 && !body.tools?.length) return 'title'
  if (!hasSessionHeader && !body.tools?.length) return 'background'
  return 'chat'
}

/** The default script: a short title for title requests, an echo for everything else. */
export const defaultResponder: Responder = (request) => {
  if (request.purpose === 'title') return { kind: 'text', text: 'Scripted session' }
  const text = lastUserText(request.body)
  return { kind: 'text', text: `OK: ${text.slice(0, 80)}` }
}

function frame(payload: unknown): string {
  return `data: ${JSON.stringify(payload)}\n\n`
}

function estimateTokens(body: ChatRequestBody): number {
  return Math.max(1, Math.ceil(JSON.stringify(body.messages).length / 4))
}

/**
 * Start an OpenAI-compatible chat-completions server on 127.0.0.1 that answers from a script:
 * the only stand-in the end-to-end tests use, for the remote model there is no network to.
 */
export async function startModelServer(options: ModelServerOptions = {}): Promise<ModelServer> {
  let responder = options.responder
  const requests: LoggedRequest[] = []
  const sockets = new Set<import('node:net').Socket>()

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      void (async () => {
        let body: ChatRequestBody
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ChatRequestBody
        } catch {
          res.writeHead(400, { 'content-type': 'application/json' })
          res.end(JSON.stringify({ error: { message: 'body is not JSON' } }))
          return
        }
        if (!Array.isArray(body.messages)) body.messages = []
        const request: LoggedRequest = {
          index: requests.length,
          at: Date.now(),
          path: req.url ?? '',
          headers: req.headers,
          purpose: classify(body, req.headers),
          body,
        }
        requests.push(request)
        let reply: ScriptedReply | undefined
        try {
          reply = (await responder?.(request)) ?? (await defaultResponder(request))
        } catch (error) {
          reply = { kind: 'http-error', status: 500, body: String(error) }
        }
        await send(res, reply!, body)
      })()
    })
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve())
  })
  const { port } = server.address() as AddressInfo

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    setResponder(next) {
      responder = next
    },
    close() {
      for (const socket of sockets) socket.destroy()
      return new Promise((resolve) => server.close(() => resolve()))
    },
  }
}

async function send(res: import('node:http').ServerResponse, reply: ScriptedReply, body: ChatRequestBody): Promise<void> {
  if (reply.kind === 'http-error') {
    res.writeHead(reply.status, { 'content-type': 'application/json' })
    res.end(reply.body ?? JSON.stringify({ error: { message: `scripted HTTP ${reply.status}` } }))
    return
  }
  if (reply.kind === 'garbage') {
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.end(reply.body)
    return
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
  const usage = {
    prompt_tokens: estimateTokens(body),
    completion_tokens: 8,
  }
  if (reply.kind === 'stall') {
    if (reply.text) res.write(frame({ choices: [{ index: 0, delta: { content: reply.text }, finish_reason: null }] }))
    await new Promise((resolve) => setTimeout(resolve, reply.ms))
    res.end()
    return
  }
  if (reply.kind === 'text') {
    // Split in two deltas so stream assembly is exercised.
    const cut = Math.ceil(reply.text.length / 2)
    for (const piece of [reply.text.slice(0, cut), reply.text.slice(cut)]) {
      if (piece) res.write(frame({ choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] }))
    }
    res.write(frame({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }))
    const finalUsage = reply.usage ?? { ...usage, completion_tokens: Math.max(1, Math.ceil(reply.text.length / 4)) }
    res.write(frame({ choices: [], usage: { ...finalUsage, total_tokens: finalUsage.prompt_tokens + finalUsage.completion_tokens } }))
    res.end('data: [DONE]\n\n')
    return
  }
  if (reply.text) res.write(frame({ choices: [{ index: 0, delta: { content: reply.text }, finish_reason: null }] }))
  reply.calls.forEach((call, index) => {
    const args = typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments)
    const id = `call_${Date.now().toString(36)}_${index}`
    const cut = Math.ceil(args.length / 2)
    res.write(frame({ choices: [{ index: 0, delta: { tool_calls: [{ index, id, type: 'function', function: { name: call.name, arguments: args.slice(0, cut) } }] }, finish_reason: null }] }))
    res.write(frame({ choices: [{ index: 0, delta: { tool_calls: [{ index, function: { arguments: args.slice(cut) } }] }, finish_reason: null }] }))
  })
  res.write(frame({ choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] }))
  res.write(frame({ choices: [], usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } }))
  res.end('data: [DONE]\n\n')
}
