/**
 * In-place upgrade of a data dir written before the distill tables existed: the state kept as
 * JSON under `distill.` meta keys moves into the tables and the keys are removed, in one
 * store transaction (all or nothing; a value this code cannot read fails the upgrade loudly
 * and leaves every key where it was).
 *
 * The old ledger kept totals per day, provider, model and layer, never single calls, so its
 * buckets become `distill_carried_days` rows: the per-day totals and `costs()` include them,
 * the per-call list (`calls()`) does not invent calls that were never recorded one by one.
 */
import type { MemoryStore } from '@dsh-memory/store'
import { LEGACY_META_PREFIX, readLegacyState } from './legacy-state.js'
import { eq } from 'drizzle-orm'
import { markPending, SCAN_MARK, writeConversation, writeLayer } from './state-rows.js'
import { carriedDays, conversations, type DistillTables, marks, skipped } from './tables.js'

/** What the upgrade moved. */
export interface UpgradeReport {
  readonly conversations: number
  readonly layers: number
  readonly days: number
  /** Meta keys removed. */
  readonly keys: number
}

/**
 * Move legacy meta state into the tables (a no-op, one short read, once nothing is left).
 * Call after the distill migrations are applied, on a writable store.
 * @throws DistillError `unsupported-state` naming the key (and field) this code cannot read
 */
export async function upgradeLegacyState(store: Pick<MemoryStore, 'meta' | 'transaction'>, tables: DistillTables): Promise<UpgradeReport> {
  const report = { conversations: 0, layers: 0, days: 0, keys: 0 }
  // Cheap check outside a transaction: no write lock is taken by every open of an upgraded dir.
  if ((await store.meta.list(LEGACY_META_PREFIX, { limit: 1 })).length === 0) return report
  await store.transaction(async (tx) => {
    // Pages of at most 10 000 keys: each page's keys are deleted before the next is read.
    for (;;) {
      const legacy = await readLegacyState(tx.meta)
      if (legacy.keys.length === 0) break
      await tables.write((db) => {
        const pending = new Set(legacy.pending)
        for (const state of legacy.conversations) {
          // A row the tables already hold (another process moved on) is newer than the legacy value.
          if (db.select({ id: conversations.conversationId }).from(conversations).where(eq(conversations.conversationId, state.conversationId)).get()) continue
          writeConversation(db, state, pending.has(state.conversationId))
          for (const range of state.skipped) db.insert(skipped).values({ conversationId: state.conversationId, ...range }).run()
        }
        for (const id of pending) markPending(db, id)
        for (const [key, state] of Object.entries(legacy.layers)) writeLayer(db, key, state)
        for (const day of legacy.days) {
          for (const row of day.rows) db.insert(carriedDays).values({ day: day.day, ...row }).onConflictDoNothing().run()
        }
        if (legacy.scanAt !== undefined) db.insert(marks).values({ name: SCAN_MARK, at: legacy.scanAt }).onConflictDoNothing().run()
      })
      for (const key of legacy.keys) await tx.meta.delete(key, { actor: 'distill' })
      report.conversations += legacy.conversations.length
      report.layers += Object.keys(legacy.layers).length
      report.days += legacy.days.length
      report.keys += legacy.keys.length
    }
  })
  return report
}
