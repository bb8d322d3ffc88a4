/**
 * The token-cost ledger's shapes and pure functions. What is persisted is one row per model
 * call (`distill_calls`, see state.ts); the per-day buckets here (one row per provider,
 * model and layer and UTC day) are the totals computed on top. Retention drops whole days.
 */
import type { DistillLayer } from './options.js'

/** Version of the day bucket shape. */
export const LEDGER_VERSION = 1

/** Totals of one (provider, model, layer) over some period. */
export interface LedgerRow {
  readonly provider: string
  readonly model: string
  readonly layer: DistillLayer
  /** Successful calls. */
  readonly calls: number
  /** Failed attempts (not billed; counted to show outages). */
  readonly failures: number
  /** Billed input tokens (uncached + cache writes). */
  readonly inputTokens: number
  readonly outputTokens: number
  readonly cacheReadTokens: number
  /** Calls whose counts are estimates (the provider sent no usage). */
  readonly estimatedCalls: number
}

/** The totals of one day. */
export interface LedgerDay {
  readonly v: typeof LEDGER_VERSION
  /** `YYYY-MM-DD`, UTC. */
  readonly day: string
  readonly rows: readonly LedgerRow[]
}

/** The UTC day of an epoch-ms time, `YYYY-MM-DD`. */
export function dayKey(at: number): string {
  return new Date(at).toISOString().slice(0, 10)
}

/**
 * Days that fall out of retention: older than `retentionDays` full days before `now`.
 * `retentionDays` 0 keeps everything.
 */
export function expiredDays(days: readonly string[], now: number, retentionDays: number): string[] {
  const oldestKept = oldestKeptDay(now, retentionDays)
  return oldestKept === undefined ? [] : days.filter((day) => day < oldestKept)
}

/** The first day retention keeps (`YYYY-MM-DD`), undefined when everything is kept (`retentionDays` 0). */
export function oldestKeptDay(now: number, retentionDays: number): string | undefined {
  return retentionDays <= 0 ? undefined : dayKey(now - retentionDays * 86_400_000)
}

/** One row of the ledger: one model call attempt. */
export interface LedgerCall {
  readonly id: number
  /** When the call started (epoch ms). */
  readonly at: number
  readonly layer: DistillLayer
  readonly provider: string
  readonly model: string
  /** `failed` attempts carry zero tokens (providers do not bill a refused request). */
  readonly outcome: 'ok' | 'failed'
  /** Billed input tokens (uncached + cache writes). */
  readonly inputTokens: number
  readonly outputTokens: number
  readonly cacheReadTokens: number
  /** The provider sent no usage: the counts are estimates. */
  readonly estimated: boolean
  readonly durationMs: number | null
  /** The conversation an L1/dedup call worked for; null for L2/L3. */
  readonly conversationId: string | null
}

/** Filter of the ledger's call list. */
export interface LedgerCallFilter {
  /** Calls at or after this time (epoch ms). */
  readonly since?: number
  readonly layer?: DistillLayer
  /** Default 1 000, at most 100 000. */
  readonly limit?: number
}

/** Filter of {@link summarizeLedger}. */
export interface LedgerFilter {
  /** First day included, `YYYY-MM-DD`. */
  readonly fromDay?: string
  /** Last day included, `YYYY-MM-DD`. */
  readonly toDay?: string
  readonly layer?: DistillLayer
  readonly provider?: string
  readonly model?: string
}

/** The sums of two rows of the same provider, model and layer. */
export function addRows(a: LedgerRow, b: LedgerRow): LedgerRow {
  return {
    ...a,
    calls: a.calls + b.calls,
    failures: a.failures + b.failures,
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cacheReadTokens: a.cacheReadTokens + b.cacheReadTokens,
    estimatedCalls: a.estimatedCalls + b.estimatedCalls,
  }
}

/** Sum the rows of several days per (provider, model, layer), largest input first. */
export function summarizeLedger(days: readonly LedgerDay[], filter: LedgerFilter = {}): LedgerRow[] {
  const totals = new Map<string, LedgerRow>()
  for (const day of days) {
    if (filter.fromDay && day.day < filter.fromDay) continue
    if (filter.toDay && day.day > filter.toDay) continue
    for (const row of day.rows) {
      if (filter.layer && row.layer !== filter.layer) continue
      if (filter.provider && row.provider !== filter.provider) continue
      if (filter.model && row.model !== filter.model) continue
      const key = `${row.provider}\u0000${row.model}\u0000${row.layer}`
      const prev = totals.get(key)
      totals.set(key, prev ? addRows(prev, row) : { ...row })
    }
  }
  return [...totals.values()].sort((a, b) => b.inputTokens - a.inputTokens || a.layer.localeCompare(b.layer))
}
