/**
 * Persistent distill state, kept in the store's key/value `meta` table under `distill.` keys.
 *
 * Why meta and not tables of our own: the store runs package migrations but (today) offers no
 * way to query package tables, and a second connection could not join the store's
 * transactions. Living in meta, the cursor advance of a slice commits in the SAME
 * transaction as the memories distilled from it, so a crash can neither lose a slice nor
 * distill it twice. Every value is versioned JSON; an unknown version fails loudly.
 *
 * Keys:
 *   distill.conversation.<id>  per-conversation cursor, ramp stage, retry state, lease
 *   distill.pending            conversations that may have undistilled messages
 *   distill.layers             per-scope counters for L2/L3
 *   distill.ledger.days        index of ledger days
 *   distill.ledger.<YYYY-MM-DD> one ledger bucket
 */
import { createHash } from 'node:crypto'
import type { MemoryStore, MetaRepository } from '@dsh-memory/store'
import { z } from 'zod'
import { DistillError } from './errors.js'
import { addToDay, dayKey, expiredDays, LEDGER_VERSION, type LedgerDay, type LedgerFilter, type LedgerRow, summarizeLedger } from './ledger.js'
import type { LedgerEntry } from './model.js'

/** Version of every JSON value this module writes. */
export const STATE_VERSION = 1
/** Prefix of every meta key of this package. */
export const META_PREFIX = 'distill.'

/** A range of messages given up on (invalid model output twice), kept for inspection. */
export interface SkippedRange {
  readonly fromSeq: number
  readonly toSeq: number
  readonly at: number
  readonly reason: string
}

/** A time-limited claim on a conversation, so two processes do not pay for the same slice. */
export interface Lease {
  /** `host:pid:random` of the claiming distiller. */
  readonly owner: string
  readonly until: number
}

/** Distill state of one conversation. */
export interface ConversationState {
  readonly v: typeof STATE_VERSION
  readonly conversationId: string
  /** Seq of the last message distilled (or skipped); -1 before the first. */
  readonly cursorSeq: number
  /** Extractions done: the ramp position. */
  readonly stage: number
  /** Consecutive failed attempts (outages); reset on success. */
  readonly attempts: number
  /** Earliest next attempt after a failure (epoch ms), 0 = none. */
  readonly notBefore: number
  readonly lastError: string | null
  readonly lastRunAt: number | null
  /**
   * When the conversation was given up on after `extract.maxAttempts` consecutive failures
   * (epoch ms), null while it is retried. A message captured after it brings it back.
   */
  readonly gaveUpAt: number | null
  /** Most recent given-up ranges (at most {@link MAX_SKIPPED}). */
  readonly skipped: readonly SkippedRange[]
  readonly lease: Lease | null
}

/** Counters of one L2/L3 scope key (`global` or `workspace:<path>`). */
export interface LayerState {
  /** New memories since the last scene pass. */
  readonly sinceL2: number
  /** New memories since the last persona. */
  readonly sinceL3: number
  /** Creation time of the newest memory the last scene pass saw. */
  readonly lastL2At: number
  /** Creation time of the newest memory the last persona saw. */
  readonly lastL3At: number
  readonly attempts: number
  readonly notBefore: number
  readonly lastError: string | null
}

/** How many skipped ranges a conversation keeps. */
export const MAX_SKIPPED = 20

const leaseSchema = z.object({ owner: z.string(), until: z.number() })
const conversationSchema = z.object({
  v: z.number(),
  conversationId: z.string(),
  cursorSeq: z.number(),
  stage: z.number(),
  attempts: z.number(),
  notBefore: z.number(),
  lastError: z.string().nullable(),
  lastRunAt: z.number().nullable(),
  // Added after version 1 shipped; states written before read as "not given up".
  gaveUpAt: z.number().nullable().default(null),
  skipped: z.array(z.object({ fromSeq: z.number(), toSeq: z.number(), at: z.number(), reason: z.string() })),
  lease: leaseSchema.nullable(),
})
const layerSchema = z.object({
  sinceL2: z.number(),
  sinceL3: z.number(),
  lastL2At: z.number(),
  lastL3At: z.number(),
  attempts: z.number(),
  notBefore: z.number(),
  lastError: z.string().nullable(),
})
const layersSchema = z.object({ v: z.number(), keys: z.record(z.string(), layerSchema) })
const pendingSchema = z.object({ v: z.number(), ids: z.array(z.string()) })
const scanSchema = z.object({ v: z.number(), at: z.number() })
const daysSchema = z.object({ v: z.number(), days: z.array(z.string()) })
const rowSchema = z.object({
  provider: z.string(),
  model: z.string(),
  layer: z.enum(['l1', 'dedup', 'l2', 'l3']),
  calls: z.number(),
  failures: z.number(),
  inputTokens: z.number(),
  outputTokens: z.number(),
  cacheReadTokens: z.number(),
  estimatedCalls: z.number(),
})
const daySchema = z.object({ v: z.number(), day: z.string(), rows: z.array(rowSchema) })

/** A fresh conversation state. */
export function initialConversationState(conversationId: string): ConversationState {
  return { v: STATE_VERSION, conversationId, cursorSeq: -1, stage: 0, attempts: 0, notBefore: 0, lastError: null, lastRunAt: null, gaveUpAt: null, skipped: [], lease: null }
}

/** A fresh layer state. */
export function initialLayerState(): LayerState {
  return { sinceL2: 0, sinceL3: 0, lastL2At: 0, lastL3At: 0, attempts: 0, notBefore: 0, lastError: null }
}

/** Meta key of a conversation (long ids are hashed to stay under the store's key limit). */
export function conversationKey(conversationId: string): string {
  const id = conversationId.length <= 150 ? conversationId : createHash('sha256').update(conversationId).digest('hex')
  return `${META_PREFIX}conversation.${id}`
}

const PENDING_KEY = `${META_PREFIX}pending`
const SCAN_KEY = `${META_PREFIX}scan`
const LAYERS_KEY = `${META_PREFIX}layers`
const DAYS_KEY = `${META_PREFIX}ledger.days`
const dayMetaKey = (day: string) => `${META_PREFIX}ledger.${day}`

function decode<T>(key: string, raw: string | undefined, schema: z.ZodType<T>, version: number): T | undefined {
  if (raw === undefined) return undefined
  let value: unknown
  try {
    value = JSON.parse(raw)
  } catch (error) {
    throw new DistillError('unsupported-state', `meta ${key} is not JSON`, { cause: error })
  }
  const v = (value as { v?: unknown })?.v
  if (v !== version) throw new DistillError('unsupported-state', `meta ${key} has version ${JSON.stringify(v)}, this code reads ${version}`)
  const parsed = schema.safeParse(value)
  if (!parsed.success) throw new DistillError('unsupported-state', `meta ${key} is malformed: ${parsed.error.issues[0]?.message ?? 'invalid'}`)
  return parsed.data
}

/** The part of the store the state repository needs. */
export type StateStore = Pick<MemoryStore, 'meta' | 'transaction'>

/**
 * Repository of the distill state. Methods that take a `meta` argument run inside a caller's
 * transaction (pass the transaction's `store.meta`); the others open their own.
 */
export class DistillStateRepository {
  constructor(private readonly store: StateStore) {}

  /** A conversation's state (fresh when never seen). */
  async conversation(conversationId: string, meta: MetaRepository = this.store.meta): Promise<ConversationState> {
    const key = conversationKey(conversationId)
    return (decode(key, await meta.get(key), conversationSchema, STATE_VERSION) as ConversationState | undefined) ?? initialConversationState(conversationId)
  }

  /** Write a conversation's state. */
  async putConversation(state: ConversationState, meta: MetaRepository = this.store.meta): Promise<void> {
    await meta.set(conversationKey(state.conversationId), JSON.stringify(state), { actor: 'distill' })
  }

  /**
   * Take the lease of a conversation unless another live distiller holds it.
   * @param isAlive - whether a foreign lease owner still runs (a dead owner's lease is taken over at once).
   * @returns the state under the new lease, or undefined when someone else holds it.
   */
  async claim(conversationId: string, owner: string, now: number, leaseMs: number, isAlive: (owner: string) => boolean): Promise<ConversationState | undefined> {
    return this.store.transaction(async (tx) => {
      const state = await this.conversation(conversationId, tx.meta)
      const lease = state.lease
      if (lease && lease.owner !== owner && lease.until > now && isAlive(lease.owner)) return undefined
      const next: ConversationState = { ...state, lease: { owner, until: now + leaseMs } }
      await this.putConversation(next, tx.meta)
      return next
    })
  }

  /** Update a conversation's state under its lease (drops the lease); no-op when someone else owns it now. */
  async release(conversationId: string, owner: string, patch: Partial<Omit<ConversationState, 'v' | 'conversationId' | 'lease'>> = {}): Promise<ConversationState | undefined> {
    return this.store.transaction(async (tx) => {
      const state = await this.conversation(conversationId, tx.meta)
      if (state.lease && state.lease.owner !== owner) return undefined
      const next: ConversationState = { ...state, ...patch, lease: null }
      await this.putConversation(next, tx.meta)
      return next
    })
  }

  /** Conversations that may have undistilled messages. */
  async pendingIds(meta: MetaRepository = this.store.meta): Promise<string[]> {
    return decode(PENDING_KEY, await meta.get(PENDING_KEY), pendingSchema, STATE_VERSION)?.ids ?? []
  }

  /** Add or remove conversations from the pending index. */
  async updatePending(add: readonly string[], remove: readonly string[], meta?: MetaRepository): Promise<void> {
    const run = async (m: MetaRepository) => {
      const ids = new Set(await this.pendingIds(m))
      let changed = false
      for (const id of add) {
        if (!ids.has(id)) {
          ids.add(id)
          changed = true
        }
      }
      for (const id of remove) if (ids.delete(id)) changed = true
      if (!changed) return
      await m.set(PENDING_KEY, JSON.stringify({ v: STATE_VERSION, ids: [...ids] }), { actor: 'distill' })
    }
    if (meta) await run(meta)
    else await this.store.transaction((tx) => run(tx.meta))
  }

  /** When the last start-up scan of conversations began, if ever. */
  async lastScan(): Promise<number | undefined> {
    return decode(SCAN_KEY, await this.store.meta.get(SCAN_KEY), scanSchema, STATE_VERSION)?.at
  }

  /** Record the start time of a completed scan. */
  async markScan(at: number): Promise<void> {
    await this.store.meta.set(SCAN_KEY, JSON.stringify({ v: STATE_VERSION, at }), { actor: 'distill' })
  }

  /** All layer counters. */
  async layers(meta: MetaRepository = this.store.meta): Promise<Record<string, LayerState>> {
    return decode(LAYERS_KEY, await meta.get(LAYERS_KEY), layersSchema, STATE_VERSION)?.keys ?? {}
  }

  /** Read-modify-write the layer counters (in the caller's transaction when `meta` is given). */
  async updateLayers(update: (keys: Record<string, LayerState>) => void, meta?: MetaRepository): Promise<Record<string, LayerState>> {
    const run = async (m: MetaRepository) => {
      const keys = { ...(await this.layers(m)) }
      update(keys)
      await m.set(LAYERS_KEY, JSON.stringify({ v: STATE_VERSION, keys }), { actor: 'distill' })
      return keys
    }
    return meta ? run(meta) : this.store.transaction((tx) => run(tx.meta))
  }

  /** Add one ledger entry to its day, and drop days out of retention. */
  async recordCost(entry: LedgerEntry, retentionDays: number, now: number): Promise<void> {
    await this.store.transaction(async (tx) => {
      const day = dayKey(entry.at)
      const current = decode(dayMetaKey(day), await tx.meta.get(dayMetaKey(day)), daySchema, LEDGER_VERSION) as LedgerDay | undefined
      await tx.meta.set(dayMetaKey(day), JSON.stringify(addToDay(current, entry)), { actor: 'distill' })
      const days = new Set(decode(DAYS_KEY, await tx.meta.get(DAYS_KEY), daysSchema, STATE_VERSION)?.days ?? [])
      const known = days.has(day)
      days.add(day)
      const expired = expiredDays([...days], now, retentionDays)
      for (const old of expired) {
        days.delete(old)
        await tx.meta.delete(dayMetaKey(old), { actor: 'distill' })
      }
      if (!known || expired.length > 0) {
        await tx.meta.set(DAYS_KEY, JSON.stringify({ v: STATE_VERSION, days: [...days].sort() }), { actor: 'distill' })
      }
    })
  }

  /** Drop ledger days out of retention. @returns the days removed. */
  async pruneCosts(retentionDays: number, now: number): Promise<string[]> {
    return this.store.transaction(async (tx) => {
      const days = decode(DAYS_KEY, await tx.meta.get(DAYS_KEY), daysSchema, STATE_VERSION)?.days ?? []
      const expired = expiredDays(days, now, retentionDays)
      if (expired.length === 0) return []
      for (const old of expired) await tx.meta.delete(dayMetaKey(old), { actor: 'distill' })
      await tx.meta.set(DAYS_KEY, JSON.stringify({ v: STATE_VERSION, days: days.filter((day) => !expired.includes(day)) }), { actor: 'distill' })
      return expired
    })
  }

  /** The persisted ledger days, oldest first. */
  async costDays(): Promise<LedgerDay[]> {
    const days = decode(DAYS_KEY, await this.store.meta.get(DAYS_KEY), daysSchema, STATE_VERSION)?.days ?? []
    const out: LedgerDay[] = []
    for (const day of days) {
      const bucket = decode(dayMetaKey(day), await this.store.meta.get(dayMetaKey(day)), daySchema, LEDGER_VERSION) as LedgerDay | undefined
      if (bucket) out.push(bucket)
    }
    return out
  }

  /** Ledger totals per (provider, model, layer). */
  async costs(filter: LedgerFilter = {}): Promise<LedgerRow[]> {
    return summarizeLedger(await this.costDays(), filter)
  }
}
