import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import type { IncomingMessage } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openMemoryStore, openStore, type MemoryStore } from '@dsh-memory/store'
import { afterEach, beforeEach } from 'vitest'
// The loopback server of recall's tests: the cue bank's embedding endpoint is the same stand-in.
import { startLoopback } from '../../recall/test/support/loopback.js'
import type { CueBankHooks, SessionRef } from '../src/core/cue-bank-contract.js'
import { CueBank } from '../src/core/cue-bank.js'
import type { Embedder } from '../src/core/embedding.js'
import type { Cue } from '../src/core/model.js'
import { resolveCueBankOptions, type CueBankOptionsInput } from '../src/core/options.js'
import { openCueRepository, type CueRepository } from '../src/core/store-cue-repository.js'

/** 2026-08-15T00:00:00Z, the reference's date. */
export const T0 = Date.UTC(2026, 7, 15)
export const DAY = 86_400_000

/** A controllable clock (the only thing besides the remote model that tests fake). */
export class Clock {
  constructor(public time = T0) {}
  readonly now = (): number => this.time
  advance(ms: number): void {
    this.time += ms
  }
}

/** A temp directory removed by the returned function. */
export function tempDir(): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'dshm-cue-bank-'))
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) }
}

/**
 * For each test of the calling suite: a fresh temp directory with a real store file in it,
 * closed and removed afterwards. Read `dir` and `store` inside the tests (they change per test).
 */
export function storeEachTest(): { readonly dir: string; readonly store: MemoryStore } {
  const current = {} as { dir: string; store: MemoryStore; remove: () => void }
  beforeEach(() => {
    const temp = tempDir()
    current.dir = temp.dir
    current.remove = temp.remove
    current.store = openMemoryStore({ path: join(temp.dir, 'memory.db') })
  })
  afterEach(async () => {
    await current.store.close()
    current.remove()
  })
  return current
}

/** A conversation-level cue of `partition` with every field set; `extra` overrides any of them. */
export function cueFixture(id: string, partition: string, extra: Partial<Cue> = {}): Cue {
  return {
    id,
    partition,
    level: 'conversation',
    sessionId: `s-${id}`,
    turn: 1,
    summary: `summary ${id}`,
    detail: `detail ${id}`,
    keywords: [{ word: id, score: 1 }],
    dimensions: { trigger: 'keywords', perspective: 'conversation', language: 'en' },
    refSessions: [`s-${id}`],
    sourceMessageIds: ['m1', 'm2'],
    embedding: null,
    embeddingModel: null,
    createdAt: T0,
    lastMentionedAt: T0,
    lastTouchedAt: T0,
    hitCount: 0,
    ...extra,
  }
}

/** A session of a workspace with a fresh id. */
export function session(workspace = '/work/alpha', id = `session-${randomUUID()}`): SessionRef {
  return { id, workspace }
}

/** A real store on disk plus a cue bank over it. */
export interface Harness {
  readonly store: ReturnType<typeof openMemoryStore>
  readonly repository: CueRepository
  readonly bank: CueBank
  readonly clock: Clock
  readonly errors: { error: unknown; where: string }[]
  close(): Promise<void>
}

/** Where a harness's store is: a directory for a SQLite `memory.db`, or a PostgreSQL schema. */
export type HarnessLocation = string | { readonly path: string } | { readonly databaseUrl: string; readonly schema: string }

/** Open a store (a file in the directory `where`, or the PostgreSQL schema `where`) and a cue bank on it. */
export async function openHarness(
  where: HarnessLocation,
  input: CueBankOptionsInput = {},
  extra: { clock?: Clock; embedder?: Embedder | null; env?: Record<string, string>; hooks?: CueBankHooks; openTool?: string } = {},
): Promise<Harness> {
  const clock = extra.clock ?? new Clock()
  const store = typeof where === 'string' ? openMemoryStore({ path: join(where, 'memory.db'), now: clock.now }) : await openStore({ ...where, now: clock.now })
  // No poll: one process; the bank's own writes refresh the PostgreSQL view.
  const repository = await openCueRepository(store, { pollMs: 0 })
  const errors: { error: unknown; where: string }[] = []
  const options = resolveCueBankOptions(input, extra.env ?? {})
  const bank = new CueBank({
    repository,
    options,
    now: clock.now,
    embedder: extra.embedder ?? null,
    messages: store.messages,
    openTool: () => extra.openTool,
    hooks: { ...extra.hooks, onError: (error, where) => errors.push({ error, where }) },
  })
  return {
    store,
    repository,
    bank,
    clock,
    errors,
    close: async () => {
      await bank.close()
      await store.close()
    },
  }
}

/** Record one complete turn (a human message and a reply) and wait for the write. */
export async function talk(bank: CueBank, ref: SessionRef, turn: number, user: string, assistant: string) {
  bank.observeUserMessage(ref, { id: `u-${ref.id}-${turn}`, text: user }, turn)
  await bank.settle(ref.id)
  return bank.recordTurn(ref, { turn, user: [{ id: `u-${ref.id}-${turn}`, text: user }], assistant: [{ id: `a-${ref.id}-${turn}`, text: assistant }] })
}

/** A scripted OpenAI-compatible `/embeddings` server on 127.0.0.1 (the remote model stand-in). */
export interface EmbeddingServer {
  readonly url: string
  readonly requests: { headers: IncomingMessage['headers']; body: { model: string; input: string[] } }[]
  close(): Promise<void>
}

/**
 * Start an embedding server. `vectorFor` maps each input text to a vector; `behaviour` can
 * delay or break the answer.
 */
export async function startEmbeddingServer(
  vectorFor: (text: string) => number[],
  behaviour: (body: { model: string; input: string[] }) => { delayMs?: number; status?: number; raw?: string } = () => ({}),
): Promise<EmbeddingServer> {
  const requests: EmbeddingServer['requests'] = []
  const loopback = await startLoopback((request, response) => {
    const body = JSON.parse(request.body) as { model: string; input: string[] }
    requests.push({ headers: request.headers, body })
    const plan = behaviour(body)
    const answer = () => {
      if (response.destroyed) return
      if (plan.status && plan.status !== 200) {
        response.writeHead(plan.status, { 'content-type': 'application/json' }).end('{"error":"scripted failure"}')
        return
      }
      const payload = plan.raw ?? JSON.stringify({ object: 'list', model: body.model, data: body.input.map((text, index) => ({ object: 'embedding', index, embedding: vectorFor(text) })) })
      response.writeHead(200, { 'content-type': 'application/json' }).end(payload)
    }
    if (plan.delayMs) setTimeout(answer, plan.delayMs)
    else answer()
  })
  return { url: loopback.url, requests, close: loopback.close }
}

/**
 * A deterministic "semantic" embedding for tests: one axis per concept, a text gets weight on
 * every concept whose words it mentions (in any language). Related texts that share no
 * keyword still point the same way.
 */
export const CONCEPTS: readonly (readonly string[])[] = [
  ['database', 'postgres', 'postgresql', 'sql', '数据库', 'データベース', 'schema', 'migration'],
  ['deploy', 'kubernetes', 'k8s', 'cluster', '部署', '集群', 'helm'],
  ['cooking', 'recipe', 'pasta', '菜谱', '做饭', '料理'],
  ['plugin', 'feishu', '飞书', '插件', 'プラグイン'],
]

export function conceptVector(text: string): number[] {
  const lower = text.toLowerCase()
  const vector: number[] = CONCEPTS.map((words) => (words.some((word) => lower.includes(word)) ? 1 : 0))
  vector.push(0.05)
  return vector
}
