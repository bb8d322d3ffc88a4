/**
 * The host side of a model call: one request through `ctx.llm.stream` (so every provider,
 * retry policy and `llm/stream` middleware of the host applies), chunks assembled with the
 * host's own `BlockAssembler`.
 */
import type { GenerateOptions, LlmRuntime } from '@deepseek-ai/dsh-llm'
import { BlockAssembler, createUserMessage } from '@deepseek-ai/dsh-llm'
import { DistillError } from './core/errors.js'
import type { ModelCall, ModelCallResult, ModelTransport } from './core/model.js'
import type { ModelRoute } from './core/options.js'

/** `GenerateOptions.purpose` of every distill call (host types know only their own purposes). */
export const DISTILL_PURPOSE = 'memory-distill'

/**
 * A {@link ModelTransport} over the host's LLM runtime. Rejects on an error or aborted
 * finish and on a tool-call finish; a max-tokens finish returns the text so far (the JSON
 * validation then rejects a cut-off reply).
 * @param llm - resolves the runtime at call time (the service may be replaced by HMR).
 */
export function hostTransport(llm: () => Pick<LlmRuntime, 'stream'>, plugin = 'memory-distill'): ModelTransport {
  return async (route: ModelRoute, call: ModelCall): Promise<ModelCallResult> => {
    const messages = [createUserMessage({ content: [{ type: 'text', text: call.prompt }], source: { kind: 'plugin', plugin } })]
    const options = {
      provider: route.provider,
      model: route.model,
      system: call.system,
      messages,
      maxTokens: call.maxTokens,
      temperature: call.temperature,
      ...(call.reasoningEffort ? { reasoningEffort: call.reasoningEffort } : {}),
      purpose: DISTILL_PURPOSE,
      signal: call.signal,
    } as unknown as GenerateOptions
    const assembler = new BlockAssembler()
    for await (const chunk of llm().stream(options)) {
      assembler.push(chunk)
      call.signal.throwIfAborted()
    }
    call.signal.throwIfAborted()
    const finish = assembler.finish
    if (finish.kind === 'error' || finish.kind === 'aborted') {
      const failure = (finish as { failure?: { message?: string; code?: string; status?: number } }).failure
      throw new DistillError(
        finish.kind === 'aborted' ? 'aborted' : 'model-unavailable',
        `${failure?.code ?? finish.kind}${failure?.status ? ` (HTTP ${failure.status})` : ''}: ${failure?.message ?? 'stream failed'}`,
      )
    }
    if (finish.kind === 'tool-calls') throw new DistillError('model-unavailable', 'the model asked for a tool instead of answering')
    const text = assembler
      .blocks()
      .filter((block): block is { type: 'text'; text: string } => block.type === 'text')
      .map((block) => block.text)
      .join('')
    const usage = assembler.usage
    return usage ? { text, usage } : { text }
  }
}
