/**
 * The distill state as the versions before the package tables kept it: versioned JSON under
 * `distill.` keys of the store's meta table. Read only, for two jobs: the in-place upgrade
 * (src/core/upgrade.ts) moves it into the tables, and a read-only opener of a data dir that
 * was not upgraded yet (e.g. `dsh-memory status` right after an update) still sees it.
 *
 * Keys (all JSON, `v` = 1):
 *   distill.conversation.<id>   per-conversation cursor, ramp stage, retry state, lease
 *   distill.pending             conversations that may have undistilled messages
 *   distill.scan                start of the last start-up scan
 *   distill.layers              per-scope counters for L2/L3
 *   distill.ledger.days         index of ledger days
 *   distill.ledger.<YYYY-MM-DD> one ledger bucket (totals per provider, model and layer)
 */
import type { MetaRepository } from '@dsh-memory/store'
import { z } from 'zod'
import { DistillError } from './errors.js'
import type { LedgerDay } from './ledger.js'
import { DISTILL_LAYERS } from './options.js'
import type { ConversationState, LayerState } from './state-types.js'

/** Prefix of every legacy meta key of this package. */
export const LEGACY_META_PREFIX = 'distill.'
/** The one version the legacy values were ever written with. */
const LEGACY_VERSION = 1
/** Most meta entries one `meta.list` returns. */
const PAGE = 10_000

const conversationSchema = z.object({
  v: z.literal(LEGACY_VERSION),
  conversationId: z.string().min(1),
  cursorSeq: z.number().int(),
  stage: z.number().int(),
  attempts: z.number().int(),
  notBefore: z.number(),
  lastError: z.string().nullable(),
  lastRunAt: z.number().nullable(),
  // Added after version 1 shipped; states written before read as "not given up".
  gaveUpAt: z.number().nullable().default(null),
  skipped: z.array(z.object({ fromSeq: z.number().int(), toSeq: z.number().int(), at: z.number(), reason: z.string() })),
  lease: z.object({ owner: z.string(), until: z.number() }).nullable(),
})
const layerSchema = z.object({
  sinceL2: z.number().int(),
  sinceL3: z.number().int(),
  lastL2At: z.number(),
  lastL3At: z.number(),
  attempts: z.number().int(),
  notBefore: z.number(),
  lastError: z.string().nullable(),
})
const layersSchema = z.object({ v: z.literal(LEGACY_VERSION), keys: z.record(z.string(), layerSchema) })
const pendingSchema = z.object({ v: z.literal(LEGACY_VERSION), ids: z.array(z.string()) })
const scanSchema = z.object({ v: z.literal(LEGACY_VERSION), at: z.number() })
const rowSchema = z.object({
  provider: z.string(),
  model: z.string(),
  layer: z.enum(DISTILL_LAYERS),
  calls: z.number().int(),
  failures: z.number().int(),
  inputTokens: z.number(),
  outputTokens: z.number(),
  cacheReadTokens: z.number(),
  estimatedCalls: z.number().int(),
})
const daySchema = z.object({ v: z.literal(LEGACY_VERSION), day: z.string().regex(/^\d{4}-\d{2}-\d{2}$/), rows: z.array(rowSchema) })
const daysIndexSchema = z.object({ v: z.literal(LEGACY_VERSION), days: z.array(z.string()) })

/** Everything the legacy keys held, decoded. */
export interface LegacySnapshot {
  readonly conversations: ConversationState[]
  readonly pending: string[]
  readonly scanAt: number | undefined
  readonly layers: Record<string, LayerState>
  readonly days: LedgerDay[]
  /** Every legacy key read (the upgrade deletes exactly these). */
  readonly keys: string[]
}

/**
 * Decode one legacy value.
 * @throws DistillError `unsupported-state` naming the key and the bad field; nothing is changed.
 */
function decode<T>(key: string, raw: string, schema: z.ZodType<T>): T {
  let value: unknown
  try {
    value = JSON.parse(raw)
  } catch (error) {
    throw new DistillError('unsupported-state', `meta ${key} is not JSON`, { cause: error })
  }
  const v = (value as { v?: unknown } | null)?.v
  if (v !== LEGACY_VERSION) throw new DistillError('unsupported-state', `meta ${key} has version ${JSON.stringify(v)}, this code reads ${LEGACY_VERSION}`)
  const parsed = schema.safeParse(value)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const path = issue?.path.length ? ` at ${issue.path.join('.')}` : ''
    throw new DistillError('unsupported-state', `meta ${key} is malformed${path}: ${issue?.message ?? 'invalid'}`)
  }
  return parsed.data
}

/**
 * Read every legacy `distill.` key (at most `limit` of them; the upgrade calls again until
 * none is left).
 * @throws DistillError `unsupported-state` for a value this code cannot read
 */
export async function readLegacyState(meta: MetaRepository, limit = PAGE): Promise<LegacySnapshot> {
  const entries = await meta.list(LEGACY_META_PREFIX, { limit })
  const snapshot: LegacySnapshot = { conversations: [], pending: [], scanAt: undefined, layers: {}, days: [], keys: [] }
  let scanAt: number | undefined
  for (const { key, value } of entries) {
    const name = key.slice(LEGACY_META_PREFIX.length)
    snapshot.keys.push(key)
    if (name.startsWith('conversation.')) {
      const state = decode(key, value, conversationSchema)
      snapshot.conversations.push({ ...state, v: 1 })
    } else if (name === 'pending') snapshot.pending.push(...decode(key, value, pendingSchema).ids)
    else if (name === 'scan') scanAt = decode(key, value, scanSchema).at
    else if (name === 'layers') Object.assign(snapshot.layers, decode(key, value, layersSchema).keys)
    else if (name === 'ledger.days') decode(key, value, daysIndexSchema)
    else if (name.startsWith('ledger.')) snapshot.days.push({ ...decode(key, value, daySchema), v: 1 })
    // Any other `distill.` key was never written by this package: left alone, not deleted.
    else snapshot.keys.pop()
  }
  snapshot.days.sort((a, b) => a.day.localeCompare(b.day))
  return { ...snapshot, scanAt }
}
