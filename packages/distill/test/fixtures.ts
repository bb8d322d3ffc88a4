import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type MemoryStore, openMemoryStore } from '@dsh-memory/store'
import { afterEach } from 'vitest'
import type { Clock } from '../src/core/clock.js'
import type { DistillLayer, ModelRoute } from '../src/core/options.js'
import type { ModelCall, ModelCallResult, ModelTransport } from '../src/core/model.js'

const cleanups: (() => Promise<void> | void)[] = []

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/** Run after the current test (reverse order). */
export function onCleanup(fn: () => Promise<void> | void): void {
  cleanups.push(fn)
}

/** A temp directory removed after the test. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'dshm-distill-'))
  onCleanup(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** A real store on a fresh file, closed after the test. */
export function openTempStore(dir = tempDir(), now?: () => number): { store: MemoryStore; path: string; dir: string } {
  const path = join(dir, 'memory.db')
  const store = openMemoryStore({ path, ...(now ? { now } : {}) })
  onCleanup(() => store.close())
  return { store, path, dir }
}

/**
 * A fake clock: `now()` is under test control and timers fire only on {@link FakeClock.advance}.
 * Only the clock is fake; the store and the distiller are real.
 */
export class FakeClock implements Clock {
  private t: number
  private timers: { at: number; fn: () => void; id: number }[] = []
  private nextId = 0

  constructor(start = Date.UTC(2025, 5, 1, 12)) {
    this.t = start
  }

  now(): number {
    return this.t
  }

  setTimer(fn: () => void, ms: number): () => void {
    const id = this.nextId++
    this.timers.push({ at: this.t + Math.max(0, ms), fn, id })
    return () => {
      this.timers = this.timers.filter((timer) => timer.id !== id)
    }
  }

  /** Pending timers (for leak checks). */
  get pendingTimers(): number {
    return this.timers.length
  }

  /** Move time forward, firing due timers in order and letting their async work settle. */
  async advance(ms: number): Promise<void> {
    const target = this.t + ms
    for (;;) {
      const due = this.timers.filter((timer) => timer.at <= target).sort((a, b) => a.at - b.at)[0]
      if (!due) break
      this.timers = this.timers.filter((timer) => timer.id !== due.id)
      this.t = Math.max(this.t, due.at)
      due.fn()
      await settle()
    }
    this.t = target
    await settle()
  }
}

/** Let pending promise chains and I/O callbacks run. */
export async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setImmediate(resolve))
}

/** One scripted reply: text (with optional usage), a thrown error, or a call that never answers. */
export type ScriptedReply = string | { text: string; usage?: ModelCallResult['usage'] } | Error | { hang: true }

/** A logged call of the scripted model. */
export interface LoggedCall {
  readonly layer: DistillLayer
  readonly route: ModelRoute
  readonly system: string
  readonly prompt: string
  readonly maxTokens: number
  readonly temperature: number
  readonly reasoningEffort: string
}

/**
 * The stand-in for the remote model: a transport that answers from a script and logs every
 * call. Unscripted layers reply with an empty result of the right shape.
 */
export class ScriptedModel {
  readonly calls: LoggedCall[] = []
  private script: ((call: LoggedCall) => ScriptedReply | undefined)[] = []

  /** Answer calls with `fn`; responders are asked in registration order, the first value wins. */
  on(fn: (call: LoggedCall) => ScriptedReply | undefined): this {
    this.script.push(fn)
    return this
  }

  /** Replies queued for one layer, consumed in order. */
  queue(layer: DistillLayer, ...replies: ScriptedReply[]): this {
    return this.on((call) => (call.layer === layer && replies.length > 0 ? replies.shift() : undefined))
  }

  callsOf(layer: DistillLayer): LoggedCall[] {
    return this.calls.filter((call) => call.layer === layer)
  }

  readonly transport: ModelTransport = async (route: ModelRoute, call: ModelCall): Promise<ModelCallResult> => {
    const logged: LoggedCall = {
      layer: call.layer,
      route,
      system: call.system,
      prompt: call.prompt,
      maxTokens: call.maxTokens,
      temperature: call.temperature,
      reasoningEffort: call.reasoningEffort,
    }
    this.calls.push(logged)
    let reply: ScriptedReply | undefined
    for (const fn of this.script) {
      reply = fn(logged)
      if (reply !== undefined) break
    }
    reply ??= defaultReply(call.layer)
    if (reply instanceof Error) throw reply
    if (typeof reply === 'object' && 'hang' in reply) {
      return new Promise((_, reject) => {
        call.signal.addEventListener('abort', () => reject(call.signal.reason ?? new Error('aborted')), { once: true })
      })
    }
    return typeof reply === 'string' ? { text: reply } : reply
  }
}

function defaultReply(layer: DistillLayer): string {
  if (layer === 'l1') return '{"memories":[]}'
  if (layer === 'dedup') return '{"decisions":[]}'
  if (layer === 'l2') return '{"ops":[]}'
  return '# Persona\n\n- (nothing yet)'
}

/** An extraction reply. */
export function extraction(memories: { kind?: string; text: string; scope?: string; priority?: number; src?: string[] }[]): string {
  return JSON.stringify({
    memories: memories.map((memory) => ({ kind: memory.kind ?? 'fact', text: memory.text, scope: memory.scope ?? 'workspace', priority: memory.priority ?? 3, src: memory.src ?? ['m1'] })),
  })
}

/** Append messages to a conversation as capture would (ensure + append, seq increasing). */
export async function appendMessages(
  store: MemoryStore,
  conversationId: string,
  workspace: string,
  texts: readonly (string | { role: 'user' | 'assistant'; text: string })[],
  at?: number,
): Promise<string[]> {
  await store.conversations.ensure({ id: conversationId, workspace })
  const existing = await store.messages.list({ conversationId, order: 'desc', limit: 1 })
  let seq = existing[0] ? existing[0].seq + 1 : 0
  const ids: string[] = []
  for (const [index, entry] of texts.entries()) {
    const { role, text } = typeof entry === 'string' ? { role: (index % 2 === 0 ? 'user' : 'assistant') as 'user' | 'assistant', text: entry } : entry
    const { message } = await store.messages.append({ conversationId, hostMessageId: `h-${conversationId}-${seq}`, role, text, seq, turn: Math.floor(seq / 2), ...(at ? { createdAt: at } : {}) })
    ids.push(message.id)
    seq++
  }
  return ids
}
