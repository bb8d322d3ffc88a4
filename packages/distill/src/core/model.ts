/**
 * Model calls with a route chain, a timeout per attempt and a cost record per attempt. The
 * transport (one call on one route) comes from the host adapter; everything about which
 * route, how long, and what it cost lives here so it is testable without a host.
 */
import { estimateTokens } from '@dsh-memory/store'
import type { Clock } from './clock.js'
import { DistillError, describeError, isDistillError } from './errors.js'
import type { DistillLayer, DistillOptions, ModelRoute } from './options.js'

/** Token counts reported by the provider (cached input counted separately). */
export interface UsageLike {
  readonly inputTokens: number
  readonly outputTokens: number
  readonly cacheReadTokens?: number
  readonly cacheWriteTokens?: number
}

/** One request as the transport sees it. */
export interface ModelCall {
  readonly layer: DistillLayer
  readonly system: string
  readonly prompt: string
  readonly maxTokens: number
  readonly temperature: number
  /** `''` = provider default. */
  readonly reasoningEffort: string
  readonly signal: AbortSignal
}

/** What the transport returns for a successful call. */
export interface ModelCallResult {
  /** The concatenated text of the reply. */
  readonly text: string
  /** Provider usage when the stream reported it. */
  readonly usage?: UsageLike
}

/**
 * One call on one route. Must honour `call.signal` and reject (never resolve) on a failed or
 * cut-off stream, an error finish, or a tool-call finish.
 */
export type ModelTransport = (route: ModelRoute, call: ModelCall) => Promise<ModelCallResult>

/** A cost record of one attempt. */
export interface LedgerEntry {
  readonly at: number
  readonly provider: string
  readonly model: string
  readonly layer: DistillLayer
  readonly ok: boolean
  readonly inputTokens: number
  readonly outputTokens: number
  readonly cacheReadTokens: number
  /** True when the provider sent no usage and the counts are estimates. */
  readonly estimated: boolean
  /** How long the attempt took (ms). */
  readonly durationMs?: number
  /** The conversation the call worked for (L1 and dedup), when known. */
  readonly conversationId?: string
}

/** A successful completion. */
export interface Completion {
  readonly text: string
  readonly route: ModelRoute
  readonly entry: LedgerEntry
}

/** Dependencies of {@link RoutedModel}. */
export interface RoutedModelDeps {
  readonly transport: ModelTransport
  readonly options: DistillOptions
  readonly clock: Clock
  /**
   * The agent's route when the config pins none: the conversation's own route (`hint`) if
   * known, else the host default. Undefined when the host offers nothing.
   */
  readonly defaultRoute: (hint?: string) => ModelRoute | undefined
  /** Receives one entry per attempt (failures included); must not throw. */
  readonly onAttempt?: (entry: LedgerEntry) => void | Promise<void>
  readonly onRouteFailure?: (route: ModelRoute, layer: DistillLayer, error: unknown) => void
}

/** Calls the model along the configured route chain. */
export class RoutedModel {
  constructor(private deps: RoutedModelDeps) {}

  /** New options (live settings): the next call routes by them; a call in flight keeps its route. */
  reconfigure(options: DistillOptions): void {
    this.deps = { ...this.deps, options }
  }

  /**
   * The chain for a layer: `llm.layerRoutes.<layer>` when set (dedup uses l1's), else the
   * primary route (config pin or agent default) followed by `llm.fallbacks`. Duplicates are
   * dropped.
   */
  routes(layer: DistillLayer, hint?: string): ModelRoute[] {
    const { llm } = this.deps.options
    const layerKey = layer === 'dedup' ? 'l1' : layer
    const explicit = llm.layerRoutes[layerKey]
    const chain: ModelRoute[] = []
    if (explicit.length > 0) chain.push(...explicit)
    else {
      const primary = llm.provider && llm.model ? { provider: llm.provider, model: llm.model } : this.deps.defaultRoute(hint)
      if (primary) chain.push(primary)
      chain.push(...llm.fallbacks)
    }
    const seen = new Set<string>()
    return chain.filter((route) => {
      const key = `${route.provider}\u0000${route.model}`
      if (seen.has(key)) return false
      seen.add(key)
      return true
    })
  }

  /**
   * Complete one prompt: try each route of the chain with `llm.timeoutMs` per attempt.
   * @throws DistillError `no-route`, `model-unavailable` (every route failed) or `aborted`.
   */
  async complete(
    layer: DistillLayer,
    request: { system: string; prompt: string; maxTokens?: number },
    signal: AbortSignal,
    hint?: string,
  ): Promise<Completion> {
    const chain = this.routes(layer, hint)
    if (chain.length === 0) {
      throw new DistillError('no-route', 'no model route: set llm.provider/llm.model or run inside a host with a default model')
    }
    const { llm } = this.deps.options
    const errors: string[] = []
    for (const route of chain) {
      if (signal.aborted) throw new DistillError('aborted', 'distillation was cancelled')
      const started = this.deps.clock.now()
      try {
        const result = await this.attempt(route, {
          layer,
          system: request.system,
          prompt: request.prompt,
          maxTokens: Math.min(request.maxTokens ?? llm.maxTokens, llm.maxTokens),
          temperature: llm.temperature,
          reasoningEffort: llm.reasoningEffort,
          signal,
        })
        const entry = this.entry(route, layer, true, started, request, result, hint)
        await this.record(entry)
        return { text: result.text, route, entry }
      } catch (error) {
        await this.record(this.entry(route, layer, false, started, request, undefined, hint))
        if (signal.aborted) throw new DistillError('aborted', 'distillation was cancelled', { cause: error })
        errors.push(`${route.provider}/${route.model}: ${describeError(error)}`)
        try {
          this.deps.onRouteFailure?.(route, layer, error)
        } catch {
          // logging must not change the outcome
        }
      }
    }
    throw new DistillError('model-unavailable', `every route failed (${errors.join('; ')})`.slice(0, 1_000))
  }

  private attempt(route: ModelRoute, call: ModelCall): Promise<ModelCallResult> {
    const timeout = new AbortController()
    const signal = AbortSignal.any([call.signal, timeout.signal])
    let cancelTimer: () => void = () => {}
    let onAbort: () => void = () => {}
    const stopped = new Promise<never>((_, reject) => {
      cancelTimer = this.deps.clock.setTimer(() => {
        const error = new DistillError('model-unavailable', `timed out after ${this.deps.options.llm.timeoutMs} ms`)
        timeout.abort(error)
        reject(error)
      }, this.deps.options.llm.timeoutMs)
      onAbort = () => reject(new DistillError('aborted', 'distillation was cancelled'))
      call.signal.addEventListener('abort', onAbort, { once: true })
    })
    // Race as well as pass the signal: a transport that ignores its signal still cannot
    // hold a job past the timeout.
    const run = Promise.resolve().then(() => this.deps.transport(route, { ...call, signal }))
    run.catch(() => {})
    stopped.catch(() => {})
    return Promise.race([run, stopped]).finally(() => {
      cancelTimer()
      call.signal.removeEventListener('abort', onAbort)
    })
  }

  private entry(
    route: ModelRoute,
    layer: DistillLayer,
    ok: boolean,
    at: number,
    request: { system: string; prompt: string },
    result: ModelCallResult | undefined,
    conversationId: string | undefined,
  ): LedgerEntry {
    const call = { at, provider: route.provider, model: route.model, layer, ok, durationMs: Math.max(0, this.deps.clock.now() - at), ...(conversationId ? { conversationId } : {}) }
    const usage = result?.usage
    const valid = usage && Number.isFinite(usage.inputTokens) && Number.isFinite(usage.outputTokens)
    if (valid) {
      return {
        ...call,
        inputTokens: Math.max(0, Math.round(usage.inputTokens)) + Math.max(0, Math.round(usage.cacheWriteTokens ?? 0)),
        outputTokens: Math.max(0, Math.round(usage.outputTokens)),
        cacheReadTokens: Math.max(0, Math.round(usage.cacheReadTokens ?? 0)),
        estimated: false,
      }
    }
    // A failed attempt is recorded with zero tokens: providers do not bill a refused request,
    // and an estimate would inflate the ledger on every outage.
    return {
      ...call,
      inputTokens: ok ? estimateTokens(request.system) + estimateTokens(request.prompt) : 0,
      outputTokens: ok && result ? estimateTokens(result.text) : 0,
      cacheReadTokens: 0,
      estimated: ok,
    }
  }

  private async record(entry: LedgerEntry): Promise<void> {
    try {
      await this.deps.onAttempt?.(entry)
    } catch {
      // The ledger is bookkeeping: losing one entry must not fail the distillation.
    }
  }
}

/** True for errors after which retrying later makes sense (outages), as opposed to bad output. */
export function isTransient(error: unknown): boolean {
  return isDistillError(error, 'model-unavailable') || isDistillError(error, 'no-route') || isDistillError(error, 'conflict')
}
