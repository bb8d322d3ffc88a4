/**
 * The in-process model stand-in for the Distiller core (the remote model is the only thing
 * the suites fake). It answers each distill layer with a valid reply derived from the prompt,
 * or with whatever a test scripts for the next calls (malformed, adversarial, failing).
 */
import type { ModelCall, ModelTransport } from '@dsh-memory/distill'

/** What the stand-in does for one call. */
export type ScriptedAnswer = string | { readonly fail: string } | { readonly stallMs: number }

/** The new `[mN] user:` lines of an L1 prompt. */
export function newUserLines(prompt: string): { alias: string; text: string }[] {
  return [...prompt.matchAll(/^\[(m\d+)\] user: (.*)$/gm)].map((match) => ({ alias: match[1]!, text: match[2]! }))
}

/**
 * Default answers: L1 turns every new user line into one memory `Remembered: <line>` sourced
 * to it; dedup adds every candidate; L2/L3 change nothing.
 */
export function defaultAnswer(call: ModelCall): string {
  if (call.layer === 'l1') {
    const memories = newUserLines(call.prompt).map((line) => ({ kind: 'fact', text: `Remembered: ${line.text}`.slice(0, 400), scope: 'global', priority: 3, src: [line.alias] }))
    return JSON.stringify({ memories })
  }
  if (call.layer === 'dedup') {
    const ids = [...new Set([...call.prompt.matchAll(/^(n\d+)\b/gm)].map((match) => match[1]!))]
    return JSON.stringify({ decisions: ids.map((id) => ({ id, action: 'add' })) })
  }
  if (call.layer === 'l2') return '{"ops":[]}'
  return '# Persona\n- A user of the reliability suite.\n'
}

/** A scripted transport: queued answers first (per layer), then {@link defaultAnswer}. */
export class ScriptedDistillModel {
  readonly calls: ModelCall[] = []
  private readonly queued = new Map<string, ScriptedAnswer[]>()
  private readonly delayMs: () => number

  // No parameter property: this file also runs under Node's type stripping (child processes).
  constructor(delayMs: () => number = () => 0) {
    this.delayMs = delayMs
  }

  /** Answer the next calls of `layer` with these, in order. */
  queue(layer: string, ...answers: ScriptedAnswer[]): void {
    this.queued.set(layer, [...(this.queued.get(layer) ?? []), ...answers])
  }

  callsOf(layer: string): ModelCall[] {
    return this.calls.filter((call) => call.layer === layer)
  }

  readonly transport: ModelTransport = async (_route, call) => {
    this.calls.push(call)
    const delay = this.delayMs()
    if (delay > 0) await sleep(delay, call.signal)
    const answer = this.queued.get(call.layer)?.shift() ?? defaultAnswer(call)
    if (typeof answer === 'string') return { text: answer }
    if ('fail' in answer) throw new Error(answer.fail)
    await sleep(answer.stallMs, call.signal)
    throw new Error('stalled stream closed')
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms)
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer)
        reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'))
      },
      { once: true },
    )
  })
}
