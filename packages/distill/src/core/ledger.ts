/**
 * The token-cost ledger as pure functions over day buckets: one bucket per UTC day holds
 * one row per (provider, model, layer). Buckets are what gets persisted; retention drops
 * whole days.
 */
import type { LedgerEntry } from './model.js'
import type { DistillLayer } from './options.js'

/** Version of the persisted day bucket. */
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

/** One persisted day. */
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

/** A copy of `day` (or a new bucket) with `entry` added to its row. */
export function addToDay(day: LedgerDay | undefined, entry: LedgerEntry): LedgerDay {
  const key = dayKey(entry.at)
  const rows = day && day.day === key ? [...day.rows] : []
  const index = rows.findIndex((row) => row.provider === entry.provider && row.model === entry.model && row.layer === entry.layer)
  const base: LedgerRow =
    index >= 0
      ? rows[index]!
      : { provider: entry.provider, model: entry.model, layer: entry.layer, calls: 0, failures: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, estimatedCalls: 0 }
  const next: LedgerRow = {
    ...base,
    calls: base.calls + (entry.ok ? 1 : 0),
    failures: base.failures + (entry.ok ? 0 : 1),
    inputTokens: base.inputTokens + entry.inputTokens,
    outputTokens: base.outputTokens + entry.outputTokens,
    cacheReadTokens: base.cacheReadTokens + entry.cacheReadTokens,
    estimatedCalls: base.estimatedCalls + (entry.ok && entry.estimated ? 1 : 0),
  }
  if (index >= 0) rows[index] = next
  else rows.push(next)
  return { v: LEDGER_VERSION, day: key, rows }
}

/**
 * Days that fall out of retention: older than `retentionDays` full days before `now`.
 * `retentionDays` 0 keeps everything.
 */
export function expiredDays(days: readonly string[], now: number, retentionDays: number): string[] {
  if (retentionDays <= 0) return []
  const oldestKept = dayKey(now - retentionDays * 86_400_000)
  return days.filter((day) => day < oldestKept)
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
      totals.set(
        key,
        prev
          ? {
              ...prev,
              calls: prev.calls + row.calls,
              failures: prev.failures + row.failures,
              inputTokens: prev.inputTokens + row.inputTokens,
              outputTokens: prev.outputTokens + row.outputTokens,
              cacheReadTokens: prev.cacheReadTokens + row.cacheReadTokens,
              estimatedCalls: prev.estimatedCalls + row.estimatedCalls,
            }
          : { ...row },
      )
    }
  }
  return [...totals.values()].sort((a, b) => b.inputTokens - a.inputTokens || a.layer.localeCompare(b.layer))
}
