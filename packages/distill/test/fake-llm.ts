import { type Context, Service } from '@deepseek-ai/cordis'
import type { GenerateOptions, StreamChunk } from '@deepseek-ai/dsh-llm'

/** What the fake model answers: text (with optional usage), an error finish, a throw, or a stall. */
export type FakeReply =
  | { kind: 'text'; text: string; usage?: { inputTokens: number; outputTokens: number } }
  | { kind: 'error'; code: string; message: string; status?: number }
  | { kind: 'stall' }

/** One request as the fake model received it. */
export interface FakeRequest {
  readonly options: GenerateOptions
  readonly system: string
  readonly prompt: string
}

/**
 * Stand-in for the host's `llm` service (the remote model is the only thing faked): it
 * streams raw chunks exactly as dsh-llm adapters do (block-start, deltas, block-end,
 * usage, finish) so the plugin's real BlockAssembler path runs.
 */
export class FakeLlm extends Service {
  readonly requests: FakeRequest[] = []
  responder: (request: FakeRequest) => FakeReply = () => ({ kind: 'text', text: '{"memories":[]}' })

  constructor(ctx: Context) {
    super(ctx, 'llm')
  }

  async *stream(options: GenerateOptions): AsyncIterable<StreamChunk> {
    const prompt = options.messages
      .flatMap((message) => message.content)
      .map((block) => (block.type === 'text' ? block.text : ''))
      .join('')
    const request: FakeRequest = { options, system: options.system ?? '', prompt }
    this.requests.push(request)
    const reply = this.responder(request)
    if (reply.kind === 'stall') {
      yield { type: 'block-start', index: 0, blockType: 'text' }
      yield { type: 'text-delta', index: 0, text: '{"memo' }
      await new Promise<void>((resolve) => options.signal?.addEventListener('abort', () => resolve(), { once: true }))
      yield { type: 'finish', reason: { kind: 'aborted', failure: { code: 'ABORTED', message: 'aborted' } } } as StreamChunk
      return
    }
    if (reply.kind === 'error') {
      yield { type: 'finish', reason: { kind: 'error', failure: { code: reply.code, message: reply.message, ...(reply.status ? { status: reply.status } : {}) } } } as StreamChunk
      return
    }
    const cut = Math.ceil(reply.text.length / 2)
    yield { type: 'block-start', index: 0, blockType: 'text' }
    yield { type: 'text-delta', index: 0, text: reply.text.slice(0, cut) }
    yield { type: 'text-delta', index: 0, text: reply.text.slice(cut) }
    yield { type: 'block-end', index: 0, block: { type: 'text', text: reply.text } }
    if (reply.usage) yield { type: 'usage', usage: reply.usage }
    yield { type: 'finish', reason: { kind: 'stop' } }
  }
}
