/**
 * Stand-ins for the host services the root workspace does not install (the tool registry,
 * the system-prompt registry, the token meter). They keep only the contract the palace
 * uses; the end-to-end test (apps/playground/e2e/palace.e2e.test.ts) runs the real ones.
 * The LLM runtime is the real `@deepseek-ai/dsh-llm` with a scripted adapter (the remote
 * model is the one thing faked).
 */
import type { Context } from '@deepseek-ai/cordis'
import { LlmAdapter, type GenerateOptions, type LlmResolvedModelInfo, type StreamChunk } from '@deepseek-ai/dsh-llm'
import type { SessionEventLike } from '../src/index.js'

/** A registered tool as the stand-in registry keeps it. */
export interface RegisteredTool {
  name: string
  description: string
  parameters: Record<string, unknown>
  output: { schema: unknown; render(args: unknown, value: unknown): { type: string; text: string }[] }
  execute(args: unknown, exec: { agent?: unknown }): Promise<unknown>
}

/** What the stand-in services recorded. */
export interface HostRecord {
  tools: Map<string, RegisteredTool>
  sections: Map<string, { name: string; order: number; text: (context: { agent?: unknown }) => string }>
  /** The token total the meter reports. */
  pressure: { totalTokens: number }
}

/** Provide `tools`, `systemPrompt` and `tokenMeter` stand-ins. */
export function testHost(record: HostRecord) {
  return {
    name: 'test-host',
    apply(ctx: Context) {
      ctx.provide('tools', {
        register(definition: RegisteredTool) {
          if (record.tools.has(definition.name)) throw new Error(`duplicate tool ${definition.name}`)
          record.tools.set(definition.name, definition)
          return () => record.tools.delete(definition.name)
        },
      })
      ctx.provide('systemPrompt', {
        section(section: HostRecord['sections'] extends Map<string, infer S> ? S : never) {
          record.sections.set(section.name, section)
          return () => record.sections.delete(section.name)
        },
      })
      ctx.provide('tokenMeter', {
        measure(session: { events: readonly SessionEventLike[] }) {
          return { totalTokens: record.pressure.totalTokens, nodes: session.events.filter((event) => event.surfaceOp).map((event) => ({ seq: event.seq, tokens: 1 })) }
        },
      })
    },
  }
}

/** A host-shaped session and agent over an event list. */
export function hostAgent(id: string, cwd: string, events: SessionEventLike[]) {
  const session = {
    id,
    header: { cwd },
    get events() {
      return events
    },
    requestHeader: () => ({ config: { provider: 'scripted', model: 'small' } }),
  }
  return { id, session, options: { provider: 'scripted', model: 'small' } }
}

/** The remote model, scripted: answers every call with `reply`, after `onRequest` looked at it. */
export class ScriptedAdapter extends LlmAdapter {
  readonly requests: GenerateOptions[] = []

  constructor(
    private readonly contextWindow: number,
    private readonly onRequest: (options: GenerateOptions) => void | Promise<void> = () => undefined,
    private readonly reply = 'summary',
  ) {
    super()
  }

  override async resolveModel(provider: string, model: string): Promise<LlmResolvedModelInfo> {
    return { provider, id: model, name: model, context: { contextWindow: this.contextWindow } } as LlmResolvedModelInfo
  }

  async *stream(options: GenerateOptions): AsyncIterable<StreamChunk> {
    this.requests.push(options)
    await this.onRequest(options)
    yield { type: 'block-start', index: 0, blockType: 'text' }
    yield { type: 'text-delta', index: 0, text: this.reply }
    yield { type: 'block-end', index: 0, block: { type: 'text', text: this.reply } }
    yield { type: 'finish', reason: { kind: 'stop' } }
  }
}
